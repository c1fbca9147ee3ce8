// Imports the flight-recorder dumps of a PyTorch (or torch_npu) job that hung or timed out
// (FlightRecorderDumps.h) into a run file's collectives table, so the window shows per rank which collective
// each rank reached and diagnosis names the first collective where ranks disagree
// (view/CollectiveProgress.h).
//
// Alone, the dumps make a run file of their own (source "flight-recorder": ranks and collectives, no steps).
// Joined with a recorded run of the same job (`--run RUN.h5`, recorded by ranksight.ddp.Recorder, which
// stamps each step with the wall clock), the new file is that run plus the collectives, each placed in the
// step whose time span holds the moment its rank enqueued it; collectives after the run's last step are the
// step in progress when the job stopped (last + 1), those before its first step are "before the run"
// (kCollectiveBeforeRun), never a step of it. A join needs evidence that the dumps can belong to the
// run: every rank they name is a rank of the run, and each dumped rank's entries overlap the run's recorded
// time (its first step's start to its last step's end), give or take kJoinClockToleranceNs for clocks that
// differ between hosts. Otherwise JoinRefused says which, and nothing is written.
//
// torch_npu's <prefix><rank>_py_traceback files (each rank's Python stacks when it dumped) are kept in the
// run's config, flight_recorder.py_tracebacks {"<rank>": text} (view::collectiveSetup reads them back), at
// most kMaxTracebackBytes each. Every file is read and checked before anything is written; a broken dump
// throws ImportError naming the file and the key or byte, and leaves no file.
#pragma once

#include "import/CsvTable.h" // ImportError

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rs {

class RunReader;

// How far apart the clocks of the run's writer and of the dumping ranks may be: hosts kept by NTP agree to
// milliseconds; 10 s also covers hosts that drift unsynchronised for a day. It widens the run's recorded
// time on both sides when the join asks whether the dumps' entries fall within it.
inline constexpr int64_t kJoinClockToleranceNs = 10'000'000'000;
// A rank's Python traceback kept in the run file (the rest is left in the file the import names).
inline constexpr size_t kMaxTracebackBytes = size_t{64} * 1024;

// The dumps cannot belong to the run they were to be joined with: the message says why (ranks or times).
class JoinRefused : public ImportError {
public:
    using ImportError::ImportError;
};

struct FlightImportResult {
    std::string dir, prefix;
    std::string version, backend; // "2.10", "nccl"
    int worldSize = 0;
    std::vector<int> dumped;  // ranks with a dump file
    std::vector<int> missing; // members of a process group without one
    int64_t collectives = 0;
    int groups = 0;
    std::string commLib;         // the communication library's version, "2.21.5"; "" not recorded
    int64_t joinedSteps = -1;    // steps of the joined run; -1: not joined
    int64_t beforeRun = 0;       // joined: collectives enqueued before the run's first step
    std::vector<int> tracebacks; // ranks with a Python traceback file
    std::vector<std::string> notes;
};

struct FlightImportOptions {
    std::string prefix;             // "" : found from the file names
    const RunReader* run = nullptr; // a recorded run of the same job to join with
    bool overwrite = false;
    std::function<void(int percent)> progress;
};

// path: a folder of dumps or one dump file. out: the run file to write.
FlightImportResult importFlightRecorder(const std::string& path, const std::string& out,
                                        const FlightImportOptions& options = {});

} // namespace rs
