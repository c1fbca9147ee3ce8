// Trainer: a card's work. Each step: forward and backward on its shard, local statistics, the all-reduce,
// synced statistics, the optimizer, and the digest every rank shares; weights and evaluations on their
// steps; the card's loop and how it ends.
#include "telemetry/Fingerprint.h"
#include "telemetry/GradStats.h"
#include "train/SgdMomentum.h"
#include "train/TrainerImpl.h"
#include "util/HalfConvert.h"
#include "util/RunQueueDelay.h"

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <optional>

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

void sizeSynced(RankStep& rs, size_t P) {
    rs.syncedNorm.resize(P);
    rs.syncedSum.resize(P);
    rs.syncedFp.resize(P);
}

// True when the parameters cover the flat buffer of n elements end to end, in order: a pass over each of them
// is then a pass over the whole buffer.
bool paramsTile(const std::vector<ParamInfo>& params, int64_t n) {
    int64_t at = 0;
    for (const auto& p : params) {
        if (p.offset != at)
            return false;
        at += p.numel;
    }
    return at == n;
}

} // namespace

void Trainer::Impl::recordWeights(Card& card, int64_t step) {
    const auto& params = card.replica->params();
    const float* w = card.replica->weights();
    std::vector<uint64_t> fp(params.size());
    std::vector<float> norm(params.size());
    for (size_t p = 0; p < params.size(); ++p) {
        const float* t = w + params[p].offset;
        fp[p] = fingerprint(t, static_cast<size_t>(params[p].numel) * 4);
        norm[p] = static_cast<float>(std::sqrt(normAndSum(t, params[p].numel, 1.f).sumSq));
    }
    const auto buffers = card.replica->bufferValues();
    const uint64_t bufferFp = fingerprint(buffers.data(), buffers.size() * 4);
    double bufferNorm = 0;
    for (float v : buffers)
        bufferNorm += static_cast<double>(v) * v;
    if (group) {
        WeightRecord one;
        one.step = step;
        one.fp = {std::move(fp)};
        one.norm = {std::move(norm)};
        one.bufferFp = {bufferFp};
        one.bufferNorm = {static_cast<float>(std::sqrt(bufferNorm))};
        auto all = exchange(card, one);
        if (card.local != 0)
            return;
        WeightRecord rec;
        rec.step = step;
        for (auto& x : all) {
            rec.fp.push_back(std::move(x.fp[0]));
            rec.norm.push_back(std::move(x.norm[0]));
            rec.bufferFp.push_back(x.bufferFp[0]);
            rec.bufferNorm.push_back(x.bufferNorm[0]);
        }
        push(std::move(rec));
        return;
    }
    gather(pendingWeights, step, [&](WeightRecord& rec) {
        rec.step = step;
        rec.fp.resize(cfg.ranks);
        rec.norm.resize(cfg.ranks);
        rec.bufferFp.resize(cfg.ranks);
        rec.bufferNorm.resize(cfg.ranks);
        rec.fp[card.rank] = std::move(fp);
        rec.norm[card.rank] = std::move(norm);
        rec.bufferFp[card.rank] = bufferFp;
        rec.bufferNorm[card.rank] = static_cast<float>(std::sqrt(bufferNorm));
    });
}

