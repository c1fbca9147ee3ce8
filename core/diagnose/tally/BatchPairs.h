// Tally: which pairs of ranks read the same batches. A batch is identified by its sample fingerprint or,
// when the source records no sample ids, by the local gradient it produced (identical weights and batches
// give identical gradients). Where two ranks read identical batches the sketch cosine of their local
// gradients tells whether they computed the very same thing (a duplicated rank) or only shared samples.
// Read by shard-overlap and duplicate-rank-id, which decide between the two.
#pragma once

#include "diagnose/Check.h"

#include <set>
#include <utility>

namespace rs {

class BatchPairs : public Accumulator {
public:
    explicit BatchPairs(const RunFacts& f);
    void addStep(const StepRecord& st, const RunExtent&) override;
    std::string figures() const override;

    // The pairs (i < j) that read identical batches on 80% of the steps, the pairs sharing at least a quarter
    // of their ids on half of them, and whether this is one rank copying another: a single identical pair
    // while the rest read disjoint shards (with 2 ranks, only if the rank table lists a rank id twice).
    struct Shape {
        std::vector<std::pair<int, int>> identical, overlapping;
        std::vector<int> duplicateIds; // rank_id values the stored rank table lists twice
        bool onePair = false;
    };
    // Empty pairs when fewer than 3 steps could be compared.
    Shape shape() const;
    int pair(int i, int j) const { return i * m_facts.R + j; }

    int64_t steps = 0;                   // steps whose batches could be compared
    int64_t gradientKeySteps = 0;        // of those, compared through the local gradients
    std::vector<int64_t> identical;      // [pair] sample fingerprints and ids equal
    std::vector<int64_t> overlapping;    // [pair] share at least a quarter of their ids
    std::vector<double> overlapSum;      // [pair] fraction of shared ids
    std::vector<int64_t> firstIdentical; // [pair]
    std::vector<double> identCosMin;     // [pair] min sketch cosine over steps with identical batches

private:
    uint64_t batchKey(const RankStep& x) const;
    // Tallies one pair (its ranks' ids and how many of them both hold); true when their batches are
    // identical. A pair addStep does not visit would tally nothing.
    bool comparePair(const StepRecord& st, int i, int j, uint64_t batchI, uint64_t batchJ,
                     const std::set<int32_t>& ia, const std::set<int32_t>& ib, size_t shared);
    void sketchCosines(const StepRecord& st);

    const RunFacts& m_facts;
    bool m_haveSampleFp, m_haveLocalNorm;
};

} // namespace rs
