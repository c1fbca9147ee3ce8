// AlignedRuns: see AlignedRuns.h.
#include "compare/AlignedRuns.h"

#include "store/RunReader.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace rs {
namespace {

constexpr int64_t kChunk = 128; // aligned steps per read, at most

// Pairs of row indices with the same step number (both lists increase).
std::vector<std::pair<int64_t, int64_t>> alignRows(const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b) {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i] == b[j])
            pairs.emplace_back(int64_t(i++), int64_t(j++));
        else if (a[i] < b[j])
            ++i;
        else
            ++j;
    }
    return pairs;
}

} // namespace

AlignedRuns::AlignedRuns(const RunReader& a, const RunReader& b)
    : m_a(a)
    , m_b(b) {
    m_stepsA = a.readStepNumbers(0, a.stepCount());
    const std::vector<int64_t> stepsB = b.readStepNumbers(0, b.stepCount());
    m_pairs = alignRows(m_stepsA, stepsB);
    if (m_pairs.empty())
        throw std::invalid_argument(fmt::format("the runs have no step in common (A: {} steps, B: {} steps)",
                                                m_stepsA.size(), stepsB.size()));
    m_weightStepsA = a.readWeightSteps();
    m_weightPairs = alignRows(m_weightStepsA, b.readWeightSteps());
}

size_t AlignedRuns::chunkSteps() const {
    // Both runs' rows of a chunk are in memory at once: each gets half the read budget.
    return size_t(std::min(stepsPerRead(m_a.meta(), kChunk), stepsPerRead(m_b.meta(), kChunk)) + 1) / 2;
}

void AlignedRuns::forEach(const Visit& visit, const std::function<void(int)>& progress) const {
    const size_t chunk = chunkSteps();
    size_t nextWeights = 0;
    for (size_t k0 = 0; k0 < m_pairs.size(); k0 += chunk) {
        const size_t k1 = std::min(m_pairs.size(), k0 + chunk);
        nextWeights = visitChunk(k0, k1, nextWeights, visit);
        if (progress)
            progress(int(100 * k1 / m_pairs.size()));
    }
}

size_t AlignedRuns::visitChunk(size_t k0, size_t k1, size_t w0, const Visit& visit) const {
    const int64_t a0 = m_pairs[k0].first, b0 = m_pairs[k0].second;
    const auto rowsA = m_a.readSteps(a0, m_pairs[k1 - 1].first + 1, true);
    const auto rowsB = m_b.readSteps(b0, m_pairs[k1 - 1].second + 1, true);
    // The weight rows up to this chunk's last step.
    size_t w1 = w0;
    while (w1 < m_weightPairs.size() && weightStepA(w1) <= stepA(k1 - 1))
        ++w1;
    std::vector<WeightRecord> weightsA, weightsB;
    if (w1 > w0) {
        weightsA = m_a.readWeights(m_weightPairs[w0].first, m_weightPairs[w1 - 1].first + 1);
        weightsB = m_b.readWeights(m_weightPairs[w0].second, m_weightPairs[w1 - 1].second + 1);
    }
    std::vector<AlignedWeights> here;
    size_t w = w0;
    for (size_t k = k0; k < k1; ++k) {
        const StepRecord& sa = rowsA[size_t(m_pairs[k].first - a0)];
        here.clear();
        for (; w < w1 && weightStepA(w) <= sa.step; ++w)
            if (weightStepA(w) == sa.step)
                here.push_back({weightsA[size_t(m_weightPairs[w].first - m_weightPairs[w0].first)],
                                weightsB[size_t(m_weightPairs[w].second - m_weightPairs[w0].second)]});
        visit(sa, rowsB[size_t(m_pairs[k].second - b0)], here);
    }
    return w1;
}

} // namespace rs
