// The run against its reference: losses and deviations above, the divergence map below (see
// ReferenceChart.h).
#include "charts/ReferenceChart.h"

#include "charts/ChartPalette.h"
#include "charts/DenseLineGraph.h"
#include "compare/RunComparison.h"
#include "model/RunModel.h"
#include "view/Decimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <qcustomplot.h>

namespace rs {
namespace {

constexpr double kMapLow = -3, kMapHigh = 6.5; // log10 of the excess; the top: bits differ

QString excessText(float excess) {
    if (std::isnan(excess))
        return QObject::tr("not judged: the runs had applied other updates");
    if (std::isinf(excess))
        return QObject::tr("bits differ where equality was expected");
    if (excess <= 0)
        return QObject::tr("equal");
    if (excess <= 1)
        return QObject::tr("within tolerance (%1 of it)").arg(double(excess), 0, 'g', 2);
    return QObject::tr("%1x past its tolerance").arg(double(excess), 0, 'g', 3);
}

} // namespace

ReferenceChart::ReferenceChart(RunModel* model, StepCursor* cursor, QWidget* parent)
    : StepChart(model, cursor, QStringLiteral("reference"), QStringLiteral("Against the reference"), parent) {
    setupLoss();
    setupMap();
    addStepRect(plot()->axisRect());
    addStepRect(m_mapRect);
    placeLegendBelow();
    plot()->plotLayout()->setRowStretchFactors({1.0, 1.2, 0.001});
    connect(model, &RunModel::runReset, this, [this] { setComparison(nullptr, {}); });
}

double ReferenceChart::mapValue(float excess) {
    if (std::isnan(excess)) // not judged: the gradient's NaN colour
        return std::numeric_limits<double>::quiet_NaN();
    if (std::isinf(excess))
        return kMapHigh;
    return std::clamp(std::log10(std::max(double(excess), 1e-3)), kMapLow, kMapHigh - 0.5);
}

void ReferenceChart::setupLoss() {
    QCustomPlot* p = plot();
    p->xAxis->setTickLabels(false); // the map below labels the shared step axis
    p->yAxis->setLabel(tr("loss"));
    p->yAxis2->setVisible(true);
    p->yAxis2->setLabel(tr("Δ loss per rank"));
    m_lossA = addDenseLineGraph(p->xAxis, p->yAxis);
    m_lossA->setName(tr("this run (mean over ranks)"));
    m_lossA->setPen(QPen(palette::meanColor(), 2));
    m_lossB = addDenseLineGraph(p->xAxis, p->yAxis);
    m_lossB->setName(tr("reference (mean over ranks)"));
    m_lossB->setPen(QPen(QColor(120, 120, 120), 2, Qt::DashLine));
    m_note = addNote(p->axisRect());
    m_markerTop = new QCPItemLine(p);
    m_markerTop->setPen(QPen(palette::mismatchMarkerColor(), 1.5, Qt::DashLine));
    m_markerTop->setClipAxisRect(p->axisRect());
    m_markerTop->setVisible(false);
    m_markerText = new QCPItemText(p);
    m_markerText->setClipAxisRect(p->axisRect());
    m_markerText->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_markerText->setColor(palette::mismatchMarkerColor());
    m_markerText->setVisible(false);
}

void ReferenceChart::setupMap() {
    QCustomPlot* p = plot();
    m_mapRect = new QCPAxisRect(p);
    p->plotLayout()->addElement(1, 0, m_mapRect);
    auto* group = new QCPMarginGroup(p);
    p->axisRect()->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    m_mapRect->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    m_mapRect->axis(QCPAxis::atRight)->setVisible(true); // the same width as the loss rect's right axis
    m_mapRect->axis(QCPAxis::atRight)->setTickLabels(false);
    p->plotLayout()->setRowSpacing(4);
    QCPAxis* x = m_mapRect->axis(QCPAxis::atBottom);
    QCPAxis* y = m_mapRect->axis(QCPAxis::atLeft);
    x->setLabel(tr("step"));
    y->setLabel(tr("parameter"));
    y->setRangeReversed(true); // the first parameter on top, as the model lists them
    y->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    y->setSubTicks(false);
    for (QCPAxis* a : {x, y}) {
        a->setLayer(QStringLiteral("axes"));
        a->grid()->setVisible(false);
    }
    m_map = new QCPColorMap(x, y);
    m_map->setGradient(palette::divergenceGradient());
    m_map->setDataRange(QCPRange(kMapLow, kMapHigh));
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);
    m_map->removeFromLegend();
    m_markerMap = new QCPItemLine(p);
    m_markerMap->setPen(QPen(palette::mismatchMarkerColor(), 1.5, Qt::DashLine));
    m_markerMap->setClipAxisRect(m_mapRect);
    m_markerMap->setVisible(false);
}

