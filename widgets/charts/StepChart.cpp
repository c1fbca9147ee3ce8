// Step-axis charts: cursor line, click to select a step, linked horizontal pan/zoom (see StepChart.h).
#include "charts/StepChart.h"

#include "charts/ChartPalette.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "view/Decimate.h"

#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace rs {

StepChart::StepChart(RunModel* model, StepCursor* cursor, const QString& id, const QString& title,
                     QWidget* parent)
    : ChartBase(model, cursor, id, title, parent) {
    connect(cursor, &StepCursor::stepChanged, this, [this] {
        placeCursorLines();
        plot()->replot(QCustomPlot::rpQueuedReplot); // no data changes: no rebuild needed
    });
    connect(cursor, &StepCursor::rangeChanged, this, &StepChart::onCursorRange);
    connect(cursor, &StepCursor::followingChanged, this, &StepChart::onFollowingChanged);
}

QCPAxis* StepChart::stepAxis() const {
    return m_rects.empty() ? plot()->xAxis : m_rects.front()->axis(QCPAxis::atBottom);
}

void StepChart::addStepRect(QCPAxisRect* rect) {
    rect->setRangeDrag(Qt::Horizontal);
    rect->setRangeZoom(Qt::Horizontal);
    QCPAxis* x = rect->axis(QCPAxis::atBottom);
    x->setTicker(integerTicker()); // steps are whole numbers, also when a run has only one or two
    rect->setRangeDragAxes(x, nullptr);
    rect->setRangeZoomAxes(x, nullptr);
    connect(x, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &StepChart::onAxisRange);

    auto* line = new QCPItemLine(plot());
    line->setPen(QPen(palette::cursorColor(), 2));
    line->setSelectable(false);
    line->setClipAxisRect(rect);
    line->setVisible(false);
    m_rects.push_back(rect);
    m_cursorLines.push_back(line);
    plot()->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
}

void StepChart::placeVerticalLine(QCPItemLine* line, QCPAxisRect* rect, double step) {
    for (QCPItemPosition* p : {line->start, line->end}) {
        p->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
        p->setAxisRect(rect);
        p->setTypeX(QCPItemPosition::ptPlotCoords);
        p->setTypeY(QCPItemPosition::ptAxisRectRatio); // full height on linear and log axes alike
    }
    line->start->setCoords(step, 0);
    line->end->setCoords(step, 1);
}

void StepChart::placeCursorLines() {
    const bool show = model()->stepCount() > 0;
    for (size_t i = 0; i < m_rects.size(); ++i) {
        m_cursorLines[i]->setVisible(show);
        placeVerticalLine(m_cursorLines[i], m_rects[i], double(cursor()->step()));
    }
}

void StepChart::applyRange(double lower, double upper) {
    m_settingRange = true;
    for (QCPAxisRect* r : m_rects)
        r->axis(QCPAxis::atBottom)->setRange(lower, upper);
    m_settingRange = false;
}

void StepChart::onAxisRange(const QCPRange& range) {
    if (m_settingRange)
        return;
    // The user dragged or zoomed one of our axes: align our other axes, then tell every chart via the cursor.
    applyRange(range.lower, range.upper);
    cursor()->setRange(range.lower, range.upper);
    markDirty();
}

void StepChart::onFollowingChanged(bool following) {
    markDirty();
    // Following stopped by a click or a step key: keep the whole run in view rather than a range the cursor
    // may never have been given. A drag or zoom sets its own range right after this.
    if (!following && model()->stepCount() > 0) {
        const auto [lower, upper] = wholeRun();
        cursor()->setRange(lower, upper);
    }
}

std::pair<double, double> StepChart::wholeRun() const {
    double lower = double(model()->firstStep()), upper = double(model()->lastStep());
    if (upper - lower < 1) { // one step (or none): a small window around it
        lower -= 0.5;
        upper += 0.5;
    }
    return {lower, upper};
}

void StepChart::onCursorRange(double lower, double upper) {
    if (cursor()->following())
        return; // prepareView shows the whole run
    const QCPRange now = stepAxis()->range();
    if (now.lower == lower && now.upper == upper)
        return;
    applyRange(lower, upper); // move at once; the data for the new range follows with the coalesced rebuild
    plot()->replot(QCustomPlot::rpQueuedReplot);
    markDirty();
}

StepChart::View StepChart::prepareView() {
    View v;
    const auto& steps = model()->stepNumbers();
    if (cursor()->following()) {
        std::tie(v.lower, v.upper) = wholeRun();
    } else {
        v.lower = cursor()->rangeLower();
        v.upper = cursor()->rangeUpper();
    }
    applyRange(v.lower, v.upper);
    std::tie(v.begin, v.end) = view::visibleRange(steps, v.lower, v.upper);
    const int width = m_rects.empty() ? 0 : m_rects.front()->width();
    v.buckets = std::max(64, width > 0 ? width : plot()->width());
    m_buckets = v.buckets;
    placeCursorLines();
    return v;
}

bool StepChart::layoutChanged() const {
    if (m_rects.empty() || m_buckets == 0)
        return false;
    // A few pixels either way do not matter; a tolerance also keeps margins and data from ping-ponging.
    const int width = std::max(64, m_rects.front()->width());
    return std::abs(width - m_buckets) > 4;
}

int64_t StepChart::nearestStep(double x) const {
    const auto& steps = model()->stepNumbers();
    if (steps.empty())
        return -1;
    auto it = std::lower_bound(steps.begin(), steps.end(), int64_t(std::ceil(x)));
    if (it == steps.end())
        return steps.back();
    if (it != steps.begin() && std::abs(double(*(it - 1)) - x) <= std::abs(double(*it) - x))
        --it;
    return *it;
}

void StepChart::clicked(const QPointF& pos) {
    for (QCPAxisRect* r : m_rects) {
        if (!r->rect().contains(pos.toPoint()))
            continue;
        const int64_t step = nearestStep(r->axis(QCPAxis::atBottom)->pixelToCoord(pos.x()));
        if (step >= 0)
            cursor()->setStep(step);
        return;
    }
}

} // namespace rs
