// "Overflow timeline": where fp16 numerics went wrong, rank by rank. The top panel is a step x rank raster
// (clean, overflow, skipped update, non-finite loss, or not recorded where the source kept no overflow flags
// or skipped updates; on long runs a column is a pixel-wide bucket of steps holding its worst cell); below
// it, on the same linked step axis, the loss scale on a log2 axis with the skipped steps marked, so a scale
// that keeps halving shows up next to its cause. Ranks whose loss scale differs from the others' are drawn a
// line each: a rank at 2^24 among ranks at 2^14 is the bug, and a mean would hide it.
#pragma once

#include "charts/StepChart.h"

#include <cstdint>
#include <vector>

class QCPAxisRect;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPItemText;

namespace rs {

// NotRecorded: the source recorded neither overflow flags nor skipped updates for a cell nothing else marks
// (drawn grey, never as clean).
enum class OverflowCell : uint8_t {
    Clean = 0,
    Overflow = 1,
    Skipped = 2,
    NonFiniteLoss = 3,
    NotRecorded = 4
};

// The raster's cells for rows [begin, end) of a model, in at most `buckets` columns (one per row when they
// fit). Column c covers rows [rowBegin[c], rowEnd[c]).
struct OverflowRaster {
    int columns = 0, ranks = 0;
    std::vector<uint8_t> cells; // columns x ranks, column-major: cells[c * ranks + rank], an OverflowCell
    std::vector<int64_t> rowBegin, rowEnd;
    uint8_t at(int column, int rank) const { return cells[size_t(column) * size_t(ranks) + size_t(rank)]; }
};

// The worst of what happened to one rank in one row: a non-finite loss, a skipped update, an overflow; clean
// only where the source recorded both flags, else NotRecorded.
OverflowCell overflowCell(const RunModel& model, int64_t row, int rank);
OverflowRaster overflowRaster(const RunModel& model, int64_t begin, int64_t end, int buckets);
QString overflowCellName(OverflowCell cell);

// The loss scale per row: the value most ranks used, and the ranks that used another at some step.
struct LossScaleLines {
    std::vector<float> common;        // per row: the value most ranks used (NaN where none is finite)
    std::vector<int64_t> rankDiffers; // per rank: rows where the rank's finite scale differs from common
    // The ranks drawn a line each: those that differ at some row, most rows first, at most kMaxRanks.
    static constexpr int kMaxRanks = 4;
    std::vector<int> standoutRanks() const;
    void extend(const RunModel& model); // adds the rows the model gained
};

class OverflowTimeline : public StepChart {
    Q_OBJECT
public:
    OverflowTimeline(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    const OverflowRaster& raster() const { return m_raster; } // what the raster shows now
    QCPColorMap* rasterMap() const { return m_map; }
    QCPAxisRect* scaleRect() const { return m_scaleRect; }
    QCPGraph* scaleGraph() const { return m_scale; }     // the loss scale most ranks used
    QCPGraph* skippedGraph() const { return m_skipped; } // marks at skipped steps
    // Ranks whose loss scale differs from the others', a line each (rankScaleGraph(i) is standoutRanks()[i]).
    const std::vector<int>& standoutRanks() const { return m_standouts; }
    QCPGraph* rankScaleGraph(int i) const { return m_rankScales.at(size_t(i)); }
    // The labels naming the scale lines at their right ends (shown while ranks differ); visible ones only.
    std::vector<QCPItemText*> lineLabels() const;
    // True when the legend lacked room for the scale lines' entries and holds the raster's colours only.
    bool compactLegend() const { return m_compactLegend; }
    QString rasterNote() const; // what the raster cannot show and why; empty when it shows everything
    QString scaleNote() const;  // the same for the loss scale panel
    QString toolTipAt(const QPointF& pos) const override;

protected:
    void rebuild() override;
    bool layoutChanged() const override; // also the scale strip's height, which the scale's ticks fit

private:
    void setupRaster();
    void setupScale();
    void setupLegend();
    void extendScale();
    void rebuildRankScales(const View& v);
    void fitScaleAxis();
    void fitScaleTicks(double lo, double hi);
    void updateNotes();
    void updateLegend();
    void setLegendEntries(const std::vector<QCPGraph*>& graphs);
    int legendHeight() const;
    void placeLineLabels();

    QCPColorMap* m_map = nullptr;
    QCPAxisRect* m_scaleRect = nullptr;
    QCPGraph* m_scale = nullptr;
    QCPGraph* m_skipped = nullptr;
    // No data: the raster's legend entries, OverflowCell order (clean .. non-finite loss, then not recorded).
    std::vector<QCPGraph*> m_categoryLegend;
    std::vector<QCPGraph*> m_rankScales; // kMaxRanks graphs, the first standouts.size() used
    std::vector<int> m_standouts;
    QCPItemText* m_rasterNote = nullptr;
    QCPItemText* m_scaleNote = nullptr;
    // Labels at the scale lines' right ends: one per standout rank, then the common line's.
    std::vector<QCPItemText*> m_lineLabels;
    bool m_compactLegend = false; // the scale lines left the legend for lack of room
    OverflowRaster m_raster;
    LossScaleLines m_lines;
    int m_scaleTicksHeight = 0; // the scale strip's height the ticks were fitted to
    std::vector<float>
        m_skippedScale; // per row: the common scale where any rank skipped the update, else NaN
};

} // namespace rs