void ReferenceChart::setComparison(std::shared_ptr<const RunComparison> comparison,
                                   const QString& referenceName) {
    m_comparison = std::move(comparison);
    m_referenceName = referenceName;
    m_lossB->setName(referenceName.isEmpty() ? tr("reference (mean over ranks)")
                                             : tr("reference %1 (mean over ranks)").arg(referenceName));
    // One line per rank where the ranks align one to one (few enough to tell apart), else one line: the
    // largest rank's deviation, or the means' against a reference of another card count.
    const bool perRank = m_comparison && m_comparison->lossDeviationPerRank;
    const int R = m_comparison ? model()->worldSize() : 0;
    const int lines = !m_comparison ? 0 : perRank && R <= kLinesUpTo ? R : 1;
    while (int(m_deviation.size()) > lines) {
        plot()->removeGraph(m_deviation.back());
        m_deviation.pop_back();
    }
    while (int(m_deviation.size()) < lines)
        m_deviation.push_back(addDenseLineGraph(plot()->xAxis, plot()->yAxis2));
    const bool eachRank = perRank && R <= kLinesUpTo;
    for (int i = 0; i < lines; ++i) {
        m_deviation[size_t(i)]->setPen(QPen(eachRank ? palette::rankColor(i) : palette::markerColor(), 1));
        m_deviation[size_t(i)]->setName(eachRank ? tr("rank %1 − reference's rank %1").arg(i)
                                        : perRank ? tr("largest |rank − reference's rank| of %1 ranks").arg(R)
                                                  : tr("this run − reference (means over ranks)"));
    }
    // Short: the chart may be a hundred pixels tall; the legend says what each line is against.
    plot()->yAxis2->setLabel(perRank || !m_comparison ? tr("Δ loss per rank") : tr("Δ loss (mean)"));
    markDirty();
}

int ReferenceChart::deviationGraphCount() const {
    return int(m_deviation.size());
}

QString ReferenceChart::note() const {
    if (!model()->hasRun())
        return {};
    if (!m_comparison)
        return tr(
            "No reference run: File > Compare With Reference… compares this run with another one,\nstep "
            "by step, parameter by parameter and rank by rank");
    return {};
}

bool ReferenceChart::firstDivergenceShown() const {
    return m_markerTop->visible();
}

std::pair<int64_t, int64_t> ReferenceChart::rowsInView(double lower, double upper) const {
    if (!m_comparison)
        return {0, 0};
    return view::visibleRange(m_comparison->mapSteps, lower, upper);
}

void ReferenceChart::rebuild() {
    const View v = prepareView();
    setNote(m_note, note());
    const auto [begin, end] = rowsInView(v.lower, v.upper);
    rebuildLoss(begin, end, v.buckets);
    rebuildMap(begin, end, v.buckets);
    placeMarker();
    fitLegendColumns();
}

