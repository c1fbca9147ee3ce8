// "Overflow timeline": where fp16 numerics went wrong, rank by rank. The top panel is a step x rank raster
// (clean, overflow, skipped update, non-finite loss; on long runs a column is a pixel-wide bucket of steps
// holding its worst cell); below it, on the same linked step axis, the loss scale (mean over ranks, log2
// axis) with the skipped steps marked, so a scale that keeps halving shows up next to its cause.
#pragma once

#include "charts/StepChart.h"

#include <cstdint>
#include <vector>

class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;

namespace rs {

enum class OverflowCell : uint8_t { Clean = 0, Overflow = 1, Skipped = 2, NonFiniteLoss = 3 };

// The raster's cells for rows [begin, end) of a model, in at most `buckets` columns (one per row when they
// fit). Column c covers rows [rowBegin[c], rowEnd[c]).
struct OverflowRaster {
    int columns = 0, ranks = 0;
    std::vector<uint8_t> cells; // columns x ranks, column-major: cells[c * ranks + rank], an OverflowCell
    std::vector<int64_t> rowBegin, rowEnd;
    uint8_t at(int column, int rank) const { return cells[size_t(column) * size_t(ranks) + size_t(rank)]; }
};

// The worst of what happened to one rank in one row: a non-finite loss, a skipped update, an overflow.
OverflowCell overflowCell(const RunModel& model, int64_t row, int rank, bool lossRecorded = true);
OverflowRaster overflowRaster(const RunModel& model, int64_t begin, int64_t end, int buckets);
QString overflowCellName(OverflowCell cell);

class OverflowTimeline : public StepChart {
    Q_OBJECT
public:
    OverflowTimeline(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    const OverflowRaster& raster() const { return m_raster; } // what the raster shows now
    QCPColorMap* rasterMap() const { return m_map; }
    QCPAxisRect* scaleRect() const { return m_scaleRect; }
    QCPGraph* scaleGraph() const { return m_scale; }     // mean loss scale over ranks
    QCPGraph* skippedGraph() const { return m_skipped; } // marks at skipped steps
    QString toolTipAt(const QPointF& pos) const override;

protected:
    void rebuild() override;

private:
    void setupRaster();
    void setupScale();
    void setupLegend();
    void extendScale();
    void fitScaleAxis();

    QCPColorMap* m_map = nullptr;
    QCPAxisRect* m_scaleRect = nullptr;
    QCPGraph* m_scale = nullptr;
    QCPGraph* m_skipped = nullptr;
    OverflowRaster m_raster;
    // Per row: the mean loss scale over ranks, and the same where any rank skipped the update (else NaN).
    std::vector<float> m_meanScale, m_skippedScale;
};

} // namespace rs
