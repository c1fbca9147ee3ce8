// CardWorker: the records a card submits besides its row of each step: the weight check on weight steps,
// the held-out evaluation on evaluation steps, and the flight recorder's dump when the digest asks for one.
#include "cluster/ComputeSlots.h"
#include "telemetry/Fingerprint.h"
#include "telemetry/GradStats.h"
#include "train/CardStepWork.h"
#include "train/Dataset.h"
#include "train/Replica.h"
#include "train/StepRecorder.h"
#include "util/HalfConvert.h"

#include <cmath>

namespace rs {

void CardWorker::recordWeights(int64_t step) {
    const auto& params = m_replica->params();
    const float* w = m_replica->weights();
    std::vector<uint64_t> fp(params.size());
    std::vector<float> norm(params.size());
    for (size_t p = 0; p < params.size(); ++p) {
        const float* t = w + params[p].offset;
        fp[p] = fingerprint(t, static_cast<size_t>(params[p].numel) * 4);
        norm[p] = static_cast<float>(std::sqrt(normAndSum(t, params[p].numel, 1.f).sumSq));
    }
    const auto buffers = m_replica->bufferValues();
    double bufferNorm = 0;
    for (float v : buffers)
        bufferNorm += static_cast<double>(v) * v;
    WeightRecord mine;
    mine.step = step;
    mine.fp = {std::move(fp)};
    mine.norm = {std::move(norm)};
    mine.bufferFp = {fingerprint(buffers.data(), buffers.size() * 4)};
    mine.bufferNorm = {static_cast<float>(std::sqrt(bufferNorm))};
    m_ctx.sink.submit(seat(), std::move(mine));
}

void CardWorker::evaluate(int64_t step) {
    const Dataset& test = m_ctx.test;
    const int n = static_cast<int>(std::min<int64_t>(m_ctx.cfg.evalSamples, test.size()));
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
        loadNormalizedBatch(test, ids.data(), m, raw, images, labels);
        ComputingGuard computing(m_ctx.comm, m_local);
        ComputeSlotGuard slot(m_ctx.slots);
        const auto r = m_replica->evaluate(images.data(), labels.data(), m);
        correct += r.correct;
        lossSum += static_cast<double>(r.loss) * m;
    }
    EvalRecord mine;
    mine.step = step;
    mine.accuracy = {static_cast<float>(correct) / static_cast<float>(n)};
    mine.loss = {static_cast<float>(lossSum / n)};
    m_ctx.sink.submit(seat(), std::move(mine));
}

// Dump on the step an anomaly appears (not on every step it persists) and on request. Every rank sees the
// same digests, so every rank takes the same decision and the record gets every rank's part.
void CardWorker::maybeDump(const StepWork& w) {
    static constexpr int kMaxDumps = 3;
    const bool fresh = w.anomaly && !m_anomalyBefore;
    m_anomalyBefore = w.anomaly;
    if (!(fresh || w.dumpAsked) || !w.slot || m_dumps >= kMaxDumps)
        return;
    ++m_dumps;
    m_ctx.sink.submit(seat(), flightDump(w, fresh ? w.reason : "requested"));
}

// This card's part of a dump: local gradient, synced gradient and weights of each step in the ring.
FlightDump CardWorker::flightDump(const StepWork& w, const std::string& why) const {
    const int r = m_rank;
    const int64_t N = m_replica->numParams();
    FlightDump dump;
    dump.triggerStep = w.step;
    dump.reason = why;
    // What the card sent: under O2/O3 its gradient rounded to fp16.
    auto sent = [&](const float* g) {
        if (!m_ctx.plan.halfPayload)
            return std::vector<float>(g, g + N);
        std::vector<float> local(static_cast<size_t>(N));
        roundFloatsThroughHalf(g, local.data(), size_t(N));
        return local;
    };
    for (const auto& s : m_ring.slots) {
        if (s.step < 0)
            continue;
        if (m_ctx.plan.flightDepth > 1) {
            dump.entries.push_back({s.step, r, 0, sent(s.local.data())});
            dump.entries.push_back({s.step, r, 1, s.synced});
            dump.entries.push_back({s.step, r, 2, m_ring.slots[s.weightsIn].weights});
        } else { // this step's: the local gradient and the weights are still live
            const float* wts = m_replica->weights();
            dump.entries.push_back({s.step, r, 0, sent(m_replica->grads())});
            dump.entries.push_back({s.step, r, 1, s.synced});
            dump.entries.push_back({s.step, r, 2, std::vector<float>(wts, wts + N)});
        }
    }
    return dump;
}

} // namespace rs
