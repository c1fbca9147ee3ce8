// Trainer's private state, shared by the translation units that implement it (none of them includes
// LibTorch): Trainer.cpp (setup and the run), TrainerStep.cpp (a card's work each step), TrainerNodes.cpp (a
// run spread over node processes) and TrainerWriter.cpp (the one thread that records).
#pragma once

#include "cluster/Communicator.h"
#include "cluster/ComputeSlots.h"
#include "cluster/NodeGroup.h"
#include "faults/FaultPlan.h"
#include "store/RunWriter.h"
#include "telemetry/GradStats.h"
#include "train/Dataset.h"
#include "train/DistributedSampler.h"
#include "train/LossScaler.h"
#include "train/Replica.h"
#include "train/Trainer.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <variant>

namespace rs {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The last steps' gradients and weights of one card, for a dump, within a memory budget. The backward
// accumulates each step's local gradient straight into its slot and the all-reduce writes the synced gradient
// there, so only the weights are a copy (streamed out in the optimizer's pass; a skipped update copies
// nothing, see carryWeightsForward), and at depth 1 not even that: the ring keeps the synced gradient and a
// dump takes the local gradient and the weights live.
struct FlightRing {
    struct Slot {
        int64_t step = -1;
        std::vector<float> local, synced, weights; // local and weights: depth > 1 only
        size_t weightsIn = 0; // the slot whose `weights` buffer holds this step's weights (itself or newer)
    };
    std::vector<Slot> slots;
    size_t next = 0;

    // After a step that left the weights as they were (an overflow-skipped update): slot `cur` takes over the
    // previous step's buffer, which holds the same bits, instead of copying, and the slots that read their
    // weights there read them here. False when the previous step is not in the ring.
    bool carryWeightsForward(size_t cur) {
        const size_t prev = (cur + slots.size() - 1) % slots.size();
        if (slots.size() < 2 || slots[prev].step < 0 || slots[prev].step != slots[cur].step - 1)
            return false;
        slots[cur].weights.swap(slots[prev].weights);
        for (Slot& s : slots)
            if (s.weightsIn == prev)
                s.weightsIn = cur;
        slots[cur].weightsIn = cur;
        return true;
    }
};

using WriterItem = std::variant<StepRecord, WeightRecord, EvalRecord, Event, FlightDump>;

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
    std::atomic<uint64_t> recordBytesSent{0}; // the part of the node traffic that carries records
    int64_t totalSteps = 0, perEpoch = 0;
    int flightDepth = 0;
    bool halfPayload = false;
    bool hasBuffers = false;           // the model has BatchNorm running statistics (recorded per step)
    std::unique_ptr<FaultPlan> faults; // empty without --fault: every hook answers as a clean run
    std::string preflightError;        // set when pre-flight refuses after the run file can be written

    // trainStep's phases, as RunSummary::phaseMs names them.
    static constexpr int kPhases = 10;
    static constexpr std::array<const char*, kPhases> kPhaseNames = {"load batch",
                                                                     "forward and backward",
                                                                     "local statistics, sketch, flight copy",
                                                                     "all-reduce",
                                                                     "synced statistics and fingerprint",
                                                                     "overflow vote",
                                                                     "optimizer",
                                                                     "digest",
                                                                     "records to the writer",
                                                                     "weight records and flight recorder"};

    struct Card {
        int rank = 0;    // in the whole run
        int local = 0;   // on this node's communicator
        FlightRing ring; // before the replica: its backward may write into a slot, so the ring outlives it
        std::unique_ptr<Replica> replica;
        std::unique_ptr<DistributedSampler> sampler;
        std::unique_ptr<LossScaler> scaler;
        std::vector<float> momentum;
        std::vector<uint16_t> half;
        std::atomic<uint8_t> state{0};
        bool anomalyBefore = false;
        bool stopAgreed = false; // multi-node: some node asked to stop, as of this card's last digest
        std::array<double, kPhases> phaseMs{}; // trainStep's phases, summed over steps (RunSummary::phaseMs)
        int dumps = 0;
    };
    std::vector<std::unique_ptr<Card>> cards;

