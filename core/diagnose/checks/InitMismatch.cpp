// init-mismatch: weights differ across ranks in the first weight row, before any update. A seed or broadcast
// problem changes (nearly) every tensor, so at least half of them must differ.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/WeightDivergence.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class InitMismatch : public Check {
public:
    explicit InitMismatch(CheckContext& c)
        : m_facts(c.facts)
        , m_differ(size_t(std::max(c.facts.R, 0)), 0) {}
    const Needs& needs() const override { return needs::kWeightConsistency; }

    void addWeights(const WeightRecord& w) override {
        if (m_checked || w.step > 0)
            return;
        m_checked = true;
        m_step = w.step;
        for (int r = 1; r < m_facts.R; ++r)
            m_differ[size_t(r)] = paramsDiffering(m_facts, w, r);
    }

    std::string cannotRun(const RunExtent& run) const override {
        if (run.weightRows == 0)
            return "no weight row is recorded yet";
        if (!m_checked)
            return "no weight row at step 0, so weights cannot be compared before the first update";
        return "";
    }

    std::string figures() const override {
        return fmt::format("init params differing [{}]", figureList(m_differ));
    }

    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        if (!m_checked || m_facts.P == 0)
            return;
        std::vector<int> ranks;
        int worst = 0;
        for (int r = 1; r < m_facts.R; ++r)
            if (m_differ[size_t(r)] > 0) {
                ranks.push_back(r);
                worst = std::max(worst, m_differ[size_t(r)]);
            }
        if (ranks.empty() || worst < std::max(1, m_facts.P / 2))
            return;
        ranks.insert(ranks.begin(), 0);
        const int64_t at = std::max<int64_t>(0, m_step);
        std::string evidence =
            fmt::format("weights differ across ranks at step {} already, before any update: up "
                        "to {} of {} parameter tensors differ from rank 0's (ranks {})",
                        at, worst, m_facts.P, joinRanks(ranks));
        if (!m_facts.keys.weightFp)
            evidence +=
                fmt::format("; the source ({}) records no fingerprints, so ranks were compared on their "
                            "weight norms as recorded (equal to the file's rounding)",
                            m_facts.meta.source);
        out.push_back(makeFinding(Cause::InitMismatch, 0.9, at, ranks, evidence,
                                  causeFix(Cause::InitMismatch, -1, at, {})));
    }

private:
    const RunFacts& m_facts;
    bool m_checked = false;
    int64_t m_step = -1;
    std::vector<int> m_differ; // [rank] parameters whose first-row key differs from rank 0's
};

} // namespace

std::unique_ptr<Check> initMismatch(CheckContext& c) {
    return std::make_unique<InitMismatch>(c);
}

} // namespace rs::checks
