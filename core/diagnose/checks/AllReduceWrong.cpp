// allreduce-wrong: the all-reduce computes a wrong result and delivers the same bytes to every rank (a
// reduction bug, or a card corrupting its share of the reduce-scatter before the all-gather copies it
// everywhere). The ranks agree with each other, so no cross-rank check sees it. Against a reference of the
// same configuration: every rank's synced gradient parts at a step where every local gradient and loss was
// still equal to the bit. A synced gradient N times the reference's is grad-sum's.
#include "diagnose/ReferenceSigns.h"
#include "diagnose/checks/Checks.h"

#include <cmath>
#include <fmt/format.h>

namespace rs::checks {
namespace {

class AllReduceWrong : public ReferenceCheck {
public:
    explicit AllReduceWrong(CheckContext& c)
        : m_R(c.facts.R) {}

    void addReference(const RunComparison& c) override {
        const Divergence* d = bitwiseFirst(c);
        if (m_R < 2 || !d || !isSyncedStatistic(d->statistic) || int(d->ranks.size()) != m_R)
            return;
        if (const Divergence* n = c.firstOf("synced_norm");
            n && n->step == d->step && n->b != 0 && std::fabs(n->a / n->b - m_R) <= 0.15 * m_R)
            return; // summed, not averaged
        m_finding = makeFinding(
            Cause::AllReduceWrong, 0.85, d->step, allRanks(m_R),
            fmt::format(
                "at step {} every rank received the same synced gradient of {}, and it differs from the "
                "reference run's ({}), although every rank's local gradient and loss were equal to the "
                "reference's bit for bit: the all-reduce computed a wrong result and delivered it to every "
                "rank, so the ranks still agree with each other",
                d->step, d->parameter, d->statistic),
            causeFix(Cause::AllReduceWrong, -1, d->step, {}));
        if (!d->parameter.empty())
            m_finding->parameters = {d->parameter};
    }

private:
    int m_R;
};

} // namespace

std::unique_ptr<Check> allReduceWrong(CheckContext& c) {
    return std::make_unique<AllReduceWrong>(c);
}

} // namespace rs::checks
