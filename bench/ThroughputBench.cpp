#include "ThroughputBench.h"

#include "StepClock.h"
#include "telemetry/GradStats.h"
#include "train/Dataset.h"
#include "train/Models.h"
#include "train/Replica.h"
#include "train/Trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unistd.h>

namespace rs {
namespace {

using Clock = std::chrono::steady_clock;

double clusterImgS(const BenchOptions& o, bool telemetry, const std::string& out, RunSummary* summary,
                   double* coresBusy, bool shard = false) {
    TrainConfig cfg = benchConfig(o, out);
    cfg.telemetry = telemetry;
    cfg.optimizerShard = shard;
    cfg.writeFile = telemetry;
    cfg.computeThreads = o.threads;
    StepClock clock(o.warmup);
    Trainer trainer(cfg);
    trainer.setObserver(&clock);
    *summary = trainer.run();
    *coresBusy = clock.coresBusy(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    return clock.imagesPerSecond(o.ranks * o.batchPerRank);
}

// Stops the run at the first step whose update was applied and keeps its loss scale.
class SettleProbe : public TrainObserver {
public:
    explicit SettleProbe(Trainer& trainer)
        : m_trainer(trainer) {}
    void stepRecorded(const StepRecord& s) override {
        if (m_scale > 0 || s.ranks.empty())
            return;
        if (s.ranks.front().skipped) {
            ++m_skipped;
            return;
        }
        m_scale = s.ranks.front().lossScale;
        m_trainer.stop();
    }
    float scale() const { return m_scale; }
    int skipped() const { return m_skipped; }

private:
    Trainer& m_trainer;
    float m_scale = 0;
    int m_skipped = 0;
};

void settleLossScale(const BenchOptions& o, const std::string& out, BenchResult& r) {
    constexpr int kMaxProbeSteps = 64; // past the 24 halvings that take 2^24 down to 1
    TrainConfig cfg = benchConfig(o, out);
    if (cfg.lossScale.mode != LossScaleMode::Dynamic)
        return;
    cfg.steps = kMaxProbeSteps;
    cfg.telemetry = false;
    cfg.writeFile = false;
    cfg.computeThreads = o.threads;
    Trainer trainer(cfg);
    SettleProbe probe(trainer);
    trainer.setObserver(&probe);
    trainer.run();
    r.settledScale = probe.scale();
    r.skippedToSettle = probe.skipped();
}

// Medians over rounds of each phase, per card and step.
std::vector<std::pair<std::string, double>> phaseMedians(const std::vector<RunSummary>& rounds, int ranks) {
    std::vector<std::pair<std::string, double>> out;
    if (rounds.empty())
        return out;
    for (size_t k = 0; k < rounds.front().phaseMs.size(); ++k) {
        std::vector<double> v;
        for (const RunSummary& s : rounds)
            v.push_back(s.phaseMs[k].second / double(std::max<int64_t>(1, s.stepsCompleted) * ranks));
        out.emplace_back(rounds.front().phaseMs[k].first, median(v));
    }
    return out;
}

// The reference: one LibTorch replica at the same global batch with every core on intra-op work,
// torch::optim::SGD, no cluster, no telemetry.
double singleReplicaImgS(const BenchOptions& o, int threads) {
    torch::set_num_threads(threads);
    torch::manual_seed(1);
    PrecisionPolicy policy;
    policy.level = *parsePrecision(o.precision);
    auto net = makeModel(*parseModelKind(o.model), policy, 1);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
    const int batch = o.ranks * o.batchPerRank;
    SyntheticCifar data(Split::Train, 1);
    auto images = torch::empty({batch, 3, 32, 32});
    auto labels = torch::empty({batch}, torch::kLong);
    std::vector<uint8_t> raw(kImageBytes);
    for (int i = 0; i < batch; ++i) {
        labels[i] = data.get(i, raw.data());
        images[i] = torch::from_blob(raw.data(), {3, 32, 32}, torch::kUInt8).to(torch::kFloat) / 255.0 - 0.5;
    }
    Clock::time_point start;
    for (int s = 0; s < o.warmup + o.steps; ++s) {
        if (s == o.warmup)
            start = Clock::now();
        opt.zero_grad();
        auto loss = torch::nn::functional::cross_entropy(net->forward(images), labels);
        loss.backward();
        opt.step();
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    return secs > 0 ? o.steps * double(batch) / secs : 0;
}

// One card's forward and backward at its batch on one thread, as in its compute slot (the median of the timed
// steps); and the telemetry's statistics over that card's gradient, one thread, the faster of two passes each
// (local: gradStats with the sketch and fingerprint per parameter; synced: normSumFingerprint per parameter).
void cardCosts(const BenchOptions& o, std::vector<double>& compute, std::vector<double>& local,
               std::vector<double>& synced) {
    torch::set_num_threads(1);
    ReplicaOptions ro;
    ro.model = *parseModelKind(o.model);
    ro.precision = *parsePrecision(o.precision);
    ro.initSeed = 1;
    Replica replica(ro);
    const int b = o.batchPerRank;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> images(size_t(b) * 3 * 32 * 32);
    for (float& x : images)
        x = normal(rng);
    std::vector<int64_t> labels(static_cast<size_t>(b));
    for (int i = 0; i < b; ++i)
        labels[size_t(i)] = i % 10;
    std::vector<double> ms;
    for (int s = 0; s < o.warmup + o.steps; ++s) {
        const auto t = Clock::now();
        replica.forwardBackward(images.data(), labels.data(), b, 1.f);
        if (s >= o.warmup)
            ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    }
    compute.push_back(median(ms));
    const auto& params = replica.params();
    const float* g = replica.grads();
    const TrainConfig defaults;
    std::vector<float> sketch(size_t(defaults.sketchDim));
    double bestLocal = 1e300, bestSynced = 1e300;
    for (int pass = 0; pass < 2; ++pass) {
        auto t = Clock::now();
        for (size_t p = 0; p < params.size(); ++p) {
            uint64_t fp = 0;
            gradStats(g + params[p].offset, params[p].numel, 1.f, p, defaults.sketchDim, sketch.data(), &fp);
        }
        bestLocal = std::min(bestLocal, std::chrono::duration<double, std::milli>(Clock::now() - t).count());
        t = Clock::now();
        for (const ParamInfo& info : params) {
            uint64_t fp = 0;
            normSumFingerprint(g + info.offset, info.numel, 1.f, &fp);
        }
        bestSynced =
            std::min(bestSynced, std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    }
    local.push_back(bestLocal);
    synced.push_back(bestSynced);
}

// The peer a user would pick instead (PyTorch DDP, gloo, one process per rank), run by bench/ddp_peer.py with
// Debian's python3-torch, so the comparison is side by side on this machine. Returns 0 when unavailable.
double ddpPeerImgS(const BenchOptions& o, std::string& note) {
    const std::string script = RANKSIGHT_SOURCE_DIR "/bench/ddp_peer.py";
    if (!std::ifstream(script)) {
        note = "bench/ddp_peer.py not found";
        return 0;
    }
    const std::string cmd =
        fmt::format("OPENBLAS_NUM_THREADS=1 /usr/bin/python3 '{}' --model {} --ranks {} --batch {} "
                    "--steps {} --warmup {} 2>&1",
                    script, o.model, o.ranks, o.batchPerRank, o.steps, o.warmup);
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) {
        note = "could not start /usr/bin/python3";
        return 0;
    }
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, pipe))
        out.append(buf, n);
    const int status = pclose(pipe);
    const auto brace = out.rfind('{');
    if (status != 0 || brace == std::string::npos) {
        note = "the DDP peer failed: " + out.substr(0, 200);
        return 0;
    }
    try {
        return nlohmann::json::parse(out.substr(brace)).at("img_s").get<double>();
    } catch (const std::exception& e) {
        note = std::string("unreadable DDP peer output: ") + e.what();
        return 0;
    }
}

} // namespace

double phaseFloorMs(const PhaseTraffic& t, const MemoryBandwidth& bw, double cardComputeMs) {
    if (t.compute)
        return cardComputeMs;
    constexpr double kGiB = double(1 << 30);
    if (t.writtenBytes > 0)
        return bw.copyGiBs > 0 ? (t.readBytes + t.writtenBytes) / (bw.copyGiBs * kGiB) * 1000 : 0;
    return bw.readGiBs > 0 ? t.readBytes / (bw.readGiBs * kGiB) * 1000 : 0;
}

TrainConfig benchConfig(const BenchOptions& o, const std::string& out) {
    TrainConfig cfg;
    cfg.model = *parseModelKind(o.model);
    cfg.ranks = o.ranks;
    cfg.batchPerRank = o.batchPerRank;
    cfg.steps = o.warmup + o.steps;
    cfg.precision = *parsePrecision(o.precision);
    cfg.lossScale = parseLossScale(!o.lossScale.empty()  ? o.lossScale
                                   : o.precision == "O0" ? "none"
                                                         : "dynamic");
    cfg.out = out;
    cfg.overwrite = true;
    cfg.evalSamples = 0;
    return cfg;
}

BenchResult runThroughputBench(const BenchOptions& o, bool progress) {
    if (!parseModelKind(o.model))
        throw std::invalid_argument(fmt::format("unknown model '{}'", o.model));
    if (!parsePrecision(o.precision))
        throw std::invalid_argument(fmt::format("unknown precision '{}'", o.precision));
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const auto out =
        (std::filesystem::temp_directory_path() / fmt::format("ranksight-bench-{}.h5", getpid())).string();
    auto say = [&](const char* what, int round) {
        if (progress)
            std::fprintf(stderr, "bench: round %d/%d: %s (%s, %d x %d, %d steps after %d warm-up)...\n",
                         round + 1, o.repeat, what, o.model.c_str(), o.ranks, o.batchPerRank, o.steps,
                         o.warmup);
    };
    // The machine is noisy: the configurations (and the DDP peer, when asked for) take turns, round after
    // round, and each figure is the median of its rounds, so a burst of outside load hits all alike.
    BenchResult r;
    BenchOptions timed = o;
    if (timed.lossScale.empty()) {
        if (progress)
            std::fprintf(stderr, "bench: the loss scale's first applied step (%s, untimed)...\n",
                         o.model.c_str());
        settleLossScale(o, out, r);
        if (r.settledScale > 0)
            timed.lossScale = fmt::format("dynamic:{}", r.settledScale);
    }
    std::vector<double> single, off, on, sharded, peer, compute, local, synced, busyOff, busyOn, busyShard,
        copyBw, readBw;
    std::vector<RunSummary> offRuns, onRuns, shardRuns;
    for (int round = 0; round < std::max(1, o.repeat); ++round) {
        say("single replica", round);
        single.push_back(singleReplicaImgS(o, o.threads > 0 ? o.threads : cores));
        say("cluster, telemetry off", round);
        off.push_back(clusterImgS(timed, false, out, &offRuns.emplace_back(), &busyOff.emplace_back()));
        say("cluster, telemetry and run file on", round);
        on.push_back(clusterImgS(timed, true, out, &onRuns.emplace_back(), &busyOn.emplace_back()));
        say("cluster, telemetry and run file on, sharded update", round);
        sharded.push_back(
            clusterImgS(timed, true, out, &shardRuns.emplace_back(), &busyShard.emplace_back(), true));
        if (o.peer && r.peerNote.empty()) {
            say("PyTorch DDP (gloo), one process per rank", round);
            peer.push_back(ddpPeerImgS(o, r.peerNote));
        }
        say("one card's compute and the statistics alone, one thread", round);
        cardCosts(o, compute, local, synced);
        say("this machine's memory speed, one thread", round);
        const MemoryBandwidth bw = measureMemoryBandwidth();
        copyBw.push_back(bw.copyGiBs);
        readBw.push_back(bw.readGiBs);
    }
    r.bandwidth = {median(copyBw), median(readBw)};
    r.trafficOff = offRuns.back().phaseTraffic;
    r.trafficOn = onRuns.back().phaseTraffic;
    r.cardComputeMs = median(compute);
    r.statsLocalMs = median(local);
    r.statsSyncedMs = median(synced);
    std::filesystem::remove(out);
    r.singleReplicaImgS = median(single);
    r.singleStepMs = r.singleReplicaImgS > 0 ? 1000.0 * o.ranks * o.batchPerRank / r.singleReplicaImgS : 0;
    r.phasesOff = phaseMedians(offRuns, o.ranks);
    r.phasesOn = phaseMedians(onRuns, o.ranks);
    r.phasesShard = phaseMedians(shardRuns, o.ranks);
    r.shardImgS = median(sharded);
    std::vector<double> writer;
    for (const RunSummary& s : onRuns)
        writer.push_back(s.writerMs / double(std::max<int64_t>(1, s.stepsCompleted)));
    r.writerMsPerStepOn = median(writer);
    if (r.peerNote.empty())
        r.peerImgS = median(peer);
    r.coresBusyOff = median(busyOff);
    r.coresBusyOn = median(busyOn);
    r.telemetryOffImgS = median(off);
    r.telemetryOnImgS = median(on);
    for (size_t k = 0; k < single.size(); ++k)
        r.rounds.push_back(
            {single[k], off[k], on[k], r.peerNote.empty() && k < peer.size() ? peer[k] : 0, sharded[k]});
    return r;
}

} // namespace rs