void ReferenceChart::rebuildLoss(int64_t begin, int64_t end, int buckets) {
    auto set = [](QCPGraph* g, const view::XY& xy) {
        g->setData(QVector<double>(xy.x.begin(), xy.x.end()), QVector<double>(xy.y.begin(), xy.y.end()),
                   true);
    };
    if (!m_comparison) {
        for (QCPGraph* g : {m_lossA, m_lossB})
            g->data()->clear();
        return;
    }
    const RunComparison& c = *m_comparison;
    set(m_lossA, view::minMaxDecimate(c.mapSteps, c.lossA, begin, end, buckets));
    set(m_lossB, view::minMaxDecimate(c.mapSteps, c.lossB, begin, end, buckets));
    const int R = model()->worldSize();
    if (!c.lossDeviationPerRank) {
        if (!m_deviation.empty())
            set(m_deviation.front(), view::minMaxDecimate(c.mapSteps, c.lossDeviation, begin, end, buckets));
    } else if (R <= kLinesUpTo) {
        for (int r = 0; r < int(m_deviation.size()); ++r)
            set(m_deviation[size_t(r)],
                view::minMaxDecimate(c.mapSteps, c.lossDeviation, begin, end, buckets, R, r));
    } else if (!m_deviation.empty()) {
        // NaN (a loss not recorded) stays NaN unless some rank's deviation is known: never a zero.
        std::vector<float> largest(c.mapSteps.size(), std::numeric_limits<float>::quiet_NaN());
        for (size_t row = size_t(begin); row < size_t(end); ++row)
            for (int r = 0; r < R; ++r) {
                const float d = std::abs(c.lossDeviation[row * size_t(R) + size_t(r)]);
                if (!std::isnan(d) && !(d <= largest[row]))
                    largest[row] = d;
            }
        set(m_deviation.front(), view::minMaxDecimate(c.mapSteps, largest, begin, end, buckets));
    }
    plot()->yAxis->rescale(true);
    plot()->yAxis2->rescale(true);
}

void ReferenceChart::rebuildMap(int64_t begin, int64_t end, int buckets) {
    m_columnBegin.clear();
    m_columnEnd.clear();
    const RunComparison* c = m_comparison.get();
    const int P = c ? int(c->perParameter.size()) : 0;
    if (!c || end <= begin || P == 0) {
        // Nothing of a comparison that is gone (Close Run, another run): no parameter names, no ranges.
        fillColorMap(m_map, 0, 0, QCPRange(), QCPRange(), {});
        m_mapRect->axis(QCPAxis::atLeft)->ticker().dynamicCast<QCPAxisTickerText>()->clear();
        m_mapRect->axis(QCPAxis::atLeft)->setRange(0, 1);
        if (!c) {
            plot()->yAxis->setRange(0, 1);
            plot()->yAxis2->setRange(0, 1);
        }
        return;
    }
    // Columns of comparison rows: one per row, or buckets of rows (the worst excess of each) on a long run.
    const int64_t rows = end - begin;
    const int64_t columns = buckets > 0 ? std::min<int64_t>(rows, buckets) : rows;
    for (int64_t k = 0; k < columns; ++k) {
        m_columnBegin.push_back(begin + rows * k / columns);
        m_columnEnd.push_back(begin + rows * (k + 1) / columns);
    }
    // A column is "not judged" (NaN) only when all of its rows are.
    std::vector<float> cells(size_t(columns) * size_t(P), std::numeric_limits<float>::quiet_NaN());
    for (int64_t k = 0; k < columns; ++k)
        for (int64_t row = m_columnBegin[size_t(k)]; row < m_columnEnd[size_t(k)]; ++row)
            for (int p = 0; p < P; ++p) {
                float& cell = cells[size_t(k) * size_t(P) + size_t(p)];
                const float e = c->mapExcess[size_t(row) * size_t(P) + size_t(p)];
                if (!std::isnan(e) && (std::isnan(cell) || std::isinf(e) || e > cell))
                    cell = e;
            }
    auto center = [&](int64_t k) {
        return 0.5 * double(c->mapSteps[size_t(m_columnBegin[size_t(k)])] +
                            c->mapSteps[size_t(m_columnEnd[size_t(k)] - 1)]);
    };
    fillColorMap(m_map, int(columns), P, QCPRange(center(0), center(columns - 1)), QCPRange(0, P - 1),
                 [&](int k, int p) { return mapValue(cells[size_t(k) * size_t(P) + size_t(p)]); });
    QCPAxis* y = m_mapRect->axis(QCPAxis::atLeft);
    y->setRange(-0.5, P - 0.5);
    // The parameters' names, every k-th on a deep model so that the labels fit the height.
    auto ticker = y->ticker().dynamicCast<QCPAxisTickerText>();
    ticker->clear();
    const int line = QFontMetrics(y->tickLabelFont()).height() + 2;
    const int fit =
        std::max(1, (m_mapRect->height() > 0 ? m_mapRect->height() : plot()->height() / 2) / line);
    const int every = std::max(1, (P + fit - 1) / fit);
    for (int p = 0; p < P; p += every)
        ticker->addTick(p, QString::fromStdString(c->perParameter[size_t(p)].name));
}

