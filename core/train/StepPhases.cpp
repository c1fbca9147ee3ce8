// The byte counts follow the passes in CardStep.cpp and CardAllReduce.cpp; a change there that adds or
// fuses a pass changes its phase here (tests/core/tst_stepphases.cpp pins the counts of each precision).
#include "train/StepPhases.h"

#include <algorithm>

namespace rs {

StepTraffic cardStepTraffic(const TrafficShape& s) {
    StepTraffic t{};
    const auto n = static_cast<double>(s.numParams);
    const double f32 = 4 * n;                           // one fp32 pass over the flat gradient or weights
    const double payload = (s.halfPayload ? 2 : 4) * n; // the all-reduce's payload
    const double w = std::max(1, s.ranks);
    constexpr double kImage = 3 * 32 * 32;
    // load batch: the images' bytes read, written as normalized floats.
    t[0] = {kImage * s.batchPerRank, 4 * kImage * s.batchPerRank};
    t[1].compute = true;
    // local statistics: at O0 read in the reduce-scatter's read of every rank's chunk (in L1, no traffic of
    // their own); under O2/O3 one read of the gradient, in the pass that writes the fp16 payload.
    if (s.telemetry && s.halfPayload)
        t[2] = {f32, payload};
    // all-reduce, ring: the reduce-scatter reads every rank's chunk (one payload) and writes this rank's;
    // the all-gather copies the other ranks' chunks. Under O2/O3 without telemetry the payload is written
    // here from the gradient.
    t[3] = {payload + payload * (w - 1) / w, payload / w + payload * (w - 1) / w};
    if (s.halfPayload && !s.telemetry) {
        t[3].readBytes += f32;
        t[3].writtenBytes += payload;
    }
    // synced statistics: at O0 read in the all-gather's pass (in L1); under O2/O3 the fp16 result is
    // converted back to fp32 in the statistics' pass (with or without telemetry).
    if (s.halfPayload)
        t[4] = {payload, f32};
    // optimizer: reads weights, momentum and gradient, writes weights and momentum; a deeper flight ring
    // keeps a copy of the weights (written in the same pass, or, at O3, after the rounding through fp16).
    // A skipped update (overflow) runs none of it; a deeper ring then keeps the weights without a copy
    // (FlightRing::carryWeightsForward), so the whole phase scales with the steps that updated.
    t[6] = {3 * f32, 2 * f32};
    if (s.roundWeights) {
        t[6].readBytes += f32;
        t[6].writtenBytes += f32;
    }
    if (s.telemetry && s.flightDepth > 1) {
        t[6].writtenBytes += f32;
        if (s.roundWeights)
            t[6].readBytes += f32;
    }
    t[6].readBytes *= s.updateShare;
    t[6].writtenBytes *= s.updateShare;
    // digest and weight records, on weight steps only: a fingerprint of the weights, then per tensor its
    // fingerprint and its norm (two reads).
    t[7].readBytes = s.weightStepShare * f32;
    t[9].readBytes = s.weightStepShare * 2 * f32;
    return t;
}

double weightStepShare(int64_t steps, int64_t totalSteps, int weightEvery) {
    if (steps <= 0)
        return 0;
    int64_t n = 0;
    for (int64_t s = 0; s < steps; ++s)
        if ((s + 1) % std::max(1, weightEvery) == 0 || s + 1 == totalSteps)
            ++n;
    return static_cast<double>(n) / static_cast<double>(steps);
}

} // namespace rs
