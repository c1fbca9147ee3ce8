// The comparison of two runs over their aligned steps (AlignedRuns.h), one statistic row at a time
// (ComparedStatistics.h): the plan decides which rows are compared, every value both files recorded is judged
// against the tolerance its row derives, and the divergences are gathered (DivergenceRecorder.h). compareRuns
// uses it for the run against the reference, with the drift the spread references measured; measureDrift
// uses it, without drift, for the reference against each spread reference.
#pragma once

#include "compare/RunComparison.h"

#include <functional>

namespace rs {

class RunReader;
struct MeasuredDrift;

// Compares a with b; drift (may be null) widens the tolerances where the arithmetic differs. progress gets
// 0..100. std::invalid_argument when nothing can be compared (no step in common, no parameter of the same
// name); RunFileError from the readers.
RunComparison compareAligned(const RunReader& a, const RunReader& b, const MeasuredDrift* drift,
                             const std::function<void(int percent)>& progress);

} // namespace rs
