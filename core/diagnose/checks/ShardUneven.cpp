// shard-uneven: peers timed out waiting for a rank that recorded no failure. It finished its own loop: its
// loader ran out of batches first, which an epoch boundary or a short last batch at that step corroborates.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/RankDepartures.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class ShardUneven : public Check {
public:
    explicit ShardUneven(CheckContext& c)
        : m_departures(c.tallies.get<RankDepartures>()) {}
    const Needs& needs() const override { return needs::kNone; }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        for (const auto& d : m_departures.departures(run)) {
            if (d.failed)
                continue;
            out.push_back(makeFinding(
                Cause::ShardUneven, d.epochEdge ? 0.85 : 0.75, d.at, {d.rank},
                d.evidence +
                    fmt::format("; rank {} recorded no failure{}: it ended its epoch early, its shard "
                                "ran out of batches first",
                                d.rank,
                                d.epochEdge ? " and the timeout falls on an epoch boundary or after a "
                                              "short batch"
                                            : ""),
                causeFix(Cause::ShardUneven, d.rank, d.at, {})));
        }
    }

private:
    const RankDepartures& m_departures;
};

} // namespace

std::unique_ptr<Check> shardUneven(CheckContext& c) {
    return std::make_unique<ShardUneven>(c);
}

} // namespace rs::checks
