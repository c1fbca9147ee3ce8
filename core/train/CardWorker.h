// One emulated card of a data-parallel run: its model replica, optimizer state and flight ring, and the loop
// its thread runs. Each step, phase by phase: load a batch, forward and backward, local statistics, the
// all-reduce, synced statistics, the overflow vote, the optimizer, and the digest every rank shares; then the
// card submits its rank's part of the records. A card sees the run through its CardContext only.
//   CardWorker.cpp     construction, the loop and how it ends
//   CardStep.cpp       a step's phases around the all-reduce
//   CardAllReduce.cpp  the all-reduce, the local statistics read in its reduce-scatter and the synced ones
//                      in its last pass
//   CardRecords.cpp    the weight checks, evaluations and flight dumps a card submits
#pragma once

#include "cluster/Communicator.h"
#include "store/RunRecords.h"
#include "train/CardContext.h"
#include "train/FlightRing.h"
#include "train/StepPhases.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace rs {

class DistributedSampler;
class LossScaler;
class Replica;
class StepRecorder;
struct CardSeat;
struct TensorStats;

class CardWorker {
public:
    // Builds the card's replica from LibTorch's global generator: construct cards one at a time.
    CardWorker(const CardContext& ctx, int rank, int local);
    ~CardWorker();
    CardWorker(const CardWorker&) = delete;
    CardWorker& operator=(const CardWorker&) = delete;

    void setFlightDepth(int depth); // the ring's slots; their memory is taken by run()
    // The card's thread: steps until the run ends, is stopped or this card fails; never throws.
    void run();

    const Replica& replica() const { return *m_replica; }
    CardState state() const { return static_cast<CardState>(m_state.load()); }
    const PhaseTimes& phaseMs() const { return m_phaseMs; }
    int64_t updates() const { return m_updates; } // steps whose update was applied (not skipped)

private:
    struct StepWork; // what a step's phases hand each other (CardStepWork.h)

    CardSeat seat() const;
    bool stopping() const;
    void prepare();
    void runSteps(int64_t& step);
    void reportTimeout(const CollectiveTimeout& e, int64_t step);
    void reportFailure(const std::exception& e, int64_t step);

    // A step's phases (CardStep.cpp, CardAllReduce.cpp), in order.
    void trainStep(int64_t step);
    void takeFlightSlot(StepWork& w);
    void loadBatch(StepWork& w);
    void computeGradients(StepWork& w);
    void recordLocalGradient(StepWork& w);
    void allReduceGradients(StepWork& w);
    void allReduceHalf(StepWork& w, ReduceOp op, bool unsynced);
    void allReduceReading(StepWork& w, const float* g, ReduceOp op, bool readSynced);
    void convertCountingNonfinite(StepWork& w);
    bool corruptAfterAllReduce(StepWork& w);
    void recordSyncedGradient(StepWork& w);
    void recordSyncedInConversion(StepWork& w);
    void storeSynced(StepWork& w, size_t p, const TensorStats& s);
    bool voteOnOverflow(StepWork& w);
    void updateWeights(StepWork& w, bool skip);
    void updateShard(StepWork& w, float lr);
    void shareDigest(StepWork& w);
    void submitStep(StepWork& w);

    // Records besides the step's row (CardRecords.cpp).
    void recordWeights(int64_t step);
    void evaluate(int64_t step);
    void maybeDump(const StepWork& w);
    FlightDump flightDump(const StepWork& w, const std::string& why) const;

    const CardContext& m_ctx;
    const int m_rank;  // in the whole run
    const int m_local; // on this node's communicator
    FlightRing m_ring; // before the replica: its backward may write into a slot, so the ring outlives it
    std::unique_ptr<Replica> m_replica;
    std::unique_ptr<DistributedSampler> m_sampler;
    std::unique_ptr<LossScaler> m_scaler;
    std::vector<float> m_momentum; // (numParams)
    std::vector<uint16_t> m_half;  // (numParams) the fp16 all-reduce payload under O2/O3
    std::vector<uint8_t> m_raw;    // the batch being loaded: bytes, (B, 3, 32, 32) images, (B) labels
    std::vector<float> m_images;
    std::vector<int64_t> m_labels;
    std::atomic<uint8_t> m_state{0}; // CardState, read by the trainer once the thread ends
    bool m_anomalyBefore = false;
    bool m_stopAgreed = false; // multi-node: some node asked to stop, as of this card's last digest
    PhaseTimes m_phaseMs{};
    int m_dumps = 0;
    int64_t m_updates = 0;
};

} // namespace rs
