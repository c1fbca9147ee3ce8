// What one step's phases of a card hand each other (CardWorker::StepWork), for the files that implement the
// phases.
#pragma once

#include "train/CardWorker.h"
#include "train/Clock.h"

#include <string>

namespace rs {

struct CardWorker::StepWork {
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
    bool localInReduce = false;  // the local statistics are read in the reduce-scatter (ReducedLocalStats)
    double localInCommMs = 0;    // of the all-reduce call's time, what reading and merging them took
    uint32_t nonfiniteSynced = 0;
    // The digest round's outcome: every rank of the run sees the same.
    bool anomaly = false, dumpAsked = false, weightStep = false;
    std::string reason;
};

// True when the parameters cover the flat buffer of n elements end to end, in order: a pass over each of them
// is then a pass over the whole buffer.
inline bool paramsTile(const std::vector<ParamInfo>& params, int64_t n) {
    int64_t at = 0;
    for (const auto& p : params) {
        if (p.offset != at)
            return false;
        at += p.numel;
    }
    return at == n;
}

} // namespace rs
