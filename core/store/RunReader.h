// Reads a run file (layout in RunSchema.h and docs/run-file.md): while a RunWriter in another process is
// still appending (HDF5 SWMR; refresh() picks up new rows), after a clean close, and after the writer was
// killed (then complete() is false and every fully written step is readable). Foreign, newer, truncated or
// inconsistent files are refused with a RunFileError that says what was found and what was expected;
// nothing a file claims is allocated before it was checked against the meta and the file's size.
//
// The interface only: this class knows no implementation. Hdf5RunReader (core/store) reads with libhdf5 in
// this process; ProcessRunReader (core/reader) forwards every call to a reader process running one, so that
// a damaged or hostile file that makes libhdf5 crash, hang or run out of memory takes down only that
// process. openRunFile (core/reader/OpenRunFile.h) opens a file with either; everything that reads files
// from outside uses the reader process.
// Thread-safe: calls may come from several threads (each implementation serialises them).
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
    std::vector<Collective> collectives; // imported flight-recorder dumps
    std::vector<TensorStat> tensorStats; // imported msprobe dumps
    int formatVersion = 0;
    bool complete = false;
    std::string stopReason;
};

class RunReader {
public:
    virtual ~RunReader() = default;
    RunReader(const RunReader&) = delete;
    RunReader& operator=(const RunReader&) = delete;

    virtual const std::string& path() const = 0;
    virtual const RunMeta& meta() const = 0;
    virtual int formatVersion() const = 0;
    virtual bool complete() const = 0;          // the writer called close()
    virtual std::string stopReason() const = 0; // "running" while written or after a kill; close()'s reason
    virtual int64_t totalElements() const = 0;  // floats per flight-recorder entry

    // SWMR: re-reads extents and status; true if new rows appeared (in any table) or the status changed.
    virtual bool refresh() = 0;

    // Complete rows readable now (a row is complete once its table's key column has it).
    virtual int64_t stepCount() const = 0;
    virtual int64_t weightCount() const = 0;
    virtual int64_t evalCount() const = 0;
    virtual int64_t eventCount() const = 0;
    virtual int64_t flightDumpCount() const = 0;
    virtual int64_t collectiveCount() const = 0;
    virtual int64_t tensorStatCount() const = 0;

    // Steps [begin, end). perParam=false reads only the scalar fields (step, epoch, lr and per-rank loss,
    // accuracy, loss scale, flags, times, sample fingerprint); sampleIds and per-parameter vectors stay
    // empty.
    virtual std::vector<StepRecord> readSteps(int64_t begin, int64_t end, bool perParam = true) const = 0;
    std::vector<WeightRecord> readWeights() const;
    virtual std::vector<WeightRecord> readWeights(int64_t begin, int64_t end) const = 0; // rows [begin, end)
    std::vector<EvalRecord> readEvals() const;
    virtual std::vector<EvalRecord> readEvals(int64_t begin, int64_t end) const = 0; // rows [begin, end)
    std::vector<Event> readEvents() const;
    virtual std::vector<Event> readEvents(int64_t begin, int64_t end) const = 0; // rows [begin, end)

    // Key columns alone, for callers that keep an index of a large run: the step number of step rows
    // [begin, end), and of weight-fingerprint rows [begin, end) (all of them without arguments).
    virtual std::vector<int64_t> readStepNumbers(int64_t begin, int64_t end) const = 0;
    std::vector<int64_t> readWeightSteps() const;
    virtual std::vector<int64_t> readWeightSteps(int64_t begin, int64_t end) const = 0;
    virtual std::vector<FlightDump> readFlightDumps() const = 0;
    std::vector<Collective> readCollectives() const;
    virtual std::vector<Collective> readCollectives(int64_t begin,
                                                    int64_t end) const = 0; // rows [begin, end)
    std::vector<TensorStat> readTensorStats() const;
    virtual std::vector<TensorStat> readTensorStats(int64_t begin,
                                                    int64_t end) const = 0; // rows [begin, end)

    // One per-rank step column for steps [begin, end), row-major: (end - begin) * worldSize floats.
    // column: one of runschema::kLoss..kState (isRankScalar); any other throws RunFileError.
    virtual std::vector<float> readStepScalar(runschema::StepCol column, int64_t begin,
                                              int64_t end) const = 0;

    RunData readAll() const;

protected:
    RunReader() = default;
};

// How many steps of per-parameter records (readSteps(..., true)) to read at once: at most `most`, and few
// enough that a read holds about kStepReadBytes whatever the run's size (a 1,024-rank ResNet-50 step is
// some 20 MB in memory). At least 1.
inline constexpr int64_t kStepReadBytes = int64_t(32) << 20;
int64_t stepsPerRead(const RunMeta& meta, int64_t most);

} // namespace rs
