// "Rank × rank": how every pair of ranks compares at the cursor step, for one metric of
// rs::view::RankMetric (synced gradient mismatch, synced norm difference, local gradient cosine from the
// sketches, weight fingerprint mismatch, shard overlap), over all parameters or one. A healthy data-parallel
// run has identical synced gradients and weights on every rank, so any colored off-diagonal cell in those
// modes is a bug; the text in each cell (up to 8 ranks) gives the number. Grey cells are pairs the metric
// cannot compare at this step; the legend below the map says why, in the metric's terms.
#pragma once

#include "charts/DetailChart.h"
#include "view/RankMatrix.h"

#include <memory>
#include <vector>

class QComboBox;
class QCPColorMap;
class QCPColorScale;
class QCPItemText;

namespace rs {

class GreyCellLegend;

class RankHeatmap : public DetailChart {
    Q_OBJECT
public:
    RankHeatmap(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);
    ~RankHeatmap() override;

    const view::Matrix& matrix() const { return m_matrix; } // R x R at shownStep(); empty before
    view::RankMetric rankMetric() const { return m_metric; }
    int param() const { return m_param; } // -1: all parameters
    QCPColorMap* colorMap() const { return m_map; }
    QCPColorScale* colorScale() const { return m_scale; }
    int cellTextCount() const { return int(m_texts.size()); }
    QString greyLegendText() const; // what grey cells mean, in full, as the legend says; "" while hidden
    QString toolTipAt(const QPointF& pos) const override;
    static constexpr int kMaxTextRanks = 8; // cell values are written into the cells up to this many ranks

public slots:
    void setMetric(rs::view::RankMetric metric);
    void setParam(int param); // -1: all parameters; out of range: all

protected:
    void draw(const StepDetail& detail) override;
    void clear() override;

private:
    void syncParamBox();
    void applyMetricStyle();
    void drawCellTexts();
    QString cellText(double v) const;
    bool cellAt(const QPointF& pos, int* row, int* col) const;

    QComboBox* m_metricBox;
    QComboBox* m_paramBox;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    std::vector<QCPItemText*> m_texts;
    std::unique_ptr<GreyCellLegend> m_grey;
    view::RankMetric m_metric = view::RankMetric::SyncedMismatch;
    int m_param = -1;
    view::Matrix m_matrix;
};

} // namespace rs
