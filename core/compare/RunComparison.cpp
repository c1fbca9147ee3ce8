// RunComparison: see RunComparison.h. One pass over the aligned steps in chunks (both files stay on disk), a
// second over the aligned weight rows; every statistic is compared where both files recorded it.
#include "compare/RunComparison.h"

#include "compare/MeasuredDrift.h"
#include "reader/OpenRunFile.h"
#include "store/ColumnWords.h"
#include "store/RunReader.h"
#include "store/RunSource.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace rs {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kChunk = 128; // aligned steps per read

// The order data flows through a step: at one step the earliest statistic that parts is the one reported.
enum Stat : int {
    SBatch,
    SGlobalBatch,
    SLoss,
    SLocalFp,
    SLocalNorm,
    SLocalMax,
    SLocalSum,
    SNonfinite,
    SSyncedNorm,
    SSyncedSum,
    SSyncedFp,
    SLr,
    SLossScale,
    SSkipped,
    SBufferFp,
    SWeightFp,
    SWeightNorm,
    SCount
};

struct StatInfo {
    const char* name;
    const char* path; // the dataset both files must have recorded
    bool perParam;
};
// clang-format off
constexpr StatInfo kStats[SCount] = {
    {"sample_fp", "/steps/sample_fp", false},
    {"global_batch", "/steps/sample_ids", false},
    {"loss", "/steps/loss", false},
    {"local_fp", "/grads/local_fp", true},
    {"local_norm", "/grads/local_norm", true},
    {"local_max", "/grads/local_max", true},
    {"local_sum", "/grads/local_sum", true},
    {"nonfinite", "/grads/nonfinite", true},
    {"synced_norm", "/grads/synced_norm", true},
    {"synced_sum", "/grads/synced_sum", true},
    {"synced_fp", "/grads/synced_fp", true},
    {"lr", "/steps/lr", false},
    {"loss_scale", "/steps/loss_scale", false},
    {"skipped", "/steps/skipped", false},
    {"buffer_fp", "/steps/buffer_fp", false},
    {"weight_fp", "/weights/fp", true},
    {"weight_norm", "/weights/norm", true},
};
// clang-format on

// How far a value is past its tolerance: 0 equal, <= 1 within, +inf where equality was expected or one side
// is not finite and the other is (or NaN against a number).
double excessOf(double a, double b, double tol) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) ? 0.0 : kInf;
    if (std::isinf(a) || std::isinf(b))
        return a == b ? 0.0 : kInf;
    const double d = std::abs(a - b);
    if (d == 0)
        return 0.0;
    return tol > 0 ? d / tol : kInf;
}

// Configuration keys that decide the arithmetic, and the layout keys a rounding comparison may differ in.
constexpr const char* kArithmeticKeys[] = {
    "model",        "precision",   "loss_scale",   "data",      "seed",           "lr",    "momentum",
    "weight_decay", "lr_schedule", "warmup_steps", "broadcast", "gradients_mean", "steps", "epochs"};

