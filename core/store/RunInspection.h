// The summary figures of a run file that `ranksight-cli inspect` prints and the report quotes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rs {

class RunReader;

struct RunInspection {
    std::string format;
    int formatVersion = 0;
    std::string source;                  // who wrote the file
    std::string description;             // describeRun: "a PyTorch DDP job: 4 processes (gloo) on host h"
    std::vector<std::string> absent;     // datasets and attributes the source could not record
    std::vector<std::string> unreadable; // datasets a killed writer left unreadable (RunMeta::unreadable)
    std::string unreadableWhy;
    std::string model;
    int worldSize = 0;
    int batchPerRank = 0;
    std::string precision;
    std::string lossScale;
    int64_t plannedSteps = 0;
    int64_t stepsRecorded = 0;
    int64_t parameterTensors = 0;
    std::optional<int64_t> parameters; // elements; nullopt: a tensor's size was not recorded
    float lossFirst = 0;               // mean over ranks
    float lossLast = 0;
    bool weightsIdentical = true; // at the last weight record
    std::optional<int64_t> firstGradMismatchStep;
    std::optional<int64_t> firstWeightMismatchStep;
    int64_t overflowSteps = 0;
    int64_t skippedSteps = 0;
    int64_t events = 0;
    std::optional<float> evalAccuracy; // mean over ranks, last evaluation
    bool complete = false;
    std::string stopReason;

    bool recorded(const std::string& name) const; // in neither absent nor unreadable

    std::string toJson() const; // null where the source recorded nothing
    // Text for a terminal; "not recorded" where the source recorded nothing.
    std::string toText() const;
};

RunInspection inspectRun(const RunReader& reader);

} // namespace rs
