// CardWorker: see CardWorker.h. A card's construction, its thread's loop over the steps, and how it ends.
#include "train/CardWorker.h"

#include "faults/FaultPlan.h"
#include "telemetry/Fingerprint.h"
#include "train/Dataset.h"
#include "train/DistributedSampler.h"
#include "train/LossScaler.h"
#include "train/Replica.h"
#include "train/StepRecorder.h"

#include <fmt/format.h>

namespace rs {

CardWorker::CardWorker(const CardContext& ctx, int rank, int local)
    : m_ctx(ctx)
    , m_rank(rank)
    , m_local(local) {
    const TrainConfig& cfg = ctx.cfg;
    ReplicaOptions opt;
    opt.model = cfg.model;
    opt.precision = cfg.precision;
    // set_seed: every rank initialises alike (unless init-mismatch), and the broadcast makes sure
    opt.initSeed = ctx.faults.initSeed(rank, cfg.seed);
    const int rankId = ctx.faults.rankId(rank); // what RANK_ID said; everything derives from it
    opt.dropoutSeed = splitmix64(cfg.seed * 1000003ull + static_cast<uint64_t>(rankId));
    opt.stopFlag = ctx.plan.multiNode ? nullptr : &ctx.stopRequested; // nodes finish the step (Trainer::stop)
    m_replica = std::make_unique<Replica>(opt);
    if (ctx.faults.sharedSampler()) // a plain sampler: every rank reads the whole set in order
        m_sampler = std::make_unique<DistributedSampler>(ctx.train.size(), 1, 0, cfg.seed);
    else
        m_sampler = std::make_unique<DistributedSampler>(ctx.train.size(), cfg.ranks, rankId, cfg.seed);
    m_scaler = std::make_unique<LossScaler>(cfg.lossScale);
    m_momentum.assign(static_cast<size_t>(m_replica->numParams()), 0.f);
    if (ctx.plan.halfPayload)
        m_half.resize(static_cast<size_t>(m_replica->numParams()));
}

CardWorker::~CardWorker() = default;

void CardWorker::setFlightDepth(int depth) {
    m_ring.slots.resize(static_cast<size_t>(depth));
}

CardSeat CardWorker::seat() const {
    return CardSeat{m_rank, m_local};
}

// One process stops at once (the communicator is cancelled); nodes stop together, after the step whose
// digest first carried a stop, so no node is left waiting in a collective for another.
bool CardWorker::stopping() const {
    return m_ctx.plan.multiNode ? m_stopAgreed : m_ctx.stopRequested.load();
}

void CardWorker::run() {
    setTorchThreads(1); // one intra-op thread per card; ComputeSlots caps cards computing at once
    int64_t step = 0;
    try {
        prepare();
        runSteps(step);
        m_state = static_cast<uint8_t>(stopping() ? CardState::Stopped : CardState::Ok);
    } catch (const CollectiveCancelled&) {
        m_state = static_cast<uint8_t>(CardState::Stopped);
    } catch (const ReplicaStopped&) {
        m_state = static_cast<uint8_t>(CardState::Stopped);
    } catch (const CollectiveTimeout& e) {
        reportTimeout(e, step);
    } catch (const std::exception& e) {
        reportFailure(e, step);
    }
}

// Before the first step: the ring's memory, the initial broadcast and the step-0 weight check.
void CardWorker::prepare() {
    // The ring's memory is taken and touched here, once, by the card's own thread, before the first step: a
    // slot's first step would otherwise pay for zeroing fresh pages of every buffer it fills.
    const auto n = static_cast<size_t>(m_replica->numParams());
    for (FlightRing::Slot& slot : m_ring.slots) {
        slot.synced.resize(n);
        if (m_ctx.plan.flightDepth > 1) {
            slot.local.resize(n);
            slot.weights.resize(n);
        }
    }
    if (m_ctx.cfg.broadcastInit) // MindSpore parameter_broadcast: everyone starts from rank 0's weights
        m_ctx.comm.broadcast(m_local, m_replica->weights(), n * 4, 0);
    recordWeights(0);
}

// The steps, with evaluations on their steps; `step` is where the card is, for a report if it fails.
void CardWorker::runSteps(int64_t& step) {
    const RunPlan& plan = m_ctx.plan;
    const int64_t shard = m_ctx.faults.shardBatches(m_rank, plan.perEpoch);
    for (; step < plan.totalSteps && !stopping(); ++step) {
        // rank-exit: the card is gone; its peers find out in their next collective.
        if (m_ctx.faults.diesAt(m_rank, step))
            throw std::runtime_error("EL0004: device HBM out of memory, the card stopped responding");
        if (m_ctx.faults.evalModeFrom(m_rank, step))
            m_replica->setTrainMode(false);
        if (step % plan.perEpoch >=
            shard) { // this rank's loader is exhausted: its epoch (and loop) ends here
            evaluate(step);
            break;
        }
        trainStep(step);
        if (m_ctx.cfg.evalEvery > 0 && (step + 1) % m_ctx.cfg.evalEvery == 0 && step + 1 < plan.totalSteps)
            evaluate(step + 1);
    }
    if (!stopping() && step == plan.totalSteps)
        evaluate(step);
}

void CardWorker::reportTimeout(const CollectiveTimeout& e, int64_t step) {
    m_state = static_cast<uint8_t>(CardState::TimedOut);
    // One event per rank it waited for, which diagnosis reads (the message is for people).
    const std::string message = fmt::format("Rank {}: {}", m_rank, e.what());
    for (int peer : e.missingRanks)
        m_ctx.sink.submit(
            Event{step, m_rank, Severity::Error, eventcode::kTimeout, message, peer, uint8_t(e.nodeGone)});
    if (e.missingRanks.empty())
        m_ctx.sink.submit(Event{step, m_rank, Severity::Error, eventcode::kTimeout, message});
    m_ctx.errors.add(fmt::format("rank {}: {}", m_rank, e.what()));
}

void CardWorker::reportFailure(const std::exception& e, int64_t step) {
    m_state = static_cast<uint8_t>(CardState::Dead);
    m_ctx.comm.markFailed(m_local);
    m_ctx.sink.submit(Event{step, m_rank, Severity::Error, eventcode::kCardFailed,
                            fmt::format("Rank {} failed at step {}: {}", m_rank, step, e.what())});
    m_ctx.errors.add(fmt::format("rank {}: {}", m_rank, e.what()));
}

} // namespace rs