std::string jsonText(const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

struct Plan {
    Expectation expectation = Expectation::Unknown;
    std::vector<std::string> differences;
    bool oneToOne = false;   // rank r against rank r
    bool sameBatch = false;  // the same samples on paired ranks (locals, per-rank loss, sample fingerprints)
    bool globalSame = false; // the same global batch (synced gradients comparable)
    double momentum = 0.9;
};

Plan makePlan(const RunMeta& a, const RunMeta& b) {
    Plan p;
    const auto ca = nlohmann::json::parse(a.configJson, nullptr, false);
    const auto cb = nlohmann::json::parse(b.configJson, nullptr, false);
    const bool haveConfigs = ca.is_object() && cb.is_object() && !ca.empty() && !cb.empty();
    bool arithmeticDiffers = false;
    if (a.source != b.source)
        p.differences.push_back(fmt::format("source: {} vs {}", a.source, b.source));
    if (a.model != b.model && !a.model.empty() && !b.model.empty()) {
        p.differences.push_back(fmt::format("model: {} vs {}", a.model, b.model));
        arithmeticDiffers = true;
    }
    if (haveConfigs) {
        for (const char* key : kArithmeticKeys) {
            const bool ina = ca.contains(key), inb = cb.contains(key);
            if (!ina && !inb)
                continue;
            if (ina && inb && ca[key] == cb[key])
                continue;
            if (std::strcmp(key, "model") == 0)
                continue; // said above from the meta
            p.differences.push_back(fmt::format("{}: {} vs {}", key, ina ? jsonText(ca[key]) : "not set",
                                                inb ? jsonText(cb[key]) : "not set"));
            arithmeticDiffers = true;
        }
        if (ca.contains("momentum") && ca["momentum"].is_number())
            p.momentum = std::clamp(ca["momentum"].get<double>(), 0.0, 0.99);
    }
    const int na = a.worldSize, nb = b.worldSize;
    const int64_t globalA = int64_t(na) * a.batchPerRank, globalB = int64_t(nb) * b.batchPerRank;
    // A source that did not record the batch (an msprobe import): the runs are taken for the same job, as the
    // user who compares them says; the expectation is then "unknown" and says so.
    const bool batchKnown = a.batchPerRank > 0 && b.batchPerRank > 0;
    p.globalSame = !batchKnown || globalA == globalB;
    p.oneToOne = na == nb;
    p.sameBatch = p.oneToOne && (!batchKnown || a.batchPerRank == b.batchPerRank);
    if (na != nb)
        p.differences.push_back(fmt::format("ranks: {} vs {}", na, nb));
    if (a.batchPerRank != b.batchPerRank)
        p.differences.push_back(fmt::format("batch per rank: {} vs {}", a.batchPerRank, b.batchPerRank));
    if (!p.globalSame) {
        p.differences.push_back(fmt::format("global batch: {} vs {}", globalA, globalB));
        arithmeticDiffers = true;
    }
    // BatchNorm normalises over each card's batch: other per-card batches compute other gradients.
    const bool batchNorm = !a.bufferNames.empty() || !b.bufferNames.empty();
    if (batchNorm && a.batchPerRank != b.batchPerRank) {
        p.differences.push_back(fmt::format("BatchNorm normalises over each card's batch ({} vs {} samples)",
                                            a.batchPerRank, b.batchPerRank));
        arithmeticDiffers = true;
    }
    const ReductionShape sa = reductionShape(a), sb = reductionShape(b);
    const bool engines = sourceKind(a) == SourceKind::Engine && sourceKind(b) == SourceKind::Engine;
    if (arithmeticDiffers)
        p.expectation = Expectation::Different;
    else if (!engines || !haveConfigs)
        p.expectation = Expectation::Unknown;
    else if (p.sameBatch && sa.name == sb.name && !sa.assumed)
        p.expectation = Expectation::Bitwise;
    else
        p.expectation = Expectation::Rounding;
    return p;
}

// Maps A's parameters to B's by name (and shape); -1 where B has no such tensor.
std::vector<int> mapParams(const RunMeta& a, const RunMeta& b, RunComparison& c) {
    std::map<std::string, int> inB;
    for (size_t j = 0; j < b.params.size(); ++j)
        inB[b.params[j].name] = int(j);
    std::vector<int> map(a.params.size(), -1);
    std::vector<bool> used(b.params.size(), false);
    for (size_t i = 0; i < a.params.size(); ++i) {
        const auto it = inB.find(a.params[i].name);
        if (it != inB.end() && b.params[size_t(it->second)].numel == a.params[i].numel) {
            map[i] = it->second;
            used[size_t(it->second)] = true;
        } else {
            c.parametersOnlyInA.push_back(a.params[i].name);
        }
    }
    for (size_t j = 0; j < b.params.size(); ++j)
        if (!used[j])
            c.parametersOnlyInB.push_back(b.params[j].name);
    return map;
}

class Comparer {
public:
    Comparer(const RunReader& a, const RunReader& b, RunComparison& c)
        : m_a(a)
        , m_b(b)
        , m_ma(a.meta())
        , m_mb(b.meta())
        , m_c(c) {}

    void run(const std::function<void(int)>& progress);
    void setDrift(const MeasuredDrift* drift) { m_drift = drift; }

private:
    const RunReader &m_a, &m_b;
    const RunMeta &m_ma, &m_mb;
    RunComparison& m_c;
    Plan m_plan;
    std::vector<int> m_pmap;               // A param -> B param
    std::vector<std::pair<int, int>> m_rp; // rank pairs (A, B)
    bool m_on[SCount] = {};                // compared
    bool m_bits[SCount] =
        {}; // a fingerprint both files recorded (read for bitwiseThrough even if not compared)
    std::vector<double> m_weightCarry; // per compared param: the update rounding carried into the weights
    int64_t m_bitwiseBroken = -1;      // first step whose fingerprints differ
    bool m_anyBits = false;            // both files recorded a fingerprint of the computation
    const MeasuredDrift* m_drift = nullptr; // used when the arithmetic differs

    // The current step's row in the map, and per-statistic candidates for this step.
    struct Candidate {
        double excess = 0, relative = 0;
        Divergence d;
    };
    std::vector<Candidate> m_stepCandidates;

    void decideStats();
    void note(Stat s, double a, double b, double tol, int rankA, int param, int64_t step);
    // A fingerprint: equal or not. Any difference also ends the bit-for-bit stretch, compared or not.
    void noteBits(Stat s, uint64_t a, uint64_t b, int rankA, int param, int64_t step);
    void record(Stat s, double ex, double rel, const Divergence& value, int rankA, int param, int64_t step);
    void finishStep(int64_t step);
    void compareStep(const StepRecord& sa, const StepRecord& sb);
    void compareGlobalBatch(const StepRecord& sa, const StepRecord& sb);
    void compareWeights(const WeightRecord& wa, const WeightRecord& wb);
    void appendLossDeviation(const StepRecord& sa, const StepRecord& sb, double meanA, double meanB);
    void brokeBits(int64_t step) {
        if (m_bitwiseBroken < 0 || step < m_bitwiseBroken)
            m_bitwiseBroken = step;
    }
    int col(int param) const; // index into perParameter of A's param, or -1
    std::vector<int> m_colOf;
};

int Comparer::col(int param) const {
    return m_colOf[size_t(param)];
}

void Comparer::decideStats() {
    const bool bitwise = m_plan.expectation == Expectation::Bitwise;
    for (int s = 0; s < SCount; ++s) {
        const StatInfo& info = kStats[s];
        const bool ra = m_ma.recorded(info.path), rb = m_mb.recorded(info.path);
        std::string why;
        if (!ra || !rb)
            why = fmt::format("not recorded by {}", !ra && !rb ? "either run" : !ra ? "A" : "B");
        else if ((s == SBatch || s == SLocalFp || s == SLocalNorm || s == SLocalMax || s == SLocalSum ||
                  s == SNonfinite || s == SBufferFp) &&
                 !m_plan.sameBatch)
            why = "the ranks of the two runs saw different batches (other card counts or per-card batches)";
        else if (s == SGlobalBatch && (m_plan.sameBatch || !m_plan.globalSame))
            why =
                m_plan.sameBatch ? "compared rank by rank (sample_fp)" : "the global batches differ in size";
        else if ((s == SLocalFp || s == SSyncedFp || s == SWeightFp || s == SBufferFp) && !bitwise)
            why = "the arithmetic differs: the bits are not expected to match (norms and sums are compared)";
        else if ((s == SSyncedNorm || s == SSyncedSum || s == SSyncedFp) && !m_plan.globalSame)
            why = "the global batches differ";
        m_bits[s] =
            ra && rb && (s == SLocalFp || s == SSyncedFp || s == SWeightFp || s == SBufferFp || s == SBatch);
        m_anyBits = m_anyBits || (m_bits[s] && s != SBatch);
        if (why.empty()) {
            m_on[s] = true;
            m_c.compared.emplace_back(info.name);
        } else {
            m_c.notCompared.push_back({info.name, why, columnWords(info.path)});
        }
    }
    // Fingerprints also say how long two runs of other arithmetic stayed bit for bit equal: read, not judged.
}

void Comparer::note(Stat s, double a, double b, double tol, int rankA, int param, int64_t step) {
    if (m_drift && !m_c.tolerance.bitwise) {
        // The spread shows that arithmetic alone makes runs skip other updates from discreteFrom on: such a
        // disagreement is not a divergence, but from it on the runs apply other updates (updatesDifferFrom).
        if ((s == SSkipped || s == SLossScale) && m_drift->discreteFrom >= 0 &&
            step >= m_drift->discreteFrom) {
            if (a != b && m_c.updatesDifferFrom < 0 && !m_c.first) // after a divergence: its consequence
                m_c.updatesDifferFrom = step;
            return;
        }
        if (tol > 0)
            tol *= m_drift->widen(step, param);
    }
    const double ex = excessOf(a, b, tol);
    const double scale = std::max({std::abs(a), std::abs(b), 1e-30});
    const double rel = std::isfinite(ex) ? std::abs(a - b) / scale : 1.0;
    Divergence d;
    d.a = a;
    d.b = b;
    d.tolerance = tol;
    record(s, ex, rel, d, rankA, param, step);
}

void Comparer::noteBits(Stat s, uint64_t a, uint64_t b, int rankA, int param, int64_t step) {
    if (a != b && s != SBatch) // other samples are other data, not other arithmetic
        brokeBits(step);
    if (!m_on[s])
        return;
    Divergence d;
    d.bits = true;
    d.aBits = a;
    d.bBits = b;
    record(s, a == b ? 0.0 : kInf, a == b ? 0.0 : 1.0, d, rankA, param, step);
}

void Comparer::record(Stat s, double ex, double rel, const Divergence& value, int rankA, int param,
                      int64_t step) {
    if (param >= 0) {
        const int k = col(param);
        float& cell = m_c.mapExcess[m_c.mapExcess.size() - m_c.perParameter.size() + size_t(k)];
        cell = std::isnan(cell) ? float(ex) : std::max(cell, float(ex));
        ParameterComparison& pc = m_c.perParameter[size_t(k)];
        if (ex > pc.worstExcess) {
            pc.worstExcess = ex;
            pc.worstStep = step;
        }
    }
    if (ex <= 1.0)
        return;
    Candidate& cand = m_stepCandidates[size_t(s) * (m_pmap.size() + 1) + size_t(param + 1)];
    const bool fresh = cand.d.statistic.empty();
    if (fresh || ex > cand.excess || (ex == cand.excess && rel > cand.relative)) {
        std::vector<int> ranks = std::move(cand.d.ranks);
        cand.d = value;
        cand.d.ranks = std::move(ranks);
        cand.d.step = step;
        cand.d.statistic = kStats[s].name;
        cand.d.parameter = param >= 0 ? m_ma.params[size_t(param)].name : "";
        cand.excess = ex;
        cand.relative = rel;
    }
    if (rankA >= 0 && std::find(cand.d.ranks.begin(), cand.d.ranks.end(), rankA) == cand.d.ranks.end())
        cand.d.ranks.push_back(rankA);
}

void Comparer::finishStep(int64_t step) {
    // Per parameter: its first divergence. Overall: the earliest statistic in flow order, then the parameter
    // furthest past its tolerance.
    const size_t perStat = m_pmap.size() + 1;
    for (int s = 0; s < SCount; ++s) {
        const Candidate* best = nullptr;
        for (size_t k = 0; k < perStat; ++k) {
            Candidate& cand = m_stepCandidates[size_t(s) * perStat + k];
            if (cand.d.statistic.empty())
                continue;
            std::sort(cand.d.ranks.begin(), cand.d.ranks.end());
            if (k > 0) {
                ParameterComparison& pc = m_c.perParameter[size_t(col(int(k) - 1))];
                if (!pc.first)
                    pc.first = cand.d;
            }
            if (!best || cand.excess > best->excess ||
                (cand.excess == best->excess && cand.relative > best->relative))
                best = &cand;
        }
        if (best && (!m_c.first || step < m_c.first->step))
            m_c.first = best->d;
        if (best && !m_c.firstOf(kStats[s].name))
            m_c.firstByStatistic.push_back(best->d);
    }
    for (Candidate& cand : m_stepCandidates)
        cand = Candidate{};
    // A skip that came with a divergence at its step is the divergence's consequence, not drift.
    if (m_c.first && m_c.updatesDifferFrom >= 0 && m_c.first->step <= m_c.updatesDifferFrom)
        m_c.updatesDifferFrom = -1;
}

void Comparer::compareGlobalBatch(const StepRecord& sa, const StepRecord& sb) {
    std::vector<int32_t> ia, ib;
    for (const RankStep& r : sa.ranks)
        ia.insert(ia.end(), r.sampleIds.begin(), r.sampleIds.end());
    for (const RankStep& r : sb.ranks)
        ib.insert(ib.end(), r.sampleIds.begin(), r.sampleIds.end());
    std::sort(ia.begin(), ia.end());
    std::sort(ib.begin(), ib.end());
    note(SGlobalBatch, ia == ib ? 0.0 : 1.0, 0.0, 0, -1, -1, sa.step);
}

void Comparer::compareStep(const StepRecord& sa, const StepRecord& sb) {
    const int64_t step = sa.step;
    const ToleranceModel& tm = m_c.tolerance;
    // After the runs applied other updates, only what no arithmetic changes is compared; the map's cells stay
    // "not judged" (NaN).
    const bool onlyExact = m_c.updatesDifferFrom >= 0 && step > m_c.updatesDifferFrom;
    if (onlyExact) {
        if (m_on[SBatch])
            for (const auto& [ra, rb] : m_rp)
                noteBits(SBatch, sa.ranks[size_t(ra)].sampleFp, sb.ranks[size_t(rb)].sampleFp, ra, -1, step);
        if (m_on[SLr])
            note(SLr, sa.lr, sb.lr, 0, -1, -1, step);
        if (m_on[SGlobalBatch])
            compareGlobalBatch(sa, sb);
        return;
    }
    // A step either run skipped (an overflow): which partial sum passes fp16's 65504 depends on the order of
    // the additions, so where the arithmetic differs its synced gradients may differ without bound. Only the
    // skipped flags, which must agree, are compared then; the same arithmetic still compares every bit.
    const auto skippedAny = [](const StepRecord& s) {
        return std::any_of(s.ranks.begin(), s.ranks.end(), [](const RankStep& r) { return r.skipped != 0; });
    };
    const bool skipped = m_on[SSkipped] && (skippedAny(sa) || skippedAny(sb));
    const bool syncedJudged = tm.bitwise || !skipped;
    // Once the spread shows overflows fall on other steps, which local gradient passes 65504 on a step
    // either run skipped is drift too.
    const bool localJudged =
        !skipped || tm.bitwise || !m_drift || m_drift->discreteFrom < 0 || step < m_drift->discreteFrom;
    // Loss: per rank on the same batches, else the means over ranks (equal global batches).
    if (m_on[SLoss]) {
        if (m_plan.sameBatch) {
            for (const auto& [ra, rb] : m_rp) {
                const double a = sa.ranks[size_t(ra)].loss, b = sb.ranks[size_t(rb)].loss;
                note(SLoss, a, b, tm.loss(a, b), ra, -1, step);
            }
        } else if (m_plan.globalSame) {
            note(SLoss, m_c.lossA.back(), m_c.lossB.back(), tm.loss(m_c.lossA.back(), m_c.lossB.back()), -1,
                 -1, step);
        }
    }
    if (m_on[SBatch])
        for (const auto& [ra, rb] : m_rp)
            noteBits(SBatch, sa.ranks[size_t(ra)].sampleFp, sb.ranks[size_t(rb)].sampleFp, ra, -1, step);
    if (m_on[SGlobalBatch])
        compareGlobalBatch(sa, sb);
    if (m_on[SLr])
        note(SLr, sa.lr, sb.lr, 0, -1, -1, step);
    for (const auto& [ra, rb] : m_rp) {
        const RankStep& x = sa.ranks[size_t(ra)];
        const RankStep& y = sb.ranks[size_t(rb)];
        if (m_on[SLossScale])
            note(SLossScale, x.lossScale, y.lossScale, 0, ra, -1, step);
        if (m_on[SSkipped])
            note(SSkipped, x.skipped, y.skipped, 0, ra, -1, step);
        if (m_bits[SBufferFp])
            noteBits(SBufferFp, x.bufferFp, y.bufferFp, ra, -1, step);
    }
    // The magnitude of the summed terms per parameter: the mean local norm over each run's ranks.
    const auto meanLocal = [](const StepRecord& s, size_t p) {
        double sum = 0;
        int n = 0;
        for (const RankStep& r : s.ranks)
            if (p < r.localNorm.size() && std::isfinite(r.localNorm[p])) {
                sum += r.localNorm[p];
                ++n;
            }
        return n ? sum / n : std::numeric_limits<double>::quiet_NaN();
    };
    for (size_t i = 0; i < m_pmap.size(); ++i) {
        const int j = m_pmap[i];
        if (j < 0)
            continue;
        const size_t pj = size_t(j);
        const int64_t numel = m_ma.params[i].numel;
        double terms = std::fmax(meanLocal(sa, i), meanLocal(sb, pj)); // NaN only when neither has one
        for (const auto& [ra, rb] : m_rp) {
            const RankStep& x = sa.ranks[size_t(ra)];
            const RankStep& y = sb.ranks[size_t(rb)];
            if (std::isnan(terms) && i < x.syncedNorm.size() && pj < y.syncedNorm.size())
                terms = std::max(std::abs(x.syncedNorm[i]), std::abs(y.syncedNorm[pj]));
            if (m_bits[SLocalFp] && m_plan.sameBatch && i < x.localFp.size() && pj < y.localFp.size())
                noteBits(SLocalFp, x.localFp[i], y.localFp[pj], ra, int(i), step);
            if (localJudged && m_on[SLocalNorm] && i < x.localNorm.size() && pj < y.localNorm.size())
                note(SLocalNorm, x.localNorm[i], y.localNorm[pj],
                     tm.norm(x.localNorm[i], x.localNorm[i], y.localNorm[pj]), ra, int(i), step);
            if (localJudged && m_on[SLocalMax] && i < x.localMax.size() && pj < y.localMax.size())
                note(SLocalMax, x.localMax[i], y.localMax[pj],
                     tm.norm(x.localNorm.empty() ? x.localMax[i] : x.localNorm[i], x.localMax[i],
                             y.localMax[pj]),
                     ra, int(i), step);
            if (localJudged && m_on[SLocalSum] && i < x.localSum.size() && pj < y.localSum.size())
                note(SLocalSum, x.localSum[i], y.localSum[pj],
                     tm.sum(x.localNorm.empty() ? 0.0 : x.localNorm[i], numel), ra, int(i), step);
            if (localJudged && m_on[SNonfinite] && i < x.nonfinite.size() && pj < y.nonfinite.size())
                note(SNonfinite, x.nonfinite[i], y.nonfinite[pj], 0, ra, int(i), step);
            if (syncedJudged && m_on[SSyncedNorm] && i < x.syncedNorm.size() && pj < y.syncedNorm.size())
                note(SSyncedNorm, x.syncedNorm[i], y.syncedNorm[pj],
                     tm.norm(terms, x.syncedNorm[i], y.syncedNorm[pj]), ra, int(i), step);
            if (syncedJudged && m_on[SSyncedSum] && i < x.syncedSum.size() && pj < y.syncedSum.size())
                note(SSyncedSum, x.syncedSum[i], y.syncedSum[pj], tm.sum(terms, numel), ra, int(i), step);
            if (m_bits[SSyncedFp] && i < x.syncedFp.size() && pj < y.syncedFp.size())
                noteBits(SSyncedFp, x.syncedFp[i], y.syncedFp[pj], ra, int(i), step);
        }
        // The update's rounding carries into the weights: lr times the synced difference, through momentum.
        if (!skipped && std::isfinite(terms) && std::isfinite(sa.lr))
            m_weightCarry[i] +=
                std::abs(double(sa.lr)) * tm.vectorBound(terms) / (1.0 - m_c.tolerance.momentum);
    }
}

void Comparer::compareWeights(const WeightRecord& wa, const WeightRecord& wb) {
    const ToleranceModel& tm = m_c.tolerance;
    if (m_c.updatesDifferFrom >= 0 && wa.step >= m_c.updatesDifferFrom)
        return; // one run applied an update the other skipped
    for (const auto& [ra, rb] : m_rp) {
        if (size_t(ra) >= wa.fp.size() || size_t(rb) >= wb.fp.size())
            continue;
        for (size_t i = 0; i < m_pmap.size(); ++i) {
            const int j = m_pmap[i];
            if (j < 0)
                continue;
            const size_t pj = size_t(j);
            if (m_bits[SWeightFp] && i < wa.fp[size_t(ra)].size() && pj < wb.fp[size_t(rb)].size())
                noteBits(SWeightFp, wa.fp[size_t(ra)][i], wb.fp[size_t(rb)][pj], ra, int(i), wa.step);
            if (m_on[SWeightNorm] && size_t(ra) < wa.norm.size() && size_t(rb) < wb.norm.size() &&
                i < wa.norm[size_t(ra)].size() && pj < wb.norm[size_t(rb)].size()) {
                const double x = wa.norm[size_t(ra)][i], y = wb.norm[size_t(rb)][pj];
                const double tol = tm.bitwise ? 0.0 : m_weightCarry[i] + tm.u * (std::abs(x) + std::abs(y));
                note(SWeightNorm, x, y, tol, ra, int(i), wa.step);
            }
        }
    }
}

// Pairs of row indices with the same step number (both lists increase).
std::vector<std::pair<int64_t, int64_t>> alignRows(const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i] == b[j])
            pairs.emplace_back(int64_t(i++), int64_t(j++));
        else if (a[i] < b[j])
            ++i;
        else
            ++j;
    }
    return pairs;
}

