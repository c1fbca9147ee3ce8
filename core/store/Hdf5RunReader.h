// The in-process RunReader: libhdf5 parses the run file in this process. It is what the reader process runs
// (core/reader/ReaderServer.cpp) and what the fuzzer attacks; everything that reads files from outside opens
// them in a reader process instead (openRunFile, core/reader/OpenRunFile.h). Its state (Hdf5RunReaderImpl.h)
// is shared by Hdf5RunReaderValidation.cpp (opening a file and checking it against RunSchema.h) and
// Hdf5RunReader.cpp (reading rows).
#pragma once

#include "store/RunReader.h"

#include <memory>
#include <string>
#include <vector>

namespace rs {

class Hdf5RunReader final : public RunReader {
public:
    static std::unique_ptr<Hdf5RunReader> open(const std::string& path); // throws RunFileError
    ~Hdf5RunReader() override;

    const std::string& path() const override;
    const RunMeta& meta() const override;
    int formatVersion() const override;
    bool complete() const override;
    std::string stopReason() const override;
    int64_t totalElements() const override;
    bool refresh() override;
    int64_t stepCount() const override;
    int64_t weightCount() const override;
    int64_t evalCount() const override;
    int64_t eventCount() const override;
    int64_t flightDumpCount() const override;
    int64_t collectiveCount() const override;
    int64_t tensorStatCount() const override;
    using RunReader::readCollectives;
    using RunReader::readEvents;
    using RunReader::readTensorStats;
    using RunReader::readWeights;
    std::vector<StepRecord> readSteps(int64_t begin, int64_t end, bool perParam = true) const override;
    std::vector<WeightRecord> readWeights(int64_t begin, int64_t end) const override;
    std::vector<EvalRecord> readEvals(int64_t begin, int64_t end) const override;
    std::vector<Event> readEvents(int64_t begin, int64_t end) const override;
    std::vector<int64_t> readStepNumbers(int64_t begin, int64_t end) const override;
    std::vector<int64_t> readWeightSteps(int64_t begin, int64_t end) const override;
    std::vector<FlightDump> readFlightDumps() const override;
    std::vector<Collective> readCollectives(int64_t begin, int64_t end) const override;
    std::vector<TensorStat> readTensorStats(int64_t begin, int64_t end) const override;
    std::vector<float> readStepScalar(runschema::StepCol column, int64_t begin, int64_t end) const override;

    struct Impl;

private:
    explicit Hdf5RunReader(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_d;
};

} // namespace rs
