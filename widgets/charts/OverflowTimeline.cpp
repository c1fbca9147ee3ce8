// Overflow timeline (see OverflowTimeline.h).
#include "charts/OverflowTimeline.h"

#include "charts/ChartPalette.h"
#include "charts/DenseLineGraph.h"
#include "model/RunModel.h"
#include "store/RunSchema.h"
#include "view/Decimate.h"

#include <cmath>
#include <qcustomplot.h>

namespace rs {
namespace {

// Loss scales are powers of two: label them so ("2^16"), other ticks as plain numbers.
class Log2Ticker : public QCPAxisTickerLog {
public:
    Log2Ticker() { setLogBase(2); }

protected:
    // The scale axis is short (a strip under the raster): a label per tick would overlap, so keep at most
    // three, on exponents that are multiples of a fixed stride so they stay put while the range grows.
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
        QVector<double> all = QCPAxisTickerLog::createTickVector(tickStep, range);
        if (all.size() <= 3 || all[0] <= 0)
            return all;
        const long step = std::max(1L, std::lround(std::log2(all[1]) - std::log2(all[0])));
        const long stride = step * long(std::ceil(all.size() / 3.0));
        QVector<double> out;
        for (double t : all)
            if (t > 0 && std::lround(std::log2(t)) % stride == 0)
                out.push_back(t);
        return out.size() >= 2 ? out : all;
    }
    QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override {
        const double e = std::log2(tick);
        if (tick > 0 && std::abs(e - std::round(e)) < 1e-9)
            return QStringLiteral("2^%1").arg(int(std::round(e)));
        return QCPAxisTickerLog::getTickLabel(tick, locale, format, precision);
    }
};

} // namespace

OverflowCell overflowCell(const RunModel& model, int64_t row, int rank, bool lossRecorded) {
    // A source that records no loss (msprobe) stores NaN fill: that is not a non-finite loss.
    if (lossRecorded && !std::isfinite(model.value(StepColumn::Loss, row, rank)))
        return OverflowCell::NonFiniteLoss;
    if (model.value(StepColumn::Skipped, row, rank) != 0)
        return OverflowCell::Skipped;
    if (model.value(StepColumn::Overflow, row, rank) != 0)
        return OverflowCell::Overflow;
    return OverflowCell::Clean;
}

OverflowRaster overflowRaster(const RunModel& model, int64_t begin, int64_t end, int buckets) {
    OverflowRaster r;
    r.ranks = model.worldSize();
    const int64_t n = std::max<int64_t>(0, end - begin);
    if (n == 0 || r.ranks == 0)
        return r;
    r.columns = int(buckets > 0 ? std::min<int64_t>(n, buckets) : n);
    r.cells.assign(size_t(r.columns) * size_t(r.ranks), 0);
    const bool lossRecorded = model.meta().recorded(runschema::kStepColumns[runschema::kLoss].path);
    for (int c = 0; c < r.columns; ++c) {
        const int64_t b = begin + n * c / r.columns, e = begin + n * (c + 1) / r.columns;
        r.rowBegin.push_back(b);
        r.rowEnd.push_back(e);
        for (int64_t row = b; row < e; ++row)
            for (int rank = 0; rank < r.ranks; ++rank) {
                uint8_t& cell = r.cells[size_t(c) * size_t(r.ranks) + size_t(rank)];
                cell = std::max(cell, uint8_t(overflowCell(model, row, rank, lossRecorded)));
            }
    }
    return r;
}

QString overflowCellName(OverflowCell cell) {
    switch (cell) {
    case OverflowCell::Overflow:
        return QObject::tr("overflow");
    case OverflowCell::Skipped:
        return QObject::tr("skipped update");
    case OverflowCell::NonFiniteLoss:
        return QObject::tr("non-finite loss");
    default:
        return QObject::tr("clean");
    }
}