void Trainer::Impl::evaluate(Card& card, int64_t step) {
    const int n = static_cast<int>(std::min<int64_t>(cfg.evalSamples, test->size()));
    if (n <= 0)
        return;
    std::vector<uint8_t> raw;
    std::vector<float> images;
    std::vector<int64_t> labels;
    int correct = 0;
    double lossSum = 0;
    constexpr int kChunk = 128;
    for (int begin = 0; begin < n; begin += kChunk) {
        const int m = std::min(kChunk, n - begin);
        std::vector<int64_t> ids(m);
        for (int i = 0; i < m; ++i)
            ids[i] = begin + i;
        loadNormalizedBatch(*test, ids.data(), m, raw, images, labels);
        ComputingGuard computing(*comm, card.local);
        ComputeSlotGuard slot(*slots);
        const auto r = card.replica->evaluate(images.data(), labels.data(), m);
        correct += r.correct;
        lossSum += static_cast<double>(r.loss) * m;
    }
    if (group) {
        EvalRecord one;
        one.step = step;
        one.accuracy = {static_cast<float>(correct) / static_cast<float>(n)};
        one.loss = {static_cast<float>(lossSum / n)};
        auto all = exchange(card, one);
        if (card.local != 0)
            return;
        EvalRecord rec;
        rec.step = step;
        for (const auto& x : all) {
            rec.accuracy.push_back(x.accuracy[0]);
            rec.loss.push_back(x.loss[0]);
        }
        push(std::move(rec));
        return;
    }
    gather(pendingEvals, step, [&](EvalRecord& rec) {
        rec.step = step;
        rec.accuracy.resize(cfg.ranks);
        rec.loss.resize(cfg.ranks);
        rec.accuracy[card.rank] = static_cast<float>(correct) / static_cast<float>(n);
        rec.loss[card.rank] = static_cast<float>(lossSum / n);
    });
}

// One step of one card, phase by phase. What the phases hand each other.
struct Trainer::Impl::StepWork {
    int64_t step = 0, epoch = 0;
    Clock::time_point t0;
    RankStep rs;
    float scale = 1, unscale = 1;
    double commMs = 0;
    FlightRing::Slot* slot = nullptr; // this step's flight-recorder slot, if the recorder is on
    size_t slotIndex = 0;             // its index in the card's ring (FlightRing::carryWeightsForward)
    float* synced = nullptr;          // the all-reduce's result (the card's gradients keep the local one)
    bool ownStatus = false, localOverflow = false;
    bool halvesReady = false;    // the O2/O3 payload was written by the local statistics' pass
    bool convertPending = false; // the O2/O3 result waits in fp16 for the pass that also reads its statistics
    bool syncedTaken = false;    // the synced statistics were read in the all-reduce's last pass
    double syncedInCommMs = 0;   // of the all-reduce call's time, what reading them took
    uint32_t nonfiniteSynced = 0;
    // The digest round's outcome: every rank of the run sees the same.
    bool anomaly = false, dumpAsked = false, weightStep = false;
    std::string reason;
};

void Trainer::Impl::trainStep(Card& card, int64_t step, std::vector<uint8_t>& raw, std::vector<float>& images,
                              std::vector<int64_t>& labels) {
    StepWork w;
    w.step = step;
    w.t0 = Clock::now();
    auto mark = w.t0;
    auto phase = [&](int k) { // closes phase k (Impl::kPhaseNames) at now
        const auto now = Clock::now();
        card.phaseMs[size_t(k)] += std::chrono::duration<double, std::milli>(now - mark).count();
        mark = now;
    };
    takeFlightSlot(card, w);
    loadBatch(card, w, raw, images, labels);
    phase(0);
    computeGradients(card, w, images, labels);
    phase(1);
    recordLocalGradient(card, w);
    phase(2);
    allReduceGradients(card, w);
    phase(3);
    // Reading the synced statistics inside the all-reduce's last pass is the statistics' time, not the
    // all-reduce's.
    card.phaseMs[3] -= w.syncedInCommMs;
    card.phaseMs[4] += w.syncedInCommMs;
    recordSyncedGradient(card, w);
    phase(4);
    const bool skip = voteOnOverflow(card, w);
    phase(5);
    updateWeights(card, w, skip);
    phase(6);
    shareDigest(card, w);
    phase(7);
    w.rs.commMs = static_cast<float>(w.commMs);
    w.rs.stepMs = static_cast<float>(msSince(w.t0));
    submitStep(card, w);
    phase(8);
    if (w.weightStep)
        recordWeights(card, step + 1);
    maybeDump(card, w);
    phase(9);
}

