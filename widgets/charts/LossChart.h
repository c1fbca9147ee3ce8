// "Loss and accuracy": each rank's loss (one color per rank), their mean as a thick line, the batch accuracy
// mean and the eval accuracy on a second y axis in percent, and LOSS_FLUCTUATION events as dashed markers.
// Long runs are drawn min/max-decimated to the plot's pixel width, so spikes stay visible at any length.
#pragma once

#include "charts/StepChart.h"

#include <vector>

class QCheckBox;
class QCPGraph;
class QCPItemLine;

namespace rs {

class LossChart : public StepChart {
    Q_OBJECT
public:
    LossChart(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    bool logScale() const { return m_log; }
    int rankGraphCount() const { return int(m_rankGraphs.size()); }
    QCPGraph* rankGraph(int rank) const { return m_rankGraphs.at(size_t(rank)); }
    QCPGraph* meanGraph() const { return m_mean; }
    QCPGraph* accuracyGraph() const { return m_accuracy; } // mean batch accuracy, percent, on yAxis2
    QCPGraph* evalGraph() const { return m_eval; }         // mean eval accuracy, percent, on yAxis2
    int eventMarkerCount() const { return int(m_markers.size()); }
    QString toolTipAt(const QPointF& pos) const override;

public slots:
    void setLogScale(bool on);

protected:
    void rebuild() override;

private:
    void ensureRankGraphs(int ranks);
    void extendMeans();
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
    // Means over ranks per row (finite values only), extended as steps arrive.
    std::vector<float> m_meanLoss, m_meanAccuracy;
    std::vector<QCPItemLine*> m_markers;
    std::vector<int> m_markerEvents; // index into model()->events() of each marker
};

} // namespace rs