void ReferenceChart::placeMarker() {
    const bool show = m_comparison && m_comparison->first;
    for (QCPAbstractItem* item :
         std::initializer_list<QCPAbstractItem*>{m_markerTop, m_markerMap, m_markerText})
        item->setVisible(show);
    if (!show)
        return;
    const Divergence& d = *m_comparison->first;
    placeVerticalLine(m_markerTop, plot()->axisRect(), double(d.step));
    placeVerticalLine(m_markerMap, m_mapRect, double(d.step));
    m_markerText->position->setAxes(plot()->xAxis, plot()->yAxis);
    m_markerText->position->setTypeX(QCPItemPosition::ptPlotCoords);
    m_markerText->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_markerText->position->setAxisRect(plot()->axisRect());
    m_markerText->position->setCoords(double(d.step), 0.02);
    m_markerText->setText(tr(" first divergence: step %1%2")
                              .arg(d.step)
                              .arg(d.parameter.empty()
                                       ? QString()
                                       : QStringLiteral(", ") + QString::fromStdString(d.parameter)));
}

QString ReferenceChart::toolTipAt(const QPointF& pos) const {
    if (!m_comparison)
        return note();
    const RunComparison& c = *m_comparison;
    const QPoint p = pos.toPoint();
    if (m_mapRect->rect().contains(p) && !m_columnBegin.empty()) {
        const double x = m_mapRect->axis(QCPAxis::atBottom)->pixelToCoord(pos.x());
        const int param = int(std::lround(m_mapRect->axis(QCPAxis::atLeft)->pixelToCoord(pos.y())));
        if (param < 0 || param >= int(c.perParameter.size()))
            return {};
        for (size_t k = 0; k < m_columnBegin.size(); ++k) {
            const int64_t first = c.mapSteps[size_t(m_columnBegin[k])];
            const int64_t last = c.mapSteps[size_t(m_columnEnd[k] - 1)];
            if (x < first - 0.5 || x > last + 0.5)
                continue;
            float worst = std::numeric_limits<float>::quiet_NaN();
            for (int64_t row = m_columnBegin[k]; row < m_columnEnd[k]; ++row) {
                const float e = c.mapExcess[size_t(row) * c.perParameter.size() + size_t(param)];
                if (!std::isnan(e) && (std::isnan(worst) || std::isinf(e) || e > worst))
                    worst = e;
            }
            const QString where =
                first == last ? tr("step %1").arg(first) : tr("steps %1–%2").arg(first).arg(last);
            return tr("%1, %2: %3")
                .arg(where, QString::fromStdString(c.perParameter[size_t(param)].name), excessText(worst));
        }
        return {};
    }
    if (!plot()->axisRect()->rect().contains(p) || c.mapSteps.empty())
        return {};
    const double x = plot()->xAxis->pixelToCoord(pos.x());
    const auto it = std::lower_bound(c.mapSteps.begin(), c.mapSteps.end(), int64_t(std::llround(x)));
    if (it == c.mapSteps.end())
        return {};
    const size_t row = size_t(it - c.mapSteps.begin());
    return tr("step %1: loss %2 (mean over ranks), reference %3")
        .arg(*it)
        .arg(double(c.lossA[row]), 0, 'g', 6)
        .arg(double(c.lossB[row]), 0, 'g', 6);
}

} // namespace rs