void Comparer::run(const std::function<void(int)>& progress) {
    m_plan = makePlan(m_ma, m_mb);
    m_c.expectation = m_plan.expectation;
    m_c.differences = m_plan.differences;
    m_c.shapeA = reductionShape(m_ma);
    m_c.shapeB = reductionShape(m_mb);
    ToleranceModel& tm = m_c.tolerance;
    tm.bitwise = m_plan.expectation == Expectation::Bitwise;
    tm.u = std::max(unitRoundoff(m_ma), unitRoundoff(m_mb));
    tm.momentum = m_plan.momentum;
    // Additions an element's sum goes through: across ranks, plus inside the card when per-card batches
    // differ (then the backward itself sums other numbers of samples).
    const bool batchesDiffer = m_ma.batchPerRank != m_mb.batchPerRank;
    const int da = m_c.shapeA.depth + (batchesDiffer ? std::max(m_ma.batchPerRank - 1, 0) : 0);
    const int db = m_c.shapeB.depth + (batchesDiffer ? std::max(m_mb.batchPerRank - 1, 0) : 0);
    tm.depthRoot = std::sqrt(double(da)) + std::sqrt(double(db));

    m_pmap = mapParams(m_ma, m_mb, m_c);
    m_colOf.assign(m_pmap.size(), -1);
    for (size_t i = 0; i < m_pmap.size(); ++i)
        if (m_pmap[i] >= 0) {
            m_colOf[i] = int(m_c.perParameter.size());
            m_c.perParameter.push_back({m_ma.params[i].name, std::nullopt, 0, -1});
        }
    if (m_c.perParameter.empty() && !m_ma.params.empty())
        throw std::invalid_argument("the runs have no parameter tensor of the same name and size");
    m_weightCarry.assign(m_pmap.size(), 0.0);
    m_stepCandidates.assign(size_t(SCount) * (m_pmap.size() + 1), Candidate{});

    const int na = m_ma.worldSize, nb = m_mb.worldSize;
    if (na == nb) {
        for (int r = 0; r < na; ++r)
            m_rp.emplace_back(r, r);
        m_c.rankMapping = "rank r of A against rank r of B";
        m_c.lossDeviationPerRank = true;
    } else {
        for (int r = 0; r < na; ++r)
            m_rp.emplace_back(r, 0);
        m_c.rankMapping = nb == 1 ? "every rank of A against B's one rank"
                                  : "every rank of A against rank 0 of B (the ranks of a healthy run agree)";
    }
    decideStats();
    m_c.fingerprints = m_anyBits;

    const std::vector<int64_t> stepsA = m_a.readStepNumbers(0, m_a.stepCount());
    const std::vector<int64_t> stepsB = m_b.readStepNumbers(0, m_b.stepCount());
    const auto pairs = alignRows(stepsA, stepsB);
    if (pairs.empty())
        throw std::invalid_argument(fmt::format("the runs have no step in common (A: {} steps, B: {} steps)",
                                                stepsA.size(), stepsB.size()));
    m_c.alignedSteps = int64_t(pairs.size());
    m_c.firstStep = stepsA[size_t(pairs.front().first)];
    m_c.lastStep = stepsA[size_t(pairs.back().first)];

    // Weight rows, aligned the same way, compared when the step pass reaches their step.
    const std::vector<int64_t> wStepsA = m_a.readWeightSteps(), wStepsB = m_b.readWeightSteps();
    const auto wPairs = alignRows(wStepsA, wStepsB);
    size_t nextW = 0;

    const size_t P = m_c.perParameter.size();
    // Both runs' rows of a chunk are in memory at once: each gets half the read budget.
    const auto chunk = size_t(std::min(stepsPerRead(m_ma, kChunk), stepsPerRead(m_mb, kChunk)) + 1) / 2;
    for (size_t k0 = 0; k0 < pairs.size(); k0 += chunk) {
        const size_t k1 = std::min(pairs.size(), k0 + chunk);
        const int64_t a0 = pairs[k0].first, a1 = pairs[k1 - 1].first + 1;
        const int64_t b0 = pairs[k0].second, b1 = pairs[k1 - 1].second + 1;
        const auto rowsA = m_a.readSteps(a0, a1, true);
        const auto rowsB = m_b.readSteps(b0, b1, true);
        // Weight rows up to this chunk's last step.
        const int64_t lastStep = stepsA[size_t(pairs[k1 - 1].first)];
        size_t wEnd = nextW;
        while (wEnd < wPairs.size() && wStepsA[size_t(wPairs[wEnd].first)] <= lastStep)
            ++wEnd;
        std::vector<WeightRecord> wA, wB;
        if (wEnd > nextW) {
            wA = m_a.readWeights(wPairs[nextW].first, wPairs[wEnd - 1].first + 1);
            wB = m_b.readWeights(wPairs[nextW].second, wPairs[wEnd - 1].second + 1);
        }
        size_t w = nextW;
        for (size_t k = k0; k < k1; ++k) {
            const StepRecord& sa = rowsA[size_t(pairs[k].first - a0)];
            const StepRecord& sb = rowsB[size_t(pairs[k].second - b0)];
            m_c.mapSteps.push_back(sa.step);
            // NaN until a statistic of the parameter is judged at this step (not judged: an overflowed step
            // of other arithmetic, a step after the runs applied other updates).
            m_c.mapExcess.resize(m_c.mapExcess.size() + P, std::numeric_limits<float>::quiet_NaN());
            const auto meanLoss = [](const StepRecord& s) {
                double sum = 0;
                for (const RankStep& r : s.ranks)
                    sum += r.loss;
                return s.ranks.empty() ? std::nan("") : sum / double(s.ranks.size());
            };
            const double la = meanLoss(sa), lb = meanLoss(sb);
            m_c.lossA.push_back(float(la));
            m_c.lossB.push_back(float(lb));
            appendLossDeviation(sa, sb, la, lb);
            compareStep(sa, sb);
            while (w < wEnd && wStepsA[size_t(wPairs[w].first)] <= sa.step) {
                if (wStepsA[size_t(wPairs[w].first)] == sa.step)
                    compareWeights(wA[size_t(wPairs[w].first - wPairs[nextW].first)],
                                   wB[size_t(wPairs[w].second - wPairs[nextW].second)]);
                ++w;
            }
            finishStep(sa.step);
            if (m_bitwiseBroken < 0 && m_anyBits)
                m_c.bitwiseThrough = sa.step;
        }
        nextW = wEnd;
        if (progress)
            progress(int(100 * k1 / pairs.size()));
    }
}

