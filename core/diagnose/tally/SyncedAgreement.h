// Tally: whether every rank holds the same synced gradient, parameter by parameter. The all-reduce delivers
// the same bits to every rank, so a difference means a parameter never went through it (each rank keeps its
// own local sum) or one rank's copy changed afterwards (one rank alone in its fingerprint, or alone failing
// the check that its synced sum is the mean or the sum of the local sums). Read by param-not-synced and
// sdc-after, which decide between the two, and by sdc-before, which a split at or before its outlier rules
// out.
#pragma once

#include "diagnose/Check.h"

namespace rs {

class SyncedAgreement : public Accumulator {
public:
    explicit SyncedAgreement(const RunFacts& f);
    void addParamStep(const StepRecord& st) override;
    std::string figures() const override;

    // The parameters that differed on (nearly) every step since they first did, each rank holding its own
    // sum; empty unless they are few and the rest agree: the shape of parameters left out of the all-reduce.
    std::vector<int> leftOut(const RunExtent& run) const;
    // Why the synced gradients could not be compared although recorded; "" when they could.
    std::string notComparable(const RunExtent& run) const;

    int64_t comparableSteps = 0; // steps where some parameter's synced gradient came from every rank
    int64_t mismatchSteps = 0;
    FirstSeen firstMismatch;               // param: the first differing; value: how many differed
    std::vector<int> firstMismatchParams;  // params differing at the first mismatch step (capped)
    std::vector<int64_t> paramMismatch;    // [param] steps whose synced keys differ across ranks
    std::vector<int64_t> paramAllDistinct; // [param] ... with every rank different
    std::vector<int64_t> paramOwnSum;      // [param] ... where each rank's synced sum is its own local sum
    std::vector<int64_t> paramFirst;       // [param] the first such step
    std::vector<int64_t> oddRank;          // [rank] mismatch steps where this rank alone disagrees
    std::vector<int64_t> sumCheckAlone;    // [rank] mismatch steps where only its synced sum fails the check
    std::vector<int64_t> firstOdd;         // [rank]

private:
    // One parameter on one step: true when the ranks' keys differ (then the per-parameter tallies and the
    // step's odd / sum-check ranks are updated).
    bool compare(const StepRecord& st, int p, std::vector<int>& odd, std::vector<int>& sumAlone);
    void sumChecks(const StepRecord& st, int p, std::vector<int>& sumAlone);

    const RunFacts& m_facts;
    std::vector<uint64_t> m_key; // [rank] scratch
};

} // namespace rs
