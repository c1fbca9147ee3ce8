// What the loader thread hands to the GUI thread after one read of a run file: plain values, moved across
// with a queued call and applied by RunModel::applyDelta. The generation drops results of a file that was
// replaced in the meantime.
#pragma once

#include "model/StepColumn.h"
#include "store/RunRecords.h"

#include <QString>
#include <array>
#include <cstdint>
#include <vector>

namespace rs {

struct RunDelta {
    uint64_t generation = 0;
    bool first = false; // the first delta of a file: meta, path and format version are set
    QString path;
    RunMeta meta;
    int formatVersion = 0;

    int64_t firstRow = 0; // row of the first new step
    int64_t fileRows = 0; // rows the file had when this delta was read: the model reserves room for them
    std::vector<int64_t> stepNumbers;                         // the new steps
    std::array<std::vector<float>, kStepColumnCount> columns; // new rows x ranks, row-major
    std::vector<Event> events;                                // new events
    std::vector<EvalRecord> evals;                            // new evals
    std::vector<int64_t> weightSteps;                         // new weight-fingerprint rows' steps
    std::vector<Collective> collectives;                      // new rows of imported flight-recorder dumps
    std::vector<TensorStat> tensorStats;                      // new rows of imported msprobe dumps

    bool complete = false;
    std::string stopReason;
    bool loadDone = true; // false while the first load still has rows to read
};

} // namespace rs
