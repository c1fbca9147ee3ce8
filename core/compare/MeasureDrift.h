// The drift measurement: the reference compared with each spread reference over their aligned steps
// (compareAligned, without drift), their excess maps gathered into a MeasuredDrift. It does not call
// compareRuns (CompareRuns.h), which calls it: the dependency runs one way.
#pragma once

#include "compare/MeasuredDrift.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rs {

class RunReader;

// Compares the reference b with each spread reference and gathers what they measured, per step and
// parameter of a (by name); out gets one SpreadReference each. progress covers [0, share).
// std::invalid_argument names a spread that is not the reference's job or does its arithmetic.
MeasuredDrift measureDrift(const RunReader& a, const RunReader& b,
                           const std::vector<std::pair<std::string, const RunReader*>>& spread,
                           std::vector<SpreadReference>& out, const std::function<void(int)>& progress,
                           int share);

} // namespace rs