OverflowTimeline::OverflowTimeline(RunModel* model, StepCursor* cursor, QWidget* parent)
    : StepChart(model, cursor, QStringLiteral("overflow"), QStringLiteral("Overflow timeline"), parent) {
    setupRaster();
    setupScale();
    addStepRect(plot()->axisRect());
    addStepRect(m_scaleRect);
    setupLegend();
    connect(model, &RunModel::runReset, this, [this] {
        m_meanScale.clear();
        m_skippedScale.clear();
    });
}

void OverflowTimeline::setupRaster() {
    QCustomPlot* p = plot();
    p->xAxis->setTickLabels(false); // the loss scale panel below labels the shared step axis
    p->yAxis->setLabel(tr("rank"));
    p->yAxis->setRangeReversed(true); // rank 0 on top, as in a rank table
    p->yAxis->setTicker(integerTicker());
    p->yAxis->setSubTicks(false);
    p->yAxis->grid()->setVisible(false);
    p->xAxis->grid()->setVisible(false);
    m_map = new QCPColorMap(p->xAxis, p->yAxis);
    m_map->setGradient(palette::overflowGradient());
    m_map->setDataRange(QCPRange(0, 3));
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);
    m_map->removeFromLegend();
}

void OverflowTimeline::setupScale() {
    QCustomPlot* p = plot();
    m_scaleRect = new QCPAxisRect(p);
    p->plotLayout()->addElement(1, 0, m_scaleRect);
    auto* group = new QCPMarginGroup(p);
    p->axisRect()->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    m_scaleRect->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    p->plotLayout()->setRowSpacing(4);
    QCPAxis* x = m_scaleRect->axis(QCPAxis::atBottom);
    QCPAxis* y = m_scaleRect->axis(QCPAxis::atLeft);
    x->setLabel(tr("step"));
    y->setLabel(tr("loss scale"));
    y->setScaleType(QCPAxis::stLogarithmic);
    y->setTicker(QSharedPointer<Log2Ticker>::create());
    for (QCPAxis* a : {x, y})
        a->setLayer(QStringLiteral("axes"));
    for (QCPAxis* a : {x, y})
        a->grid()->setLayer(QStringLiteral("grid"));

    m_scale = addDenseLineGraph(x, y);
    m_scale->setName(tr("loss scale (mean over ranks)"));
    m_scale->setPen(QPen(palette::meanColor(), 1.5));
    m_skipped = p->addGraph(x, y);
    m_skipped->setName(tr("skipped step"));
    m_skipped->setLineStyle(QCPGraph::lsNone);
    m_skipped->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted,
                                               palette::overflowCategoryColor(2),
                                               palette::overflowCategoryColor(2), 7));
}

void OverflowTimeline::setupLegend() {
    // Empty graphs with a square marker give the raster's categories legend entries.
    for (int c = 0; c < 4; ++c) {
        QCPGraph* g =
            plot()->addGraph(m_scaleRect->axis(QCPAxis::atBottom), m_scaleRect->axis(QCPAxis::atLeft));
        g->setName(overflowCellName(OverflowCell(c)));
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, QColor(120, 120, 120),
                                           palette::overflowCategoryColor(c), 10));
    }
    placeLegendBelow();
    QCPLayoutGrid* layout = plot()->plotLayout();
    layout->setRowStretchFactors({1.2, 1.0, 0.001});
}

void OverflowTimeline::extendScale() {
    const int R = model()->worldSize();
    for (int64_t row = int64_t(m_meanScale.size()); row < model()->stepCount(); ++row) {
        double sum = 0;
        int n = 0;
        bool skipped = false;
        for (int r = 0; r < R; ++r) {
            const float s = model()->value(StepColumn::LossScale, row, r);
            if (std::isfinite(s) && s > 0) {
                sum += s;
                ++n;
            }
            skipped = skipped || model()->value(StepColumn::Skipped, row, r) != 0;
        }
        const float mean = n ? float(sum / n) : std::nanf("");
        m_meanScale.push_back(mean);
        m_skippedScale.push_back(skipped ? mean : std::nanf(""));
    }
}

