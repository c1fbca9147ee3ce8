// Per-rank summary figures of a run (first and last loss, median step and communication times, overflow and
// skipped steps, loss-scale disagreements), computed from the per-step scalar columns block by block, so a
// 100k-step run costs a few megabytes. The report's summary table prints them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rs {

// Summary figures of one rank over the whole run. NaN where the rank recorded nothing.
struct RankFigures {
    float lossFirst = 0, lossLast = 0;           // loss of the first and the last recorded step
    float stepMsMedian = 0, commMsMedian = 0;    // medians over the steps with a finite time
    int64_t overflowSteps = 0, skippedSteps = 0; // steps this rank flagged
    float lossScaleLast = 0;                     // the loss scale of the last recorded step (NaN: none)
    int64_t lossScaleDiffers = 0; // steps where this rank's loss scale differs from the one most ranks used
    int64_t lossScaleFirstDiffRow = -1; // the first such step's row; -1: none
};

// Figures of the whole run, from the per-rank step columns.
struct StepFigures {
    std::vector<RankFigures> ranks;              // index = rank
    int64_t overflowSteps = 0, skippedSteps = 0; // steps where any rank overflowed / skipped its update
    float lossFirstMean = 0, lossLastMean = 0;   // mean over ranks (NaN if a rank's loss is not finite)
    float stepMsMedian = 0, commMsMedian = 0;    // median over ranks of the per-rank medians
};

// Columns are row-major, rows x worldSize, as RunReader::readStepScalar and RunModel::column give them.
// Flags (overflow, skipped) count as set when nonzero. lossScale may be empty (then no loss-scale figures).
StepFigures summarizeSteps(int worldSize, std::span<const float> loss, std::span<const float> stepMs,
                           std::span<const float> commMs, std::span<const float> overflow,
                           std::span<const float> skipped, std::span<const float> lossScale = {});

// Accumulates the figures block by block, so a reader can stream the columns of a long run.
class StepFiguresBuilder {
public:
    explicit StepFiguresBuilder(int worldSize);
    // One block of rows, the columns as summarizeSteps takes them.
    void add(std::span<const float> loss, std::span<const float> stepMs, std::span<const float> commMs,
             std::span<const float> overflow, std::span<const float> skipped,
             std::span<const float> lossScale);
    StepFigures finish();

private:
    void addLossScales(std::span<const float> row);

    size_t m_r;
    int64_t m_rows = 0;
    StepFigures m_f;
    std::vector<std::vector<float>> m_stepMs, m_commMs; // [rank][row]: the medians need every value
};

} // namespace rs
