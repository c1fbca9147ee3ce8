// Shared chart frame: header, plot, coalesced redraws, tooltips, clicks (see ChartBase.h).
#include "charts/ChartBase.h"

#include "model/RunModel.h"
#include "model/StepCursor.h"

#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <qcustomplot.h>
#include <vector>

namespace rs {

// Dirty charts in the order their timers fired, redrawn one per event-loop pass: a zero-interval timer
// fires once per pass, and the event loop handles input, paint and other timers in between.
class RedrawQueue : public QObject {
public:
    static RedrawQueue& instance() {
        static RedrawQueue* queue = new RedrawQueue(); // GUI thread only; lives as long as the application
        return *queue;
    }
    void push(ChartBase* chart) {
        for (const auto& c : m_charts)
            if (c == chart)
                return;
        m_charts.emplace_back(chart);
        if (!m_timer.isActive())
            m_timer.start();
    }

private:
    RedrawQueue() {
        m_timer.setSingleShot(true);
        m_timer.setInterval(0);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            while (!m_charts.empty()) {
                QPointer<ChartBase> chart = m_charts.front();
                m_charts.erase(m_charts.begin());
                if (chart) {
                    chart->redrawNow();
                    break;
                }
            }
            if (!m_charts.empty())
                m_timer.start();
        });
    }
    std::vector<QPointer<ChartBase>> m_charts;
    QTimer m_timer;
};

ChartBase::ChartBase(RunModel* model, StepCursor* cursor, const QString& id, const QString& title,
                     QWidget* parent)
    : ChartWidget(parent)
    , m_model(model)
    , m_cursor(cursor)
    , m_id(id)
    , m_title(title)
    , m_plot(new QCustomPlot(this))
    , m_header(new QHBoxLayout)
    , m_titleLabel(new QLabel(title, this)) {
    setObjectName(id);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->setSpacing(2);
    QFont bold = m_titleLabel->font();
    bold.setBold(true);
    m_titleLabel->setFont(bold);
    m_header->addWidget(m_titleLabel);
    m_header->addStretch(1);
    layout->addLayout(m_header);
    layout->addWidget(m_plot, 1);

    m_plot->setNoAntialiasingOnDrag(true);
    // Fast polylines: a noisy 100k-step loss decimates to a full-height zigzag, whose joins a thick pen makes
    // seconds slow to stroke; plain segments draw it in milliseconds.
    m_plot->setPlottingHints(QCP::phCacheLabels | QCP::phImmediateRefresh | QCP::phFastPolylines);
    m_plot->setMouseTracking(true);
    m_plot->setMinimumSize(200, 150);

    m_timer.setSingleShot(true);
    m_timer.setInterval(kRedrawDelayMs);
    connect(&m_timer, &QTimer::timeout, this, &ChartBase::onTimeout);

    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        m_pressed = e->button() == Qt::LeftButton;
        m_pressPos = e->position();
    });
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
        // A press and release within 3 px is a click; anything more was a drag (pan).
        if (m_pressed && e->button() == Qt::LeftButton && (e->position() - m_pressPos).manhattanLength() <= 3)
            clicked(e->position());
        m_pressed = false;
    });
    connect(m_plot, &QCustomPlot::mouseMove, this, &ChartBase::onMouseMove);
    m_plot->installEventFilter(this);
    // Axis margins follow the tick labels, so the data area's size is only known after a layout pass.
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        if (!m_refreshing && layoutChanged())
            markDirty();
    });

    // Everything a model says can change what a chart shows; the chart sorts it out in rebuild().
    connect(model, &RunModel::runReset, this, &ChartBase::markDirty);
    connect(model, &RunModel::stepsAppended, this, &ChartBase::markDirty);
    connect(model, &RunModel::eventsAppended, this, &ChartBase::markDirty);
    connect(model, &RunModel::evalsChanged, this, &ChartBase::markDirty);
    connect(model, &RunModel::weightsChanged, this, &ChartBase::markDirty);
}

void ChartBase::setTitleVisible(bool visible) {
    m_titleLabel->setVisible(visible);
}

void ChartBase::markDirty() {
    m_dirty = true;
    if (!m_timer.isActive())
        m_timer.start();
}

void ChartBase::onTimeout() {
    if (!isVisible())
        return; // stays dirty; showEvent redraws
    RedrawQueue::instance().push(this);
}