void Comparer::appendLossDeviation(const StepRecord& sa, const StepRecord& sb, double meanA, double meanB) {
    if (!m_c.lossDeviationPerRank) {
        m_c.lossDeviation.push_back(float(meanA - meanB));
        return;
    }
    for (size_t r = 0; r < sa.ranks.size(); ++r)
        m_c.lossDeviation.push_back(r < sb.ranks.size() ? float(double(sa.ranks[r].loss) - sb.ranks[r].loss)
                                                        : std::numeric_limits<float>::quiet_NaN());
}

} // namespace

const Divergence* RunComparison::firstOf(std::string_view statistic) const {
    for (const Divergence& d : firstByStatistic)
        if (d.statistic == statistic)
            return &d;
    return nullptr;
}

bool RunComparison::partedAt(std::string_view statistic, int64_t step) const {
    const Divergence* d = firstOf(statistic);
    return d && d->step == step;
}

bool isLocalStatistic(std::string_view s) {
    return s.substr(0, 6) == "local_" || s == "nonfinite";
}

bool isSyncedStatistic(std::string_view s) {
    return s.substr(0, 7) == "synced_";
}

double Divergence::excess() const {
    if (bits)
        return aBits == bBits ? 0.0 : kInf;
    return excessOf(a, b, tolerance);
}

