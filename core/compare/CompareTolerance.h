// How far two runs of the same computation may differ on a recorded statistic when the arithmetic that
// produced them differs (docs/comparing.md, "Tolerances"). Derived from the precision of the payload, the
// shape of the reduction (how many additions an element's sum goes through on each side), the per-card
// batch when it differs, and the magnitudes the runs recorded, with the probabilistic bound on rounding
// errors of Higham and Mary (2019): a sum of n terms in unit roundoff u is off by at most
// lambda * sqrt(n) * u * sum|terms| except with probability 2 exp(-lambda^2 / 2).
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <string>

namespace rs {

// lambda above: the bound fails with probability below 5e-11 per element.
inline constexpr double kRoundingLambda = 7.0;

// The additions one synced gradient element goes through, as the run's reduction is laid out.
struct ReductionShape {
    std::string name; // "flat ring over 4 cards", "hierarchical: 2 servers x 2 cards", "one card"
    int depth = 0;    // additions in sequence across ranks (flat ring N - 1, hierarchical (n - 1) + (S - 1))
    bool assumed = false; // the source did not record its layout: a ring is assumed (NCCL, HCCL, gloo)
};
ReductionShape reductionShape(const RunMeta& meta);

// Unit roundoff of the arithmetic that differs: fp32 payloads (O0) 2^-24; fp16 gradients and payloads (O2,
// O3) 2^-11. Unknown precision (an import): fp32.
double unitRoundoff(const RunMeta& meta);

// The model of one comparison: the rounding both runs' reductions may add to an element's sum.
struct ToleranceModel {
    double u = 0;         // the larger of the two runs' unit roundoffs
    double depthRoot = 0; // sqrt(additions A) + sqrt(additions B)
    double momentum = 0;  // the optimizer's, for how an update's rounding carries into the weights
    bool bitwise = false; // the same arithmetic: every tolerance is 0
    // Bound on the L2 norm of the difference of two synced gradients whose summed terms have a mean L2 norm
    // of `terms` (the recorded local norms).
    double vectorBound(double terms) const;
    // |a - b| for two recorded float norms a and b of tensors that differ by at most vectorBound(terms).
    double norm(double terms, double a, double b) const;
    // |a - b| for two element sums of tensors of numel elements that differ by at most vectorBound(terms).
    double sum(double terms, int64_t numel) const;
    // |a - b| for two batch-mean losses of magnitude `loss` (terms are per-sample losses, all >= 0).
    double loss(double a, double b) const;
};

} // namespace rs
