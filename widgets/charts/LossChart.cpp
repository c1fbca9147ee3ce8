// Loss and accuracy chart (see LossChart.h).
#include "charts/LossChart.h"

#include "charts/ChartPalette.h"
#include "charts/DenseLineGraph.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "store/RankMean.h"
#include "store/RunSource.h"
#include "view/Decimate.h"
#include "view/RankSpread.h"

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

// Ranks that stand out: at most four lines, judged on at most 1,024 evenly spaced rows of the view. This
// runs on the GUI thread at every redraw of a live run (25 a second), so the rows are capped well below
// the default: two medians over 64 ranks per row cost about a microsecond.
constexpr int kMaxStandouts = 4;
constexpr double kStandoutScore = 2.0;
constexpr int64_t kStandoutRows = 1024;

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
    // The band of a summarised run: plain graphs, since they hold a point per pixel at most.
    m_bandLow = p->addGraph(p->xAxis, p->yAxis);
    m_bandHigh = p->addGraph(p->xAxis, p->yAxis);
    QColor band = palette::meanColor();
    band.setAlpha(60);
    for (QCPGraph* g : {m_bandLow, m_bandHigh})
        g->setPen(QPen(band, 1));
    m_bandHigh->setBrush(band);
    m_bandHigh->setChannelFillGraph(m_bandLow);
    m_bandLow->removeFromLegend();
    m_hover = addDenseLineGraph(p->xAxis, p->yAxis);
    m_hover->removeFromLegend();
    // Rank lines (created per run on "main") stay under the summary lines; the hovered rank is on top.
    p->addLayer(QStringLiteral("summary"), p->layer(QStringLiteral("main")), QCustomPlot::limAbove);
    for (QCPGraph* g : {m_accuracy, m_eval, m_mean})
        g->setLayer(QStringLiteral("summary"));
    p->addLayer(QStringLiteral("hover"), p->layer(QStringLiteral("summary")), QCustomPlot::limAbove);
    m_hover->setLayer(QStringLiteral("hover"));
    for (QCPGraph* g : {m_bandLow, m_bandHigh, m_hover})
        g->setVisible(false);
    m_bandHigh->removeFromLegend();

    addStepRect(p->axisRect());
    placeLegendBelow();
    m_note = addNote(p->axisRect());
    connect(model, &RunModel::runReset, this, [this] {
        for (auto* v : {&m_meanLoss, &m_meanAccuracy, &m_lowLoss, &m_highLoss})
            v->clear();
        m_hoverRank = -1;
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
    m_summarised = ranks > kLinesUpTo;
    if (m_summarised)
        ranks = 0;
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
        const view::RowRange range = view::rowRange(loss.data() + row * size_t(R), R);
        m_lowLoss.push_back(range.low);
        m_highLoss.push_back(range.high);
    }
}

void LossChart::setRankLine(QCPGraph* g, int rank, const View& v) const {
    setXY(g, view::minMaxDecimate(model()->stepNumbers(), model()->column(StepColumn::Loss), v.begin, v.end,
                                  v.buckets, model()->worldSize(), rank));
}

void LossChart::rebuildSummary(const View& v) {
    for (QCPGraph* g : {m_bandLow, m_bandHigh})
        g->setVisible(m_summarised);
    if (m_summarised)
        m_bandHigh->addToLegend();
    else
        m_bandHigh->removeFromLegend();
    m_standoutRanks.clear();
    QStringList names;
    if (m_summarised) {
        const view::Band band =
            view::bandDecimate(model()->stepNumbers(), m_lowLoss, m_highLoss, v.begin, v.end, v.buckets);
        m_bandLow->setData(QVector<double>(band.x.begin(), band.x.end()),
                           QVector<double>(band.low.begin(), band.low.end()), true);
        m_bandHigh->setData(QVector<double>(band.x.begin(), band.x.end()),
                            QVector<double>(band.high.begin(), band.high.end()), true);
        m_bandHigh->setName(tr("lowest to highest of %1 ranks").arg(model()->worldSize()));
        for (const view::Standout& s :
             view::standoutRanks(model()->column(StepColumn::Loss), model()->worldSize(), v.begin, v.end,
                                 kMaxStandouts, kStandoutScore, kStandoutRows)) {
            m_standoutRanks.push_back(s.rank);
            // A line that ends says little by itself: the legend says why it stands out when it has gaps.
            names.push_back(
                s.nonFinite > 0
                    ? tr("rank %1 (loss not finite on %n step(s))", nullptr, int(s.nonFinite)).arg(s.rank)
                    : tr("rank %1 (stands out)").arg(s.rank));
        }
    }
    // Graphs for the standouts are kept and reused: a live run's standouts change as steps arrive.
    while (m_standoutGraphs.size() < m_standoutRanks.size())
        m_standoutGraphs.push_back(addDenseLineGraph(plot()->xAxis, plot()->yAxis));
    for (size_t i = 0; i < m_standoutGraphs.size(); ++i) {
        QCPGraph* g = m_standoutGraphs[i];
        const bool used = i < m_standoutRanks.size();
        g->setVisible(used);
        if (!used) {
            g->data()->clear();
            g->removeFromLegend();
            continue;
        }
        const int rank = m_standoutRanks[i];
        g->setName(names[qsizetype(i)]);
        g->setPen(QPen(palette::rankColor(rank), 1.5));
        setRankLine(g, rank, v);
        g->addToLegend();
    }
    m_hover->setVisible(m_summarised && m_hoverRank >= 0);
    if (m_hover->visible())
        setRankLine(m_hover, m_hoverRank, v);
}

