// Reads a run file (layout in RunSchema.h and docs/run-file.md): while a RunWriter in another process is
// still appending (HDF5 SWMR; refresh() picks up new rows), after a clean close, and after the writer was
// killed (then complete() is false and every fully written step is readable). Foreign, newer, truncated or
// inconsistent files are refused with a RunFileError that says what was found and what was expected;
// nothing a file claims is allocated before it was checked against the meta and the file's size.
// Thread-safe: every call takes hdf5Mutex().
#pragma once

#include "store/RunRecords.h"
#include "store/RunSchema.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rs {

// Everything in a run file, in memory (inspect, CSV export, diagnosis, tests).
struct RunData {
    RunMeta meta;
    std::vector<StepRecord> steps;
    std::vector<WeightRecord> weights;
    std::vector<EvalRecord> evals;
    std::vector<Event> events;
    std::vector<FlightDump> flightDumps;
    int formatVersion = 0;
    bool complete = false;
    std::string stopReason;
};

class RunReader {
public:
    // Opens for SWMR reading (falls back to a plain read-only open for files without SWMR support) and
    // validates the whole layout. Throws RunFileError.
    static std::unique_ptr<RunReader> open(const std::string& path);
    ~RunReader();
    RunReader(const RunReader&) = delete;
    RunReader& operator=(const RunReader&) = delete;

    const std::string& path() const;
    const RunMeta& meta() const;
    int formatVersion() const;
    bool complete() const;          // the writer called close()
    std::string stopReason() const; // "running" while written or after a kill; close()'s reason after
    int64_t totalElements() const;  // floats per flight-recorder entry

    // SWMR: re-reads extents and status; true if new rows appeared (in any table) or the status changed.
    bool refresh();

    // Complete rows readable now (a row is complete once its table's key column has it).
    int64_t stepCount() const;
    int64_t weightCount() const;
    int64_t evalCount() const;
    int64_t eventCount() const;
    int64_t flightDumpCount() const;

    // Steps [begin, end). perParam=false reads only the scalar fields (step, epoch, lr and per-rank loss,
    // accuracy, loss scale, flags, times, sample fingerprint); sampleIds and per-parameter vectors stay
    // empty.
    std::vector<StepRecord> readSteps(int64_t begin, int64_t end, bool perParam = true) const;
    std::vector<WeightRecord> readWeights() const;
    std::vector<WeightRecord> readWeights(int64_t begin, int64_t end) const; // rows [begin, end)
    std::vector<EvalRecord> readEvals() const;
    std::vector<Event> readEvents() const;
    std::vector<Event> readEvents(int64_t begin, int64_t end) const; // rows [begin, end)

    // Key columns alone, for callers that keep an index of a large run: the step number of step rows
    // [begin, end), and of every weight-fingerprint row.
    std::vector<int64_t> readStepNumbers(int64_t begin, int64_t end) const;
    std::vector<int64_t> readWeightSteps() const;
    std::vector<FlightDump> readFlightDumps() const;

    // One per-rank step column for steps [begin, end), row-major: (end - begin) * worldSize floats.
    // Names: loss, accuracy, loss_scale, step_ms, compute_ms, comm_ms, overflow, skipped, state.
    std::vector<float> readStepScalar(const std::string& name, int64_t begin, int64_t end) const;

    RunData readAll() const;

private:
    struct Impl;
    explicit RunReader(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_d;
};

} // namespace rs