const char* expectationName(Expectation e) {
    switch (e) {
    case Expectation::Bitwise:
        return "bitwise";
    case Expectation::Rounding:
        return "rounding";
    case Expectation::Unknown:
        return "unknown";
    case Expectation::Different:
        return "different";
    }
    return "?";
}

std::unique_ptr<RunReader> openReference(const std::string& path, const char* role) {
    try {
        return openRunFile(path);
    } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("{}: {}", role, e.what())); // e names the file
    }
}

RunComparison compareRuns(const RunReader& a, const RunReader& b, const std::function<void(int)>& progress,
                          const std::vector<std::pair<std::string, const RunReader*>>& spread) {
    RunComparison c;
    const int share = spread.empty() ? 0 : 50;
    MeasuredDrift drift;
    if (!spread.empty())
        drift = measureDrift(a, b, spread, c.spreads, progress, share);
    Comparer comparer(a, b, c);
    if (!spread.empty())
        comparer.setDrift(&drift);
    comparer.run([&](int pct) {
        if (progress)
            progress(share + pct * (100 - share) / 100);
    });
    c.spreadUsed = !spread.empty() && !c.tolerance.bitwise;
    return c;
}

RunComparison compareWithReference(const RunReader& a, const RunReader& reference,
                                   const std::vector<std::string>& spreadPaths,
                                   const std::function<void(int)>& progress) {
    std::vector<std::unique_ptr<RunReader>> readers;
    std::vector<std::pair<std::string, const RunReader*>> spread;
    for (const std::string& path : spreadPaths) {
        readers.push_back(openReference(path, "spread reference"));
        spread.emplace_back(path, readers.back().get());
    }
    return compareRuns(a, reference, progress, spread);
}

RunComparison compareWithReference(const RunReader& a, const std::string& referencePath,
                                   const std::vector<std::string>& spreadPaths,
                                   const std::function<void(int)>& progress) {
    return compareWithReference(a, *openReference(referencePath), spreadPaths, progress);
}

} // namespace rs
