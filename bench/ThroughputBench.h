// Throughput benchmark behind `ranksight-cli bench`: plain LibTorch single replica vs the emulated cluster
// with telemetry off and on, measured side by side in one process.
#pragma once

#include "MemoryBandwidth.h"
#include "train/StepPhases.h"
#include "train/TrainConfig.h"

#include <string>
#include <utility>
#include <vector>

namespace rs {

struct BenchOptions {
    std::string model = "resnet18";
    int ranks = 4;
    int batchPerRank = 8;
    int steps = 6;
    int warmup = 2;
    int repeat = 3; // rounds; each figure is the median over rounds
    std::string precision = "O0";
    int threads = 0; // 0: all cores
    // The peer a user would pick instead, PyTorch DDP over gloo (bench/ddp_peer.py with Debian's
    // python3-torch, one process per rank, same model and batch), run inside the rounds after RankSight's
    // configurations.
    bool peer = false;
    // The cluster's loss scale (empty: none at O0, the default dynamic scale otherwise). runThroughputBench
    // sets it to the settled dynamic scale (see BenchResult::settledScale) for its timed rounds.
    std::string lossScale;
};

struct BenchResult {
    double singleReplicaImgS = 0;
    double telemetryOffImgS = 0;
    double telemetryOnImgS = 0;
    // Where a card's step goes, ms per card and step (every step, warm-up included; medians over rounds),
    // with telemetry off and on (RunSummary::phaseMs), and the writer thread's busy ms per step.
    std::vector<std::pair<std::string, double>> phasesOff, phasesOn;
    double writerMsPerStepOn = 0;
    // The cost model: this machine's memory speed (medians over the rounds, measured in each) and the bytes
    // each phase moves per card and step, telemetry off and on (RunSummary::phaseTraffic).
    MemoryBandwidth bandwidth;
    // The sharded update (optimizer_shard) with telemetry on, in the same rounds: img/s and its phases.
    double shardImgS = 0;
    std::vector<std::pair<std::string, double>> phasesShard;
    StepTraffic trafficOff{}, trafficOn{};
    double peerImgS = 0;  // 0 when not asked for or unavailable (peerNote says why)
    std::string peerNote; // why the peer has no figure
    // Each round's img/s, side by side (the figures above are their medians): the spread of a ratio is
    // the spread of the rounds' ratios. peer is 0 in a round without one.
    struct Round {
        double single = 0, off = 0, on = 0, peer = 0, shard = 0;
    };
    std::vector<Round> rounds;
    // What the misses are made of, measured beside the rounds (medians over them), one thread each:
    // - one card's forward and backward at its batch (what a card does in its compute slot), against the
    //   single replica's step at the global batch on every core;
    // - the telemetry's statistics alone over every parameter of the model's gradient, per card and step:
    //   local (every statistic, the sketch and the fingerprint) and synced (norm, sum, fingerprint).
    double cardComputeMs = 0, singleStepMs = 0;
    double statsLocalMs = 0, statsSyncedMs = 0;
    // The cluster's CPU time over its timed steps against every core's (StepClock::coresBusy), telemetry off
    // and on: 1 minus it is the idle time that overlapping communication with compute could fill.
    double coresBusyOff = 0, coresBusyOn = 0;
    // O2/O3: the dynamic loss scale starts at 2^24 and halves on each overflow, skipping that step's update;
    // a few warm-up steps would time steps that update nothing. An untimed run first finds the scale of the
    // first step that updates (settledScale, after skippedToSettle skipped steps) and the rounds start there,
    // still dynamic. 0 at O0 (no loss scale) or when no step updated within the probe (then the default).
    float settledScale = 0;
    int skippedToSettle = 0;
};

BenchResult runThroughputBench(const BenchOptions& options, bool progress);

// A phase's floor, ms per card and step: its bytes at this machine's memory speed (a pass that writes at the
// copy's speed, one that only reads at the read's), or, for forward and backward, one card's compute alone.
double phaseFloorMs(const PhaseTraffic& traffic, const MemoryBandwidth& bandwidth, double cardComputeMs);

// The run every throughput benchmark times: the options' model, cards, batch, precision (a dynamic loss scale
// under O2/O3) and warm-up + steps, no evaluation, writing `out` (replaced) when telemetry is on.
TrainConfig benchConfig(const BenchOptions& options, const std::string& out);

} // namespace rs
