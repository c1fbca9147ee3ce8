// CardWorker: one step of one card, phase by phase, around the all-reduce (CardAllReduce.cpp): the batch,
// forward and backward, the local statistics, the overflow vote, the optimizer, the digest every rank shares,
// and the card's row of the step handed to the recorder.
#include "cluster/ComputeSlots.h"
#include "faults/FaultPlan.h"
#include "telemetry/Fingerprint.h"
#include "train/CardStepWork.h"
#include "train/Dataset.h"
#include "train/DistributedSampler.h"
#include "train/LocalStatistics.h"
#include "train/LossScaler.h"
#include "train/Replica.h"
#include "train/SgdMomentum.h"
#include "train/StepRecorder.h"
#include "util/RunQueueDelay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace rs {
namespace {

// Digest each rank shares at the end of a step, so every rank sees at once whether the replicas still agree.
struct Digest {
    uint64_t synced = 0;  // fingerprint over the per-parameter synced fingerprints
    uint64_t weights = 0; // fingerprint over the weights (weight steps only)
    uint32_t nonfinite = 0;
    uint32_t dumpRequested = 0;
    uint32_t stop = 0; // a stop asked for on this rank's node (multi-node: every node stops after this step)
    uint32_t pad = 0;
};

// Times a step's phases into the card's sums: each call closes the phase at now.
class PhaseClock {
public:
    PhaseClock(PhaseTimes& sums, Clock::time_point start)
        : m_sums(sums)
        , m_mark(start) {}
    void close(int phase) {
        const auto now = Clock::now();
        m_sums[size_t(phase)] += std::chrono::duration<double, std::milli>(now - m_mark).count();
        m_mark = now;
    }

private:
    PhaseTimes& m_sums;
    Clock::time_point m_mark;
};

} // namespace

void CardWorker::trainStep(int64_t step) {
    StepWork w;
    w.step = step;
    w.t0 = Clock::now();
    PhaseClock phase(m_phaseMs, w.t0); // phases as kPhaseNames names them
    takeFlightSlot(w);
    loadBatch(w);
    phase.close(0);
    computeGradients(w);
    phase.close(1);
    recordLocalGradient(w);
    phase.close(2);
    allReduceGradients(w);
    phase.close(3);
    // Reading the synced statistics inside the all-reduce's last pass is the statistics' time, not the
    // all-reduce's.
    m_phaseMs[3] -= w.syncedInCommMs + w.localInCommMs;
    m_phaseMs[4] += w.syncedInCommMs;
    m_phaseMs[2] += w.localInCommMs; // and the local statistics read in its reduce-scatter
    recordSyncedGradient(w);
    phase.close(4);
    const bool skip = voteOnOverflow(w);
    phase.close(5);
    updateWeights(w, skip);
    phase.close(6);
    shareDigest(w);
    phase.close(7);
    w.rs.commMs = static_cast<float>(w.commMs);
    w.rs.stepMs = static_cast<float>(msSince(w.t0));
    submitStep(w);
    phase.close(8);
    if (w.weightStep)
        recordWeights(step + 1);
    maybeDump(w);
    phase.close(9);
}

void CardWorker::loadBatch(StepWork& w) {
    const TrainConfig& cfg = m_ctx.cfg;
    const int64_t perEpoch = m_ctx.plan.perEpoch;
    const int B = cfg.batchPerRank;
    w.epoch = w.step / perEpoch;
    if (w.step % perEpoch == 0)
        m_sampler->setEpoch(w.epoch);
    const int64_t* ids = m_sampler->indices().data() + (w.step % perEpoch) * B;
    loadNormalizedBatch(m_ctx.train, ids, B, m_raw, m_images, m_labels);
    w.rs.sampleIds.assign(ids, ids + B);
    w.rs.sampleFp = fingerprint(ids, sizeof(int64_t) * B);
    if (m_ctx.faults.scaleRestarts(m_rank, w.step)) // a fresh loss-scale manager, at its initial scale
        m_scaler = std::make_unique<LossScaler>(cfg.lossScale);
    if (m_ctx.faults.scaleHalvesAt(w.step)) { // every rank's manager starts over from half its scale
        LossScaleSpec half = cfg.lossScale;
        half.value = m_scaler->scale() / 2;
        m_scaler = std::make_unique<LossScaler>(half);
    }
    w.scale = m_scaler->scale();
    w.unscale = 1.0f / w.scale;
    w.rs.lossScale = w.scale;
}

