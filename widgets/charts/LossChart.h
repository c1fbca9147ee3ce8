// "Loss and accuracy": each rank's loss (one color per rank), their mean as a thick line, the batch accuracy
// mean and the eval accuracy on a second y axis in percent, and LOSS_FLUCTUATION events as dashed markers.
// Long runs are drawn min/max-decimated to the plot's pixel width, so spikes stay visible at any length.
// Past kLinesUpTo ranks a line per rank is a tangle with a legend taller than the plot, so the chart draws
// the mean, the band from the lowest to the highest rank, and only the ranks that stand out in the steps in
// view (view/RankSpread); the rank under the pointer is drawn and named in the tooltip.
#pragma once

#include "charts/StepChart.h"

#include <vector>

class QCheckBox;
class QCPGraph;
class QCPItemLine;
class QCPItemText;

namespace rs {

class LossChart : public StepChart {
    Q_OBJECT
public:
    LossChart(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);
    static constexpr int kLinesUpTo = 8; // ranks drawn a line each; more are summarised

    bool logScale() const { return m_log; }
    bool summarised() const { return m_summarised; }
    // A line per rank (none when summarised).
    int rankGraphCount() const { return int(m_rankGraphs.size()); }
    QCPGraph* rankGraph(int rank) const { return m_rankGraphs.at(size_t(rank)); }
    // Summarised: the ranks that stand out in the steps in view, drawn a line each, most striking first.
    const std::vector<int>& standoutRanks() const { return m_standoutRanks; }
    QCPGraph* standoutGraph(int i) const { return m_standoutGraphs.at(size_t(i)); }
    QCPGraph* bandLowGraph() const { return m_bandLow; }   // lowest rank's loss per step (summarised)
    QCPGraph* bandHighGraph() const { return m_bandHigh; } // highest, filled down to the lowest
    int hoveredRank() const { return m_hoverRank; }        // the rank under the pointer, -1: none
    QCPGraph* hoverGraph() const { return m_hover; }
    QCPGraph* meanGraph() const { return m_mean; }
    QCPGraph* accuracyGraph() const { return m_accuracy; } // mean batch accuracy, percent, on yAxis2
    QCPGraph* evalGraph() const { return m_eval; }         // mean eval accuracy, percent, on yAxis2
    int eventMarkerCount() const { return int(m_markers.size()); }
    QString toolTipAt(const QPointF& pos) const override;
    QString note() const; // what the chart cannot draw because the source did not record it; empty: none

public slots:
    void setLogScale(bool on);

protected:
    void rebuild() override;
    void hovered(std::optional<QPointF> pos) override;

private:
    void ensureRankGraphs(int ranks);
    void extendMeans();
    void rebuildSummary(const View& v);
    void setRankLine(QCPGraph* g, int rank, const View& v) const;
    int rankNear(const QPointF& pos) const; // summarised: the rank whose loss is drawn within a few pixels
    void rebuildMarkers(const View& v);
    void fitLossAxis();
    QString eventsNear(double pixelX) const;

    QCheckBox* m_logBox;
    bool m_log = false;
    std::vector<QCPGraph*> m_rankGraphs;
    QCPGraph* m_mean;
    QCPGraph* m_accuracy;
    QCPGraph* m_eval;
    QCPGraph* m_markerLegend;   // no data: gives the dashed fluctuation markers a legend entry
    QCPGraph* m_mismatchLegend; // no data: the same for rank-mismatch markers
    QCPGraph* m_bandLow;
    QCPGraph* m_bandHigh;
    QCPGraph* m_hover;
    QCPItemText* m_note;
    std::vector<QCPGraph*> m_standoutGraphs;
    std::vector<int> m_standoutRanks;
    bool m_summarised = false;
    int m_hoverRank = -1;
    View m_view; // what the last rebuild drew
    // Means, lowest and highest over ranks per row (finite values only), extended as steps arrive.
    std::vector<float> m_meanLoss, m_meanAccuracy, m_lowLoss, m_highLoss;
    std::vector<QCPItemLine*> m_markers;
    std::vector<int> m_markerEvents; // index into model()->events() of each marker
};

} // namespace rs