void Trainer::Impl::loadBatch(Card& card, StepWork& w, std::vector<uint8_t>& raw, std::vector<float>& images,
                              std::vector<int64_t>& labels) {
    const int B = cfg.batchPerRank;
    w.epoch = w.step / perEpoch;
    if (w.step % perEpoch == 0)
        card.sampler->setEpoch(w.epoch);
    const int64_t* ids = card.sampler->indices().data() + (w.step % perEpoch) * B;
    loadNormalizedBatch(*train, ids, B, raw, images, labels);
    w.rs.sampleIds.assign(ids, ids + B);
    w.rs.sampleFp = fingerprint(ids, sizeof(int64_t) * B);
    if (faults->scaleRestarts(card.rank, w.step)) // a fresh loss-scale manager, at its initial scale
        card.scaler = std::make_unique<LossScaler>(cfg.lossScale);
    if (faults->scaleHalvesAt(w.step)) { // every rank's manager starts over from half its scale
        LossScaleSpec half = cfg.lossScale;
        half.value = card.scaler->scale() / 2;
        card.scaler = std::make_unique<LossScaler>(half);
    }
    w.scale = card.scaler->scale();
    w.unscale = 1.0f / w.scale;
    w.rs.lossScale = w.scale;
}

void Trainer::Impl::computeGradients(Card& card, StepWork& w, const std::vector<float>& images,
                                     const std::vector<int64_t>& labels) {
    BatchResult res;
    {
        ComputingGuard computing(*comm, card.local);
        ComputeSlotGuard slot(*slots);
        const auto tc = Clock::now();
        const double waitedBefore = runQueueDelayMs();
        res = card.replica->forwardBackward(images.data(), labels.data(), cfg.batchPerRank, w.scale);
        if (const int slower = faults->slowdown(card.rank, w.step); slower > 1) // a slow card, still busy
            std::this_thread::sleep_for(
                std::chrono::duration<double, std::milli>((slower - 1) * msSince(tc)));
        w.rs.computeMs = static_cast<float>(msSince(tc));
        w.rs.cpuWaitMs = static_cast<float>(runQueueDelayMs() - waitedBefore);
    }
    w.rs.loss = res.loss;
    w.rs.accuracy = res.accuracy;
    // BatchNorm statistics after this forward: a rank in eval mode shows at the step it switched, not at the
    // next weight row (the same fingerprint as /weights/buffer_fp on the steps both are recorded).
    if (cfg.telemetry && hasBuffers) {
        const auto buffers = card.replica->bufferValues();
        w.rs.bufferFp = fingerprint(buffers.data(), buffers.size() * 4);
    }
    if (const int bit = faults->flipBefore(card.rank, w.step); bit >= 0) // corruption in this card's backward
        FaultPlan::flipBit(card.replica->grads(), card.replica->numParams(), bit);
}

// This step's flight-recorder slot, before the backward: past depth 1 the backward accumulates straight into
// the slot's local gradient, so the ring keeps it without a copy (at depth 1 it is still live when a dump is
// taken). The all-reduce writes the synced gradient into the slot.
void Trainer::Impl::takeFlightSlot(Card& card, StepWork& w) {
    if (card.ring.slots.empty())
        return;
    w.slotIndex = card.ring.next;
    w.slot = &card.ring.slots[card.ring.next];
    card.ring.next = (card.ring.next + 1) % card.ring.slots.size();
    w.slot->step = w.step;
    w.slot->weightsIn = w.slotIndex;
    if (flightDepth > 1) // the slots' buffers are sized once, in cardLoop
        card.replica->useGradientStorage(w.slot->local.data());
}

