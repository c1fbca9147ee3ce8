// Tally: the loss scales the ranks used and the steps rank 0 flagged an overflow on (the flag is all-reduced,
// so rank 0's is the run's). Read by the loss-scale and underflow checks.
#pragma once

#include "diagnose/Check.h"

namespace rs {

// Dynamic scaling halves down from 2^24 on the first steps: overflows before this step are its warm-up.
inline constexpr int64_t kLossScaleWarmup = 40;

class LossScaleSeen : public Accumulator {
public:
    explicit LossScaleSeen(const RunFacts&) {}
    void addStep(const StepRecord& st, const RunExtent&) override;
    std::string figures() const override;

    double scaleMin = std::numeric_limits<double>::infinity(), scaleMax = 0;
    int64_t overflowSteps = 0; // rank 0's (synced) overflow flag
    int64_t overflowLate = 0;  // the same after the warm-up
    int64_t stepsLate = 0;     // steps after the warm-up
    FirstSeen firstOverflow;   // value: the loss scale
    // "2048" or "1024 to 65536"
    std::string scaleText() const;
};

} // namespace rs
