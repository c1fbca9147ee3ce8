// eval-mode: one rank's BatchNorm running statistics stop moving while every other rank's move (training mode
// updates them on every forward; eval mode freezes them). Dated per step where the file records the
// statistics every step (/steps/buffer_fp), else over the weight rows. Its local gradients being
// systematically off the other ranks' corroborates; on its own that is too close to what different batches
// do.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "store/RunSchema.h"

#include <cmath>
#include <fmt/format.h>

namespace rs::checks {
namespace {

constexpr int64_t kFrozenSteps = 3; // steps a rank's statistics stay put alone
constexpr double kBiasLog = 0.26;   // |log norm ratio| ~ 1.3x

class EvalMode : public Check {
public:
    explicit EvalMode(CheckContext& c);
    const Needs& needs() const override { return needs::kBatchNormStatistics; }
    void addStep(const StepRecord& st, const RunExtent&) override;
    void addParamStep(const StepRecord& st) override;
    void addWeights(const WeightRecord& w) override;
    std::string figures() const override;
    std::string cannotRun(const RunExtent&) const override {
        return m_facts.meta.bufferNames.empty() ? "the model has no BatchNorm running statistics" : "";
    }
    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        if (m_facts.R < 2)
            return;
        if (m_perStep)
            concludePerStep(out);
        else
            concludeOverRows(run, out);
    }

private:
    void concludePerStep(std::vector<Finding>& out) const;
    void concludeOverRows(const RunExtent& run, std::vector<Finding>& out) const;
    // Whether rank r's local gradient norm is consistently off the median, and the evidence saying so.
    std::pair<bool, std::string> bias(int r) const;
    std::string fix(int r) const { return causeFix(Cause::EvalMode, r, -1, {}); }

