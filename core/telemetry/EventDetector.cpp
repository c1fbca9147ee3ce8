#include "telemetry/EventDetector.h"

#include "store/RankMean.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace rs {

EventDetector::EventDetector(const RunMeta& meta)
    : m_meta(meta) {}

std::vector<Event> EventDetector::onStep(const StepRecord& step) {
    std::vector<Event> out;
    const auto& ranks = step.ranks;
    if (ranks.empty())
        return out;

    // Synced gradients must be bitwise equal on every rank after an all-reduce.
    const auto& ref = ranks[0].syncedFp;
    for (size_t r = 1; r < ranks.size(); ++r) {
        const auto& fp = ranks[r].syncedFp;
        if (fp.size() != ref.size() || m_gradMismatchReported.count(static_cast<int>(r)))
            continue;
        size_t count = 0, first = fp.size();
        for (size_t p = 0; p < fp.size(); ++p)
            if (fp[p] != ref[p]) {
                ++count;
                first = std::min(first, p);
            }
        if (count == 0)
            continue;
        m_gradMismatchReported.insert(static_cast<int>(r));
        const std::string name = first < m_meta.params.size() ? m_meta.params[first].name : "?";
        out.push_back({step.step, static_cast<int>(r), Severity::Error, eventcode::kGradientSync,
                       fmt::format("GRADIENT_SYNC: Rank 0 and Rank {} parameter gradient mismatch at step {} "
                                   "({} of {} parameters differ, first: {})",
                                   r, step.step, count, fp.size(), name)});
    }

    // Ranks that skipped different steps have applied different updates.
    if (!m_skipMismatchReported) {
        for (size_t r = 1; r < ranks.size(); ++r)
            if (ranks[r].skipped != ranks[0].skipped) {
                m_skipMismatchReported = true;
                out.push_back({step.step, static_cast<int>(r), Severity::Error, eventcode::kSkipMismatch,
                               fmt::format("Rank 0 and Rank {} disagree on skipping the update at step {}: "
                                           "overflow status not synchronised",
                                           r, step.step)});
                break;
            }
    }

    for (size_t r = 0; r < ranks.size(); ++r) {
        if (!std::isfinite(ranks[r].loss) && !m_nonfiniteReported.count(static_cast<int>(r))) {
            m_nonfiniteReported.insert(static_cast<int>(r));
            out.push_back({step.step, static_cast<int>(r), Severity::Error, eventcode::kNonfiniteLoss,
                           fmt::format("Rank {} loss is {} at step {}", r, ranks[r].loss, step.step)});
        }
    }
    if (ranks[0].overflow) {
        const float before = ranks[0].lossScale;
        out.push_back({step.step, -1, Severity::Info, eventcode::kOverflow,
                       fmt::format("Gradient overflow at step {} (loss scale {}): update {}", step.step,
                                   before, ranks[0].skipped ? "skipped" : "applied")});
    }

    if (const float cur = finiteMean(ranks.size(), [&](size_t r) { return ranks[r].loss; });
        std::isfinite(cur)) {
        if (m_recentLoss.size() == static_cast<size_t>(kWindow)) {
            const float lo = *std::min_element(m_recentLoss.begin(), m_recentLoss.end());
            if (cur - lo >= std::max(kRiseAbs, kRiseRel * lo) && step.step - m_lastFluctuation >= kCooldown) {
                m_lastFluctuation = step.step;
                out.push_back(
                    {step.step, -1, Severity::Warning, eventcode::kLossFluctuation,
                     fmt::format("Loss shows abnormal fluctuation: from {:.2f} to {:.2f} within {} steps", lo,
                                 cur, kWindow)});
            }
            m_recentLoss.pop_front();
        }
        m_recentLoss.push_back(cur);
    }
    return out;
}

std::vector<Event> EventDetector::onWeights(const WeightRecord& w) {
    std::vector<Event> out;
    if (w.fp.empty())
        return out;
    for (size_t r = 1; r < w.fp.size(); ++r) {
        if (m_weightMismatchReported.count(static_cast<int>(r)) || w.fp[r].size() != w.fp[0].size())
            continue;
        size_t count = 0, first = w.fp[r].size();
        for (size_t p = 0; p < w.fp[r].size(); ++p)
            if (w.fp[r][p] != w.fp[0][p]) {
                ++count;
                first = std::min(first, p);
            }
        if (count == 0)
            continue;
        m_weightMismatchReported.insert(static_cast<int>(r));
        const std::string name = first < m_meta.params.size() ? m_meta.params[first].name : "?";
        out.push_back({w.step, static_cast<int>(r), Severity::Error, eventcode::kWeightSync,
                       fmt::format("WEIGHT_SYNC: Rank 0 and Rank {} weights differ at step {} ({} of {} "
                                   "parameters, first: {})",
                                   r, w.step, count, w.fp[r].size(), name)});
    }
    return out;
}

} // namespace rs