void ChartBase::redrawNow() {
    if (!m_dirty || !isVisible())
        return; // refreshNow() came first, or the chart was hidden meanwhile (showEvent redraws)
    m_dirty = false;
    ++m_rebuilds;
    rebuild();
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

void ChartBase::refreshNow() {
    m_refreshing = true;
    // A first layout pass gives rebuild() the axis rect sizes it works with; new data can move the margins.
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
    for (int pass = 0; pass < 2; ++pass) {
        ++m_rebuilds;
        rebuild();
        m_plot->replot(QCustomPlot::rpImmediateRefresh);
        if (!layoutChanged())
            break;
    }
    m_timer.stop();
    m_dirty = false;
    m_refreshing = false;
}

void ChartBase::showEvent(QShowEvent* event) {
    ChartWidget::showEvent(event);
    if (m_dirty)
        markDirty();
}

void ChartBase::resizeEvent(QResizeEvent* event) {
    ChartWidget::resizeEvent(event);
    markDirty(); // decimation and tick thinning depend on the pixel size
}

void ChartBase::fillColorMap(QCPColorMap* map, int keys, int values, QCPRange keyCenters,
                             QCPRange valueCenters, const std::function<double(int, int)>& cell) {
    QCPColorMapData* d = map->data();
    if (keys <= 0 || values <= 0) {
        d->clear();
        return;
    }
    // One cell along an axis: two half-unit cells around its center, holding the same value.
    const int kd = keys == 1 ? 2 : 1, vd = values == 1 ? 2 : 1;
    if (keys == 1)
        keyCenters = QCPRange(keyCenters.lower - 0.25, keyCenters.lower + 0.25);
    if (values == 1)
        valueCenters = QCPRange(valueCenters.lower - 0.25, valueCenters.lower + 0.25);
    d->setSize(keys * kd, values * vd);
    d->setRange(keyCenters, valueCenters);
    for (int k = 0; k < keys * kd; ++k)
        for (int v = 0; v < values * vd; ++v)
            d->setCell(k, v, cell(k / kd, v / vd));
}

QSharedPointer<QCPAxisTickerFixed> ChartBase::integerTicker() {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    return ticker;
}

void ChartBase::fitIntegerTicks(QCPAxis* axis, int count) {
    const QRect r = axis->axisRect()->rect();
    const bool horizontal = axis->orientation() == Qt::Horizontal;
    const int pixels = horizontal ? r.width() : r.height();
    // Room for a label: the widest one side by side (two-digit ranks need more than one-digit ones), or
    // a line's height stacked, plus a gap.
    const QFontMetrics metrics(axis->tickLabelFont());
    const int room = horizontal ? metrics.horizontalAdvance(QString::number(std::max(0, count - 1))) + 10
                                : metrics.height() + 4;
    auto fixed = axis->ticker().dynamicCast<QCPAxisTickerFixed>();
    if (!fixed) {
        axis->ticker()->setTickCount(std::clamp(pixels > 0 ? pixels / room : count, 2, std::max(2, count)));
        return;
    }
    // A step of 1, 2, 5, 10, 20, 50, ... values: the smallest whose labels do not touch.
    const double perValue = pixels > 0 ? double(pixels) / std::max(1, count) : double(room);
    int step = 1;
    for (int base = 1; base < (1 << 24); base *= 10) {
        const auto fits = [&](int m) { return perValue * base * m >= room; };
        if (fits(1) || fits(2) || fits(5)) {
            step = fits(1) ? base : fits(2) ? 2 * base : 5 * base;
            break;
        }
    }
    fixed->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    fixed->setTickStep(step);
}

bool ChartBase::layoutChanged() const {
    return false;
}

QString ChartBase::toolTipAt(const QPointF&) const {
    return {};
}

void ChartBase::clicked(const QPointF&) {}

void ChartBase::hovered(std::optional<QPointF>) {}

bool ChartBase::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::Leave)
        hovered(std::nullopt);
    return ChartWidget::eventFilter(watched, event);
}

void ChartBase::onMouseMove(QMouseEvent* event) {
    if (event->buttons() != Qt::NoButton)
        return;
    hovered(event->position());
    const QString text = toolTipAt(event->position());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(m_plot->mapToGlobal(event->position().toPoint()), text, m_plot);
}

