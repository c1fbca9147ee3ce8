// Tally: the weight row at which each rank's weights first part from the majority's, after a first row on
// which every rank agreed (so not init-mismatch), and which parameter tensors parted. Read by
// optimizer-mismatch (the update differs on a rank) and, when a source records no synced gradients (an
// msprobe dump), by param-not-synced too: without them the two are told apart only by how many tensors
// parted.
#pragma once

#include "diagnose/Check.h"

namespace rs {

class WeightParting : public Accumulator {
public:
    explicit WeightParting(const RunFacts& f);
    void addWeights(const WeightRecord& w) override;
    std::string figures() const override;

    // The rank that parted first (kNoStep-free), or -1 when none did or the first row already differed.
    int firstRank() const;
    // "rank 2's weights part from the other ranks' at step 3 in 1 of 6 parameter tensors (fc2.bias), after
    // starting alike (step 0's weight row agrees on every rank)"
    std::string describe(int rank) const;
    // Few tensors parted (under half): the shape of a tensor left out of the all-reduce; a learning rate,
    // clipping or momentum moves them all.
    bool few(int rank) const { return differ[size_t(rank)] * 2 < m_facts.P; }

    bool firstSeen = false, firstAgree = true;
    int64_t firstStep = kNoStep;
    std::vector<int64_t> since;           // [rank] the first row whose weights differ from the majority's
    std::vector<int> differ;              // [rank] parameter tensors differing in that row
    std::vector<std::vector<int>> params; // [rank] the first few of them

private:
    // Per rank, the parameters whose weight key differs from the majority's (a strict majority of the ranks
    // that recorded it); a parameter without a majority counts for no rank.
    void oddParams(const WeightRecord& w, std::vector<int>& odd, std::vector<std::vector<int>>& which) const;

    const RunFacts& m_facts;
};

} // namespace rs
