// Tally: steps where the ranks disagreed on skipping the update. With an all-reduced overflow status every
// rank skips the same steps; the minority of a split is the odd one out (on a tie, the ranks that skipped:
// they saw an overflow alone). Read by overflow-not-synced and loss-scale-not-restored.
#pragma once

#include "diagnose/Check.h"

namespace rs {

class SkipAgreement : public Accumulator {
public:
    explicit SkipAgreement(const RunFacts& f)
        : minority(size_t(std::max(f.R, 0)), 0) {}
    void addStep(const StepRecord& st, const RunExtent&) override;

    // Some ranks skipped this step's update and some did not.
    static bool split(const StepRecord& st);

    int64_t mismatchSteps = 0;
    FirstSeen first;               // rank: one of the minority
    std::vector<int64_t> minority; // [rank] steps where that rank was alone in its skip decision
};

} // namespace rs
