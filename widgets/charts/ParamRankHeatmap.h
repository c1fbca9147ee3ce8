// "Local gradient norm / cross-rank median": a parameter x rank map of each rank's local gradient norm
// divided by the median over the ranks, at the cursor step, on a log2 diverging scale (blue below 1, white
// at 1, red above). One odd rank lights up as a column, one odd layer as a row; clicking a cell asks the
// window to show that parameter in the rank × rank heatmap (paramClicked). A cell without a ratio to color
// (a norm of 0, not finite or not recorded, or a median of 0) is grey, as the legend below the map says.
#pragma once

#include "charts/ColorScaleLabel.h"
#include "charts/DetailChart.h"
#include "view/RankGroups.h"
#include "view/RankMatrix.h"

#include <memory>

class QCPColorMap;
class QCPColorScale;

namespace rs {

class GreyCellLegend;

class ParamRankHeatmap : public DetailChart {
    Q_OBJECT
public:
    ParamRankHeatmap(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);
    ~ParamRankHeatmap() override;

    const view::Matrix& ratios() const { return m_ratio; } // P x R at shownStep(); empty before
    QCPColorMap* colorMap() const { return m_map; }
    QCPColorScale* colorScale() const { return m_scale; }
    // The parameter and rank of the cell under a plot pixel; false when there is none.
    bool cellAt(const QPointF& pos, int* param, int* rank) const;
    QString toolTipAt(const QPointF& pos) const override;
    int labelledParamCount() const; // y tick labels shown (names are thinned to what fits)
    QString greyLegendText() const; // what grey cells mean, in full, as the legend says; "" while hidden
    static constexpr int kMaxCellRanks = 64; // past this many ranks a column is a group of ranks
    bool pooled() const { return m_groups.size() > 0; }
    const view::RankGroups& groups() const { return m_groups; }
    const view::Matrix& shownCells() const { return m_pooled; } // P x groups while pooled()
    const ColorScaleLabel& scaleTitle() const { return m_scaleTitle; }

signals:
    void paramClicked(int param);

protected:
    void draw(const StepDetail& detail) override;
    void clear() override;
    void clicked(const QPointF& pos) override;
    bool layoutChanged() const override; // the colour bar's length, which its title is fitted to

private:
    void updateParamTicks(int params);

    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    ColorScaleLabel m_scaleTitle;
    view::Matrix m_ratio;
    view::RankGroups m_groups; // empty while every rank has its column
    view::Matrix m_pooled;
    std::unique_ptr<GreyCellLegend> m_grey;
};

} // namespace rs
