// A comparison with a reference run (compare/RunComparison.h) in words: the text `ranksight-cli compare`
// prints, its JSON (the schema in docs/comparing.md), and the one line the Findings panel, `diagnose
// --reference` and the bug report use.
#pragma once

#include "compare/RunComparison.h"

#include <string>

namespace rs {

// The comparison as text (compare's output) and as JSON (compare --json; the schema in docs/comparing.md).
std::string comparisonText(const RunComparison& c, const std::string& nameA, const std::string& nameB);
std::string comparisonJson(const RunComparison& c);
// One line: "differs from the reference from step 8 in fc2.weight (synced_norm, ranks 0-3)" or
// "agrees with the reference within tolerance over 100 steps".
std::string comparisonLine(const RunComparison& c);

} // namespace rs
