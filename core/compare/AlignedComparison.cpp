// AlignedComparison: see AlignedComparison.h. The plan and the table decide which statistic rows are compared
// and which fingerprints are read; one pass over the aligned steps (and the weight rows at them) then judges
// every row where it is read: per step or rank, per parameter and rank pair, per weight row.
#include "compare/AlignedComparison.h"

#include "compare/AlignedRuns.h"
#include "compare/ComparedStatistics.h"
#include "compare/ComparisonPlan.h"
#include "compare/DivergenceRecorder.h"
#include "compare/MeasuredDrift.h"
#include "store/ColumnWords.h"
#include "store/RunReader.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <stdexcept>

namespace rs {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kLossRow = statisticOfStepColumn(runschema::kLoss);
constexpr size_t kSkippedRow = statisticOfStepColumn(runschema::kSkipped);
static_assert(kLossRow < kStatisticCount && kSkippedRow < kStatisticCount);

// Which of a step's values are judged.
struct StepGates {
    bool onlyExact = false; // after the runs applied other updates: only what no arithmetic changes
    bool skipped = false;   // either run skipped the update (an overflow)
    bool localJudged = true, syncedJudged = true;
};

// What a tolerance is derived from besides the two values (StatTolerance).
struct ToleranceInputs {
    const RankStep* x = nullptr; // A's rank
    size_t param = 0;            // A's parameter
    int64_t numel = 0;
    double terms = kNaN; // the magnitude of the synced gradient's summed terms
    double carry = 0;    // the updates' rounding carried into the weights so far
};

double localTerms(const ToleranceInputs& in, double fallback) {
    if (!in.x) // not a statistic of a rank's gradient
        return fallback;
    const std::vector<float>& norms = in.x->localNorm;
    return norms.empty() || in.param >= norms.size() ? fallback : double(norms[in.param]);
}

double toleranceOf(StatTolerance rule, const ToleranceModel& tm, double a, double b,
                   const ToleranceInputs& in) {
    switch (rule) {
    case StatTolerance::Exact:
        return 0;
    case StatTolerance::Loss:
        return tm.loss(a, b);
    case StatTolerance::LocalNorm:
        return tm.norm(localTerms(in, a), a, b);
    case StatTolerance::LocalSum:
        return tm.sum(localTerms(in, 0.0), in.numel);
    case StatTolerance::SyncedNorm:
        return tm.norm(in.terms, a, b);
    case StatTolerance::SyncedSum:
        return tm.sum(in.terms, in.numel);
    case StatTolerance::WeightCarry:
        return tm.bitwise ? 0.0 : in.carry + tm.u * (std::abs(a) + std::abs(b));
    }
    return 0;
}

// The mean over a step's ranks of a per-rank statistic (NaN: no rank).
double rankMean(const Statistic& st, const StepRecord& s) {
    double sum = 0;
    for (size_t r = 0; r < s.ranks.size(); ++r)
        sum += st.stepCell(s, r, 0).value;
    return s.ranks.empty() ? kNaN : sum / double(s.ranks.size());
}

// The magnitude of the terms summed into a parameter's synced gradient: the mean local norm over the ranks.
double meanLocalNorm(const StepRecord& s, size_t p) {
    double sum = 0;
    int n = 0;
    for (const RankStep& r : s.ranks)
        if (p < r.localNorm.size() && std::isfinite(r.localNorm[p])) {
            sum += r.localNorm[p];
            ++n;
        }
    return n ? sum / n : kNaN;
}

bool anySkipped(const StepRecord& s) {
    return std::any_of(s.ranks.begin(), s.ranks.end(), [](const RankStep& r) { return r.skipped != 0; });
}

// Whether the two steps' ranks together saw the same samples.
bool sameSamples(const StepRecord& sa, const StepRecord& sb) {
    const auto ids = [](const StepRecord& s) {
        std::vector<int32_t> all;
        for (const RankStep& r : s.ranks)
            all.insert(all.end(), r.sampleIds.begin(), r.sampleIds.end());
        std::sort(all.begin(), all.end());
        return all;
    };
    return ids(sa) == ids(sb);
}

class AlignedComparison {
public:
    AlignedComparison(const RunReader& a, const RunReader& b, const MeasuredDrift* drift);
    RunComparison run(const std::function<void(int)>& progress);

private:
    const RunReader &m_a, &m_b;
    const RunMeta &m_ma, &m_mb;
    const MeasuredDrift* m_drift; // null, or used where the arithmetic differs
    RunComparison m_c;
    ComparisonPlan m_plan;
    std::vector<int> m_pmap;                  // A param -> B param
    std::vector<std::pair<int, int>> m_rp;    // rank pairs (A, B)
    std::array<bool, kStatisticCount> m_on{}; // compared
    std::array<bool, kStatisticCount>
        m_bits{}; // a fingerprint both files recorded (read even if not compared)
    std::vector<size_t> m_stepRows, m_paramRows, m_weightRows; // the table's rows by where they are read
    std::vector<double> m_weightCarry; // per param of A: the update rounding carried into the weights
    int64_t m_bitwiseBroken = -1;      // first step whose fingerprints differ
    std::unique_ptr<DivergenceRecorder> m_log;

