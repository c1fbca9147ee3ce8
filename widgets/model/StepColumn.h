// The per-rank scalar columns of a run's steps that RunModel keeps in memory for every step (everything
// per parameter is read lazily, one step at a time: see RunModel::detail). Their ids are the schema's own
// (runschema::StepCol), so the file layout, the reader and the widgets name a column one way.
#pragma once

#include "store/RunSchema.h"

#include <cstddef>

namespace rs {

enum class StepColumn : int {
    Loss = runschema::kLoss,
    Accuracy = runschema::kAccuracy,
    LossScale = runschema::kLossScale,
    StepMs = runschema::kStepMs,
    ComputeMs = runschema::kComputeMs,
    CommMs = runschema::kCommMs,
    Overflow = runschema::kOverflow,
    Skipped = runschema::kSkipped,
    State = runschema::kState
};
inline constexpr int kStepColumnCount = runschema::kRankScalarCount;

// The column's schema id (what RunReader::readStepScalar takes) and its slot in RunModel's arrays.
constexpr runschema::StepCol schemaColumn(StepColumn c) {
    return runschema::StepCol(int(c));
}
constexpr size_t columnIndex(StepColumn c) {
    return size_t(int(c) - runschema::kFirstRankScalar);
}
constexpr StepColumn stepColumnAt(int index) {
    return StepColumn(index + runschema::kFirstRankScalar);
}

} // namespace rs