void CardWorker::computeGradients(StepWork& w) {
    BatchResult res;
    {
        ComputingGuard computing(m_ctx.comm, m_local);
        ComputeSlotGuard slot(m_ctx.slots);
        const auto tc = Clock::now();
        const double waitedBefore = runQueueDelayMs();
        res = m_replica->forwardBackward(m_images.data(), m_labels.data(), m_ctx.cfg.batchPerRank, w.scale);
        if (const int slower = m_ctx.faults.slowdown(m_rank, w.step); slower > 1) // a slow card, still busy
            std::this_thread::sleep_for(
                std::chrono::duration<double, std::milli>((slower - 1) * msSince(tc)));
        // The wait is read before the clock, as it was read after it at the start: a preemption between two
        // reads then lengthens the compute time, never the wait alone (wait <= compute).
        const double waited = runQueueDelayMs() - waitedBefore;
        w.rs.computeMs = static_cast<float>(msSince(tc));
        w.rs.cpuWaitMs = static_cast<float>(waited);
    }
    w.rs.loss = res.loss;
    w.rs.accuracy = res.accuracy;
    // BatchNorm statistics after this forward: a rank in eval mode shows at the step it switched, not at the
    // next weight row (the same fingerprint as /weights/buffer_fp on the steps both are recorded).
    if (m_ctx.cfg.telemetry && m_ctx.plan.hasBuffers) {
        const auto buffers = m_replica->bufferValues();
        w.rs.bufferFp = fingerprint(buffers.data(), buffers.size() * 4);
    }
    if (const int bit = m_ctx.faults.flipBefore(m_rank, w.step);
        bit >= 0) // corruption in this card's backward
        FaultPlan::flipBit(m_replica->grads(), m_replica->numParams(), bit);
}

// This step's flight-recorder slot, before the backward: past depth 1 the backward accumulates straight into
// the slot's local gradient, so the ring keeps it without a copy (at depth 1 it is still live when a dump is
// taken). The all-reduce writes the synced gradient into the slot.
void CardWorker::takeFlightSlot(StepWork& w) {
    if (m_ring.slots.empty())
        return;
    w.slotIndex = m_ring.next;
    w.slot = &m_ring.slots[m_ring.next];
    m_ring.next = (m_ring.next + 1) % m_ring.slots.size();
    w.slot->step = w.step;
    w.slot->weightsIn = w.slotIndex;
    if (m_ctx.plan.flightDepth > 1) // the slots' buffers are sized once, in prepare()
        m_replica->useGradientStorage(w.slot->local.data());
}

// Local gradient, as this card computed it (a fault that corrupts it in the backward already done). At O0
// the all-reduce reads every rank's gradient anyway: the statistics are taken in its read
// (ReducedLocalStats). Under O2/O3 they take a pass of their own that also writes the fp16 payload (each
// block converted while in L1), so the all-reduce does not read the gradient again; the parameters tile the
// flat gradient. (Under O2/O3 the gradient leaves backward in fp16: the conversion to the fp16 payload does
// that rounding; the flight recorder keeps the fp32 gradient and rounds it when a dump is taken.)
void CardWorker::recordLocalGradient(StepWork& w) {
    if (!m_ctx.cfg.telemetry)
        return;
    const auto& params = m_replica->params();
    const bool tile = paramsTile(params, m_replica->numParams());
    // The same answer on every rank: each reads a chunk of every rank's gradient for the others.
    w.localInReduce = m_ctx.localReads && !m_ctx.plan.halfPayload && tile;
    if (w.localInReduce)
        return;
    uint16_t* half = m_ctx.plan.halfPayload && !m_half.empty() ? m_half.data() : nullptr;
    localStatsInOwnPass(m_replica->grads(), params, w.unscale, m_ctx.cfg.seed, m_ctx.cfg.sketchDim, half,
                        w.rs);
    w.halvesReady = half != nullptr && tile;
}

// Overflow status is all-reduced so every rank skips the same steps (NPUAllocFloatStatus + AllReduce); the
// loss scaler updates. True when this step's update is skipped.
bool CardWorker::voteOnOverflow(StepWork& w) {
    float overflow = w.nonfiniteSynced > 0 ? 1.f : 0.f;
    if (w.ownStatus) {
        overflow = w.localOverflow ? 1.f : 0.f;
    } else {
        const auto tcomm = Clock::now();
        m_ctx.comm.allReduce(m_local, &overflow, 1, DType::F32, ReduceOp::Max);
        w.commMs += msSince(tcomm);
    }
    w.rs.overflow = overflow > 0 ? 1 : 0;
    const bool skip = m_scaler->update(w.rs.overflow);
    w.rs.skipped = skip ? 1 : 0;
    return skip;
}

