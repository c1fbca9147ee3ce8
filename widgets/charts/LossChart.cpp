// Loss and accuracy chart (see LossChart.h).
#include "charts/LossChart.h"

#include "charts/ChartPalette.h"
#include "charts/DenseLineGraph.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "store/RankMean.h"
#include "view/Decimate.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <cmath>
#include <qcustomplot.h>

namespace rs {
namespace {

// Events drawn as markers: abnormal loss fluctuation (dashed) and ranks that stopped agreeing (solid), the
// two things a user looks for on the loss curve.
bool isMismatch(const Event& e) {
    return e.code == eventcode::kGradientSync || e.code == eventcode::kWeightSync ||
           e.code == eventcode::kSkipMismatch || e.code == eventcode::kNonfiniteLoss;
}
bool isMarked(const Event& e) {
    return e.code == eventcode::kLossFluctuation || isMismatch(e);
}
QPen markerPen(const Event& e) {
    return isMismatch(e) ? QPen(palette::mismatchMarkerColor(), 1.6, Qt::SolidLine)
                         : QPen(palette::markerColor(), 1.2, Qt::DashLine);
}

void setXY(QCPGraph* g, const view::XY& xy) {
    g->setData(QVector<double>(xy.x.begin(), xy.x.end()), QVector<double>(xy.y.begin(), xy.y.end()), true);
}

} // namespace

LossChart::LossChart(RunModel* model, StepCursor* cursor, QWidget* parent)
    : StepChart(model, cursor, QStringLiteral("loss"), QStringLiteral("Loss and accuracy"), parent)
    , m_logBox(new QCheckBox(tr("log scale"), this)) {
    m_logBox->setObjectName(QStringLiteral("logScale"));
    m_logBox->setToolTip(tr("Logarithmic loss axis"));
    header()->addWidget(m_logBox);
    connect(m_logBox, &QCheckBox::toggled, this, &LossChart::setLogScale);

    QCustomPlot* p = plot();
    p->xAxis->setLabel(tr("step"));
    p->yAxis->setLabel(tr("loss"));
    p->yAxis2->setVisible(true);
    p->yAxis2->setLabel(tr("accuracy (%)"));
    p->yAxis2->setRange(0, 100);

    m_accuracy = addDenseLineGraph(p->xAxis, p->yAxis2);
    m_accuracy->setName(tr("batch accuracy (mean)"));
    // Solid and thin: a dotted pen costs twice the drawing time on dense runs and reads no better.
    m_accuracy->setPen(QPen(palette::accuracyColor(), 1.5));
    m_eval = p->addGraph(p->xAxis, p->yAxis2);
    m_eval->setName(tr("eval accuracy (mean)"));
    m_eval->setLineStyle(QCPGraph::lsNone);
    m_eval->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssDiamond, palette::accuracyColor(), Qt::white, 8));
    m_mean = addDenseLineGraph(p->xAxis, p->yAxis);
    m_mean->setName(tr("mean loss"));
    m_mean->setPen(QPen(palette::meanColor(), 3));
    m_markerLegend = p->addGraph();
    m_markerLegend->setName(tr("loss fluctuation"));
    m_markerLegend->setPen(QPen(palette::markerColor(), 1.2, Qt::DashLine));
    m_mismatchLegend = p->addGraph();
    m_mismatchLegend->setName(tr("rank mismatch"));
    m_mismatchLegend->setPen(markerPen(Event{0, -1, Severity::Error, eventcode::kGradientSync, {}}));
    // Rank lines (created per run on "main") stay under the summary lines.
    p->addLayer(QStringLiteral("summary"), p->layer(QStringLiteral("main")), QCustomPlot::limAbove);
    for (QCPGraph* g : {m_accuracy, m_eval, m_mean})
        g->setLayer(QStringLiteral("summary"));

    addStepRect(p->axisRect());
    placeLegendBelow(4);
    connect(model, &RunModel::runReset, this, [this] {
        m_meanLoss.clear();
        m_meanAccuracy.clear();
    });
}

void LossChart::setLogScale(bool on) {
    if (on == m_log)
        return;
    m_log = on;
    const QSignalBlocker block(m_logBox);
    m_logBox->setChecked(on);
    QCPAxis* y = plot()->yAxis;
    y->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on)
        y->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    else
        y->setTicker(QSharedPointer<QCPAxisTicker>::create());
    fitLossAxis();
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void LossChart::ensureRankGraphs(int ranks) {
    if (int(m_rankGraphs.size()) == ranks)
        return;
    for (QCPGraph* g : m_rankGraphs)
        plot()->removeGraph(g);
    m_rankGraphs.clear();
    for (int r = 0; r < ranks; ++r) {
        QCPGraph* g = addDenseLineGraph(plot()->xAxis, plot()->yAxis);
        g->setName(tr("rank %1").arg(r));
        g->setPen(QPen(palette::rankColor(r), 1)); // opaque: blending dense runs' envelopes is slow
        m_rankGraphs.push_back(g);
    }
}

void LossChart::extendMeans() {
    const int R = model()->worldSize();
    const size_t rows = size_t(model()->stepCount());
    const auto& loss = model()->column(StepColumn::Loss);
    const auto& acc = model()->column(StepColumn::Accuracy);
    for (size_t row = m_meanLoss.size(); row < rows; ++row) {
        m_meanLoss.push_back(finiteMean(loss.data() + row * size_t(R), size_t(R)));
        m_meanAccuracy.push_back(finiteMean(acc.data() + row * size_t(R), size_t(R)) * 100.0f);
    }
}