// Local gradient, as this card computed it.
void Trainer::Impl::recordLocalGradient(Card& card, StepWork& w) {
    const auto& params = card.replica->params();
    const size_t P = params.size();
    const float* g = card.replica->grads();
    RankStep& rs = w.rs;
    if (cfg.telemetry) {
        const int K = cfg.sketchDim;
        rs.localNorm.resize(P);
        rs.localMax.resize(P);
        rs.localSum.resize(P);
        rs.nonfinite.resize(P);
        rs.overflowCount.resize(P);
        rs.underflowCount.resize(P);
        rs.sketch.resize(P * K);
        rs.localFp.resize(P);
        // Under O2/O3 the same pass writes the fp16 payload (each block converted while in L1), so the
        // all-reduce does not read the gradient again; the parameters tile the flat gradient.
        uint16_t* half = halfPayload && !card.half.empty() ? card.half.data() : nullptr;
        for (size_t p = 0; p < P; ++p) {
            const auto s = gradStats(g + params[p].offset, params[p].numel, w.unscale,
                                     splitmix64(cfg.seed ^ (0x5ce7c4ull + p)), K, rs.sketch.data() + p * K,
                                     &rs.localFp[p], half ? half + params[p].offset : nullptr);
            rs.localNorm[p] = static_cast<float>(std::sqrt(s.sumSq));
            rs.localMax[p] = s.maxAbs;
            rs.localSum[p] = s.sum;
            rs.nonfinite[p] = s.nonfinite;
            rs.overflowCount[p] = s.overflow;
            rs.underflowCount[p] = s.underflow;
        }
        w.halvesReady = half != nullptr && paramsTile(params, card.replica->numParams());
    }
    // Under O2/O3 the gradient leaves backward in fp16: the conversion to the fp16 payload does that
    // rounding; the flight recorder keeps the fp32 gradient and rounds it when a dump is taken.
}

// The all-reduce: fp16 payload under O2/O3 (sums past 65504 overflow like hardware), fp32 under O0.
void Trainer::Impl::allReduceGradients(Card& card, StepWork& w) {
    Replica& rep = *card.replica;
    const auto& params = rep.params();
    const int64_t N = rep.numParams();
    float* g = rep.grads();
    const ReduceOp op = cfg.gradientsMean ? ReduceOp::Mean : ReduceOp::Sum;
    // With a flight ring the result lands in this step's slot and the local gradient stays in the card's
    // buffer for a dump; without one the all-reduce works in place (no second gradient-sized buffer).
    w.synced = w.slot ? w.slot->synced.data() : g;
    // Faults around the all-reduce: a parameter outside every fusion bucket keeps its local gradient, and a
    // rank that checks overflow alone reads its own float status.
    const int unsynced = faults->unsyncedParam(w.step);
    std::vector<float> kept; // the local gradient of that parameter, when the all-reduce overwrites it
    if (unsynced >= 0 && !w.slot)
        kept.assign(g + params[size_t(unsynced)].offset,
                    g + params[size_t(unsynced)].offset + params[size_t(unsynced)].numel);
    w.ownStatus = !faults->overflowSynced(w.step);
    w.localOverflow = w.ownStatus && FaultPlan::overflows(g, N, halfPayload);
    const auto tcomm = Clock::now();
    if (halfPayload) {
        if (!w.halvesReady)
            rep.gradsToHalf(card.half.data());
        comm->allReduce(card.local, card.half.data(), static_cast<size_t>(N), DType::F16, op);
        // With telemetry the conversion back to fp32 is the synced statistics' pass (recordSyncedGradient);
        // without, it counts the non-finite values the overflow vote needs. Not when a parameter's synced
        // gradient is about to be overwritten here.
        w.convertPending = cfg.telemetry && unsynced < 0 && paramsTile(params, N);
        if (!cfg.telemetry && unsynced < 0)
            convertCountingNonfinite(card, w);
        else if (!w.convertPending)
            halvesToFloats(card.half.data(), w.synced, static_cast<size_t>(N));
    } else if (unsynced < 0 && (!cfg.telemetry || paramsTile(params, N))) {
        allReduceReadingSynced(card, w, g, op);
    } else {
        comm->allReduce(card.local, g, w.synced, static_cast<size_t>(N), DType::F32, op);
    }
    w.commMs += msSince(tcomm) - w.syncedInCommMs;
    if (unsynced >= 0) { // as if it had never left the card
        const auto& p = params[size_t(unsynced)];
        std::copy_n(w.slot ? g + p.offset : kept.data(), p.numel, w.synced + p.offset);
    }
    if (!w.convertPending && corruptAfterAllReduce(card, w))
        w.syncedTaken = false; // read again, as the optimizer will see it
}

