// SyntheticRun: see SyntheticRun.h. Every random-looking value is a hash of (seed, step, rank, parameter,
// field), which is cheaper than a stateful generator here and keeps records reproducible in any order.
#include "SyntheticRun.h"

#include "cluster/RankTable.h"
#include "store/RunSchema.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>
#include <string>

namespace rs::bench {
namespace {

uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t hash(uint64_t seed, int64_t step, int64_t rank, int64_t param, int field) {
    return mix(mix(mix(seed ^ uint64_t(step)) ^ (uint64_t(rank) << 20) ^ uint64_t(param)) + uint64_t(field));
}

// Uniform in [-1, 1).
float uniform(uint64_t h) {
    return float(double(h >> 11) * 0x1.0p-52 - 1.0);
}

void addParam(RunMeta& m, const std::string& name, std::vector<int64_t> shape) {
    ParamInfo p;
    p.name = name;
    p.numel = 1;
    for (int64_t d : shape)
        p.numel *= d;
    p.shape = std::move(shape);
    p.offset = m.params.empty() ? 0 : m.params.back().offset + m.params.back().numel;
    m.params.push_back(std::move(p));
}

void addBatchNorm(RunMeta& m, const std::string& name, int64_t channels) {
    addParam(m, name + ".weight", {channels});
    addParam(m, name + ".bias", {channels});
    m.bufferNames.push_back(name + ".running_mean");
    m.bufferNames.push_back(name + ".running_var");
}

} // namespace

RunMeta resnet50Meta(int ranks, int64_t plannedSteps, int sketchDim, int batchPerRank) {
    RunMeta m;
    m.model = "resnet50";
    m.worldSize = ranks;
    m.batchPerRank = batchPerRank;
    m.precision = "O2";
    m.lossScale = "dynamic";
    m.data = "synthetic";
    m.seed = 1;
    m.sketchDim = sketchDim;
    m.weightEvery = 10;
    m.plannedSteps = plannedSteps;
    m.configJson = fmt::format(R"({{"model":"resnet50","ranks":{},"batch":{},"steps":{},"precision":"O2",)"
                               R"("loss_scale":"dynamic","data":"synthetic","seed":1,"sketch_dim":{},)"
                               R"("weight_every":10,"generated_by":"ranksight-cli bench-open"}})",
                               ranks, batchPerRank, plannedSteps, sketchDim);
    // Ascend servers of 8 cards, as the trainer lays a run out: a 1,024-rank run is 128 servers.
    const RankTable table = generateRankTable(ranks, kDevicesPerAscendServer);
    m.rankTableJson = table.toJson();
    m.environment =
        R"j({"ranksight":"0.1.0","generator":"bench/SyntheticRun: synthetic values, no training"})j";

    // torchvision ResNet-50: Bottleneck blocks [3, 4, 6, 3], expansion 4; the CIFAR stem has a 3x3 conv1.
    addParam(m, "conv1.weight", {64, 3, 3, 3});
    addBatchNorm(m, "bn1", 64);
    const int blocks[4] = {3, 4, 6, 3};
    int64_t inplanes = 64;
    for (int layer = 0; layer < 4; ++layer) {
        const int64_t planes = int64_t(64) << layer, out = planes * 4;
        for (int b = 0; b < blocks[layer]; ++b) {
            const std::string pre = fmt::format("layer{}.{}.", layer + 1, b);
            addParam(m, pre + "conv1.weight", {planes, inplanes, 1, 1});
            addBatchNorm(m, pre + "bn1", planes);
            addParam(m, pre + "conv2.weight", {planes, planes, 3, 3});
            addBatchNorm(m, pre + "bn2", planes);
            addParam(m, pre + "conv3.weight", {out, planes, 1, 1});
            addBatchNorm(m, pre + "bn3", out);
            if (b == 0) {
                addParam(m, pre + "downsample.0.weight", {out, inplanes, 1, 1});
                addBatchNorm(m, pre + "downsample.1", out);
            }
            inplanes = out;
        }
    }
    addParam(m, "fc.weight", {10, 2048});
    addParam(m, "fc.bias", {10});

    const int64_t weights = runschema::totalElements(m.params);
    for (const RankTableDevice& d : table.devices)
        m.cards.push_back(CardInfo{d.rankId, d.deviceId, d.deviceIp, d.serverId, int64_t(32) << 30,
                                   weights * 16 + int64_t(batchPerRank) * (180 << 20) / 32});
    return m;
}

SyntheticRun::SyntheticRun(const RunMeta& meta, uint64_t seed)
    : m_meta(meta)
    , m_seed(seed) {
    // Typical gradient norms: BatchNorm affine parameters small, convolutions larger and growing with size,
    // the classifier largest (it sees the loss first).
    for (const ParamInfo& p : m_meta.params) {
        const bool bn = p.shape.size() == 1 && p.name.find("fc.") == std::string::npos;
        const float size = std::sqrt(float(p.numel));
        m_baseNorm.push_back(bn                          ? 0.02f + 0.002f * std::sqrt(size)
                             : p.name.starts_with("fc.") ? 1.2f
                                                         : 0.01f * size);
    }
    const size_t R = size_t(m_meta.worldSize), P = m_meta.params.size(), K = size_t(m_meta.sketchDim);
    m_record.ranks.resize(R);
    for (RankStep& x : m_record.ranks) {
        x.sampleIds.resize(size_t(m_meta.batchPerRank));
        x.localNorm.resize(P);
        x.localMax.resize(P);
        x.localSum.resize(P);
        x.nonfinite.resize(P);
        x.overflowCount.resize(P);
        x.underflowCount.resize(P);
        x.sketch.resize(P * K);
        x.syncedNorm.resize(P);
        x.syncedSum.resize(P);
        x.syncedFp.resize(P);
    }
}

float SyntheticRun::meanLoss(int64_t s) const {
    const double tau = double(std::max<int64_t>(m_meta.plannedSteps, 1000)) * 0.12;
    double loss = 0.25 + 2.05 * std::exp(-double(s) / tau) + 0.03 * std::sin(double(s) / 97.0);
    // One loss spike at 60% of the run, the kind LOSS_FLUCTUATION reports.
    const int64_t spike = m_meta.plannedSteps * 6 / 10;
    if (s >= spike && s < spike + 8)
        loss += 0.9 * (1.0 - double(s - spike) / 8.0);
    return float(loss);
}

bool SyntheticRun::overflowAt(int64_t s) const {
    // The initial loss scale is too high for a few steps (as with MindSpore's 2^24 default), then rare
    // overflows.
    return s == 2 || s == 3 || hash(m_seed, s, -1, -1, 1) % 1500 == 0;
}

const StepRecord& SyntheticRun::step(int64_t s) {
    const int R = m_meta.worldSize, P = int(m_meta.params.size()), K = m_meta.sketchDim,
              B = m_meta.batchPerRank;
    const bool overflow = overflowAt(s);
    if (s != m_lastStep + 1) { // out of order: restart the loss scale history (only the benchmarks reorder)
        m_lossScale = 65536.f;
        m_cleanSteps = 0;
    }
    m_lastStep = s;
    const float scale = m_lossScale;
    if (overflow) {
        m_lossScale = std::max(1.f, m_lossScale / 2);
        m_cleanSteps = 0;
    } else if (++m_cleanSteps == 2000) {
        m_lossScale *= 2;
        m_cleanSteps = 0;
    }
    const double tau = double(std::max<int64_t>(m_meta.plannedSteps, 1000)) * 0.3;
    const float decay = float(0.3 + 0.7 * std::exp(-double(s) / tau));
    const float loss = meanLoss(s);
    const float inf = std::numeric_limits<float>::infinity();

    StepRecord& rec = m_record;
    rec.step = s;
    rec.epoch = s / std::max<int64_t>(1, 50000 / (int64_t(R) * B));
    rec.lr = float(
        0.05 * 0.5 *
        (1 + std::cos(std::numbers::pi * double(s) / double(std::max<int64_t>(1, m_meta.plannedSteps)))));
    for (int r = 0; r < R; ++r) {
        RankStep& x = rec.ranks[size_t(r)];
        x.loss = loss * (1 + 0.06f * uniform(hash(m_seed, s, r, -1, 2)));
        x.accuracy = std::clamp(1.f - x.loss / 2.4f + 0.04f * uniform(hash(m_seed, s, r, -1, 3)), 0.f, 1.f);
        x.lossScale = scale;
        x.overflow = overflow;
        x.skipped = overflow;
        x.state = 0;
        x.computeMs = 350.f + 12.f * uniform(hash(m_seed, s, r, -1, 4));
        x.commMs = 60.f + 8.f * uniform(hash(m_seed, s, r, -1, 5));
        x.stepMs = x.computeMs + x.commMs + 4.f;
        x.sampleFp = hash(m_seed, s, r, -1, 6);
        x.bufferFp = hash(m_seed, s, r, -1, 7);
        for (int b = 0; b < B; ++b)
            x.sampleIds[size_t(b)] = int32_t((s * R * B + int64_t(r) * B + b) % 50000);
        for (int p = 0; p < P; ++p) {
            const uint64_t h = hash(m_seed, s, r, p, 7);
            const float norm = m_baseNorm[size_t(p)] * decay * (1 + 0.08f * uniform(h));
            // On an overflow step the classifier's scaled fp16 gradient is inf on every rank.
            const bool inf16 = overflow && p >= P - 2;
            x.localNorm[size_t(p)] = inf16 ? inf : norm;
            x.localMax[size_t(p)] = inf16 ? inf : norm * (0.02f + 0.01f * uniform(mix(h)));
            x.localSum[size_t(p)] = double(norm) * 0.1 * double(uniform(mix(h + 1)));
            x.nonfinite[size_t(p)] = inf16 ? 3 : 0;
            x.overflowCount[size_t(p)] = inf16 ? 3 : 0;
            x.underflowCount[size_t(p)] =
                uint32_t(mix(h + 2) % uint64_t(m_meta.params[size_t(p)].numel / 2000 + 1));
            for (int k = 0; k < K; ++k) {
                // A component shared by all ranks plus a rank's own: cosines across ranks around 0.9.
                const float shared = uniform(hash(m_seed, s, -1, p * 64 + k, 8));
                const float own = uniform(hash(m_seed, s, r, p * 64 + k, 9));
                x.sketch[size_t(p) * size_t(K) + size_t(k)] =
                    norm * (shared + 0.35f * own) / std::sqrt(float(K));
            }
            const float synced =
                m_baseNorm[size_t(p)] * decay * (1 + 0.03f * uniform(hash(m_seed, s, -1, p, 10)));
            x.syncedNorm[size_t(p)] = inf16 ? inf : synced;
            x.syncedSum[size_t(p)] = double(synced) * 0.03 * double(uniform(hash(m_seed, s, -1, p, 11)));
            x.syncedFp[size_t(p)] = hash(m_seed, s, -1, p, 12); // bitwise equal on every rank: a healthy run
        }
    }
    return rec;
}

WeightRecord SyntheticRun::weights(int64_t s) const {
    WeightRecord w;
    w.step = s;
    const size_t P = m_meta.params.size();
    for (int r = 0; r < m_meta.worldSize; ++r) {
        std::vector<uint64_t> fp(P);
        std::vector<float> norm(P);
        for (size_t p = 0; p < P; ++p) {
            fp[p] = hash(m_seed, s, -1, int64_t(p), 20);
            norm[p] = 0.05f * std::sqrt(float(m_meta.params[p].numel)) * (1 + 1e-6f * float(s));
        }
        w.fp.push_back(std::move(fp));
        w.norm.push_back(std::move(norm));
        // BatchNorm running statistics are never all-reduced: they differ across ranks, legitimately.
        w.bufferFp.push_back(hash(m_seed, s, r, -1, 21));
        w.bufferDrift.push_back(r == 0 ? 0.f : 0.002f * std::abs(uniform(hash(m_seed, s, r, -1, 22))));
    }
    return w;
}

EvalRecord SyntheticRun::eval(int64_t s) const {
    // Identical weights on every rank give identical held-out results.
    const float loss = meanLoss(s) * 1.1f;
    const float acc = std::clamp(1.f - loss / 2.4f, 0.f, 1.f);
    return EvalRecord{s, std::vector<float>(size_t(m_meta.worldSize), acc),
                      std::vector<float>(size_t(m_meta.worldSize), loss)};
}

std::vector<Event> SyntheticRun::events(int64_t s) const {
    std::vector<Event> out;
    if (overflowAt(s))
        out.push_back({s, -1, Severity::Info, eventcode::kOverflow,
                       fmt::format("Gradient overflow at step {} (loss scale {}): update skipped", s,
                                   s == m_lastStep ? m_record.ranks.front().lossScale : 0.f)});
    const int64_t spike = m_meta.plannedSteps * 6 / 10;
    if (s == spike + 1)
        out.push_back({s, -1, Severity::Warning, eventcode::kLossFluctuation,
                       fmt::format("Loss shows abnormal fluctuation: from {:.2f} to {:.2f} within 10 steps",
                                   meanLoss(s - 10), meanLoss(s))});
    return out;
}

} // namespace rs::bench
