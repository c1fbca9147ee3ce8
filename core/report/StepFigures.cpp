// StepFigures: see StepFigures.h.
#include "report/StepFigures.h"

#include "store/RankMean.h"
#include "view/RankSpread.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rs {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Median of the finite values (mean of the two middle ones for an even count); NaN when there are none.
float medianOf(std::vector<float> v) {
    std::erase_if(v, [](float x) { return !std::isfinite(x); });
    if (v.empty())
        return kNaN;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
    const float hi = v[mid];
    if (v.size() % 2)
        return hi;
    const float lo = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid));
    return float((double(lo) + double(hi)) / 2);
}

} // namespace

StepFiguresBuilder::StepFiguresBuilder(int worldSize)
    : m_r(size_t(std::max(worldSize, 0)))
    , m_stepMs(m_r)
    , m_commMs(m_r) {
    m_f.ranks.resize(m_r);
    for (auto& rank : m_f.ranks)
        rank.lossFirst = rank.lossLast = rank.lossScaleLast = kNaN;
}

void StepFiguresBuilder::add(std::span<const float> loss, std::span<const float> stepMs,
                             std::span<const float> commMs, std::span<const float> overflow,
                             std::span<const float> skipped, std::span<const float> lossScale) {
    if (m_r == 0)
        return;
    const size_t rows = loss.size() / m_r;
    auto at = [&](std::span<const float> c, size_t row, size_t r) {
        return row * m_r + r < c.size() ? c[row * m_r + r] : kNaN;
    };
    for (size_t row = 0; row < rows; ++row) {
        if (!lossScale.empty())
            addLossScales(lossScale.subspan(std::min(lossScale.size(), row * m_r)));
        bool anyOverflow = false, anySkipped = false;
        for (size_t r = 0; r < m_r; ++r) {
            RankFigures& f = m_f.ranks[r];
            if (m_rows == 0)
                f.lossFirst = at(loss, row, r);
            f.lossLast = at(loss, row, r);
            m_stepMs[r].push_back(at(stepMs, row, r));
            m_commMs[r].push_back(at(commMs, row, r));
            const bool o = at(overflow, row, r) != 0 && !std::isnan(at(overflow, row, r));
            const bool s = at(skipped, row, r) != 0 && !std::isnan(at(skipped, row, r));
            f.overflowSteps += o;
            f.skippedSteps += s;
            anyOverflow = anyOverflow || o;
            anySkipped = anySkipped || s;
        }
        m_f.overflowSteps += anyOverflow;
        m_f.skippedSteps += anySkipped;
        ++m_rows;
    }
}

// One row's loss scales (the row starts the span): each rank's last one, and the steps where a rank used
// another scale than most ranks did.
void StepFiguresBuilder::addLossScales(std::span<const float> row) {
    const size_t n = std::min(m_r, row.size());
    const float common = view::commonValue(row.data(), int(n));
    for (size_t r = 0; r < n; ++r) {
        RankFigures& f = m_f.ranks[r];
        f.lossScaleLast = row[r];
        if (std::isfinite(row[r]) && row[r] > 0 && row[r] != common && f.lossScaleDiffers++ == 0)
            f.lossScaleFirstDiffRow = m_rows;
    }
}

StepFigures StepFiguresBuilder::finish() {
    std::vector<float> stepMedians, commMedians;
    for (size_t r = 0; r < m_r; ++r) {
        RankFigures& f = m_f.ranks[r];
        f.stepMsMedian = medianOf(std::move(m_stepMs[r]));
        f.commMsMedian = medianOf(std::move(m_commMs[r]));
        stepMedians.push_back(f.stepMsMedian);
        commMedians.push_back(f.commMsMedian);
    }
    m_f.lossFirstMean = finiteMean(m_r, [&](size_t r) { return m_f.ranks[r].lossFirst; });
    m_f.lossLastMean = finiteMean(m_r, [&](size_t r) { return m_f.ranks[r].lossLast; });
    m_f.stepMsMedian = medianOf(std::move(stepMedians));
    m_f.commMsMedian = medianOf(std::move(commMedians));
    return std::move(m_f);
}

StepFigures summarizeSteps(int worldSize, std::span<const float> loss, std::span<const float> stepMs,
                           std::span<const float> commMs, std::span<const float> overflow,
                           std::span<const float> skipped, std::span<const float> lossScale) {
    StepFiguresBuilder b(worldSize);
    b.add(loss, stepMs, commMs, overflow, skipped, lossScale);
    return b.finish();
}

} // namespace rs
