// What diagnosis concludes from a run file: a likely cause of cross-rank disagreement, with the evidence that
// convinced it and the fix a user applies in their MindSpore / PyTorch job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rs {

struct Finding {
    // One of the fault-lab ids: duplicate-rank-id, rank-table-invalid, rank-exit, init-mismatch,
    // shard-overlap, shard-uneven, eval-mode, loss-scale-too-high, no-loss-scale, overflow-not-synced,
    // grad-sum, param-not-synced, sdc-before, sdc-after, straggler.
    std::string cause;
    std::string dimension;  // environment | data-model | numerics | parallel
    double confidence = 0;  // 0..1
    int64_t firstStep = -1; // the first step the evidence shows; -1 when not tied to a step
    std::vector<int> ranks; // the ranks concerned
    std::vector<std::string> parameters;
    std::string evidence; // the figures that convinced the rule, in words
    std::string fix;      // what the user changes in their job
};

// {"findings": [ {...}, ... ]}, in the order given (diagnosis orders by confidence).
std::string findingsToJson(const std::vector<Finding>& findings);

} // namespace rs
