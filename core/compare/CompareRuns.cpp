// compareRuns: see CompareRuns.h. The drift the spread references measure comes first (its progress is the
// first half); the comparison of the run with the reference uses it.
#include "compare/CompareRuns.h"

#include "compare/AlignedComparison.h"
#include "compare/MeasureDrift.h"

namespace rs {

RunComparison compareRuns(const RunReader& a, const RunReader& b, const std::function<void(int)>& progress,
                          const std::vector<std::pair<std::string, const RunReader*>>& spread) {
    const int share = spread.empty() ? 0 : 50;
    std::vector<SpreadReference> spreads;
    MeasuredDrift drift;
    if (!spread.empty())
        drift = measureDrift(a, b, spread, spreads, progress, share);
    RunComparison c = compareAligned(a, b, spread.empty() ? nullptr : &drift, [&](int pct) {
        if (progress)
            progress(share + pct * (100 - share) / 100);
    });
    c.spreads = std::move(spreads);
    c.spreadUsed = !spread.empty() && !c.tolerance.bitwise;
    return c;
}

} // namespace rs