void OverflowTimeline::rebuild() {
    extendScale();
    const View v = prepareView();
    const auto& steps = model()->stepNumbers();
    m_raster = overflowRaster(*model(), v.begin, v.end, v.buckets);
    const int R = m_raster.ranks;
    if (m_raster.columns > 0) {
        auto center = [&](int c) {
            return 0.5 * double(steps[size_t(m_raster.rowBegin[size_t(c)])] +
                                steps[size_t(m_raster.rowEnd[size_t(c)] - 1)]);
        };
        fillColorMap(m_map, m_raster.columns, R, QCPRange(center(0), center(m_raster.columns - 1)),
                     QCPRange(0, R - 1), [this](int c, int r) { return double(m_raster.at(c, r)); });
    } else {
        fillColorMap(m_map, 0, 0, QCPRange(), QCPRange(), {});
    }
    plot()->yAxis->setRange(-0.5, std::max(R, 1) - 0.5);
    fitIntegerTicks(plot()->yAxis, R);

    auto set = [](QCPGraph* g, const view::XY& xy) {
        g->setData(QVector<double>(xy.x.begin(), xy.x.end()), QVector<double>(xy.y.begin(), xy.y.end()),
                   true);
    };
    set(m_scale, view::minMaxDecimate(steps, m_meanScale, v.begin, v.end, v.buckets));
    set(m_skipped, view::minMaxDecimate(steps, m_skippedScale, v.begin, v.end, v.buckets));
    fitScaleAxis();
    fitLegendColumns();
}

void OverflowTimeline::fitScaleAxis() {
    bool found = false;
    const QCPRange r = m_scale->getValueRange(found, QCP::sdPositive);
    QCPAxis* y = m_scaleRect->axis(QCPAxis::atLeft);
    if (!found) {
        y->setRange(0.5, 2);
        return;
    }
    // Whole powers of two around the data, at least two apart so the log ticker labels them.
    y->setRange(std::exp2(std::floor(std::log2(r.lower)) - 1), std::exp2(std::ceil(std::log2(r.upper)) + 1));
}

QString OverflowTimeline::toolTipAt(const QPointF& pos) const {
    const QPoint p = pos.toPoint();
    if (plot()->axisRect()->rect().contains(p) && m_raster.columns > 0) {
        const double x = plot()->xAxis->pixelToCoord(pos.x());
        const int rank = int(std::lround(plot()->yAxis->pixelToCoord(pos.y())));
        const auto& steps = model()->stepNumbers();
        for (int c = 0; c < m_raster.columns; ++c) {
            const int64_t first = steps[size_t(m_raster.rowBegin[size_t(c)])];
            const int64_t last = steps[size_t(m_raster.rowEnd[size_t(c)] - 1)];
            if (x >= first - 0.5 && x <= last + 0.5 && rank >= 0 && rank < m_raster.ranks) {
                const QString where =
                    first == last ? tr("step %1").arg(first) : tr("steps %1–%2").arg(first).arg(last);
                return tr("%1, rank %2: %3")
                    .arg(where)
                    .arg(rank)
                    .arg(overflowCellName(OverflowCell(m_raster.at(c, rank))));
            }
        }
        return {};
    }
    if (!m_scaleRect->rect().contains(p) || model()->stepCount() == 0)
        return {};
    const int64_t step = nearestStep(m_scaleRect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x()));
    const int64_t row = model()->rowOf(step);
    QStringList skipped;
    for (int r = 0; r < model()->worldSize(); ++r)
        if (model()->value(StepColumn::Skipped, row, r) != 0)
            skipped << QString::number(r);
    const double scale = size_t(row) < m_meanScale.size() ? double(m_meanScale[size_t(row)]) : std::nan("");
    QString text = tr("step %1: loss scale %2").arg(step).arg(scale, 0, 'g', 6);
    if (!skipped.isEmpty())
        text += tr("\nupdate skipped on ranks %1").arg(skipped.join(QStringLiteral(", ")));
    return text;
}

} // namespace rs
