// Parameter x rank norm-ratio heatmap (see ParamRankHeatmap.h).
#include "charts/ParamRankHeatmap.h"

#include "charts/ChartPalette.h"
#include "charts/GreyCellLegend.h"
#include "model/RunModel.h"
#include "model/StepDetail.h"

#include <QFontMetrics>
#include <cmath>
#include <qcustomplot.h>

namespace rs {
namespace {

constexpr double kMaxLog2 = 10;

// A cell has a color when its ratio is finite and above 0 (the scale is log2): the rest is grey.
bool hasColor(double ratio) {
    return std::isfinite(ratio) && ratio > 0;
}

// The color scale runs over log2(ratio); its labels say the ratio itself: 1/4, 1/2, 1, 2, 4.
class RatioTicker : public QCPAxisTickerFixed {
public:
    RatioTicker() {
        setTickStep(1);
        setScaleStrategy(ssMultiples);
    }

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override {
        const double e = std::round(tick);
        if (std::abs(tick - e) > 1e-9)
            return QCPAxisTickerFixed::getTickLabel(tick, locale, format, precision);
        if (e >= 0)
            return QString::number(std::exp2(e), 'g', 6);
        return QStringLiteral("1/") + QString::number(std::exp2(-e), 'g', 6);
    }
};

} // namespace

ParamRankHeatmap::ParamRankHeatmap(RunModel* model, StepCursor* cursor, QWidget* parent)
    : DetailChart(model, cursor, QStringLiteral("param-heatmap"),
                  QStringLiteral("Local gradient norm / cross-rank median"), parent) {
    setupColorMap(&m_map, &m_scale);
    m_map->setGradient(palette::divergingGradient());
    // Short enough for a bar about 90 px long; the bar's tooltip says it in full.
    m_scaleTitle.setText(tr("norm / median\n(log2 scale)"));
    m_scaleTitle.fit(m_scale);
    m_scale->axis()->setTicker(QSharedPointer<RatioTicker>::create());
    QCustomPlot* p = plot();
    p->xAxis->setLabel(tr("rank"));
    p->yAxis->setLabel(tr("parameter"));
    p->yAxis->setRangeReversed(true); // the first layer on top, as in the model's printout
    p->xAxis->setTicker(integerTicker());
    p->yAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p->yAxis->setTickLabelFont(small);
    placeLegendBelow();
    m_grey = std::make_unique<GreyCellLegend>(p);
    m_grey->setText(tr("grey: no ratio (norm 0, not finite or not recorded; or median 0)"));
    m_grey->setShown(false); // until there are cells
    connect(model, &RunModel::runReset, this, [this] { m_ratio = {}; });
}

ParamRankHeatmap::~ParamRankHeatmap() = default;

QString ParamRankHeatmap::greyLegendText() const {
    return m_grey->isShown() ? m_grey->text() : QString();
}

void ParamRankHeatmap::clear() {
    m_scaleTitle.fit(m_scale);
    m_ratio = {};
    m_groups = {};
    m_pooled = {};
    fillColorMap(m_map, 0, 0, QCPRange(), QCPRange(), {});
    drawCellGrid(0, 0, false);
    updateParamTicks(0);
    m_grey->setShown(false);
    fitLegendColumns();
}

void ParamRankHeatmap::draw(const StepDetail& detail) {
    m_scaleTitle.fit(m_scale); // first: a large run's map may not be drawn until its matrix is ready
    m_ratio = view::paramRankNormRatio(model()->meta(), detail.record);
    const int P = m_ratio.rows, R = m_ratio.cols;
    // Symmetric around ratio 1, at least 1/2..2; past 1/1024..1024 cells saturate (one wild rank must not
    // wash out the rest).
    double extent = 1;
    for (double v : m_ratio.v)
        if (hasColor(v))
            extent = std::max(extent, std::min(kMaxLog2, std::ceil(std::abs(std::log2(v)))));
    // Past kMaxCellRanks ranks a column is a group of ranks (servers) showing its most outlying ratio, so
    // that one rank off by 2x still colours its server's column.
    m_groups = R > kMaxCellRanks ? view::rankGroups(model()->meta(), kMaxCellRanks) : view::RankGroups{};
    if (pooled()) {
        const int G = m_groups.size();
        m_pooled.rows = P;
        m_pooled.cols = G;
        m_pooled.v.assign(size_t(P) * size_t(G), std::nan(""));
        for (int p = 0; p < P; ++p)
            for (int r = 0; r < R; ++r) {
                const double v = m_ratio.at(p, r);
                double& cell = m_pooled.at(p, m_groups.groupOf(r));
                if (hasColor(v) && (!hasColor(cell) || std::abs(std::log2(v)) > std::abs(std::log2(cell))))
                    cell = v;
            }
        const auto center = [&](int g) { return 0.5 * (m_groups.start[size_t(g)] + m_groups.end(g) - 1); };
        fillColorMap(m_map, G, P, QCPRange(center(0), center(G - 1)), QCPRange(0, P - 1),
                     [this](int g, int p) {
                         const double v = m_pooled.at(p, g);
                         return hasColor(v) ? std::log2(v) : std::nan("");
                     });
    } else {
        m_pooled = {};
        fillColorMap(m_map, R, P, QCPRange(0, R - 1), QCPRange(0, P - 1), [this](int rank, int param) {
            const double v = m_ratio.at(param, rank);
            return hasColor(v) ? std::log2(v) : std::nan("");
        });
    }
    m_map->setDataRange(QCPRange(-extent, extent));
    plot()->xAxis->setRange(-0.5, R - 0.5);
    plot()->yAxis->setRange(-0.5, P - 0.5);
    updateParamTicks(P);
    fitIntegerTicks(plot()->xAxis, R);
    drawCellGrid(pooled() ? 0 : R, P, P <= 40);
    m_grey->setShown(true);
    m_grey->fit();
    fitLegendColumns();
    QString caption = tr("step %1 · %2 parameters x %3 ranks").arg(detail.step).arg(P).arg(R);
    if (pooled())
        caption += m_groups.serversPerGroup == 1 ? tr(" · a column: a server, its most outlying rank")
                   : m_groups.serversPerGroup > 1
                       ? tr(" · a column: %1 servers, their most outlying rank").arg(m_groups.serversPerGroup)
                       : tr(" · a column: %1 ranks, their most outlying").arg(m_groups.end(0));
    setCaption(caption);
}

// Every parameter name would overlap on a deep model: label every k-th so the labels fit the height.
void ParamRankHeatmap::updateParamTicks(int params) {
    auto ticker = plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    ticker->clear();
    if (params == 0)
        return;
    const int height = plot()->axisRect()->height() > 0 ? plot()->axisRect()->height() : plot()->height();
    const int line = QFontMetrics(plot()->yAxis->tickLabelFont()).height() + 2;
    const int fit = std::max(1, height / line);
    const int every = std::max(1, (params + fit - 1) / fit);
    const auto& names = model()->meta().params;
    for (int p = 0; p < params; p += every)
        ticker->addTick(p, p < int(names.size()) ? QString::fromStdString(names[size_t(p)].name)
                                                 : QString::number(p));
}

int ParamRankHeatmap::labelledParamCount() const {
    return plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>()->ticks().size();
}

bool ParamRankHeatmap::cellAt(const QPointF& pos, int* param, int* rank) const {
    if (m_ratio.rows == 0 || !plot()->axisRect()->rect().contains(pos.toPoint()))
        return false;
    *rank = int(std::lround(plot()->xAxis->pixelToCoord(pos.x())));
    *param = int(std::lround(plot()->yAxis->pixelToCoord(pos.y())));
    return *param >= 0 && *param < m_ratio.rows && *rank >= 0 && *rank < m_ratio.cols;
}

QString ParamRankHeatmap::toolTipAt(const QPointF& pos) const {
    int p = 0, r = 0;
    if (!cellAt(pos, &p, &r))
        return m_scale->outerRect().contains(pos.toPoint())
                   ? tr("each rank's local gradient norm / the median over the ranks, on a log2 scale")
                   : m_grey->toolTipAt(pos);
    const auto& names = model()->meta().params;
    const QString name =
        p < int(names.size()) ? QString::fromStdString(names[size_t(p)].name) : QString::number(p);
    if (pooled()) {
        const int g = m_groups.groupOf(r);
        return tr("%1\n%2\nmost outlying norm / median: %3")
            .arg(name, QString::fromStdString(m_groups.label(g)))
            .arg(m_pooled.at(p, g), 0, 'g', 4);
    }
    const double ratio = m_ratio.at(p, r);
    double norm = std::nan("");
    if (detail() && size_t(r) < detail()->record.ranks.size() &&
        size_t(p) < detail()->record.ranks[size_t(r)].localNorm.size())
        norm = detail()->record.ranks[size_t(r)].localNorm[size_t(p)];
    QString ratioText = QString::number(ratio, 'g', 4);
    if (std::isnan(ratio))
        ratioText = tr("n/a (median 0, or the norm not recorded or NaN)");
    else if (!hasColor(ratio))
        ratioText += tr(" (grey: %1)").arg(ratio == 0 ? tr("a zero norm") : tr("an infinite norm"));
    return tr("%1\nrank %2\nnorm / median: %3\nlocal gradient norm: %4")
        .arg(name)
        .arg(r)
        .arg(ratioText)
        .arg(QString::number(norm, 'g', 6));
}

bool ParamRankHeatmap::layoutChanged() const {
    return m_scaleTitle.needsFit(m_scale);
}

void ParamRankHeatmap::clicked(const QPointF& pos) {
    int p = 0, r = 0;
    if (cellAt(pos, &p, &r))
        emit paramClicked(p);
}

} // namespace rs
