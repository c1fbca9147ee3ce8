// Receives a run's records as they are written. runStarted and runFinished come on the thread that called
// Trainer::run(); the records come on the trainer's writer thread, in step order, never on a card thread.
// The GUI's live model implements this; so does the command line's progress bar.
#pragma once

#include "store/RunRecords.h"
#include "train/StepPhases.h"

#include <string>
#include <utility>
#include <vector>

namespace rs {

struct RunSummary {
    int64_t stepsCompleted = 0;
    bool completed = false; // reached the planned steps
    std::string stopReason; // completed | stopped | error: ...
    double imagesPerSecond = 0;
    float lossFirst = 0, lossLast = 0; // mean over the ranks with a finite loss (store/RankMean.h)
    float evalAccuracy = -1;           // mean over ranks of the final held-out accuracy; -1 when none
    std::vector<CardState> cardStates; // per rank of this node, how each card ended
    // Multi-node: what this node handed to gloo for the other nodes and the time its cards' collectives
    // spent in the cross-node stage (NodeGroup::Traffic).
    uint64_t nodeBytesSent = 0;
    uint64_t nodeRecordBytesSent = 0; // of which the per-step records (telemetry) for node 0's file
    double nodeCollectiveMs = 0;
    int64_t nodeCollectives = 0;
    // Where a card's step time went, summed over this node's cards and steps (wall time on the card threads;
    // "all-reduce" and "digest" include waiting for the slowest card), in step order; and the writer
    // thread's busy time (appending to the run file, event detection, the observer). Divide by stepsCompleted
    // x cards for a card's step.
    std::vector<std::pair<std::string, double>> phaseMs;
    double writerMs = 0;
    // The bytes each phase of a card's step moves, per card and step averaged over the steps completed
    // (cardStepTraffic): the floor a phase's time is set against.
    StepTraffic phaseTraffic{};
};

class TrainObserver {
public:
    virtual ~TrainObserver() = default;
    virtual void runStarted(const RunMeta&) {}
    virtual void stepRecorded(const StepRecord&) {}
    virtual void weightsRecorded(const WeightRecord&) {}
    virtual void evalRecorded(const EvalRecord&) {}
    virtual void eventRecorded(const Event&) {}
    virtual void runFinished(const RunSummary&) {}
};

} // namespace rs
