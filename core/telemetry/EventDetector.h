// Turns the stream of step and weight records into the event log lines users know from real clusters,
// e.g. "GRADIENT_SYNC: Rank 0 and Rank 1 parameter gradient mismatch at step 1200". Runs on recorded data
// only, so a replayed file yields the same events as the live run.
#pragma once

#include "store/RunRecords.h"

#include <deque>
#include <set>
#include <vector>

namespace rs {

class EventDetector {
public:
    explicit EventDetector(const RunMeta& meta);
    std::vector<Event> onStep(const StepRecord& step);
    std::vector<Event> onWeights(const WeightRecord& weights);

    // Loss fluctuation rule: within the window the mean loss rises from its minimum by at least
    // max(kRiseAbs, kRiseRel * minimum).
    static constexpr int kWindow = 10;
    static constexpr float kRiseAbs = 1.0f;
    static constexpr float kRiseRel = 1.5f;
    static constexpr int kCooldown = 50;

private:
    const RunMeta& m_meta;
    std::set<int> m_gradMismatchReported; // ranks already reported against rank 0
    std::set<int> m_weightMismatchReported;
    std::set<int> m_nonfiniteReported;
    std::deque<float> m_recentLoss;
    int64_t m_lastFluctuation = -1000000;
    bool m_skipMismatchReported = false;
};

} // namespace rs