QCPItemText* ChartBase::addNote(QCPAxisRect* rect) {
    auto* note = new QCPItemText(rect->parentPlot());
    note->setClipAxisRect(rect);
    note->setClipToAxisRect(true);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setAxisRect(rect);
    note->position->setCoords(0.5, 0.5);
    note->setPositionAlignment(Qt::AlignCenter);
    note->setTextAlignment(Qt::AlignCenter);
    note->setColor(QColor(90, 90, 90));
    note->setBrush(QBrush(QColor(255, 255, 255, 220)));
    note->setPadding(QMargins(8, 4, 8, 4));
    note->setVisible(false);
    return note;
}

void ChartBase::setNote(QCPItemText* note, const QString& text) {
    note->setText(text);
    note->setVisible(!text.isEmpty());
}

void ChartBase::placeLegendBelow() {
    QCPLegend* legend = m_plot->legend;
    legend->setVisible(true);
    // The legend lives in the axis rect's inset layout by default; a row of its own keeps it off the data.
    if (QCPLayoutInset* inset = m_plot->axisRect()->insetLayout(); inset->elements(false).contains(legend))
        inset->take(legend);
    m_plot->plotLayout()->addElement(m_plot->plotLayout()->rowCount(), 0, legend);
    m_plot->plotLayout()->simplify();
    m_plot->plotLayout()->setRowStretchFactor(m_plot->plotLayout()->rowCount() - 1, 0.001);
    legend->setBorderPen(Qt::NoPen);
    legend->setMargins(QMargins(6, 2, 6, 2));
    legend->setIconSize(24, 10);
    QFont f = legend->font();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    legend->setFont(f);
    fitLegendColumns();
}

void ChartBase::fitLegendColumns() {
    QCPLegend* legend = m_plot->legend;
    std::vector<int> widths; // of the entries in fill order (a wrapped grid also has empty cells)
    int entryHeight = 0;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (const QCPAbstractLegendItem* item = legend->item(i)) {
            widths.push_back(item->minimumOuterSizeHint().width());
            entryHeight = std::max(entryHeight, item->minimumOuterSizeHint().height());
        }
    const int n = int(widths.size());
    const int room = m_plot->viewport().width() - legend->margins().left() - legend->margins().right();
    // The most columns (filled row by row) whose widest entries, side by side, fit the chart's width.
    int columns = std::max(1, n);
    for (; columns > 1; --columns) {
        int total = legend->columnSpacing() * (columns - 1);
        for (int c = 0; c < columns; ++c) {
            int widest = 0;
            for (int i = c; i < n; i += columns)
                widest = std::max(widest, widths[size_t(i)]);
            total += widest;
        }
        if (total <= room)
            break;
    }
    // A legend that would take more than a quarter of a small chart's height leaves too little plot and gets
    // squeezed into overlapping lines: it is hidden, its row collapsed, until the chart is tall enough (the
    // tooltips still name every line; exports are drawn at a size where it fits).
    const int rows = n > 0 ? (n + columns - 1) / columns : 0;
    const int needed = rows * entryHeight + std::max(0, rows - 1) * legend->rowSpacing() +
                       legend->margins().top() + legend->margins().bottom();
    // An empty legend (a run that has none of the chart's lines) leaves the layout: an empty grid's maximum
    // size is its margins, and the layout would squeeze the axis rects above it to that width.
    QCPLayoutGrid* layout = m_plot->plotLayout();
    const bool inLayout =
        layout->hasElement(layout->rowCount() - 1, 0) && layout->element(layout->rowCount() - 1, 0) == legend;
    if (n == 0 && inLayout) {
        layout->take(legend);
        layout->simplify();
    } else if (n > 0 && !inLayout) {
        layout->addElement(layout->rowCount(), 0, legend);
        layout->setRowStretchFactor(layout->rowCount() - 1, 0.001);
    }
    const bool fits = needed * 4 <= m_plot->height();
    if (fits != legend->visible()) {
        legend->setVisible(fits);
        // A minimum of 1 overrides the entries' own size hint, so the hidden legend's row really collapses.
        legend->setMinimumSize(fits ? QSize(0, 0) : QSize(1, 1));
        legend->setMaximumSize(fits ? QSize(QWIDGETSIZE_MAX, QWIDGETSIZE_MAX) : QSize(QWIDGETSIZE_MAX, 1));
    }
    if (legend->wrap() == columns && legend->fillOrder() == QCPLayoutGrid::foColumnsFirst)
        return;
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, false);
    legend->setWrap(columns);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
}

} // namespace rs
