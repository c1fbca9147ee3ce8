// What every RankSight chart does alike: a header row (title, then the chart's own controls) above one
// QCustomPlot, coalesced redraws, tooltips and click detection. Model and cursor signals only mark the chart
// dirty and start a single-shot 40 ms timer, so a live run redraws at most 25 times a second however fast
// steps arrive; a hidden chart (another tab) keeps its dirty mark and redraws when it is shown. Charts that
// go dirty together (every chart, on each step of a live run) redraw one per event-loop pass, so the window
// answers input within one chart's redraw rather than all of them.
#pragma once

#include "charts/ChartWidget.h"

#include <QPointF>
#include <QSharedPointer>
#include <QTimer>
#include <functional>
#include <optional>

class QCPAxis;
class QCPAxisRect;
class QCPAxisTickerFixed;
class QCPItemText;
class QCPColorMap;
class QCPRange;
class QHBoxLayout;
class QLabel;

namespace rs {

class ChartBase : public ChartWidget {
    Q_OBJECT
public:
    ChartBase(RunModel* model, StepCursor* cursor, const QString& id, const QString& title,
              QWidget* parent = nullptr);

    QString chartId() const final { return m_id; }
    QString chartTitle() const final { return m_title; }
    QCustomPlot* plot() const final { return m_plot; }
    void refreshNow() override;

    RunModel* model() const { return m_model; }
    StepCursor* cursor() const { return m_cursor; }
    // The bold title in the header row (a window that shows the title elsewhere, e.g. on a dock, hides it).
    void setTitleVisible(bool visible);
    bool isDirty() const { return m_dirty; }
    int rebuildCount() const { return m_rebuilds; } // data rebuilds so far (tests check the coalescing)
    static constexpr int kRedrawDelayMs = 40;

    // The tooltip text at a point of the plot (plot widget pixels); empty: no tooltip.
    virtual QString toolTipAt(const QPointF& pos) const;

protected:
    // Rebuilds the plot's data from the model (called by the timer and refreshNow; never replots).
    virtual void rebuild() = 0;
    // True when the last layout changed a size that rebuild() depends on (then it runs again).
    virtual bool layoutChanged() const;
    // A left click without a drag, in plot widget pixels.
    virtual void clicked(const QPointF& pos);
    // The pointer moved over the plot without a button held (plot widget pixels), or left it (nullopt);
    // called before toolTipAt, so a chart can highlight what the tooltip names.
    virtual void hovered(std::optional<QPointF> pos);

    void markDirty();
    // Fills a color map with keys x values cells whose centers span keyCenters and valueCenters. A single row
    // or column is drawn one unit wide (QCustomPlot needs two cells to know a cell's size).
    static void fillColorMap(QCPColorMap* map, int keys, int values, QCPRange keyCenters,
                             QCPRange valueCenters, const std::function<double(int key, int value)>& cell);
    // Makes axis label integers (ranks, cells) with one tick per value when the labels fit side by side (or
    // stacked), else every 2nd, 5th, 10th, ... The axis should have an integer-step QCPAxisTickerFixed
    // (integerTicker()); another ticker only gets a tick count.
    static void fitIntegerTicks(QCPAxis* axis, int count);
    static QSharedPointer<QCPAxisTickerFixed> integerTicker();
    QHBoxLayout* header() const { return m_header; }
    // A line of text centred in rect, for what the chart cannot draw there and why ("loss not recorded: an
    // msprobe Monitor tree records no loss"). Hidden until setNote gives it text; an empty text hides it.
    static QCPItemText* addNote(QCPAxisRect* rect);
    static void setNote(QCPItemText* note, const QString& text);
    // Moves the plot's legend into a row below the axis rects, filled row by row (fitLegendColumns).
    void placeLegendBelow();
    // As many legend entries per row as fit the chart's width side by side (call after entries change).
    void fitLegendColumns();
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    friend class RedrawQueue;
    void onTimeout();
    void redrawNow(); // the queue's turn for this chart: rebuild and paint, if still dirty and visible
    void onMouseMove(QMouseEvent* event);
    bool eventFilter(QObject* watched, QEvent* event) override; // the pointer leaving the plot

    RunModel* m_model;
    StepCursor* m_cursor;
    QString m_id, m_title;
    QCustomPlot* m_plot;
    QHBoxLayout* m_header;
    QLabel* m_titleLabel;
    QTimer m_timer;
    bool m_dirty = true;
    bool m_refreshing = false;
    int m_rebuilds = 0;
    QPointF m_pressPos;
    bool m_pressed = false;
};

} // namespace rs
