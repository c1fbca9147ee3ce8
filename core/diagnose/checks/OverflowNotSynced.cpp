// overflow-not-synced: the ranks decide on skipping an overflowed update from their own status instead of
// an all-reduced one. Strong sign: ranks disagreed on skipping (their weights then part). Weak sign, when
// they never disagreed: a step applied with no overflow flagged anywhere and a non-finite loss right after
// it, an overflow every rank's unsynchronised check missed (the synced check of a healthy run flags any
// non-finite synced gradient, so a finite update follows). Only meaningful where a loss scale would skip.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/LossScaleSeen.h"
#include "diagnose/tally/SkipAgreement.h"
#include "diagnose/tally/WeightDivergence.h"

#include <cmath>
#include <fmt/format.h>

namespace rs::checks {
namespace {

class OverflowNotSynced : public Check {
public:
    explicit OverflowNotSynced(CheckContext& c)
        : m_facts(c.facts)
        , m_scale(c.tallies.get<LossScaleSeen>())
        , m_skips(c.tallies.get<SkipAgreement>())
        , m_weights(c.tallies.get<WeightDivergence>()) {}
    const Needs& needs() const override { return needs::kLossScaling; }

    void addStep(const StepRecord& st, const RunExtent&) override {
        bool clean = true, lossFinite = true;
        for (const auto& x : st.ranks) {
            clean = clean && !x.overflow && !x.skipped;
            lossFinite = lossFinite && std::isfinite(x.loss);
        }
        if (m_prevCleanApplied && st.step == m_prevStep + 1 && !lossFinite) {
            ++m_nanAfterClean;
            m_firstNanAfterClean.note(m_prevStep, -1, -1, 0);
        }
        m_prevCleanApplied = clean && lossFinite;
        m_prevStep = st.step;
    }

    std::string figures() const override {
        return fmt::format("skip mismatch steps {}; applied steps followed by a non-finite loss {}",
                           m_skips.mismatchSteps, m_nanAfterClean);
    }

    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        if (m_skips.mismatchSteps > 0)
            concludeSplit(out);
        else if (m_nanAfterClean > 0 && m_facts.meta.lossScale != "none" && m_scale.scaleMax > 1)
            out.push_back(makeFinding(
                Cause::OverflowNotSynced, 0.6, m_firstNanAfterClean.step, allRanks(m_facts.R),
                fmt::format(
                    "step {} was applied with no overflow flagged on any rank, and the loss was non-finite "
                    "on the next step ({} such step(s)): the update carried an overflow that the ranks' "
                    "own status checks missed; a status all-reduced after the gradient all-reduce flags it "
                    "and skips the step",
                    m_firstNanAfterClean.step, m_nanAfterClean),
                causeFix(Cause::OverflowNotSynced, -1, m_firstNanAfterClean.step, {}, false)));
    }

private:
    void concludeSplit(std::vector<Finding>& out) const {
        std::vector<int> ranks;
        int64_t diverge = kNoStep;
        for (int r = 0; r < m_facts.R; ++r)
            if (m_skips.minority[size_t(r)] > 0) {
                ranks.push_back(r);
                diverge = std::min(diverge, m_weights.since[size_t(r)]);
            }
        const FirstSeen& first = m_skips.first;
        out.push_back(makeFinding(
            Cause::OverflowNotSynced, diverge != kNoStep ? 0.95 : 0.9, first.step, ranks,
            fmt::format(
                "ranks disagreed on skipping the update on {} step(s), first at step {} (rank {} alone){}; "
                "with an all-reduced overflow status every rank skips the same steps",
                m_skips.mismatchSteps, first.step, first.rank,
                diverge != kNoStep ? fmt::format("; weights differ across ranks from step {}", diverge)
                                   : std::string()),
            causeFix(Cause::OverflowNotSynced, first.rank, first.step, {})));
    }

    const RunFacts& m_facts;
    const LossScaleSeen& m_scale;
    const SkipAgreement& m_skips;
    const WeightDivergence& m_weights;
    bool m_prevCleanApplied = false;
    int64_t m_prevStep = -1;
    int64_t m_nanAfterClean = 0;
    FirstSeen m_firstNanAfterClean;
};

} // namespace

std::unique_ptr<Check> overflowNotSynced(CheckContext& c) {
    return std::make_unique<OverflowNotSynced>(c);
}

} // namespace rs::checks
