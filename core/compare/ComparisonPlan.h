// What two runs are expected to agree on and how their parts pair, decided from their metadata alone before
// a step is read: the expectation and the configuration differences behind it, which batches the ranks saw,
// the tolerance model, which parameter of A is which of B, and which rank of A is compared with which of B.
#pragma once

#include "compare/RunComparison.h"

#include <string>
#include <utility>
#include <vector>

namespace rs {

struct ComparisonPlan {
    Expectation expectation = Expectation::Unknown;
    std::vector<std::string> differences;
    bool oneToOne = false;   // rank r against rank r
    bool sameBatch = false;  // the same samples on paired ranks (locals, per-rank loss, sample fingerprints)
    bool globalSame = false; // the same global batch (synced gradients comparable)
    double momentum = 0.9;
};
ComparisonPlan planComparison(const RunMeta& a, const RunMeta& b);

// The rounding model of the two runs' reductions under the plan.
ToleranceModel toleranceModel(const RunMeta& a, const RunMeta& b, const ComparisonPlan& plan);

// A's parameters mapped to B's by name (and size): -1 where B has no such tensor. The names only one run has
// go to onlyInA and onlyInB.
std::vector<int> mapParameters(const RunMeta& a, const RunMeta& b, std::vector<std::string>& onlyInA,
                               std::vector<std::string>& onlyInB);

// Rank pairs (rank of A, rank of B): one to one on equal world sizes, else every rank of A against B's rank
// 0.
std::vector<std::pair<int, int>> rankPairs(const RunMeta& a, const RunMeta& b);
// How the rank pairs are made, in words.
std::string rankMappingText(const RunMeta& a, const RunMeta& b);

} // namespace rs