// The optimizer on the synced gradient (none on a skipped step). Deeper flight rings keep the weights,
// copied in the optimizer's own pass where it can; a skipped update leaves them as the previous step's slot
// holds them, and that buffer moves to this step's slot.
void CardWorker::updateWeights(StepWork& w, bool skip) {
    const TrainConfig& cfg = m_ctx.cfg;
    float* weights = m_replica->weights();
    const int64_t N = m_replica->numParams();
    const bool keepWeights = w.slot && m_ctx.plan.flightDepth > 1;
    auto keep = [&] { return w.slot->weights.data(); }; // sized in prepare()
    const float lr = m_ctx.learningRate(w.step) * m_ctx.faults.lrFactor(m_rank, w.step);
    w.rs.optimizerLr = lr;
    if (skip) {
        if (keepWeights && !m_ring.carryWeightsForward(w.slotIndex))
            std::copy_n(weights, N, keep());
        return;
    }
    ++m_updates;
    const bool o3 = cfg.precision == Precision::O3;
    if (cfg.optimizerShard) {
        updateShard(w, lr);
    } else {
        sgdMomentumStep(weights, m_momentum.data(), w.synced, N, lr, cfg.momentum, cfg.weightDecay, w.unscale,
                        keepWeights && !o3 ? keep() : nullptr);
    }
    if (o3)
        m_replica->roundWeightsThroughHalf();
    if (keepWeights && (o3 || cfg.optimizerShard))
        std::copy_n(weights, N, keep());
}

// The sharded update: the same elementwise step as the replicated one, on this rank's chunk of the weights
// only (every rank holds the whole synced gradient), then the chunks are all-gathered, so every rank ends
// with the weights a replicated update gives, bit for bit. An optimizer that misbehaves on one rank writes
// its chunk for every rank: the weights stay alike across ranks, and only the rank's own chunk shows it.
void CardWorker::updateShard(StepWork& w, float lr) {
    const TrainConfig& cfg = m_ctx.cfg;
    float* weights = m_replica->weights();
    const auto n = static_cast<size_t>(m_replica->numParams());
    const auto [begin, end] = m_ctx.comm.chunkOf(m_local, n);
    sgdMomentumStep(weights + begin, m_momentum.data() + begin, w.synced + begin,
                    static_cast<int64_t>(end - begin), lr, cfg.momentum, cfg.weightDecay, w.unscale, nullptr);
    const auto tcomm = Clock::now();
    m_ctx.comm.allGatherChunks(m_local, weights, n, DType::F32);
    w.commMs += msSince(tcomm);
}

// Share a digest: every rank learns at once whether the replicas still agree (anomaly -> flight dump),
// whether a dump or a stop was asked for anywhere.
void CardWorker::shareDigest(StepWork& w) {
    const TrainConfig& cfg = m_ctx.cfg;
    w.weightStep = (w.step + 1) % cfg.weightEvery == 0 || w.step + 1 == m_ctx.plan.totalSteps;
    Digest mine;
    if (cfg.telemetry)
        mine.synced = fingerprint(w.rs.syncedFp.data(), w.rs.syncedFp.size() * 8);
    if (w.weightStep)
        mine.weights = fingerprint(m_replica->weights(), static_cast<size_t>(m_replica->numParams()) * 4);
    mine.nonfinite = !std::isfinite(w.rs.loss) ? 1u : 0u;
    mine.dumpRequested = m_ctx.dumpRequested.exchange(false) ? 1u : 0u;
    mine.stop = m_ctx.stopRequested ? 1u : 0u;
    std::vector<Digest> all(static_cast<size_t>(cfg.ranks));
    const auto tcomm = Clock::now();
    m_ctx.comm.allGather(m_local, &mine, sizeof(Digest), all.data());
    w.commMs += msSince(tcomm);
    for (const auto& dg : all) {
        if (dg.synced != all[0].synced)
            w.reason = "synced gradient fingerprints differ across ranks";
        if (dg.weights != all[0].weights)
            w.reason = "weight fingerprints differ across ranks";
        if (dg.nonfinite)
            w.reason = "non-finite loss";
        w.dumpAsked = w.dumpAsked || dg.dumpRequested;
        m_stopAgreed = m_stopAgreed || dg.stop;
    }
    w.anomaly = !w.reason.empty();
}

// The card's row of this step goes to the recorder.
void CardWorker::submitStep(StepWork& w) {
    StepRecord mine;
    mine.step = w.step;
    mine.epoch = w.epoch;
    mine.lr = m_ctx.learningRate(w.step);
    mine.ranks.push_back(std::move(w.rs));
    m_ctx.sink.submit(seat(), std::move(mine));
}

} // namespace rs
