// The common face of every chart (loss, overflow timeline, heatmaps): what the window, the export menu and
// the bug report need to know of a chart without knowing which one it is.
#pragma once

#include <QWidget>

class QCustomPlot;

namespace rs {

class RunModel;
class StepCursor;

class ChartWidget : public QWidget {
    Q_OBJECT
public:
    using QWidget::QWidget;
    virtual QString chartId() const = 0; // file-name stem in exports: "loss", "overflow", "rank-heatmap", ...
    virtual QString chartTitle() const = 0; // shown above the plot and in exports, e.g. "Loss and accuracy"
    virtual QCustomPlot* plot() const = 0;  // the plot that exports render
    // Redraws from the model now (exports and the report call it before rendering; normal updates are
    // coalesced by the chart itself).
    virtual void refreshNow() = 0;
};

} // namespace rs
