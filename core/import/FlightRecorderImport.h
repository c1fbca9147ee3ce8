// Imports the flight-recorder dumps of a PyTorch (or torch_npu) job that hung or timed out
// (FlightRecorderDumps.h) into a run file's collectives table, so the window shows per rank which collective
// each rank reached and diagnosis names the first collective where ranks disagree
// (view/CollectiveProgress.h).
//
// Alone, the dumps make a run file of their own (source "flight-recorder": ranks and collectives, no steps).
// Joined with a recorded run of the same job (`--run RUN.h5`, recorded by ranksight.ddp.Recorder, which
// stamps each step with the wall clock), the new file is that run plus the collectives, each placed in the
// step whose time span holds the moment its rank enqueued it; collectives after the run's last step are the
// step in progress when the job stopped (last + 1). Every file is read and checked before anything is
// written; a broken dump throws ImportError naming the file and the key or byte, and leaves no file.
#pragma once

#include "import/CsvTable.h" // ImportError

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rs {

class RunReader;

struct FlightImportResult {
    std::string dir, prefix;
    std::string version, backend; // "2.10", "nccl"
    int worldSize = 0;
    std::vector<int> dumped;  // ranks with a dump file
    std::vector<int> missing; // members of a process group without one
    int64_t collectives = 0;
    int groups = 0;
    int64_t joinedSteps = -1; // steps of the joined run; -1: not joined
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
