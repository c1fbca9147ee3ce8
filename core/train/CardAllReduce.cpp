// CardWorker: the all-reduce of a card's gradient and the synced statistics. They are read in the
// all-reduce's last pass as it writes the result (at O0 the pieces of its last copy, at O2/O3 the conversion
// back from fp16), and read again if a fault writes the result afterwards, so they are always of what the
// optimizer applies.
#include "faults/FaultPlan.h"
#include "telemetry/Fingerprint.h"
#include "telemetry/GradStats.h"
#include "train/CardStepWork.h"
#include "train/LocalStatistics.h"
#include "train/Replica.h"
#include "util/HalfConvert.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace rs {
namespace {

void sizeSynced(RankStep& rs, size_t P) {
    rs.syncedNorm.resize(P);
    rs.syncedSum.resize(P);
    rs.syncedFp.resize(P);
}

} // namespace

// The all-reduce: fp16 payload under O2/O3 (sums past 65504 overflow like hardware), fp32 under O0.
void CardWorker::allReduceGradients(StepWork& w) {
    const auto& params = m_replica->params();
    const int64_t N = m_replica->numParams();
    float* g = m_replica->grads();
    const ReduceOp op = m_ctx.cfg.gradientsMean ? ReduceOp::Mean : ReduceOp::Sum;
    // With a flight ring the result lands in this step's slot and the local gradient stays in the card's
    // buffer for a dump; without one the all-reduce works in place (no second gradient-sized buffer).
    w.synced = w.slot ? w.slot->synced.data() : g;
    // Faults around the all-reduce: a parameter outside every fusion bucket keeps its local gradient, and a
    // rank that checks overflow alone reads its own float status.
    const int unsynced = m_ctx.faults.unsyncedParam(w.step);
    std::vector<float> kept; // the local gradient of that parameter, when the all-reduce overwrites it
    if (unsynced >= 0 && !w.slot)
        kept.assign(g + params[size_t(unsynced)].offset,
                    g + params[size_t(unsynced)].offset + params[size_t(unsynced)].numel);
    w.ownStatus = !m_ctx.faults.overflowSynced(w.step);
    w.localOverflow = w.ownStatus && FaultPlan::overflows(g, N, m_ctx.plan.halfPayload);
    const auto tcomm = Clock::now();
    if (m_ctx.plan.halfPayload)
        allReduceHalf(w, op, unsynced >= 0);
    else if (w.localInReduce || (unsynced < 0 && (!m_ctx.cfg.telemetry || paramsTile(params, N))))
        allReduceReading(w, g, op, unsynced < 0);
    else
        m_ctx.comm.allReduce(m_local, g, w.synced, static_cast<size_t>(N), DType::F32, op);
    w.commMs += msSince(tcomm) - w.syncedInCommMs - w.localInCommMs;
    if (unsynced >= 0) { // as if it had never left the card
        const auto& p = params[size_t(unsynced)];
        std::copy_n(w.slot ? g + p.offset : kept.data(), p.numel, w.synced + p.offset);
    }
    if (!w.convertPending && corruptAfterAllReduce(w))
        w.syncedTaken = false; // read again, as the optimizer will see it
}

// The O2/O3 all-reduce of the fp16 payload. With telemetry the conversion back to fp32 is the synced
// statistics' pass (recordSyncedGradient); without, it counts the non-finite values the overflow vote needs.
// Not when a parameter's synced gradient is about to be overwritten (`unsynced`).
void CardWorker::allReduceHalf(StepWork& w, ReduceOp op, bool unsynced) {
    const int64_t N = m_replica->numParams();
    if (!w.halvesReady)
        m_replica->gradsToHalf(m_half.data());
    m_ctx.comm.allReduce(m_local, m_half.data(), static_cast<size_t>(N), DType::F16, op);
    const bool telemetry = m_ctx.cfg.telemetry;
    w.convertPending = telemetry && !unsynced && paramsTile(m_replica->params(), N);
    if (!telemetry && !unsynced)
        convertCountingNonfinite(w);
    else if (!w.convertPending)
        halvesToFloats(m_half.data(), w.synced, static_cast<size_t>(N));
}

