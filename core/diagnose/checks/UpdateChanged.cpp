// update-changed: every rank applies another update than the reference run does (a learning rate, its
// schedule, momentum, weight decay or clipping changed on all ranks alike), so the ranks agree with each
// other and no cross-rank check can see it. Named against a reference: the recorded learning rate parts
// first, or, against a reference of the same configuration, every rank's loss and local gradient part at a
// step although every synced gradient of the step before was equal to the bit (the weights going into the
// step differ: the previous update did).
#include "diagnose/ReferenceSigns.h"
#include "diagnose/checks/Checks.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class UpdateChanged : public ReferenceCheck {
public:
    explicit UpdateChanged(CheckContext& c)
        : m_R(c.facts.R) {}

    void addReference(const RunComparison& c) override {
        if (!c.first)
            return;
        if (const Divergence* lr = c.firstOf("lr"); lr && lr->step == c.first->step) {
            m_finding = makeFinding(
                Cause::UpdateChanged, 0.9, lr->step, allRanks(m_R),
                fmt::format("from step {} the learning rate differs from the reference run's on every rank: "
                            "{:.6g} vs {:.6g}{}",
                            lr->step, lr->a, lr->b, configurationNote(c, "lr")),
                causeFix(Cause::UpdateChanged, -1, lr->step, {}));
            return;
        }
        const Divergence* d = bitwiseFirst(c);
        if (!d || !everyRankParted(*d, m_R) || d->step <= c.firstStep || c.partedAt("loss_scale", d->step))
            return;
        const int64_t step = d->step - 1;
        m_finding = makeFinding(
            Cause::UpdateChanged, 0.8, step, allRanks(m_R),
            fmt::format(
                "every rank's {} parts from the reference run at step {}{} although every synced gradient "
                "of step {} was equal to the reference's bit for bit: the weights going into step {} "
                "differ on every rank alike, so the update of step {} differed",
                d->statistic, d->step, d->parameter.empty() ? "" : " (" + d->parameter + ")", step, d->step,
                step),
            causeFix(Cause::UpdateChanged, -1, step, {}));
    }

private:
    int m_R;
};

} // namespace

std::unique_ptr<Check> updateChanged(CheckContext& c) {
    return std::make_unique<UpdateChanged>(c);
}

} // namespace rs::checks
