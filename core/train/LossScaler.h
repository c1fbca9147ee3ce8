// Loss scaling with MindSpore semantics: FixedLossScaleManager (drop_overflow_update) and
// DynamicLossScaleManager (init 2^24, factor 2, window 2000). The caller passes the overflow status already
// all-reduced over ranks, so every rank skips the same steps and keeps the same scale.
#pragma once

#include "train/TrainConfig.h"

namespace rs {

class LossScaler {
public:
    explicit LossScaler(const LossScaleSpec& spec);
    float scale() const { return m_scale; }
    // Feeds one step's overflow status; returns true when this step's update must be skipped.
    bool update(bool overflow);

private:
    LossScaleSpec m_spec;
    float m_scale;
    int m_goodSteps = 0;
};

} // namespace rs
