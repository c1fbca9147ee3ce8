// What spread references measured (RunComparison.h, SpreadReference): the reference compared with each one
// first, their excess map turned into how much wider each of the run's tolerances may be.
#pragma once

#include "compare/RunComparison.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
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

// Compares the reference b with each spread reference and gathers what they measured, per step and parameter
// of a (by name); out gets one SpreadReference each. progress covers [0, share). std::invalid_argument names
// a spread that is not the reference's job or does its arithmetic.
MeasuredDrift measureDrift(const RunReader& a, const RunReader& b,
                           const std::vector<std::pair<std::string, const RunReader*>>& spread,
                           std::vector<SpreadReference>& out, const std::function<void(int)>& progress,
                           int share);

} // namespace rs
