// loss-scale-changed: every rank's loss scale differs from the reference run's from some step on (another
// loss-scale manager, initial value or window, or a resumed job that restored another state everywhere),
// before anything else parted. Ranks that disagree with each other are loss-scale-not-restored's; this is
// the change all ranks share, which only a reference shows.
#include "diagnose/ReferenceSigns.h"
#include "diagnose/checks/Checks.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class LossScaleChanged : public ReferenceCheck {
public:
    explicit LossScaleChanged(CheckContext& c)
        : m_R(c.facts.R) {}

    void addReference(const RunComparison& c) override {
        const Divergence* d = c.firstOf("loss_scale");
        if (!d || !c.first || d->step != c.first->step || int(d->ranks.size()) != m_R)
            return;
        m_finding = makeFinding(
            Cause::LossScaleChanged, 0.9, d->step, allRanks(m_R),
            fmt::format(
                "from step {} every rank's loss scale differs from the reference run's: {:g} vs {:g}{}, "
                "and nothing parted before it",
                d->step, d->a, d->b, configurationNote(c, "loss_scale")),
            causeFix(Cause::LossScaleChanged, -1, d->step, {}));
    }

private:
    int m_R;
};

} // namespace

std::unique_ptr<Check> lossScaleChanged(CheckContext& c) {
    return std::make_unique<LossScaleChanged>(c);
}

} // namespace rs::checks