// The fp32 all-reduce with the synced statistics read in its last pass: each piece as the all-gather writes
// it (or, for this rank's own chunk, in its turn), parameter by parameter in order.
void Trainer::Impl::allReduceReadingSynced(Card& card, StepWork& w, const float* g, ReduceOp op) {
    const auto& params = card.replica->params();
    const size_t P = params.size();
    if (cfg.telemetry)
        sizeSynced(w.rs, P);
    size_t cur = 0;
    std::optional<SyncedPass> pass;
    double readingMs = 0;
    const auto delivered = [&](size_t begin, size_t end) {
        const auto t = Clock::now();
        if (!cfg.telemetry) { // only the overflow vote needs the synced gradient: its non-finite count
            w.nonfiniteSynced +=
                normAndSum(w.synced + begin, static_cast<int64_t>(end - begin), 1.f).nonfinite;
            readingMs += msSince(t);
            return;
        }
        const auto upTo = static_cast<int64_t>(end);
        for (; cur < P; ++cur) {
            const ParamInfo& p = params[cur];
            if (!pass)
                pass.emplace(w.synced + p.offset, p.numel, w.unscale);
            if (p.offset + p.numel > upTo) {
                pass->feed(upTo - p.offset);
                break;
            }
            storeSynced(w, cur, pass->finish(&w.rs.syncedFp[cur]));
            pass.reset();
        }
        readingMs += msSince(t);
    };
    comm->allReduce(card.local, g, w.synced, static_cast<size_t>(card.replica->numParams()), DType::F32, op,
                    delivered);
    w.syncedTaken = !cfg.telemetry || cur == P;
    w.syncedInCommMs = readingMs;
}

// Without telemetry, the O2/O3 result converted back to fp32 a block at a time, each block's non-finite
// values counted for the overflow vote while still in L1. Its time is the synced statistics' phase, not the
// all-reduce's, as with telemetry.
void Trainer::Impl::convertCountingNonfinite(Card& card, StepWork& w) {
    const auto t = Clock::now();
    const int64_t N = card.replica->numParams();
    constexpr int64_t kPiece = 2048; // 8 KiB of fp32
    for (int64_t at = 0; at < N; at += kPiece) {
        const int64_t len = std::min(kPiece, N - at);
        halvesToFloats(card.half.data() + at, w.synced + at, static_cast<size_t>(len));
        w.nonfiniteSynced += normAndSum(w.synced + at, len, 1.f).nonfinite;
    }
    w.syncedTaken = true;
    w.syncedInCommMs = msSince(t);
}

// Faults in the synced gradient once the all-reduce has delivered it. True when one wrote it.
bool Trainer::Impl::corruptAfterAllReduce(Card& card, StepWork& w) {
    const int64_t N = card.replica->numParams();
    bool wrote = false;
    // Corruption after the all-reduce, on this card only.
    if (const int bit = faults->flipAfter(card.rank, w.step); bit >= 0) {
        FaultPlan::flipBit(w.synced, N, bit);
        wrote = true;
    }
    // A wrong reduction: every rank receives the same wrong bytes (the same element of the same synced
    // gradient, its lowest exponent bit flipped: twice or half the value).
    if (faults->allReduceWrongAt(w.step)) {
        FaultPlan::flipBit(w.synced, N, 23);
        wrote = true;
    }
    return wrote;
}

// One parameter's synced statistics into the step's record.
void Trainer::Impl::storeSynced(StepWork& w, size_t p, const TensorStats& s) {
    RankStep& rs = w.rs;
    // What a rank applies is the all-reduced sum times its own unscale: ranks whose loss scales differ
    // apply different gradients from the same bytes, so the scale is part of the fingerprint.
    if (w.unscale != 1.0f)
        rs.syncedFp[p] = fingerprint(&w.unscale, sizeof(float), rs.syncedFp[p]);
    w.nonfiniteSynced += s.nonfinite;
    rs.syncedNorm[p] = static_cast<float>(std::sqrt(s.sumSq));
    rs.syncedSum[p] = s.sum;
}

// The O2/O3 all-reduce's last pass: the fp16 result converted to the fp32 synced gradient, each block read
// for the synced statistics while still in L1.
void Trainer::Impl::recordSyncedInConversion(Card& card, StepWork& w) {
    const auto& params = card.replica->params();
    const size_t P = params.size();
    RankStep& rs = w.rs;
    sizeSynced(rs, P);
    for (size_t p = 0; p < P; ++p) {
        const int64_t at = params[p].offset;
        storeSynced(w, p,
                    halvesToFloatsWithStats(card.half.data() + at, w.synced + at, params[p].numel, w.unscale,
                                            &rs.syncedFp[p]));
    }
}

