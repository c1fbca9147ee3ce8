// The contained RunReader (openRunFile, OpenRunFile.h): libhdf5 parses the file in a child process,
// ranksight-reader (ReaderServer.h, app/reader), and this class forwards each call to it over a socket
// (ReaderProtocol.h).
//
// Why: run files arrive attached to bug reports, copied from clusters, half-downloaded, and libhdf5 (Debian's
// 1.10.8 among others) has memory errors on crafted or damaged files that no check on our side can rule out:
// a damaged global heap behind a variable-length string crashes H5Aread. In the child such a crash, a hang
// or running out of memory ends only the child, and the caller gets a RunFileError (a ReaderDiedError) that
// says the file is damaged and where the reader was (a dataset or attribute, from ReaderTrace.h).
//
// Limits: the child's address space is RANKSIGHT_READER_MEMORY_MB (default 4096); a request that makes no
// progress (no new dataset or attribute touched) for RANKSIGHT_READER_TIMEOUT_MS (default 30000) is a hang
// and the child is killed. The child leaves no core dump. Once it died, every later call throws the same
// error: a damaged file is not read again behind the caller's back.
//
// The executable: $RANKSIGHT_READER if set, else ranksight-reader next to this program, in
// ../libexec/ranksight/ from it, or in the build tree this program was built in.
#pragma once

#include "reader/OpenRunFile.h"
#include "reader/ReaderProtocol.h"
#include "store/RunReader.h"

#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>

namespace rs {

namespace readertrace {
struct Page;
}

class ProcessRunReader final : public RunReader {
public:
    static std::unique_ptr<ProcessRunReader> open(const std::string& path); // throws RunFileError
    ~ProcessRunReader() override;

    // The reader executable, or "" with the places looked at in *looked.
    static std::string findExecutable(std::string* looked = nullptr);

    pid_t pid() const { return m_pid; } // the reader process (tests)

    const std::string& path() const override { return m_path; }
    const RunMeta& meta() const override { return m_meta; }
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

private:
    explicit ProcessRunReader(std::string path)
        : m_path(std::move(path)) {}
    void spawn();
    // One round trip; returns the response payload, throws RunFileError / ReaderDiedError.
    std::string call(readerwire::Op op, const std::string& args) const;
    template <class F> auto request(readerwire::Op op, const std::string& args, F&& decode) const;
    void sendRequest(readerwire::Op op, const std::string& args) const;
    std::string receive(readerwire::Status& status) const;
    [[noreturn]] void died(const std::string& why) const;
    std::string where() const;
    void stop() const;

    std::string m_path;
    RunMeta m_meta;
    readerwire::State m_state; // as of the last open or refresh

    // The process and its channels. Mutable: a read that finds the process dead (a const call) ends it.
    mutable std::mutex m_mutex; // one request at a time
    mutable pid_t m_pid = -1;
    mutable int m_sock = -1;
    mutable readertrace::Page* m_page = nullptr;
    int m_timeoutMs = 30000;
    mutable std::string m_dead; // the message, once the reader process is gone
};

} // namespace rs
