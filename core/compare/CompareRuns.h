// The comparison's entry point: a run against a reference run it opened (compare/RunComparison.h says what
// comes out). Built on the aligned reader (AlignedRuns.h) and the statistic table (ComparedStatistics.h)
// through AlignedComparison.h; with spread references it measures their drift first (MeasuredDrift.h).
// Opening the files is the caller's (reader/ReferenceRuns.h opens a reference and its spreads by path).
#pragma once

#include "compare/RunComparison.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rs {

class RunReader;

// Reads both files in chunks and compares them. progress gets 0..100. Throws RunFileError like the readers,
// and std::invalid_argument when nothing can be compared (no step in common, no parameter of the same name).
// spread: second references of the same job as b with other arithmetic (SpreadReference); each must be
// expected to agree with b within rounding, else std::invalid_argument names it.
RunComparison compareRuns(const RunReader& a, const RunReader& b,
                          const std::function<void(int percent)>& progress = {},
                          const std::vector<std::pair<std::string, const RunReader*>>& spread = {});

} // namespace rs