    void planParameters();
    void decideStatistics();
    bool definedAlike(const Statistic& st) const;
    std::string whyNotCompared(const Statistic& st, bool recordedA, bool recordedB) const;
    bool readsBits(size_t s) const;
    void judge(size_t s, double a, double b, double tol, int rankA, int param, int64_t step);
    void judgeBits(size_t s, uint64_t a, uint64_t b, int rankA, int param, int64_t step);
    void judgeCell(size_t s, const StatCell& a, const StatCell& b, const ToleranceInputs& in, int rankA,
                   int param, int64_t step);
    void visitStep(const StepRecord& sa, const StepRecord& sb, std::span<const AlignedWeights> weights);
    void recordLoss(const StepRecord& sa, const StepRecord& sb);
    StepGates gates(const StepRecord& sa, const StepRecord& sb) const;
    void compareStep(const StepRecord& sa, const StepRecord& sb);
    void compareStepStatistic(size_t s, const StepRecord& sa, const StepRecord& sb);
    void compareParameter(size_t i, const StepRecord& sa, const StepRecord& sb, const StepGates& g);
    void compareWeights(const WeightRecord& wa, const WeightRecord& wb);
};

AlignedComparison::AlignedComparison(const RunReader& a, const RunReader& b, const MeasuredDrift* drift)
    : m_a(a)
    , m_b(b)
    , m_ma(a.meta())
    , m_mb(b.meta())
    , m_drift(drift) {
    m_plan = planComparison(m_ma, m_mb);
    m_c.expectation = m_plan.expectation;
    m_c.differences = m_plan.differences;
    m_c.shapeA = reductionShape(m_ma);
    m_c.shapeB = reductionShape(m_mb);
    m_c.tolerance = toleranceModel(m_ma, m_mb, m_plan);
    planParameters();
    m_rp = rankPairs(m_ma, m_mb);
    m_c.rankMapping = rankMappingText(m_ma, m_mb);
    m_c.lossDeviationPerRank = m_ma.worldSize == m_mb.worldSize;
    decideStatistics();
    for (size_t s = 0; s < kStatisticCount; ++s) {
        const Statistic& st = kStatistics[s];
        (st.phase == StatPhase::Weight ? m_weightRows
         : st.perParameter()           ? m_paramRows
                                       : m_stepRows)
            .push_back(s);
    }
}

void AlignedComparison::planParameters() {
    m_pmap = mapParameters(m_ma, m_mb, m_c.parametersOnlyInA, m_c.parametersOnlyInB);
    std::vector<int> column(m_pmap.size(), -1);
    std::vector<std::string> names;
    for (size_t i = 0; i < m_pmap.size(); ++i) {
        names.push_back(m_ma.params[i].name);
        if (m_pmap[i] >= 0) {
            column[i] = int(m_c.perParameter.size());
            m_c.perParameter.push_back({m_ma.params[i].name, std::nullopt, 0, -1});
        }
    }
    if (m_c.perParameter.empty() && !m_ma.params.empty())
        throw std::invalid_argument("the runs have no parameter tensor of the same name and size");
    m_weightCarry.assign(m_pmap.size(), 0.0);
    m_log = std::make_unique<DivergenceRecorder>(m_c, std::move(names), std::move(column));
}

// The two files define the statistic alike: only local_fp has had two definitions (local_fp_version).
bool AlignedComparison::definedAlike(const Statistic& st) const {
    return st.phase == StatPhase::Weight || st.column != runschema::kLocalFp ||
           m_ma.localFpVersion == m_mb.localFpVersion;
}

std::string AlignedComparison::whyNotCompared(const Statistic& st, bool ra, bool rb) const {
    if (!ra || !rb)
        return fmt::format("not recorded by {}", !ra && !rb ? "either run" : !ra ? "A" : "B");
    if (!definedAlike(st))
        return fmt::format("the files define it differently (local_fp_version {} vs {})", m_ma.localFpVersion,
                           m_mb.localFpVersion);
    if (st.pairing == StatPairing::SameRankBatches && !m_plan.sameBatch)
        return "the ranks of the two runs saw different batches (other card counts or per-card batches)";
    if (st.pairing == StatPairing::OtherRankBatches && (m_plan.sameBatch || !m_plan.globalSame))
        return m_plan.sameBatch ? "compared rank by rank (sample_fp)" : "the global batches differ in size";
    if (st.kind == StatKind::Fingerprint && m_plan.expectation != Expectation::Bitwise)
        return "the arithmetic differs: the bits are not expected to match (norms and sums are compared)";
    if (st.pairing == StatPairing::SameGlobalBatch && !m_plan.globalSame)
        return "the global batches differ";
    return {};
}

// Fingerprints also say how long two runs of other arithmetic stayed bit for bit equal: read, not judged.
void AlignedComparison::decideStatistics() {
    for (size_t s = 0; s < kStatisticCount; ++s) {
        const Statistic& st = kStatistics[s];
        const bool ra = m_ma.recorded(st.path()), rb = m_mb.recorded(st.path());
        const std::string why = whyNotCompared(st, ra, rb);
        m_bits[s] = ra && rb && st.bits() && definedAlike(st);
        m_c.fingerprints = m_c.fingerprints || (m_bits[s] && st.kind == StatKind::Fingerprint);
        m_on[s] = why.empty();
        if (m_on[s])
            m_c.compared.emplace_back(st.name);
        else
            m_c.notCompared.push_back({st.name, why, columnWords(st.path())});
    }
}

// A local fingerprint of other batches is not the same computation: not read.
bool AlignedComparison::readsBits(size_t s) const {
    return m_bits[s] && (kStatistics[s].phase != StatPhase::Local || m_plan.sameBatch);
}

void AlignedComparison::judge(size_t s, double a, double b, double tol, int rankA, int param, int64_t step) {
    if (m_drift && !m_c.tolerance.bitwise) {
        // The spread shows that arithmetic alone makes runs skip other updates from discreteFrom on: such a
        // disagreement is not a divergence, but from it on the runs apply other updates (updatesDifferFrom).
        if (kStatistics[s].discrete && m_drift->discreteFrom >= 0 && step >= m_drift->discreteFrom) {
            if (a != b && m_c.updatesDifferFrom < 0 && !m_c.first) // after a divergence: its consequence
                m_c.updatesDifferFrom = step;
            return;
        }
        if (tol > 0)
            tol *= m_drift->widen(step, param);
    }
    const double ex = excessOf(a, b, tol);
    const double scale = std::max({std::abs(a), std::abs(b), 1e-30});
    Divergence d;
    d.a = a;
    d.b = b;
    d.tolerance = tol;
    m_log->record(s, ex, std::isfinite(ex) ? std::abs(a - b) / scale : 1.0, d, rankA, param, step);
}

// A fingerprint: equal or not. Any difference also ends the bit-for-bit stretch, compared or not (other
// samples are other data, not other arithmetic).
void AlignedComparison::judgeBits(size_t s, uint64_t a, uint64_t b, int rankA, int param, int64_t step) {
    if (a != b && kStatistics[s].kind == StatKind::Fingerprint &&
        (m_bitwiseBroken < 0 || step < m_bitwiseBroken))
        m_bitwiseBroken = step;
    if (!m_on[s])
        return;
    Divergence d;
    d.bits = true;
    d.aBits = a;
    d.bBits = b;
    m_log->record(s, a == b ? 0.0 : kInf, a == b ? 0.0 : 1.0, d, rankA, param, step);
}

void AlignedComparison::judgeCell(size_t s, const StatCell& a, const StatCell& b, const ToleranceInputs& in,
                                  int rankA, int param, int64_t step) {
    if (!a.recorded || !b.recorded)
        return;
    const Statistic& st = kStatistics[s];
    if (st.bits()) {
        if (readsBits(s))
            judgeBits(s, a.bits, b.bits, rankA, param, step);
    } else if (m_on[s]) {
        judge(s, a.value, b.value, toleranceOf(st.tolerance, m_c.tolerance, a.value, b.value, in), rankA,
              param, step);
    }
}

RunComparison AlignedComparison::run(const std::function<void(int)>& progress) {
    const AlignedRuns aligned(m_a, m_b);
    m_c.alignedSteps = aligned.count();
    m_c.firstStep = aligned.firstStep();
    m_c.lastStep = aligned.lastStep();
    aligned.forEach([this](const StepRecord& sa, const StepRecord& sb,
                           std::span<const AlignedWeights> weights) { visitStep(sa, sb, weights); },
                    progress);
    return std::move(m_c);
}

void AlignedComparison::visitStep(const StepRecord& sa, const StepRecord& sb,
                                  std::span<const AlignedWeights> weights) {
    m_log->beginStep(sa.step);
    recordLoss(sa, sb);
    compareStep(sa, sb);
    for (const AlignedWeights& w : weights)
        compareWeights(w.a, w.b);
    m_log->finishStep(sa.step);
    if (m_bitwiseBroken < 0 && m_c.fingerprints)
        m_c.bitwiseThrough = sa.step;
}

// The loss lines of the window: each run's mean over its ranks, and A's deviation from B, rank by rank where
// the ranks pair (RunComparison::lossDeviation).
void AlignedComparison::recordLoss(const StepRecord& sa, const StepRecord& sb) {
    const double la = rankMean(kStatistics[kLossRow], sa), lb = rankMean(kStatistics[kLossRow], sb);
    m_c.lossA.push_back(float(la));
    m_c.lossB.push_back(float(lb));
    if (!m_c.lossDeviationPerRank) {
        m_c.lossDeviation.push_back(float(la - lb));
        return;
    }
    for (size_t r = 0; r < sa.ranks.size(); ++r)
        m_c.lossDeviation.push_back(r < sb.ranks.size() ? float(double(sa.ranks[r].loss) - sb.ranks[r].loss)
                                                        : std::numeric_limits<float>::quiet_NaN());
}

StepGates AlignedComparison::gates(const StepRecord& sa, const StepRecord& sb) const {
    StepGates g;
    const bool bitwise = m_c.tolerance.bitwise;
    g.onlyExact = m_c.updatesDifferFrom >= 0 && sa.step > m_c.updatesDifferFrom;
    // A step either run skipped (an overflow): which partial sum passes fp16's 65504 depends on the order of
    // the additions, so where the arithmetic differs its synced gradients may differ without bound. Only the
    // skipped flags, which must agree, are compared then; the same arithmetic still compares every bit.
    g.skipped = m_on[kSkippedRow] && (anySkipped(sa) || anySkipped(sb));
    g.syncedJudged = bitwise || !g.skipped;
    // Once the spread shows overflows fall on other steps, which local gradient passes 65504 on a step
    // either run skipped is drift too.
    g.localJudged =
        !g.skipped || bitwise || !m_drift || m_drift->discreteFrom < 0 || sa.step < m_drift->discreteFrom;
    return g;
}

// After the runs applied other updates, only what no arithmetic changes is compared (exactInput); the map's
// cells stay "not judged" (NaN).
void AlignedComparison::compareStep(const StepRecord& sa, const StepRecord& sb) {
    const StepGates g = gates(sa, sb);
    for (size_t s : m_stepRows)
        if (!g.onlyExact || kStatistics[s].exactInput)
            compareStepStatistic(s, sa, sb);
    if (g.onlyExact)
        return;
    for (size_t i = 0; i < m_pmap.size(); ++i)
        compareParameter(i, sa, sb, g);
}

// A statistic of the step (a scalar), of the step's samples (a set) or of each rank.
void AlignedComparison::compareStepStatistic(size_t s, const StepRecord& sa, const StepRecord& sb) {
    const Statistic& st = kStatistics[s];
    const int64_t step = sa.step;
    if (st.kind == StatKind::SampleSet) {
        if (m_on[s])
            judge(s, sameSamples(sa, sb) ? 0.0 : 1.0, 0.0, 0, -1, -1, step);
    } else if (st.layout().row == runschema::Row::Scalar) {
        judgeCell(s, st.stepCell(sa, 0, 0), st.stepCell(sb, 0, 0), {}, -1, -1, step);
    } else if (st.pairing == StatPairing::RanksElseMeans && !m_plan.sameBatch) {
        // The means over ranks, as the window shows them (float).
        const StatCell a{true, double(float(rankMean(st, sa)))}, b{true, double(float(rankMean(st, sb)))};
        if (m_plan.globalSame)
            judgeCell(s, a, b, {}, -1, -1, step);
    } else {
        for (const auto& [ra, rb] : m_rp)
            judgeCell(s, st.stepCell(sa, size_t(ra), 0), st.stepCell(sb, size_t(rb), 0), {}, ra, -1, step);
    }
}

// One parameter on every rank pair, then the rounding its update carries into the weights.
void AlignedComparison::compareParameter(size_t i, const StepRecord& sa, const StepRecord& sb,
                                         const StepGates& g) {
    if (m_pmap[i] < 0)
        return;
    const size_t pj = size_t(m_pmap[i]);
    ToleranceInputs in{nullptr, i, m_ma.params[i].numel,
                       std::fmax(meanLocalNorm(sa, i), meanLocalNorm(sb, pj))};
    for (const auto& [ra, rb] : m_rp) {
        const RankStep &x = sa.ranks[size_t(ra)], &y = sb.ranks[size_t(rb)];
        in.x = &x;
        if (std::isnan(in.terms) && i < x.syncedNorm.size() && pj < y.syncedNorm.size()) // no local norms
            in.terms = std::max(std::abs(x.syncedNorm[i]), std::abs(y.syncedNorm[pj]));
        for (size_t s : m_paramRows) {
            const Statistic& st = kStatistics[s];
            if (st.kind == StatKind::Value &&
                !(st.phase == StatPhase::Local ? g.localJudged : g.syncedJudged))
                continue;
            judgeCell(s, st.stepCell(sa, size_t(ra), i), st.stepCell(sb, size_t(rb), pj), in, ra, int(i),
                      sa.step);
        }
    }
    // The update's rounding carries into the weights: lr times the synced difference, through momentum.
    const ToleranceModel& tm = m_c.tolerance;
    if (!g.skipped && std::isfinite(in.terms) && std::isfinite(sa.lr))
        m_weightCarry[i] += std::abs(double(sa.lr)) * tm.vectorBound(in.terms) / (1.0 - tm.momentum);
}

void AlignedComparison::compareWeights(const WeightRecord& wa, const WeightRecord& wb) {
    if (m_c.updatesDifferFrom >= 0 && wa.step >= m_c.updatesDifferFrom)
        return; // one run applied an update the other skipped
    for (const auto& [ra, rb] : m_rp)
        for (size_t i = 0; i < m_pmap.size(); ++i) {
            if (m_pmap[i] < 0)
                continue;
            const size_t pj = size_t(m_pmap[i]);
            ToleranceInputs in;
            in.carry = m_weightCarry[i];
            for (size_t s : m_weightRows) {
                const Statistic& st = kStatistics[s];
                judgeCell(s, st.weightCell(wa, size_t(ra), i), st.weightCell(wb, size_t(rb), pj), in, ra,
                          int(i), wa.step);
            }
        }
}

} // namespace

RunComparison compareAligned(const RunReader& a, const RunReader& b, const MeasuredDrift* drift,
                             const std::function<void(int)>& progress) {
    return AlignedComparison(a, b, drift).run(progress);
}

} // namespace rs
