// Everything per parameter about one step, read lazily from the run file on the loader thread: the step's
// record with all per-parameter vectors and sample ids, and the weight fingerprints nearest at or before it.
#pragma once

#include "store/RunRecords.h"

#include <memory>

namespace rs {

struct StepDetail {
    int64_t step = 0;
    StepRecord record;                     // perParam: local/synced statistics, sketches, sample ids
    std::shared_ptr<WeightRecord> weights; // the last weight-fingerprint row at or before step; may be null
};

} // namespace rs