// Synced gradient, as the all-reduce delivered it and this rank unscales it: norm, sum and a bitwise
// fingerprint per parameter. Under O2/O3 with telemetry they are read as the fp16 result is converted; a
// fault that then writes the synced gradient has them read again, so they are always of what the optimizer
// applies.
void Trainer::Impl::recordSyncedGradient(Card& card, StepWork& w) {
    if (w.convertPending) {
        recordSyncedInConversion(card, w);
        w.convertPending = false;
        w.syncedTaken = !corruptAfterAllReduce(card, w);
    }
    if (w.syncedTaken)
        return;
    const auto& params = card.replica->params();
    const size_t P = params.size();
    const float* g = w.synced;
    const bool tele = cfg.telemetry;
    RankStep& rs = w.rs;
    w.nonfiniteSynced = 0; // read again in full when the last pass's reading is stale
    if (tele)
        sizeSynced(rs, P);
    for (size_t p = 0; p < P; ++p) {
        const float* t = g + params[p].offset;
        if (!tele) { // only the overflow vote needs the synced gradient
            w.nonfiniteSynced += normAndSum(t, params[p].numel, w.unscale).nonfinite;
            continue;
        }
        storeSynced(w, p, normSumFingerprint(t, params[p].numel, w.unscale, &rs.syncedFp[p]));
    }
}

// The optimizer on the synced gradient (none on a skipped step). Deeper flight rings keep the weights,
// copied in the optimizer's own pass where it can; a skipped update leaves them as the previous step's slot
// holds them, and that buffer moves to this step's slot.
void Trainer::Impl::updateWeights(Card& card, const StepWork& w, bool skip) {
    float* weights = card.replica->weights();
    const int64_t N = card.replica->numParams();
    const bool keepWeights = w.slot && flightDepth > 1;
    auto keep = [&] { return w.slot->weights.data(); }; // sized in cardLoop
    if (skip) {
        if (keepWeights && !card.ring.carryWeightsForward(w.slotIndex))
            std::copy_n(weights, N, keep());
        return;
    }
    const bool o3 = cfg.precision == Precision::O3;
    sgdMomentumStep(weights, card.momentum.data(), w.synced, N,
                    learningRate(w.step) * faults->lrFactor(card.rank, w.step), cfg.momentum, cfg.weightDecay,
                    w.unscale, keepWeights && !o3 ? keep() : nullptr);
    if (o3) {
        card.replica->roundWeightsThroughHalf();
        if (keepWeights)
            std::copy_n(weights, N, keep());
    }
}

// Overflow status is all-reduced so every rank skips the same steps (NPUAllocFloatStatus + AllReduce); the
// loss scaler updates. True when this step's update is skipped.
bool Trainer::Impl::voteOnOverflow(Card& card, StepWork& w) {
    float overflow = w.nonfiniteSynced > 0 ? 1.f : 0.f;
    if (w.ownStatus) {
        overflow = w.localOverflow ? 1.f : 0.f;
    } else {
        const auto tcomm = Clock::now();
        comm->allReduce(card.local, &overflow, 1, DType::F32, ReduceOp::Max);
        w.commMs += msSince(tcomm);
    }
    w.rs.overflow = overflow > 0 ? 1 : 0;
    const bool skip = card.scaler->update(w.rs.overflow);
    w.rs.skipped = skip ? 1 : 0;
    return skip;
}

