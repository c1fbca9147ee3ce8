// collective-mismatch: in the flight-recorder dumps of a job that hung (imported into the run's collectives
// table), the first collective where ranks disagree: ranks that never enqueued what the others wait in, or
// enqueued another operation, size or dtype under the same sequence number (view/CollectiveProgress.h does
// the matching, as PyTorch's fr_trace does). A run without imported dumps has nothing to compare: the check
// says nothing then (the engine's own hangs are rank-exit's, from its TIMEOUT events).
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "view/CollectiveProgress.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

using view::Disagreement;

double confidenceOf(Disagreement kind) {
    switch (kind) {
    case Disagreement::NoDump:
        return 0.5; // the ranks that would tell left nothing: the likely culprits, not a proof
    case Disagreement::Behind:
        return 0.8;
    default:
        return 0.9;
    }
}

class CollectiveMismatch : public Check {
public:
    explicit CollectiveMismatch(CheckContext& c)
        : m_facts(c.facts) {}
    const Needs& needs() const override { return needs::kNone; }

    void addCollective(const Collective& c) override { m_all.push_back(c); }

    std::string figures() const override {
        if (m_all.empty())
            return {};
        return fmt::format("flight-recorder collectives {}", m_all.size());
    }

    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        if (m_all.empty())
            return;
        const view::CollectiveReport report =
            view::analyseCollectives(m_all, view::collectiveSetup(m_facts.meta));
        if (!report.first)
            return;
        const view::FirstDisagreement& d = *report.first;
        std::string evidence = d.text();
        if (!d.frame.empty())
            evidence += fmt::format("; called at {}", d.frame);
        const int rank = d.odd.size() == 1 ? d.odd.front() : -1;
        // Only a step of the joined run is a first step: a collective enqueued before the run's first
        // recorded step (kCollectiveBeforeRun; the evidence says "before the run") or in a run that was
        // not joined has none, and saying step 0 would place the fault where it is not.
        out.push_back(makeFinding(
            Cause::CollectiveMismatch, confidenceOf(d.kind), d.step >= 0 ? d.step : kNoStep, d.odd, evidence,
            causeFix(Cause::CollectiveMismatch, rank, d.step, {}, rank >= 0 && d.step >= 0)));
    }

private:
    const RunFacts& m_facts;
    std::vector<Collective> m_all;
};

} // namespace

std::unique_ptr<Check> collectiveMismatch(CheckContext& c) {
    return std::make_unique<CollectiveMismatch>(c);
}

} // namespace rs::checks
