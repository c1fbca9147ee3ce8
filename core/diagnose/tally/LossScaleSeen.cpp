// LossScaleSeen: see LossScaleSeen.h.
#include "diagnose/tally/LossScaleSeen.h"

#include <cmath>
#include <fmt/format.h>

namespace rs {

void LossScaleSeen::addStep(const StepRecord& st, const RunExtent&) {
    for (const auto& x : st.ranks)
        if (std::isfinite(x.lossScale) && x.lossScale > 0) {
            scaleMin = std::min(scaleMin, double(x.lossScale));
            scaleMax = std::max(scaleMax, double(x.lossScale));
        }
    const bool late = st.step >= kLossScaleWarmup;
    stepsLate += late;
    if (st.ranks[0].overflow) {
        ++overflowSteps;
        overflowLate += late;
        firstOverflow.note(st.step, -1, -1, st.ranks[0].lossScale);
    }
}

std::string LossScaleSeen::scaleText() const {
    return scaleMin == scaleMax ? fmt::format("{:g}", scaleMax)
                                : fmt::format("{:g} to {:g}", scaleMin, scaleMax);
}

std::string LossScaleSeen::figures() const {
    return fmt::format("loss scale {:g}..{:g}, overflow steps {} ({} after step {} of {})", scaleMin,
                       scaleMax, overflowSteps, overflowLate, kLossScaleWarmup, stepsLate);
}

} // namespace rs
