// Heatmap base: fetches the cursor step's detail, keeps the last one while the next loads (see
// DetailChart.h).
#include "charts/DetailChart.h"

#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "model/StepDetail.h"
#include "store/RunSource.h"

#include <QFontMetrics>
#include <qcustomplot.h>

namespace rs {

DetailChart::DetailChart(RunModel* model, StepCursor* cursor, const QString& id, const QString& title,
                         QWidget* parent)
    : ChartBase(model, cursor, id, title, parent) {
    QCustomPlot* p = plot();
    p->plotLayout()->insertRow(0);
    m_caption = new QCPTextElement(p, QString(), QFont(font().family(), font().pointSize() + 1, QFont::Bold));
    p->plotLayout()->addElement(0, 0, m_caption);
    connect(cursor, &StepCursor::stepChanged, this, &DetailChart::markDirty);
    connect(model, &RunModel::detailReady, this, [this](int64_t step) {
        if (step == m_waiting)
            markDirty();
    });
    connect(model, &RunModel::runReset, this, [this] {
        m_detail.reset();
        m_shownStep = -1;
        m_waiting = -1;
    });
}

QString DetailChart::caption() const {
    return m_captionText + m_captionSuffix;
}

QString DetailChart::displayedCaption() const {
    return m_caption->text();
}

QFont DetailChart::captionFont() const {
    return m_caption->font();
}

void DetailChart::setCaption(const QString& text) {
    m_captionText = text;
    m_captionSuffix =
        m_waiting < 0 || m_waiting == m_shownStep ? QString() : tr(" — loading step %1…").arg(m_waiting);
    fitCaption();
}

// One line that fits the chart: the caption is shortened with an ellipsis, the note of the step being loaded
// stays readable. A centred text wider than the plot would be cut at both edges.
void DetailChart::fitCaption() {
    const QFontMetrics fm(m_caption->font());
    const int room = std::max(40, plot()->width() - 16 - fm.horizontalAdvance(m_captionSuffix));
    m_caption->setText(fm.elidedText(m_captionText, Qt::ElideRight, room) + m_captionSuffix);
}

void DetailChart::resizeEvent(QResizeEvent* event) {
    ChartBase::resizeEvent(event);
    fitCaption();
}

void DetailChart::rebuild() {
    const bool empty = model()->stepCount() == 0;
    showEmptyState(empty);
    if (empty) {
        m_detail.reset();
        m_shownStep = m_waiting = -1;
        clear();
        setCaption(tr("no steps yet"));
        return;
    }
    const int64_t step = model()->stepAt(std::max<int64_t>(0, model()->rowOf(cursor()->step())));
    if (auto d = model()->detail(step)) {
        m_detail = std::move(d);
        m_waiting = -1;
    } else {
        m_waiting = step;
    }
    if (!m_detail) {
        clear();
        m_captionSuffix.clear();
        m_captionText = tr("loading step %1…").arg(step);
        fitCaption();
        return;
    }
    m_shownStep = m_detail->step;
    draw(*m_detail);
}

// Before the first step: no axes (they would read 0 to 5, ranks that do not exist), no color scale, a note
// saying what fills the chart.
void DetailChart::showEmptyState(bool empty) {
    if (!m_emptyNote) {
        m_emptyNote = new QCPItemText(plot());
        m_emptyNote->position->setType(QCPItemPosition::ptAxisRectRatio);
        m_emptyNote->position->setCoords(0.5, 0.5);
        m_emptyNote->setColor(QColor(110, 110, 110));
        m_emptyNote->setSelectable(false);
    }
    // A complete file without steps (imported flight-recorder dumps hold collectives only) is not "no run".
    m_emptyNote->setText(model()->hasRun() && model()->isComplete()
                             ? tr("This run records no steps: its source holds none\n(%1)")
                                   .arg(QString::fromStdString(describeRun(model()->meta())))
                             : tr("No run yet: open a run file (Ctrl+O) or start one (F5)"));
    m_emptyNote->setVisible(empty);
    for (QCPAxis* a : {plot()->xAxis, plot()->yAxis})
        a->setVisible(!empty);
    if (m_scale)
        m_scale->setVisible(!empty);
}

void DetailChart::setupColorMap(QCPColorMap** map, QCPColorScale** scale) {
    QCustomPlot* p = plot();
    *map = new QCPColorMap(p->xAxis, p->yAxis);
    (*map)->setInterpolate(false);
    (*map)->setTightBoundary(false);
    (*map)->removeFromLegend();
    *scale = new QCPColorScale(p);
    m_scale = *scale;
    (*scale)->setType(QCPAxis::atRight);
    (*scale)->setBarWidth(14);
    // The map and its scale share one cell of a nested grid, so that the caption's row above is a single
    // column as wide as the chart (in a second column of the top grid the caption would be centred over the
    // map alone and cut at both edges when wider).
    QCPAxisRect* rect = p->axisRect();
    p->plotLayout()->take(rect);
    auto* body = new QCPLayoutGrid;
    p->plotLayout()->addElement(1, 0, body);
    body->addElement(0, 0, rect);
    body->addElement(0, 1, *scale);
    (*map)->setColorScale(*scale);
    auto* group = new QCPMarginGroup(p);
    p->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    (*scale)->setMarginGroup(QCP::msBottom | QCP::msTop, group);
    for (QCPAxis* a : {p->xAxis, p->yAxis}) {
        a->grid()->setVisible(false);
        a->setSubTicks(false);
    }
}

} // namespace rs

namespace rs {

void DetailChart::drawCellGrid(int cols, int rows, bool rowLines) {
    const std::tuple<int, int, bool> key{cols, rows, rowLines};
    if (key == m_gridKey)
        return;
    m_gridKey = key;
    for (QCPItemLine* l : m_grid)
        plot()->removeItem(l);
    m_grid.clear();
    auto line = [this](double x1, double y1, double x2, double y2) {
        auto* l = new QCPItemLine(plot());
        l->setPen(QPen(QColor(190, 190, 190), 1));
        l->setSelectable(false);
        l->start->setCoords(x1, y1);
        l->end->setCoords(x2, y2);
        m_grid.push_back(l);
    };
    if (cols <= 0 || rows <= 0)
        return;
    for (int c = 0; c <= cols; ++c)
        line(c - 0.5, -0.5, c - 0.5, rows - 0.5);
    if (rowLines)
        for (int r = 0; r <= rows; ++r)
            line(-0.5, r - 0.5, cols - 0.5, r - 0.5);
}

} // namespace rs
