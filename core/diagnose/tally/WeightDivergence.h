// Tally: the first weight row at which each rank's weights differ from rank 0's. Read by the checks that say
// a disagreement reached the weights (overflow-not-synced, sdc-after).
#pragma once

#include "diagnose/Check.h"

namespace rs {

// Parameters whose weight key on `rank` differs from rank 0's in row `w` (unrecorded keys never differ).
int paramsDiffering(const RunFacts& f, const WeightRecord& w, int rank);

class WeightDivergence : public Accumulator {
public:
    explicit WeightDivergence(const RunFacts& f)
        : since(size_t(std::max(f.R, 0)), kNoStep)
        , m_facts(f) {}
    void addWeights(const WeightRecord& w) override;

    std::vector<int64_t> since; // [rank] the first row (its step) differing from rank 0; kNoStep if none

private:
    const RunFacts& m_facts;
};

} // namespace rs
