// Data-parallel training across emulated Ascend cards: one thread per card (CardWorker, which sees the run
// through a CardContext), an HCCL-like communicator between them, and a StepRecorder whose one writer thread
// records every step into the run file. The trainer sets them up, runs them and sums up the run.
#pragma once

#include "train/TrainConfig.h"
#include "train/TrainObserver.h"

#include <atomic>
#include <memory>

namespace rs {

class TrainError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Trainer {
public:
    explicit Trainer(TrainConfig config);
    ~Trainer();

    void setObserver(TrainObserver* observer); // before run()
    // Blocks until the run ends. Throws TrainError/ConfigError before the first step for bad setup (rank
    // table, data, output file); after that every outcome, including a card timing out, ends in the summary.
    RunSummary run();
    void stop();              // thread-safe; cards stop within a second, the file stays complete
    void requestFlightDump(); // thread-safe; the flight recorder writes its tensors at the next step
    const TrainConfig& config() const;

private:
    struct Impl;
    std::unique_ptr<Impl> d;
};

} // namespace rs