// The fp32 all-reduce with the local statistics read in its reduce-scatter (w.localInReduce) and the synced
// ones in its last pass (readSynced: not when a parameter's synced gradient is about to be overwritten): each
// piece as the all-gather writes it (or, for this rank's own chunk, in its turn), parameter by parameter in
// order.
void CardWorker::allReduceReading(StepWork& w, const float* g, ReduceOp op, bool readSynced) {
    const auto& params = m_replica->params();
    const size_t P = params.size();
    const bool telemetry = m_ctx.cfg.telemetry;
    if (telemetry)
        sizeSynced(w.rs, P);
    size_t cur = 0;
    std::optional<SyncedPass> pass;
    double readingMs = 0;
    const auto delivered = [&](size_t begin, size_t end) {
        const auto t = Clock::now();
        if (!telemetry) { // only the overflow vote needs the synced gradient: its non-finite count
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
    const size_t N = static_cast<size_t>(m_replica->numParams());
    const Communicator::Delivered deliver = readSynced ? Communicator::Delivered(delivered) : nullptr;
    if (!w.localInReduce) {
        m_ctx.comm.allReduce(m_local, g, w.synced, N, DType::F32, op, deliver);
    } else {
        ReducedLocalStats& reads = *m_ctx.localReads;
        reads.startStep(m_local);
        double localMs = 0;
        const auto read = [&](int source, size_t begin, size_t end, const void* data) {
            const auto t = Clock::now();
            reads.read(m_local, source, begin, end, static_cast<const float*>(data));
            localMs += msSince(t);
        };
        m_ctx.comm.allReduce(m_local, g, w.synced, N, DType::F32, op, deliver, read);
        const auto t = Clock::now();
        reads.combine(m_local, w.unscale, w.rs);
        w.localInCommMs = localMs + msSince(t);
    }
    w.syncedTaken = readSynced && (!telemetry || cur == P);
    w.syncedInCommMs = readingMs;
}

// Without telemetry, the O2/O3 result converted back to fp32 a block at a time, each block's non-finite
// values counted for the overflow vote while still in L1. Its time is the synced statistics' phase, not the
// all-reduce's, as with telemetry.
void CardWorker::convertCountingNonfinite(StepWork& w) {
    const auto t = Clock::now();
    const int64_t N = m_replica->numParams();
    constexpr int64_t kPiece = 2048; // 8 KiB of fp32
    for (int64_t at = 0; at < N; at += kPiece) {
        const int64_t len = std::min(kPiece, N - at);
        halvesToFloats(m_half.data() + at, w.synced + at, static_cast<size_t>(len));
        w.nonfiniteSynced += normAndSum(w.synced + at, len, 1.f).nonfinite;
    }
    w.syncedTaken = true;
    w.syncedInCommMs = msSince(t);
}

// Faults in the synced gradient once the all-reduce has delivered it. True when one wrote it.
bool CardWorker::corruptAfterAllReduce(StepWork& w) {
    const int64_t N = m_replica->numParams();
    bool wrote = false;
    // Corruption after the all-reduce, on this card only.
    if (const int bit = m_ctx.faults.flipAfter(m_rank, w.step); bit >= 0) {
        FaultPlan::flipBit(w.synced, N, bit);
        wrote = true;
    }
    // A wrong reduction: every rank receives the same wrong bytes (the same element of the same synced
    // gradient, its lowest exponent bit flipped: twice or half the value).
    if (m_ctx.faults.allReduceWrongAt(w.step)) {
        FaultPlan::flipBit(w.synced, N, 23);
        wrote = true;
    }
    return wrote;
}

// One parameter's synced statistics into the step's record.
void CardWorker::storeSynced(StepWork& w, size_t p, const TensorStats& s) {
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
void CardWorker::recordSyncedInConversion(StepWork& w) {
    const auto& params = m_replica->params();
    const size_t P = params.size();
    RankStep& rs = w.rs;
    sizeSynced(rs, P);
    for (size_t p = 0; p < P; ++p) {
        const int64_t at = params[p].offset;
        storeSynced(w, p,
                    halvesToFloatsWithStats(m_half.data() + at, w.synced + at, params[p].numel, w.unscale,
                                            &rs.syncedFp[p]));
    }
}

// Synced gradient, as the all-reduce delivered it and this rank unscales it: norm, sum and a bitwise
// fingerprint per parameter. Under O2/O3 with telemetry they are read as the fp16 result is converted; a
// fault that then writes the synced gradient has them read again.
void CardWorker::recordSyncedGradient(StepWork& w) {
    if (w.convertPending) {
        recordSyncedInConversion(w);
        w.convertPending = false;
        w.syncedTaken = !corruptAfterAllReduce(w);
    }
    if (w.syncedTaken)
        return;
    const auto& params = m_replica->params();
    const size_t P = params.size();
    const bool telemetry = m_ctx.cfg.telemetry;
    RankStep& rs = w.rs;
    w.nonfiniteSynced = 0; // read again in full when the last pass's reading is stale
    if (telemetry)
        sizeSynced(rs, P);
    for (size_t p = 0; p < P; ++p) {
        const float* t = w.synced + params[p].offset;
        if (!telemetry) { // only the overflow vote needs the synced gradient
            w.nonfiniteSynced += normAndSum(t, params[p].numel, w.unscale).nonfinite;
            continue;
        }
        storeSynced(w, p, normSumFingerprint(t, params[p].numel, w.unscale, &rs.syncedFp[p]));
    }
}

} // namespace rs