// Share a digest: every rank learns at once whether the replicas still agree (anomaly -> flight dump),
// whether a dump or a stop was asked for anywhere.
void Trainer::Impl::shareDigest(Card& card, StepWork& w) {
    w.weightStep = (w.step + 1) % cfg.weightEvery == 0 || w.step + 1 == totalSteps;
    Digest mine;
    if (cfg.telemetry)
        mine.synced = fingerprint(w.rs.syncedFp.data(), w.rs.syncedFp.size() * 8);
    if (w.weightStep)
        mine.weights =
            fingerprint(card.replica->weights(), static_cast<size_t>(card.replica->numParams()) * 4);
    mine.nonfinite = !std::isfinite(w.rs.loss) ? 1u : 0u;
    mine.dumpRequested = dumpRequested.exchange(false) ? 1u : 0u;
    mine.stop = stopRequested ? 1u : 0u;
    std::vector<Digest> all(static_cast<size_t>(cfg.ranks));
    const auto tcomm = Clock::now();
    comm->allGather(card.local, &mine, sizeof(Digest), all.data());
    w.commMs += msSince(tcomm);
    for (const auto& dg : all) {
        if (dg.synced != all[0].synced)
            w.reason = "synced gradient fingerprints differ across ranks";
        if (dg.weights != all[0].weights)
            w.reason = "weight fingerprints differ across ranks";
        if (dg.nonfinite)
            w.reason = "non-finite loss";
        w.dumpAsked = w.dumpAsked || dg.dumpRequested;
        card.stopAgreed = card.stopAgreed || dg.stop;
    }
    w.anomaly = !w.reason.empty();
}

namespace {
int64_t wallClockNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}
} // namespace

// The card's row of this step goes to the writer: gathered in this process, exchanged across nodes.
void Trainer::Impl::submitStep(Card& card, StepWork& w) {
    const float lr = learningRate(w.step);
    if (group) {
        StepRecord one;
        one.step = w.step;
        one.epoch = w.epoch;
        one.lr = lr;
        one.ranks.push_back(std::move(w.rs));
        auto all = exchange(card, one);
        if (card.local == 0) {
            StepRecord rec;
            rec.step = w.step;
            rec.epoch = w.epoch;
            rec.lr = lr;
            rec.endNs = wallClockNs();
            for (auto& x : all)
                rec.ranks.push_back(std::move(x.ranks[0]));
            push(std::move(rec));
        }
    } else
        gather(pendingSteps, w.step, [&](StepRecord& rec) {
            rec.step = w.step;
            rec.epoch = w.epoch;
            rec.lr = lr;
            rec.endNs = std::max(rec.endNs, wallClockNs()); // the last card's
            rec.ranks.resize(static_cast<size_t>(cfg.ranks));
            rec.ranks[static_cast<size_t>(card.rank)] = std::move(w.rs);
        });
}

// Dump on the step an anomaly appears (not on every step it persists) and on request. Every rank sees the
// same digests, so every rank takes the same decision and the gather completes.
void Trainer::Impl::maybeDump(Card& card, const StepWork& w) {
    static constexpr int kMaxDumps = 3;
    const bool fresh = w.anomaly && !card.anomalyBefore;
    card.anomalyBefore = w.anomaly;
    if (!(fresh || w.dumpAsked) || !w.slot || card.dumps >= kMaxDumps)
        return;
    ++card.dumps;
    const std::string why = fresh ? w.reason : "requested";
    const int r = card.rank;
    const int64_t N = card.replica->numParams();
    auto fill = [&](FlightDump& dump) {
        dump.triggerStep = w.step;
        dump.reason = why;
        // What the card sent: under O2/O3 its gradient rounded to fp16.
        auto sent = [&](const float* g) {
            if (!halfPayload)
                return std::vector<float>(g, g + N);
            std::vector<float> local(static_cast<size_t>(N));
            roundFloatsThroughHalf(g, local.data(), size_t(N));
            return local;
        };
        for (const auto& s : card.ring.slots) {
            if (s.step < 0)
                continue;
            if (flightDepth > 1) {
                dump.entries.push_back({s.step, r, 0, sent(s.local.data())});
                dump.entries.push_back({s.step, r, 1, s.synced});
                dump.entries.push_back({s.step, r, 2, card.ring.slots[s.weightsIn].weights});
            } else { // this step's: the local gradient and the weights are still live
                const float* wts = card.replica->weights();
                dump.entries.push_back({s.step, r, 0, sent(card.replica->grads())});
                dump.entries.push_back({s.step, r, 1, s.synced});
                dump.entries.push_back({s.step, r, 2, std::vector<float>(wts, wts + N)});
            }
        }
    };
    if (!group) {
        gather(pendingDumps, w.step, fill);
        return;
    }
    FlightDump mine; // every card of every node took this decision: the exchange lines up
    fill(mine);
    auto all = exchange(card, mine);
    if (card.local != 0)
        return;
    FlightDump dump;
    dump.triggerStep = w.step;
    dump.reason = why;
    for (auto& one : all)
        for (auto& entry : one.entries)
            dump.entries.push_back(std::move(entry));
    push(std::move(dump));
}

