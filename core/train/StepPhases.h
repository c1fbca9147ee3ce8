// The phases of a card's step, as the card times them (CardStep.cpp) and RunSummary::phaseMs names them, and
// the memory traffic each phase's passes cause (cardStepTraffic): what a pass at this machine's memory speed
// would take is the phase's floor, which bench-report sets beside the time measured.
#pragma once

#include <array>
#include <cstdint>

namespace rs {

inline constexpr int kPhases = 10;
inline constexpr std::array<const char*, kPhases> kPhaseNames = {"load batch",
                                                                 "forward and backward",
                                                                 "local statistics, sketch, flight copy",
                                                                 "all-reduce",
                                                                 "synced statistics and fingerprint",
                                                                 "overflow vote",
                                                                 "optimizer",
                                                                 "digest",
                                                                 "records to the writer",
                                                                 "weight records and flight recorder"};
using PhaseTimes = std::array<double, kPhases>; // ms per phase, summed over steps

// Bytes a phase's passes read from memory and write to it, per card and step. Reads of data a pass of the
// same phase has just written, still in L1 (the synced statistics read as the all-gather writes each piece),
// are not traffic.
struct PhaseTraffic {
    double readBytes = 0, writtenBytes = 0;
    bool compute = false; // bound by arithmetic, not memory: forward and backward (no byte count)
};
using StepTraffic = std::array<PhaseTraffic, kPhases>;

// What decides a step's traffic: the model's size, the cards, the payload, what telemetry keeps.
struct TrafficShape {
    int64_t numParams = 0;
    int ranks = 1;
    int batchPerRank = 1;
    bool halfPayload = false;  // O2/O3: the all-reduce carries fp16
    bool roundWeights = false; // O3: the weights go through fp16 after the optimizer
    bool telemetry = false;
    int flightDepth = 0;        // the flight recorder's slots (past 1 the optimizer copies the weights)
    double weightStepShare = 0; // of the steps, those that fingerprint and record the weights
    double updateShare = 1; // of the steps, those whose update was applied (a skipped one runs no optimizer)
};

// The traffic of a step without faults, as CardStep.cpp and CardAllReduce.cpp move the bytes on the flat
// ring (servers and nodes add their own copies, not counted).
StepTraffic cardStepTraffic(const TrafficShape& shape);

// Of the steps [0, steps) of a run of totalSteps, the share that are weight steps (every weightEvery-th and
// the last, CardWorker::shareDigest).
double weightStepShare(int64_t steps, int64_t totalSteps, int weightEvery);

} // namespace rs
