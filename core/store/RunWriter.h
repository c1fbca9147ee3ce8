// Writes a run file (HDF5, layout in RunSchema.h and docs/run-file.md) while training runs. Every group,
// dataset and attribute is created up front; then the file switches to SWMR write mode, so other processes
// can watch the run live (RunReader) and a killed run stays readable up to its last flushed step.
// One row per step, flushed at once: ~1.5 ms per step for 8 ranks x 161 parameter tensors x 16 sketch dims.
// Thread-safe (every call takes hdf5Mutex()), but meant for one producer.
#pragma once

#include "store/RunRecords.h"
#include "store/RunSchema.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace rs {

class RunWriter {
public:
    // Creates the file (throws RunFileError if it exists, unless overwrite), creates everything, starts SWMR.
    // The meta must be consistent: worldSize >= 1, cards empty or one per rank. An empty createdUtc is filled
    // with the current time.
    static std::unique_ptr<RunWriter> create(const std::string& path, const RunMeta& meta,
                                             bool overwrite = false);
    ~RunWriter(); // closes; if close() was not called, the file stays marked not complete
    RunWriter(const RunWriter&) = delete;
    RunWriter& operator=(const RunWriter&) = delete;

    // Each append writes one row per dataset of its table, the table's key column last, then flushes so SWMR
    // readers see it. Per-rank vectors must have meta sizes (params, params x sketchDim); an empty vector
    // means "not recorded" and is stored as NaN (floats) or 0 (integers); sampleIds shorter than
    // batchPerRank are padded with -1. Strings longer than their fixed size are cut at a UTF-8 boundary.
    void appendStep(const StepRecord& record);
    void appendWeights(const WeightRecord& record);
    void appendEval(const EvalRecord& record);
    void appendEvent(const Event& event);
    void appendFlightDump(const FlightDump& dump);
    void appendCollectives(std::span<const Collective> rows); // imported flight-recorder dumps
    void appendTensorStats(std::span<const TensorStat> rows); // imported msprobe dumps // entries' data must
                                                              // have totalElements(params) floats
    void flush();
    // Writes complete=1 and the stop reason, and closes. Further appends throw.
    void close(const std::string& stopReason = "completed");

    const std::string& path() const;
    int64_t stepsWritten() const;
    const RunMeta& meta() const;

    struct Impl; // RunWriterImpl.h

private:
    explicit RunWriter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_d;
};

} // namespace rs
