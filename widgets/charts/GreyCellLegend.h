// The legend entry of a heatmap's grey cells (palette::nanColor(): cells the color scale cannot place): a
// grey square and what grey means in that chart, in the row below the map (ChartBase::placeLegendBelow), so
// exports carry it too. The text is elided to the chart's width; toolTip() gives it whole over the entry.
// Hidden with the chart's cells (no run, no step yet).
#pragma once

#include <QPointF>
#include <QString>

class QCPGraph;
class QCustomPlot;

namespace rs {

class GreyCellLegend {
public:
    // Adds the entry to plot's legend; call after the legend is placed (its font is the entries' font).
    explicit GreyCellLegend(QCustomPlot* plot);

    void setText(const QString& text); // in full, e.g. "grey: a rank recorded no sample ids"
    QString text() const { return m_text; }
    QString shownText() const; // as the legend shows it (elided to the chart's width)
    void setShown(bool shown); // in the legend or not
    bool isShown() const;
    void fit();                                  // after a resize: elide again
    QString toolTipAt(const QPointF& pos) const; // the full text over the entry, else ""

private:
    QCustomPlot* m_plot;
    QCPGraph* m_swatch; // no data: only its square marker and name are drawn, in the legend
    QString m_text;
};

} // namespace rs
