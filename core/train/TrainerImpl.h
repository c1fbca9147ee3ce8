// Trainer's private state, shared by the translation units that implement it (none of them includes
// LibTorch): Trainer.cpp (the run and its summary), TrainerSetup.cpp (pre-flight, data, cards, the run
// file's meta) and TrainerNodes.cpp (joining node processes). The trainer owns what the run is made of; the
// cards (CardWorker) do the steps and see it through a CardContext; the StepRecorder records what they
// submit.
#pragma once

#include "cluster/Communicator.h"
#include "cluster/ComputeSlots.h"
#include "cluster/NodeGroup.h"
#include "cluster/RankTable.h"
#include "faults/FaultPlan.h"
#include "store/RunWriter.h"
#include "train/CardContext.h"
#include "train/CardWorker.h"
#include "train/Dataset.h"
#include "train/LocalStatistics.h"
#include "train/StepRecorder.h"
#include "train/Trainer.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace rs {

struct Trainer::Impl {
    TrainConfig cfg;
    TrainObserver* observer = nullptr;
    std::atomic<bool> stopRequested{false};
    std::atomic<bool> dumpRequested{false};

    // Setup
    RunMeta meta;
    std::unique_ptr<Dataset> train, test;
    std::unique_ptr<Communicator> comm;
    std::unique_ptr<ComputeSlots> slots;
    // Multi-node: this process hosts ranks [base, base + localCards) of cfg.ranks; the others are other
    // node processes, reached through `group` (the communicator's cross-node stage and the record exchange).
    int localCards = 0, base = 0;
    std::unique_ptr<NodeGroup> group;
    std::unique_ptr<FaultPlan> faults; // empty without --fault: every hook answers as a clean run
    std::string preflightError;        // set when pre-flight refuses after the run file can be written
    RunPlan plan;
    std::unique_ptr<RunWriter> writer; // created by setup, handed to the recorder when the run starts

    // The run
    std::unique_ptr<StepRecorder> recorder;
    std::unique_ptr<ReducedLocalStats> localReads; // O0 with telemetry: shared by the cards
    std::unique_ptr<CardContext> context;          // what the cards see; refers to the members above
    std::vector<std::unique_ptr<CardWorker>> cards;
    CardErrors cardErrors;

    // TrainerSetup.cpp
    void setup();
    RankTable rankTable(std::string& text);
    void placeServers(const RankTable& table);
    void openData();
    void buildCards();
    void describeRun(const RankTable& table, const std::string& tableText, int cores);
    void openRunFile();
    // TrainerNodes.cpp
    void joinNodes();
    // Trainer.cpp
    void startRecording();
    void runCards();
    void summarize(RunSummary& s, double seconds) const;
    RunSummary refuse();
};

} // namespace rs
