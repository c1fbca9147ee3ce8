// The per-rank scalar columns of a run's steps that RunModel keeps in memory for every step (everything
// per parameter is read lazily, one step at a time: see RunModel::detail).
#pragma once

#include <array>

namespace rs {

enum class StepColumn : int {
    Loss,
    Accuracy,
    LossScale,
    StepMs,
    ComputeMs,
    CommMs,
    Overflow,
    Skipped,
    State
};
inline constexpr int kStepColumnCount = 9;

// The RunReader::readStepScalar name of each column, in StepColumn order.
inline constexpr std::array<const char*, kStepColumnCount> kStepColumnNames = {
    "loss", "accuracy", "loss_scale", "step_ms", "compute_ms", "comm_ms", "overflow", "skipped", "state"};

} // namespace rs