    // Per-step records of all ranks are gathered here, then handed to the writer thread in step order.
    std::mutex gatherMutex;
    std::map<int64_t, std::pair<StepRecord, int>> pendingSteps;
    std::map<int64_t, std::pair<WeightRecord, int>> pendingWeights;
    std::map<int64_t, std::pair<EvalRecord, int>> pendingEvals;
    std::map<int64_t, std::pair<FlightDump, int>> pendingDumps;

    std::mutex queueMutex;
    std::condition_variable queueCv;
    std::deque<WriterItem> queue;
    bool queueClosed = false;
    std::string writerError;
    double writerMs = 0; // the writer thread's busy time (RunSummary::writerMs)

    std::unique_ptr<RunWriter> writer;
    RunSummary summary;
    std::mutex summaryMutex;
    std::vector<std::string> cardErrors;

    void push(WriterItem item) {
        {
            std::lock_guard lock(queueMutex);
            queue.push_back(std::move(item));
        }
        queueCv.notify_one();
    }
    // A card's event. On nodes other than 0 it is also kept for node 0's file (see reportToNode0).
    void event(int64_t step, int rank, Severity sev, std::string code, std::string message) {
        event(Event{step, rank, sev, std::move(code), std::move(message)});
    }
    void event(Event e) {
        if (group && cfg.nodeRank != 0) {
            std::lock_guard lock(nodeEventsMutex);
            nodeEvents.push_back(e);
        }
        push(std::move(e));
    }
    std::mutex nodeEventsMutex;
    std::vector<Event> nodeEvents;

    void setup();
    void joinNodes();
    // Multi-node: every card's one-rank record goes to every node (two all-gathers through the
    // communicator, in each card's own program order, so the nodes' collectives line up); local card 0 gets
    // the whole run's records in rank order, the others an empty vector.
    template <class Record> std::vector<Record> exchange(const Card& card, const Record& mine);
    // After the card threads end: nodes other than 0 hand their cards' events (failures, timeouts) to node
    // 0, which records them as if its own cards had reported them. Collectives may be broken by then, so
    // this goes through the rendezvous store.
    void reportToNode0();
    void collectNodeReports();
    void buildCards();
    void cardLoop(Card& card);
    void trainStep(Card& card, int64_t step, std::vector<uint8_t>& raw, std::vector<float>& images,
                   std::vector<int64_t>& labels);
    // trainStep's phases (TrainerStep.cpp), in order.
    struct StepWork;
    void loadBatch(Card& card, StepWork& w, std::vector<uint8_t>& raw, std::vector<float>& images,
                   std::vector<int64_t>& labels);
    void computeGradients(Card& card, StepWork& w, const std::vector<float>& images,
                          const std::vector<int64_t>& labels);
    void takeFlightSlot(Card& card, StepWork& w);
    void recordLocalGradient(Card& card, StepWork& w);
    void allReduceGradients(Card& card, StepWork& w);
    void recordSyncedGradient(Card& card, StepWork& w);
    void recordSyncedInConversion(Card& card, StepWork& w);
    bool corruptAfterAllReduce(Card& card, StepWork& w);
    void allReduceReadingSynced(Card& card, StepWork& w, const float* g, ReduceOp op);
    void convertCountingNonfinite(Card& card, StepWork& w);
    void storeSynced(StepWork& w, size_t p, const TensorStats& s);
    bool voteOnOverflow(Card& card, StepWork& w);
    void updateWeights(Card& card, const StepWork& w, bool skip);
    void shareDigest(Card& card, StepWork& w);
    void submitStep(Card& card, StepWork& w);
    void maybeDump(Card& card, const StepWork& w);
    void recordWeights(Card& card, int64_t step);
    void evaluate(Card& card, int64_t step);
    void writerLoop();
    float learningRate(int64_t step) const;
    RunSummary refuse();

    template <typename Record, typename Fill>
    void gather(std::map<int64_t, std::pair<Record, int>>& pending, int64_t key, Fill fill) {
        std::optional<Record> done;
        {
            std::lock_guard lock(gatherMutex);
            auto& [record, count] = pending[key];
            fill(record);
            if (++count == localCards) {
                done = std::move(record);
                pending.erase(key);
            }
        }
        if (done)
            push(std::move(*done));
    }
};

} // namespace rs
