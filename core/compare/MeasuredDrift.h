// What spread references measured (RunComparison.h, SpreadReference): the reference's excess map against
// each one, turned into how much wider each of the run's tolerances may be. Data only: measureDrift
// (MeasureDrift.h) fills it, the comparison (AlignedComparison.h) reads it.
#pragma once

#include "compare/RunComparison.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace rs {

// The drift the spread references measured, per aligned step of the reference and parameter of A: how many
// times its bound the reference and a spread reference parted there (the largest over the references and a
// few steps either side, since a drift that crosses zero at one step has not closed).
struct MeasuredDrift {
    std::map<int64_t, size_t> rowOfStep;
    std::vector<float> excess;  // rows x A's parameters
    std::vector<float> stepMax; // per row: over the parameters (for per-step statistics: the loss)
    size_t params = 0;
    int64_t discreteFrom = -1; // skipped updates and loss scales may differ from here on
    // The factor A's tolerance at (step, param) is widened by (1 if nothing was measured there).
    double widen(int64_t step, int param) const {
        const auto it = rowOfStep.find(step);
        if (it == rowOfStep.end())
            return 1.0;
        const double f = param < 0 ? stepMax[it->second] : excess[it->second * params + size_t(param)];
        return std::max(1.0, kSpreadFactor * f);
    }
};

} // namespace rs
