// rank-exit: a card left the job (it failed, or its node process is gone); its peers' timeouts are the
// consequence. Dated by the first sign: the failure, the Dead state, or the first timeout naming it.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/RankDepartures.h"

namespace rs::checks {
namespace {

class RankExit : public Check {
public:
    explicit RankExit(CheckContext& c)
        : m_departures(c.tallies.get<RankDepartures>())
        , m_planned(c.facts.meta.plannedSteps) {}
    const Needs& needs() const override { return needs::kNone; }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        const bool missing = run.lastStep + 1 < m_planned;
        for (const auto& d : m_departures.departures(run)) {
            if (!d.failed)
                continue;
            const int64_t at = d.at == kNoStep ? -1 : d.at;
            out.push_back(makeFinding(Cause::RankExit, 0.85 + (missing ? 0.05 : 0), d.at, {d.rank},
                                      d.evidence, causeFix(Cause::RankExit, d.rank, at, {})));
        }
    }

private:
    const RankDepartures& m_departures;
    int64_t m_planned;
};

} // namespace

std::unique_ptr<Check> rankExit(CheckContext& c) {
    return std::make_unique<RankExit>(c);
}

} // namespace rs::checks
