// loss-scale-too-high: a fixed loss scale that overflows (nearly) every step; a dynamic scale would have come
// down after the first.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/LossScaleSeen.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class LossScaleTooHigh : public Check {
public:
    explicit LossScaleTooHigh(CheckContext& c)
        : m_R(c.facts.R)
        , m_scale(c.tallies.get<LossScaleSeen>()) {}
    const Needs& needs() const override { return needs::kLossScaling; }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        const LossScaleSeen& s = m_scale;
        if (run.steps < 8 || s.scaleMax <= 0 || s.scaleMin != s.scaleMax || s.scaleMax < 1024)
            return;
        if (s.overflowSteps * 2 < run.steps)
            return;
        out.push_back(makeFinding(
            Cause::LossScaleTooHigh, 0.9, s.firstOverflow.step, allRanks(m_R),
            fmt::format(
                "the loss scale stayed at {:g} for all {} steps while the gradients overflowed on {} of "
                "them ({:.0f}%), so those updates were lost; a dynamic scale would have halved after the "
                "first",
                s.scaleMax, run.steps, s.overflowSteps, 100.0 * double(s.overflowSteps) / double(run.steps)),
            causeFix(Cause::LossScaleTooHigh, -1, -1, {})));
    }

private:
    int m_R;
    const LossScaleSeen& m_scale;
};

} // namespace

std::unique_ptr<Check> lossScaleTooHigh(CheckContext& c) {
    return std::make_unique<LossScaleTooHigh>(c);
}

} // namespace rs::checks
