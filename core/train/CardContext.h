// What a card's work sees of the run: its settings, the communicator between the cards, the compute slots,
// the faults, the data, and the recorder its records go to. Nothing else of the trainer: a card does not
// know the run file, the writer thread or the other cards.
#pragma once

#include "train/TrainConfig.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rs {

class Communicator;
class ComputeSlots;
class Dataset;
class FaultPlan;
class ReducedLocalStats;
class StepRecorder;

// The run's shape, fixed by the trainer's setup before the first step.
struct RunPlan {
    int64_t totalSteps = 0, perEpoch = 0;
    int flightDepth = 0;      // steps the flight recorder keeps (0: off)
    bool halfPayload = false; // the all-reduce carries fp16 (O2/O3)
    bool hasBuffers = false;  // the model has BatchNorm running statistics (recorded per step)
    bool multiNode = false;   // ranks spread over node processes
};

// Why cards failed, in the order they failed (the first names the run's stop reason).
class CardErrors {
public:
    void add(std::string message) {
        std::lock_guard lock(m_mutex);
        m_messages.push_back(std::move(message));
    }
    std::vector<std::string> list() const {
        std::lock_guard lock(m_mutex);
        return m_messages;
    }

private:
    mutable std::mutex m_mutex;
    std::vector<std::string> m_messages;
};

struct CardContext {
    const TrainConfig& cfg;
    const RunPlan& plan;
    Communicator& comm;
    ComputeSlots& slots;
    FaultPlan& faults;
    StepRecorder& sink;
    const Dataset& train;
    const Dataset& test;
    const std::atomic<bool>& stopRequested; // Trainer::stop()
    std::atomic<bool>& dumpRequested;       // Trainer::requestFlightDump(); a card's digest takes it
    CardErrors& errors;
    // Shared by the cards: the local statistics taken in the all-reduce's read (O0 with telemetry); set once
    // the cards are built, before their threads start.
    ReducedLocalStats* localReads = nullptr;

    // Warmup, then constant or cosine down to 0 at the last step.
    float learningRate(int64_t step) const {
        const float base = cfg.effectiveLr();
        if (step < cfg.warmupSteps)
            return base * static_cast<float>(step + 1) / static_cast<float>(cfg.warmupSteps + 1);
        if (cfg.lrSchedule == "constant")
            return base;
        const auto span = static_cast<double>(std::max<int64_t>(1, plan.totalSteps - cfg.warmupSteps));
        const double t = std::min(1.0, static_cast<double>(step - cfg.warmupSteps) / span);
        return static_cast<float>(base * 0.5 * (1.0 + std::cos(M_PI * t)));
    }
};

} // namespace rs