    const RunFacts& m_facts;
    size_t m_R;
    // per step (/steps/buffer_fp): a streak of steps over which one rank's statistics stayed put while every
    // other rank's moved on each step
    bool m_perStep;
    bool m_initSeen = false;
    std::vector<uint64_t> m_stepPrev; // [rank] the previous step's fingerprint
    int64_t m_stepPrevStep = -1;
    std::vector<int64_t> m_still, m_stillSince; // [rank] the current streak: length, first step
    std::vector<int64_t> m_frozenSince;         // [rank] the first streak of kFrozenSteps or more: its start
    std::vector<int64_t> m_frozenLongest;       // [rank] the longest streak
    // over weight rows
    std::vector<uint64_t> m_rowFirst, m_rowPrev;
    std::vector<int64_t> m_rowChanged;   // [rank] later rows whose fingerprint moved from the first
    std::vector<int64_t> m_rowStill;     // [rank] unchanged row-to-row transitions at the end so far
    std::vector<int64_t> m_rowStillFrom; // [rank] the step of the row that streak starts at
    int64_t m_rowPrevStep = -1;
    std::vector<float> m_driftMax; // [rank]
    // local-gradient bias: log(total local norm / median over ranks)
    int64_t m_biasSteps = 0;
    std::vector<double> m_biasLogSum;
    std::vector<int64_t> m_biasHigh, m_biasLow;
};

EvalMode::EvalMode(CheckContext& c)
    : m_facts(c.facts)
    , m_R(size_t(std::max(c.facts.R, 0)))
    , m_perStep(c.facts.meta.recorded(runschema::kStepColumns[runschema::kBufferFpStep].path) &&
                !c.facts.meta.bufferNames.empty())
    , m_still(m_R, 0)
    , m_stillSince(m_R, -1)
    , m_frozenSince(m_R, kNoStep)
    , m_frozenLongest(m_R, 0)
    , m_rowChanged(m_R, 0)
    , m_rowStill(m_R, 0)
    , m_rowStillFrom(m_R, -1)
    , m_driftMax(m_R, 0)
    , m_biasLogSum(m_R, 0)
    , m_biasHigh(m_R, 0)
    , m_biasLow(m_R, 0) {}

// A rank whose statistics stay put while every other working rank's move is in eval mode from the first such
// step. A step where another rank also stood still, or a rank was not working, says nothing about one rank.
void EvalMode::addStep(const StepRecord& st, const RunExtent&) {
    if (!m_perStep)
        return;
    if (!m_stepPrev.empty() && st.step == m_stepPrevStep + 1) {
        std::vector<char> still(m_R);
        size_t stillCount = 0;
        bool allWorking = true;
        for (size_t r = 0; r < m_R; ++r) {
            still[r] = st.ranks[r].bufferFp == m_stepPrev[r];
            stillCount += still[r];
            allWorking = allWorking && st.ranks[r].state == uint8_t(CardState::Ok);
        }
        for (size_t r = 0; r < m_R; ++r) {
            // A replica whose loss is not finite has NaN statistics, which stand still without eval mode.
            if (!(allWorking && std::isfinite(st.ranks[r].loss) && still[r] && stillCount == 1)) {
                m_still[r] = 0;
                continue;
            }
            if (m_still[r]++ == 0)
                m_stillSince[r] = st.step;
            m_frozenLongest[r] = std::max(m_frozenLongest[r], m_still[r]);
            if (m_still[r] >= kFrozenSteps && m_frozenSince[r] == kNoStep)
                m_frozenSince[r] = m_stillSince[r];
        }
    }
    m_stepPrev.resize(m_R);
    for (size_t r = 0; r < m_R; ++r)
        m_stepPrev[r] = st.ranks[r].bufferFp;
    m_stepPrevStep = st.step;
}

// Systematic bias of one rank's whole local gradient against the others' (steps without an overflow).
void EvalMode::addParamStep(const StepRecord& st) {
    if (m_R < 2 || st.ranks[0].overflow != 0)
        return;
    std::vector<double> norms(m_R);
    bool ok = true;
    for (size_t r = 0; r < m_R; ++r) {
        double sq = 0;
        for (float n : st.ranks[r].localNorm)
            sq += double(n) * n;
        norms[r] = std::sqrt(sq);
        ok = ok && std::isfinite(norms[r]) && norms[r] > 0;
    }
    const double med = median(norms);
    if (!ok || !(med > 0))
        return;
    ++m_biasSteps;
    for (size_t r = 0; r < m_R; ++r) {
        const double l = std::log(norms[r] / med);
        m_biasLogSum[r] += l;
        m_biasHigh[r] += l > kBiasLog;
        m_biasLow[r] += l < -kBiasLog;
    }
}

void EvalMode::addWeights(const WeightRecord& w) {
    if (!m_initSeen && w.step <= 0) {
        m_initSeen = true;
        // The statistics before the first forward (the engine records row 0 at setup): what step 0's per-step
        // fingerprints are compared with, so eval mode from step 0 is dated step 0.
        if (m_perStep && m_stepPrev.empty() && w.bufferFp.size() == m_R) {
            m_stepPrev = w.bufferFp;
            m_stepPrevStep = w.step - 1;
        }
    }
    if (w.bufferFp.size() == m_R) {
        if (m_rowFirst.empty())
            m_rowFirst = w.bufferFp;
        else
            for (size_t r = 0; r < m_R; ++r)
                m_rowChanged[r] += w.bufferFp[r] != m_rowFirst[r];
        if (!m_rowPrev.empty())
            for (size_t r = 0; r < m_R; ++r) {
                if (w.bufferFp[r] != m_rowPrev[r])
                    m_rowStill[r] = 0;
                else if (m_rowStill[r]++ == 0)
                    m_rowStillFrom[r] = m_rowPrevStep;
            }
        m_rowPrev = w.bufferFp;
        m_rowPrevStep = w.step;
    }
    for (size_t r = 0; r < w.bufferDrift.size() && r < m_R; ++r)
        if (std::isfinite(w.bufferDrift[r]))
            m_driftMax[r] = std::max(m_driftMax[r], w.bufferDrift[r]);
}

std::pair<bool, std::string> EvalMode::bias(int r) const {
    const int64_t n = m_biasSteps;
    const double meanLog = n ? m_biasLogSum[size_t(r)] / double(n) : 0;
    const int64_t consistent = std::max(m_biasHigh[size_t(r)], m_biasLow[size_t(r)]);
    const bool biased = n >= 20 && std::fabs(meanLog) > kBiasLog && consistent * 10 >= n * 7;
    return {biased,
            n ? fmt::format("; its local gradient norm is {:.2f}x the ranks' median on average, off by "
                            "more than 1.3x on {} of {} steps",
                            std::exp(meanLog), consistent, n)
              : std::string()};
}

void EvalMode::concludePerStep(std::vector<Finding>& out) const {
    for (int r = 0; r < m_facts.R; ++r) {
        const int64_t since = m_frozenSince[size_t(r)];
        if (since == kNoStep)
            continue;
        const auto [biased, corroboration] = bias(r);
        out.push_back(
            makeFinding(Cause::EvalMode, biased ? 0.9 : 0.85, since, {r},
                        fmt::format("rank {}'s BatchNorm running statistics stopped changing at step {} "
                                    "({} steps in a row unchanged) while every other rank's changed on "
                                    "each of those steps{}",
                                    r, since, m_frozenLongest[size_t(r)], corroboration),
                        fix(r)));
    }
}

// Frozen statistics are the signal only eval mode gives. Eval mode set mid-run shows as statistics that
// stopped moving for the last two or more weight rows while every other rank's kept moving.
void EvalMode::concludeOverRows(const RunExtent& run, std::vector<Finding>& out) const {
    const int64_t later = *std::max_element(m_rowChanged.begin(), m_rowChanged.end());
    if (m_facts.meta.bufferNames.empty() || later < 1)
        return;
    for (int r = 0; r < m_facts.R; ++r) {
        const bool frozen = m_rowChanged[size_t(r)] == 0;
        bool othersMove = true, frozenLater = !frozen && m_rowStill[size_t(r)] >= 2;
        for (int q = 0; q < m_facts.R; ++q)
            if (q != r) {
                othersMove = othersMove && m_rowChanged[size_t(q)] >= 1;
                frozenLater = frozenLater && m_rowStill[size_t(q)] == 0;
            }
        if (!((frozen && othersMove) || frozenLater))
            continue;
        const auto [biased, corroboration] = bias(r);
        const int64_t since = frozen ? run.firstStep : m_rowStillFrom[size_t(r)];
        out.push_back(makeFinding(
            Cause::EvalMode, biased ? 0.85 : 0.75, since, {r},
            fmt::format("rank {}'s BatchNorm running statistics {} while every other rank's kept changing{}",
                        r,
                        frozen ? fmt::format("never changed over {} weight rows", later)
                               : fmt::format("stopped changing at step {} ({} weight rows unchanged since)",
                                             since, m_rowStill[size_t(r)]),
                        corroboration),
            fix(r)));
    }
}

std::string EvalMode::figures() const {
    std::vector<double> bias;
    for (size_t r = 0; r < m_R; ++r)
        bias.push_back(m_biasSteps ? std::exp(m_biasLogSum[r] / double(m_biasSteps)) : 1.0);
    return fmt::format("local norm / median (geometric mean) [{}]; >1.3x [{}]; <1/1.3x [{}] of {}\n"
                       "buffer rows changed per rank [{}]; max buffer drift [{}]",
                       figureList(bias), figureList(m_biasHigh), figureList(m_biasLow), m_biasSteps,
                       figureList(m_rowChanged), figureList(m_driftMax));
}

} // namespace

std::unique_ptr<Check> evalMode(CheckContext& c) {
    return std::make_unique<EvalMode>(c);
}

} // namespace rs::checks
