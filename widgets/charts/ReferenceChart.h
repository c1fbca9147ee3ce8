// "Against the reference": the open run compared with a reference run (compare/RunComparison.h, File >
// Compare With Reference…). Above, both runs' losses (mean over ranks) and, on the right axis, each rank's
// loss against the same rank of the reference where ranks align one to one (past kLinesUpTo ranks, the
// largest of those), or the means' difference against a reference of another card count; below, a step x
// parameter map of how far past its tolerance each parameter is (log scale: white within the tolerance, red
// past it, darkest where bits differ that should not), and a marker at the first divergence. The step axis,
// zoom and cursor are the other step charts'. Without a comparison it says how to make one.
#pragma once

#include "charts/StepChart.h"

#include <memory>
#include <vector>

class QCPColorMap;
class QCPGraph;
class QCPItemLine;
class QCPItemText;

namespace rs {

struct RunComparison;

class ReferenceChart : public StepChart {
    Q_OBJECT
public:
    ReferenceChart(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);
    static constexpr int kLinesUpTo = 8; // ranks drawn a deviation line each; more: the largest deviation

    // The comparison of the open run with `referenceName`; null clears it.
    void setComparison(std::shared_ptr<const RunComparison> comparison, const QString& referenceName);
    const RunComparison* comparison() const { return m_comparison.get(); }

    QCPGraph* runLossGraph() const { return m_lossA; }
    QCPGraph* referenceLossGraph() const { return m_lossB; }
    int deviationGraphCount() const;
    QCPColorMap* divergenceMap() const { return m_map; }
    bool firstDivergenceShown() const; // the marker at the first divergence
    QString note() const;              // what the chart says instead of data ("" when it draws some)
    QString toolTipAt(const QPointF& pos) const override;

    // The map's value for an excess (|a - b| / tolerance): log10, within [-3, 6.5]; bits that differ where
    // equality was expected are the top.
    static double mapValue(float excess);

protected:
    void rebuild() override;

private:
    void setupLoss();
    void setupMap();
    void rebuildLoss(int64_t begin, int64_t end, int buckets);
    void rebuildMap(int64_t begin, int64_t end, int buckets);
    void placeMarker();
    // Comparison rows [begin, end) covering the view's steps.
    std::pair<int64_t, int64_t> rowsInView(double lower, double upper) const;

    std::shared_ptr<const RunComparison> m_comparison;
    QString m_referenceName;
    QCPAxisRect* m_mapRect = nullptr;
    QCPGraph* m_lossA = nullptr;
    QCPGraph* m_lossB = nullptr;
    std::vector<QCPGraph*> m_deviation; // per rank, or one: the largest
    QCPColorMap* m_map = nullptr;
    QCPItemLine* m_markerTop = nullptr;
    QCPItemLine* m_markerMap = nullptr;
    QCPItemText* m_markerText = nullptr;
    QCPItemText* m_note = nullptr;
    // The map as drawn: columns of comparison rows, for the tooltip.
    std::vector<int64_t> m_columnBegin, m_columnEnd;
};

} // namespace rs
