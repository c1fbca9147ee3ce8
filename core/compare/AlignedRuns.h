// Two runs read side by side: the steps both recorded, paired by step number, and the weight rows both
// recorded at those steps, read a chunk of steps at a time so that neither file is held in memory whole (both
// runs' rows of a chunk are, each within half the read budget). The comparison reads through it, and so does
// the drift measurement, which compares the reference with each spread reference.
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace rs {

class RunReader;

// The weight rows of A and B at one aligned step.
struct AlignedWeights {
    const WeightRecord& a;
    const WeightRecord& b;
};

class AlignedRuns {
public:
    // Reads both runs' step numbers. std::invalid_argument when the runs have no step in common.
    AlignedRuns(const RunReader& a, const RunReader& b);

    int64_t count() const { return int64_t(m_pairs.size()); }
    int64_t firstStep() const { return stepA(0); }
    int64_t lastStep() const { return stepA(m_pairs.size() - 1); }

    // Per aligned step, in step order: both runs' rows and the weight rows both recorded at that step
    // (usually none or one). progress gets 0..100 after each chunk.
    using Visit =
        std::function<void(const StepRecord& a, const StepRecord& b, std::span<const AlignedWeights>)>;
    void forEach(const Visit& visit, const std::function<void(int percent)>& progress) const;

private:
    using RowPairs = std::vector<std::pair<int64_t, int64_t>>; // row of A, row of B
    const RunReader &m_a, &m_b;
    std::vector<int64_t> m_stepsA, m_weightStepsA;
    RowPairs m_pairs, m_weightPairs;

    int64_t stepA(size_t pair) const { return m_stepsA[size_t(m_pairs[pair].first)]; }
    int64_t weightStepA(size_t pair) const { return m_weightStepsA[size_t(m_weightPairs[pair].first)]; }
    size_t chunkSteps() const;
    // Visits the aligned steps [k0, k1) with the weight pairs from w0 on; returns the first weight pair
    // after.
    size_t visitChunk(size_t k0, size_t k1, size_t w0, const Visit& visit) const;
};

} // namespace rs