void LossChart::rebuild() {
    const int R = model()->worldSize();
    ensureRankGraphs(R);
    extendMeans();
    const View v = prepareView();
    m_view = v;
    const auto& steps = model()->stepNumbers();
    for (size_t r = 0; r < m_rankGraphs.size(); ++r)
        setRankLine(m_rankGraphs[r], int(r), v);
    rebuildSummary(v);
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
    setNote(m_note, note());
    // Legend entries only for lines the run can have.
    auto inLegend = [this](QCPGraph* g, bool on) {
        if (on != plot()->legend->hasItemWithPlottable(g))
            on ? g->addToLegend() : g->removeFromLegend();
    };
    const bool loss = !model()->hasRun() || model()->recorded(StepColumn::Loss);
    inLegend(m_mean, loss);
    for (QCPGraph* g : m_rankGraphs)
        inLegend(g, loss);
    inLegend(m_accuracy, !model()->hasRun() || model()->recorded(StepColumn::Accuracy));
    inLegend(m_eval, !model()->evals().empty());
    fitLegendColumns();
}

QString LossChart::note() const {
    if (!model()->hasRun())
        return {};
    const bool loss = model()->recorded(StepColumn::Loss), accuracy = model()->recorded(StepColumn::Accuracy);
    if (loss && accuracy)
        return {};
    const QString what = !loss && !accuracy ? tr("loss and accuracy")
                         : !loss            ? tr("loss")
                                            : tr("batch accuracy");
    return tr("%1 not recorded by this run's source\n(%2)")
        .arg(what, QString::fromStdString(describeRun(model()->meta())));
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
    if (m_summarised) {
        unite(m_bandHigh);
        unite(m_bandLow);
    }
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

int LossChart::rankNear(const QPointF& pos) const {
    if (!m_summarised || !plot()->axisRect()->rect().contains(pos.toPoint()) || model()->stepCount() == 0)
        return -1;
    const int64_t row = model()->rowOf(nearestStep(plot()->xAxis->pixelToCoord(pos.x())));
    if (row < 0)
        return -1;
    constexpr double kReachPx = 8; // about a line's width plus a hand's wobble
    int best = -1;
    double bestPx = kReachPx;
    for (int r = 0; r < model()->worldSize(); ++r) {
        const float loss = model()->value(StepColumn::Loss, row, r);
        if (!std::isfinite(loss))
            continue;
        if (const double px = std::abs(plot()->yAxis->coordToPixel(double(loss)) - pos.y()); px <= bestPx) {
            best = r;
            bestPx = px;
        }
    }
    return best;
}

void LossChart::hovered(std::optional<QPointF> pos) {
    const int rank = pos ? rankNear(*pos) : -1;
    if (rank == m_hoverRank)
        return;
    m_hoverRank = rank;
    m_hover->setVisible(rank >= 0);
    if (rank >= 0) {
        m_hover->setPen(QPen(palette::rankColor(rank), 2));
        setRankLine(m_hover, rank, m_view);
    }
    plot()->replot(QCustomPlot::rpQueuedReplot);
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
    auto rankLine = [&](int r, const QString& label) {
        lines << label.arg(r).arg(model()->value(StepColumn::Loss, row, r), 0, 'g', 5);
    };
    if (!m_summarised) {
        for (int r = 0; r < model()->worldSize(); ++r)
            rankLine(r, tr("rank %1: loss %2"));
        return lines.join(QLatin1Char('\n'));
    }
    // Summarised: the pointed-at rank, the extremes and the standouts, not 64 lines.
    if (const int near = rankNear(pos); near >= 0)
        rankLine(near, tr("rank %1 (under the pointer): loss %2"));
    const int R = model()->worldSize();
    int low = -1, high = -1;
    for (int r = 0; r < R; ++r) {
        const float v = model()->value(StepColumn::Loss, row, r);
        if (!std::isfinite(v))
            continue;
        if (low < 0 || v < model()->value(StepColumn::Loss, row, low))
            low = r;
        if (high < 0 || v > model()->value(StepColumn::Loss, row, high))
            high = r;
    }
    if (low >= 0) {
        rankLine(low, tr("lowest: rank %1, loss %2"));
        rankLine(high, tr("highest: rank %1, loss %2"));
    }
    for (int r : m_standoutRanks)
        rankLine(r, tr("rank %1 (stands out): loss %2"));
    return lines.join(QLatin1Char('\n'));
}

} // namespace rs