void Trainer::Impl::cardLoop(Card& card) {
    setTorchThreads(1); // one intra-op thread per card; ComputeSlots caps cards computing at once
    const int r = card.rank;
    std::vector<uint8_t> raw;
    std::vector<float> images;
    std::vector<int64_t> labels;
    int64_t step = 0;
    try {
        // The ring's memory is taken and touched here, once, by the card's own thread, before the first step:
        // a slot's first step would otherwise pay for zeroing fresh pages of every buffer it fills.
        const auto n = static_cast<size_t>(card.replica->numParams());
        for (FlightRing::Slot& slot : card.ring.slots) {
            slot.synced.resize(n);
            if (flightDepth > 1) {
                slot.local.resize(n);
                slot.weights.resize(n);
            }
        }
        if (cfg.broadcastInit) // MindSpore parameter_broadcast: everyone starts from rank 0's weights
            comm->broadcast(card.local, card.replica->weights(),
                            static_cast<size_t>(card.replica->numParams()) * 4, 0);
        recordWeights(card, 0);
        const int64_t shard = faults->shardBatches(r, perEpoch);
        // One process stops at once (the communicator is cancelled); nodes stop together, after the step
        // whose digest first carried a stop, so no node is left waiting in a collective for another.
        auto stopping = [&] { return group ? card.stopAgreed : stopRequested.load(); };
        for (; step < totalSteps && !stopping(); ++step) {
            // rank-exit: the card is gone; its peers find out in their next collective.
            if (faults->diesAt(r, step))
                throw std::runtime_error("EL0004: device HBM out of memory, the card stopped responding");
            if (faults->evalModeFrom(r, step))
                card.replica->setTrainMode(false);
            if (step % perEpoch >= shard) { // this rank's loader is exhausted: its epoch (and loop) ends here
                evaluate(card, step);
                break;
            }
            trainStep(card, step, raw, images, labels);
            if (cfg.evalEvery > 0 && (step + 1) % cfg.evalEvery == 0 && step + 1 < totalSteps)
                evaluate(card, step + 1);
        }
        if (!stopping() && step == totalSteps)
            evaluate(card, step);
        card.state = static_cast<uint8_t>(stopping() ? CardState::Stopped : CardState::Ok);
    } catch (const CollectiveCancelled&) {
        card.state = static_cast<uint8_t>(CardState::Stopped);
    } catch (const ReplicaStopped&) {
        card.state = static_cast<uint8_t>(CardState::Stopped);
    } catch (const CollectiveTimeout& e) {
        card.state = static_cast<uint8_t>(CardState::TimedOut);
        // One event per rank it waited for, which diagnosis reads (the message is for people).
        const std::string message = fmt::format("Rank {}: {}", r, e.what());
        for (int peer : e.missingRanks)
            event(Event{step, r, Severity::Error, eventcode::kTimeout, message, peer, uint8_t(e.nodeGone)});
        if (e.missingRanks.empty())
            event(step, r, Severity::Error, eventcode::kTimeout, message);
        std::lock_guard lock(summaryMutex);
        cardErrors.push_back(fmt::format("rank {}: {}", r, e.what()));
    } catch (const std::exception& e) {
        card.state = static_cast<uint8_t>(CardState::Dead);
        comm->markFailed(card.local);
        event(step, r, Severity::Error, eventcode::kCardFailed,
              fmt::format("Rank {} failed at step {}: {}", r, step, e.what()));
        std::lock_guard lock(summaryMutex);
        cardErrors.push_back(fmt::format("rank {}: {}", r, e.what()));
    }
}

} // namespace rs
