// `ranksight-cli bench-nodes`: the same run on one node and spread over node processes on this host (issue
// 12), side by side in alternating rounds: throughput, what node 0 sends to the other nodes per step (the
// gradient all-reduce and the records for its file) and the time its cards spend in cross-node collectives.
#pragma once

#include "ThroughputBench.h"

#include <cstdint>
#include <string>

namespace rs {

struct NodesBenchResult {
    double oneNodeImgS = 0;        // median over rounds
    double nodesImgS = 0;          // median over rounds
    double bytesPerStep = 0;       // node 0 to the other nodes, per step (last round)
    double recordBytesPerStep = 0; // of which the step, weight and eval records for node 0's file
    double nodeMsPerStep = 0;      // node 0's wall time in cross-node collectives per step (waits included)
    int64_t params = 0;            // elements of the model's flat gradient
    int payloadBytes = 4;          // per gradient element in the all-reduce (fp16 under O2/O3)
};

// `cli` is the ranksight-cli binary that runs nodes 1..nodes-1 (as `train --nodes ...` processes).
// The host's cores are shared alike in both configurations: one node uses them all, each of N nodes a
// 1/N share (compute_threads), as N hosts would each bring their own.
NodesBenchResult runNodesBench(const BenchOptions& options, int nodes, const std::string& cli, bool progress);

// Elements of a model's flat gradient (builds one replica).
int64_t modelParams(const std::string& model);

} // namespace rs