void LossChart::rebuild() {
    const int R = model()->worldSize();
    ensureRankGraphs(R);
    extendMeans();
    const View v = prepareView();
    const auto& steps = model()->stepNumbers();
    const auto& loss = model()->column(StepColumn::Loss);
    for (int r = 0; r < R; ++r)
        setXY(m_rankGraphs[size_t(r)], view::minMaxDecimate(steps, loss, v.begin, v.end, v.buckets, R, r));
    setXY(m_mean, view::minMaxDecimate(steps, m_meanLoss, v.begin, v.end, v.buckets));
    setXY(m_accuracy, view::minMaxDecimate(steps, m_meanAccuracy, v.begin, v.end, v.buckets));

    QVector<double> ex, ey;
    for (const EvalRecord& e : model()->evals()) {
        if (e.step < v.lower || e.step > v.upper)
            continue;
        ex.push_back(double(e.step));
        ey.push_back(finiteMean(e.accuracy.data(), e.accuracy.size()) * 100.0f);
    }
    m_eval->setData(ex, ey, true);
    rebuildMarkers(v);
    fitLossAxis();
    setLegendColumns(std::max(1, plot()->viewport().width() / 140));
}

void LossChart::rebuildMarkers(const View& v) {
    for (QCPItemLine* m : m_markers)
        plot()->removeItem(m);
    m_markers.clear();
    m_markerEvents.clear();
    const auto& events = model()->events();
    double lastPixel = -1e9;
    bool anyFluctuation = false, anyMismatch = false;
    for (const Event& e : events) {
        anyFluctuation |= e.code == eventcode::kLossFluctuation;
        anyMismatch |= isMismatch(e);
    }
    // Legend entries only for markers the run has.
    for (auto [g, on] :
         {std::pair{m_markerLegend, anyFluctuation}, std::pair{m_mismatchLegend, anyMismatch}}) {
        if (on)
            g->addToLegend();
        else
            g->removeFromLegend();
    }
    for (size_t i = 0; i < events.size(); ++i) {
        const Event& e = events[i];
        if (!isMarked(e) || e.step < v.lower || e.step > v.upper)
            continue;
        const double px = plot()->xAxis->coordToPixel(double(e.step));
        if (std::abs(px - lastPixel) < 3)
            continue; // one marker per few pixels is all a reader can tell apart
        lastPixel = px;
        auto* line = new QCPItemLine(plot());
        line->setPen(markerPen(e));
        line->setSelectable(false);
        placeVerticalLine(line, plot()->axisRect(), double(e.step));
        m_markers.push_back(line);
        m_markerEvents.push_back(int(i));
    }
}

void LossChart::fitLossAxis() {
    const QCP::SignDomain domain = m_log ? QCP::sdPositive : QCP::sdBoth;
    QCPRange range;
    bool any = false;
    auto unite = [&](QCPGraph* g) {
        bool found = false;
        const QCPRange r = g->getValueRange(found, domain);
        if (!found)
            return;
        range = any ? QCPRange(std::min(range.lower, r.lower), std::max(range.upper, r.upper)) : r;
        any = true;
    };
    for (QCPGraph* g : m_rankGraphs)
        unite(g);
    unite(m_mean);
    QCPAxis* y = plot()->yAxis;
    if (!any) {
        y->setRange(m_log ? QCPRange(0.01, 10) : QCPRange(0, 1));
    } else if (m_log) {
        y->setRange(range.lower / 1.25, range.upper * 1.25);
    } else {
        const double pad = std::max(range.size() * 0.05, 1e-6);
        y->setRange(range.lower - pad, range.upper + pad);
    }
}

QString LossChart::eventsNear(double pixelX) const {
    QStringList lines;
    for (const Event& e : model()->events()) {
        if (!isMarked(e) || std::abs(plot()->xAxis->coordToPixel(double(e.step)) - pixelX) > 4)
            continue;
        lines << tr("step %1: %2").arg(e.step).arg(QString::fromStdString(e.message));
        if (lines.size() == 5)
            break;
    }
    return lines.join(QLatin1Char('\n'));
}

QString LossChart::toolTipAt(const QPointF& pos) const {
    if (!plot()->axisRect()->rect().contains(pos.toPoint()) || model()->stepCount() == 0)
        return {};
    if (QString events = eventsNear(pos.x()); !events.isEmpty())
        return events;
    const int64_t step = nearestStep(plot()->xAxis->pixelToCoord(pos.x()));
    const int64_t row = model()->rowOf(step);
    QStringList lines{tr("step %1").arg(step)};
    if (size_t(row) < m_meanLoss.size())
        lines << tr("mean loss %1, batch accuracy %2 %")
                     .arg(m_meanLoss[size_t(row)], 0, 'g', 5)
                     .arg(m_meanAccuracy[size_t(row)], 0, 'f', 1);
    const int R = std::min(model()->worldSize(), 16);
    for (int r = 0; r < R; ++r)
        lines << tr("rank %1: loss %2").arg(r).arg(model()->value(StepColumn::Loss, row, r), 0, 'g', 5);
    return lines.join(QLatin1Char('\n'));
}

} // namespace rs
