// Overflow timeline (see OverflowTimeline.h).
#include "charts/OverflowTimeline.h"

#include "charts/ChartPalette.h"
#include "charts/DenseLineGraph.h"
#include "model/RunModel.h"
#include "store/RunSource.h"
#include "view/Decimate.h"
#include "view/RankSpread.h"

#include <QFontMetrics>
#include <cmath>
#include <optional>
#include <qcustomplot.h>

namespace rs {
namespace {

// Loss scales are powers of two: label them so ("2^16"), other ticks as plain numbers.
class Log2Ticker : public QCPAxisTickerLog {
public:
    Log2Ticker() { setLogBase(2); }
    // The labels the axis has room for (fitScaleTicks sets it from the axis length).
    void setMaxLabels(int n) { m_maxLabels = std::max(1, n); }
    // Only exponents in [lo, hi] are labelled: the range around them is padded by half a label, so that
    // no label sticks out of the strip onto the raster's rank labels above or the step labels below.
    void setLabelledExponents(double lo, double hi) {
        m_lo = lo;
        m_hi = hi;
    }

protected:
    // The scale axis is a short strip under the raster: a label per power of two would overlap, so keep at
    // most maxLabels, on exponents that are multiples of a fixed stride so they stay put while the range
    // grows.
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override {
        QVector<double> all;
        for (double t : QCPAxisTickerLog::createTickVector(tickStep, range))
            if (t > 0 && std::log2(t) >= m_lo - 1e-9 && std::log2(t) <= m_hi + 1e-9)
                all.push_back(t);
        if (all.size() <= m_maxLabels)
            return all;
        const long step =
            all.size() > 1 ? std::max(1L, std::lround(std::log2(all[1]) - std::log2(all[0]))) : 1;
        const long stride = step * long(std::ceil(double(all.size()) / m_maxLabels));
        QVector<double> out;
        for (double t : all)
            if (t > 0 && std::lround(std::log2(t)) % stride == 0)
                out.push_back(t);
        return out.isEmpty() ? QVector<double>{all[all.size() / 2]} : out;
    }
    QString getTickLabel(double tick, const QLocale& locale, QChar format, int precision) override {
        const double e = std::log2(tick);
        if (tick > 0 && std::abs(e - std::round(e)) < 1e-9)
            return QStringLiteral("2^%1").arg(int(std::round(e)));
        return QCPAxisTickerLog::getTickLabel(tick, locale, format, precision);
    }

private:
    int m_maxLabels = 3;
    double m_lo = -1e9, m_hi = 1e9;
};

} // namespace

OverflowCell overflowCell(const RunModel& model, int64_t row, int rank) {
    // A source that records no loss (msprobe) stores NaN fill: that is not a non-finite loss.
    if (model.recorded(StepColumn::Loss) && !std::isfinite(model.value(StepColumn::Loss, row, rank)))
        return OverflowCell::NonFiniteLoss;
    const bool skippedKnown = model.recorded(StepColumn::Skipped);
    const bool overflowKnown = model.recorded(StepColumn::Overflow);
    if (skippedKnown && model.value(StepColumn::Skipped, row, rank) != 0)
        return OverflowCell::Skipped;
    if (overflowKnown && model.value(StepColumn::Overflow, row, rank) != 0)
        return OverflowCell::Overflow;
    return skippedKnown && overflowKnown ? OverflowCell::Clean : OverflowCell::NotRecorded;
}

OverflowRaster overflowRaster(const RunModel& model, int64_t begin, int64_t end, int buckets) {
    OverflowRaster r;
    r.ranks = model.worldSize();
    const int64_t n = std::max<int64_t>(0, end - begin);
    if (n == 0 || r.ranks == 0)
        return r;
    r.columns = int(buckets > 0 ? std::min<int64_t>(n, buckets) : n);
    r.cells.assign(size_t(r.columns) * size_t(r.ranks), 0);
    // What is recorded is the same for every row (RunMeta::absent is per file), so NotRecorded never meets
    // Clean in one bucket: the worst of the others, by their order, is the bucket's cell.
    auto rankOf = [](uint8_t c) { return c == uint8_t(OverflowCell::NotRecorded) ? -1 : int(c); };
    for (int c = 0; c < r.columns; ++c) {
        const int64_t b = begin + n * c / r.columns, e = begin + n * (c + 1) / r.columns;
        r.rowBegin.push_back(b);
        r.rowEnd.push_back(e);
        for (int rank = 0; rank < r.ranks; ++rank) {
            uint8_t& cell = r.cells[size_t(c) * size_t(r.ranks) + size_t(rank)];
            cell = uint8_t(overflowCell(model, b, rank));
            for (int64_t row = b + 1; row < e; ++row) {
                const auto next = uint8_t(overflowCell(model, row, rank));
                if (rankOf(next) > rankOf(cell))
                    cell = next;
            }
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
    case OverflowCell::NotRecorded:
        return QObject::tr("not recorded");
    default:
        return QObject::tr("clean");
    }
}

std::vector<int> LossScaleLines::standoutRanks() const {
    std::vector<int> ranks;
    for (int r = 0; r < int(rankDiffers.size()); ++r)
        if (rankDiffers[size_t(r)] > 0)
            ranks.push_back(r);
    std::stable_sort(ranks.begin(), ranks.end(),
                     [&](int a, int b) { return rankDiffers[size_t(a)] > rankDiffers[size_t(b)]; });
    if (ranks.size() > size_t(kMaxRanks))
        ranks.resize(size_t(kMaxRanks));
    return ranks;
}

void LossScaleLines::extend(const RunModel& model) {
    const int R = model.worldSize();
    rankDiffers.resize(size_t(std::max(R, 0)), 0);
    const std::vector<float>& scales = model.column(StepColumn::LossScale);
    for (int64_t row = int64_t(common.size()); row < model.stepCount(); ++row) {
        const float* values = scales.data() + size_t(row) * size_t(R);
        const float best = view::commonValue(values, R);
        common.push_back(best);
        for (int r = 0; r < R; ++r)
            if (std::isfinite(values[r]) && values[r] > 0 && values[r] != best)
                ++rankDiffers[size_t(r)];
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
        m_lines = {};
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
    m_map->setGradient(palette::overflowGradient()); // NaN (not recorded) cells are grey
    m_map->setDataRange(QCPRange(0, 3));
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);
    m_map->removeFromLegend();
    m_rasterNote = addNote(p->axisRect());
}

void OverflowTimeline::setupScale() {
    QCustomPlot* p = plot();
    m_scaleRect = new QCPAxisRect(p);
    p->plotLayout()->addElement(1, 0, m_scaleRect);
    auto* group = new QCPMarginGroup(p);
    p->axisRect()->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    m_scaleRect->setMarginGroup(QCP::msLeft | QCP::msRight, group);
    p->plotLayout()->setRowSpacing(4);
    // QCustomPlot's default minimum of 50 px per axis rect, with the step labels' margin and the legend,
    // asks more than the ~150 px a 1280x800 window gives the chart, and the layout then runs off the
    // bottom and cuts the legend in half. The strips shrink instead.
    p->axisRect()->setMinimumSize(0, 16);
    m_scaleRect->setMinimumSize(0, 24);
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
    m_scale->setName(tr("loss scale (all ranks)"));
    m_scale->setPen(QPen(palette::meanColor(), 1.5));
    for (int i = 0; i < LossScaleLines::kMaxRanks; ++i) {
        QCPGraph* g = addDenseLineGraph(x, y);
        g->removeFromLegend(); // named and added when a rank stands out (updateLegend)
        m_rankScales.push_back(g);
    }
    // The skipped steps on the scale line; the raster's "skipped update" entry names them in the legend.
    m_skipped = p->addGraph(x, y);
    m_skipped->setName(tr("skipped update"));
    m_skipped->setLineStyle(QCPGraph::lsNone);
    m_skipped->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangleInverted,
                                               palette::overflowCategoryColor(2),
                                               palette::overflowCategoryColor(2), 7));
    m_skipped->removeFromLegend();
    m_scaleNote = addNote(m_scaleRect);
    // A label at each line's right end, outside the strip (placeLineLabels): the last of them is the common
    // line's.
    for (int i = 0; i <= LossScaleLines::kMaxRanks; ++i) {
        auto* label = new QCPItemText(p);
        label->setClipToAxisRect(false);
        label->position->setAxisRect(m_scaleRect);
        label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        label->position->setTypeY(QCPItemPosition::ptAbsolute);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setPadding(QMargins(4, 0, 0, 0));
        label->setSelectable(false);
        label->setVisible(false);
        m_lineLabels.push_back(label);
    }
}

void OverflowTimeline::setupLegend() {
    // Empty graphs with a square marker give the raster's categories legend entries.
    auto square = [&](const QString& name, const QColor& fill) {
        QCPGraph* g =
            plot()->addGraph(m_scaleRect->axis(QCPAxis::atBottom), m_scaleRect->axis(QCPAxis::atLeft));
        g->setName(name);
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, QColor(120, 120, 120), fill, 10));
        return g;
    };
    for (int c = 0; c < 4; ++c)
        m_categoryLegend.push_back(
            square(overflowCellName(OverflowCell(c)), palette::overflowCategoryColor(c)));
    m_categoryLegend.push_back(square(overflowCellName(OverflowCell::NotRecorded), palette::nanColor()));
    m_categoryLegend.back()->removeFromLegend(); // only for a source that did not record the flags
    placeLegendBelow();
    QCPLayoutGrid* layout = plot()->plotLayout();
    layout->setRowStretchFactors({1.2, 1.0, 0.001});
}

void OverflowTimeline::extendScale() {
    m_lines.extend(*model());
    const int R = model()->worldSize();
    for (int64_t row = int64_t(m_skippedScale.size()); row < model()->stepCount(); ++row) {
        bool skipped = false;
        for (int r = 0; r < R && model()->recorded(StepColumn::Skipped); ++r)
            skipped = skipped || model()->value(StepColumn::Skipped, row, r) != 0;
        m_skippedScale.push_back(skipped ? m_lines.common[size_t(row)] : std::nanf(""));
    }
}

QString OverflowTimeline::rasterNote() const {
    if (!model()->hasRun())
        return {};
    QStringList missing;
    if (!model()->recorded(StepColumn::Overflow))
        missing << tr("overflow flags");
    if (!model()->recorded(StepColumn::Skipped))
        missing << tr("skipped updates");
    if (missing.isEmpty())
        return {};
    return tr("%1 not recorded by this run's source\n(%2): grey cells are unknown, not clean")
        .arg(missing.join(tr(" and ")), QString::fromStdString(describeRun(model()->meta())));
}

QString OverflowTimeline::scaleNote() const {
    if (!model()->hasRun() || model()->recorded(StepColumn::LossScale))
        return {};
    return tr("loss scale not recorded by this run's source\n(%1)")
        .arg(QString::fromStdString(describeRun(model()->meta())));
}

void OverflowTimeline::updateNotes() {
    setNote(m_rasterNote, rasterNote());
    setNote(m_scaleNote, scaleNote());
    m_scaleRect->axis(QCPAxis::atLeft)
        ->setTickLabels(!model()->hasRun() || model()->recorded(StepColumn::LossScale));
}

// Legend entries only for what this run can show: no "clean" square where the flags were not recorded, no
// loss-scale line where the scale was not. When the entries with the scale lines' long names would not fit
// the chart (a 1280x800 window gives it about 345 x 150 pixels, and ChartBase hides a legend taller than a
// quarter of the chart), the legend keeps the raster's colours and the lines are named by their end labels.
void OverflowTimeline::updateLegend() {
    const bool none = !model()->hasRun();
    const bool overflow = none || model()->recorded(StepColumn::Overflow);
    const bool skipped = none || model()->recorded(StepColumn::Skipped);
    const bool loss = none || model()->recorded(StepColumn::Loss);
    const bool scale = none || model()->recorded(StepColumn::LossScale);
    const bool shown[] = {overflow && skipped, overflow, skipped, loss, !(overflow && skipped)};
    std::vector<QCPGraph*> entries;
    for (size_t i = 0; i < std::size(shown); ++i)
        if (shown[i])
            entries.push_back(m_categoryLegend[i]);
    std::vector<QCPGraph*> full = entries;
    if (scale)
        full.push_back(m_scale);
    for (size_t i = 0; i < m_standouts.size(); ++i)
        full.push_back(m_rankScales[i]);
    setLegendEntries(full);
    m_compactLegend = legendHeight() * 4 > plot()->height();
    if (m_compactLegend)
        setLegendEntries(entries);
    fitLegendColumns();
}

// The legend holds exactly `graphs`, in that order (rebuilt only when they change).
void OverflowTimeline::setLegendEntries(const std::vector<QCPGraph*>& graphs) {
    QCPLegend* legend = plot()->legend;
    bool same = legend->itemCount() == int(graphs.size());
    for (size_t i = 0; same && i < graphs.size(); ++i) {
        auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(int(i)));
        same = item && item->plottable() == graphs[i];
    }
    if (same)
        return;
    for (int i = 0; i < plot()->graphCount(); ++i)
        plot()->graph(i)->removeFromLegend();
    for (QCPGraph* g : graphs)
        g->addToLegend();
}

// The height the legend's entries take at the chart's width, filled row by row into the most columns that
// fit side by side (as ChartBase::fitLegendColumns lays them out).
int OverflowTimeline::legendHeight() const {
    const QCPLegend* legend = plot()->legend;
    std::vector<QSize> sizes;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (const QCPAbstractLegendItem* item = legend->item(i))
            sizes.push_back(item->minimumOuterSizeHint());
    const int n = int(sizes.size());
    if (n == 0)
        return 0;
    const int room = plot()->viewport().width() - legend->margins().left() - legend->margins().right();
    int columns = n;
    for (; columns > 1; --columns) {
        int total = legend->columnSpacing() * (columns - 1);
        for (int c = 0; c < columns; ++c) {
            int widest = 0;
            for (int i = c; i < n; i += columns)
                widest = std::max(widest, sizes[size_t(i)].width());
            total += widest;
        }
        if (total <= room)
            break;
    }
    int entry = 0;
    for (const QSize& s : sizes)
        entry = std::max(entry, s.height());
    const int rows = (n + columns - 1) / columns;
    return rows * entry + (rows - 1) * legend->rowSpacing() + legend->margins().top() +
           legend->margins().bottom();
}

void OverflowTimeline::rebuild() {
    extendScale();
    updateNotes();
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
                     QCPRange(0, R - 1), [this](int c, int r) {
                         const auto cell = OverflowCell(m_raster.at(c, r));
                         return cell == OverflowCell::NotRecorded ? std::nan("") : double(cell);
                     });
    } else {
        fillColorMap(m_map, 0, 0, QCPRange(), QCPRange(), {});
    }
    plot()->yAxis->setRange(-0.5, std::max(R, 1) - 0.5);
    fitIntegerTicks(plot()->yAxis, R);

    auto set = [](QCPGraph* g, const view::XY& xy) {
        g->setData(QVector<double>(xy.x.begin(), xy.x.end()), QVector<double>(xy.y.begin(), xy.y.end()),
                   true);
    };
    const bool scaleKnown = model()->recorded(StepColumn::LossScale);
    set(m_scale,
        scaleKnown ? view::minMaxDecimate(steps, m_lines.common, v.begin, v.end, v.buckets) : view::XY{});
    set(m_skipped,
        scaleKnown ? view::minMaxDecimate(steps, m_skippedScale, v.begin, v.end, v.buckets) : view::XY{});
    rebuildRankScales(v);
    fitScaleAxis();
    updateLegend();
    placeLineLabels();
}

// A line for each rank whose loss scale differs from the others' somewhere in the run, drawn only where it
// differs (the common line shows the rest), named in the legend.
void OverflowTimeline::rebuildRankScales(const View& v) {
    const std::vector<int> standouts =
        model()->recorded(StepColumn::LossScale) ? m_lines.standoutRanks() : std::vector<int>{};
    const bool changed = standouts != m_standouts;
    m_standouts = standouts;
    m_scale->setName(m_standouts.empty() ? tr("loss scale (all ranks)") : tr("loss scale (most ranks)"));
    const auto& steps = model()->stepNumbers();
    std::vector<float> differing;
    for (size_t i = 0; i < m_rankScales.size(); ++i) {
        QCPGraph* g = m_rankScales[i];
        if (i >= m_standouts.size()) {
            g->data()->clear();
            continue;
        }
        const int rank = m_standouts[i];
        differing.assign(m_lines.common.size(), std::nanf(""));
        for (size_t row = 0; row < differing.size(); ++row)
            if (const float s = model()->value(StepColumn::LossScale, int64_t(row), rank);
                s != m_lines.common[row])
                differing[row] = s;
        const view::XY xy = view::minMaxDecimate(steps, differing, v.begin, v.end, v.buckets);
        g->setData(QVector<double>(xy.x.begin(), xy.x.end()), QVector<double>(xy.y.begin(), xy.y.end()),
                   true);
        g->setName(tr("rank %1 (differs from the others at %2 step(s))")
                       .arg(rank)
                       .arg(m_lines.rankDiffers[size_t(rank)]));
        if (changed) {
            const QColor color = palette::rankColor(rank);
            g->setPen(QPen(color, 2.0));
            g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, 4)); // lone steps show
        }
    }
}

namespace {

// The value of g's last point at or before x = upper (and not before lower) that a log axis can show.
std::optional<double> lastShownValue(const QCPGraph* g, double lower, double upper) {
    const auto data = g->data();
    for (auto it = data->findEnd(upper, false); it != data->constBegin();) {
        --it;
        if (it->key < lower)
            break;
        if (it->key <= upper && std::isfinite(it->value) && it->value > 0)
            return it->value;
    }
    return std::nullopt;
}

} // namespace

// While ranks differ, each line is named at its right end, beside the strip: "rank 1" by rank 1's line,
// "others" by the common one. Labels that would touch are moved apart and kept within the strip's height;
// the strip's right margin makes room for the widest.
void OverflowTimeline::placeLineLabels() {
    QCPAxis* x = m_scaleRect->axis(QCPAxis::atBottom);
    QCPAxis* y = m_scaleRect->axis(QCPAxis::atLeft);
    std::vector<std::pair<double, QCPItemText*>> shown; // pixel y, label
    auto place = [&](QCPItemText* label, const QCPGraph* g, const QString& text, const QColor& color) {
        const auto v = lastShownValue(g, x->range().lower, x->range().upper);
        if (!v)
            return;
        label->setText(text);
        label->setColor(color);
        label->setFont(y->tickLabelFont());
        shown.emplace_back(y->coordToPixel(*v), label);
    };
    for (QCPItemText* label : m_lineLabels)
        label->setVisible(false);
    for (size_t i = 0; i < m_standouts.size(); ++i)
        place(m_lineLabels[i], m_rankScales[i], tr("rank %1").arg(m_standouts[i]),
              palette::rankColor(m_standouts[i]));
    if (!shown.empty())
        place(m_lineLabels.back(), m_scale, tr("others"), palette::meanColor());
    std::sort(shown.begin(), shown.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    const QFontMetrics fm(y->tickLabelFont());
    // Names may sit anywhere beside the strip and the raster above it (the margin is empty there): a strip
    // of 25 px holds one line's name, not two.
    const double h = fm.height(), top = plot()->axisRect()->top() + h / 2;
    const double bottom = m_scaleRect->bottom() - h / 2; // not down among the step labels
    for (size_t i = 1; i < shown.size(); ++i) // downwards: each at least a line below the one above
        shown[i].first = std::max(shown[i].first, shown[i - 1].first + h);
    for (size_t i = shown.size(); i-- > 0;) // then up from the bottom edge, keeping the gaps
        shown[i].first = std::min(shown[i].first, i + 1 < shown.size() ? shown[i + 1].first - h : bottom);
    int widest = 0;
    for (auto& [pixel, label] : shown) {
        label->position->setCoords(1.0, std::max(pixel, top));
        label->setVisible(true);
        widest = std::max(widest, fm.horizontalAdvance(label->text()) + 8);
    }
    m_scaleRect->setMinimumMargins(QMargins(0, 0, widest, 0));
}

void OverflowTimeline::fitScaleAxis() {
    bool found = false;
    QCPRange r = m_scale->getValueRange(found, QCP::sdPositive);
    for (size_t i = 0; i < m_standouts.size(); ++i) {
        bool any = false;
        const QCPRange ri = m_rankScales[i]->getValueRange(any, QCP::sdPositive);
        if (any)
            r = found ? QCPRange(std::min(r.lower, ri.lower), std::max(r.upper, ri.upper)) : ri;
        found = found || any;
    }
    // Whole powers of two around the data, at least two apart so the log ticker labels them.
    const double lo = found ? std::floor(std::log2(r.lower)) - 1 : -1;
    const double hi = found ? std::ceil(std::log2(r.upper)) + 1 : 1;
    fitScaleTicks(lo, hi);
}

// As many labels as the strip's height holds, none sticking out of it: the range reaches half a label
// beyond the labelled powers of two lo and hi (exponents), and the labels are thinned to what fits between.
void OverflowTimeline::fitScaleTicks(double lo, double hi) {
    QCPAxis* y = m_scaleRect->axis(QCPAxis::atLeft);
    const int pixels = m_scaleRect->height();
    m_scaleTicksHeight = pixels;
    const int label = QFontMetrics(y->tickLabelFont()).height();
    const double half = 0.5 * label + 1;
    const double usable = std::max(1.0, pixels - 2 * half);
    const double pad = pixels > 2 * half ? (hi - lo) * half / usable : 0;
    y->setRange(std::exp2(lo - pad), std::exp2(hi + pad));
    auto ticker = y->ticker().dynamicCast<Log2Ticker>();
    ticker->setLabelledExponents(lo, hi);
    ticker->setMaxLabels(int(usable) / (label + 4) + 1);
}

std::vector<QCPItemText*> OverflowTimeline::lineLabels() const {
    std::vector<QCPItemText*> shown;
    for (QCPItemText* label : m_lineLabels)
        if (label->visible())
            shown.push_back(label);
    return shown;
}

bool OverflowTimeline::layoutChanged() const {
    return StepChart::layoutChanged() || std::abs(m_scaleRect->height() - m_scaleTicksHeight) > 2;
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
    if (!model()->recorded(StepColumn::LossScale))
        return tr("step %1: %2").arg(step).arg(scaleNote());
    QStringList skipped, differing;
    const float common = size_t(row) < m_lines.common.size() ? m_lines.common[size_t(row)] : std::nanf("");
    for (int r = 0; r < model()->worldSize(); ++r) {
        if (model()->recorded(StepColumn::Skipped) && model()->value(StepColumn::Skipped, row, r) != 0)
            skipped << QString::number(r);
        const float s = model()->value(StepColumn::LossScale, row, r);
        if (std::isfinite(s) && s > 0 && s != common)
            differing << tr("rank %1: %2").arg(r).arg(double(s), 0, 'g', 6);
    }
    QString text = differing.isEmpty()
                       ? tr("step %1: loss scale %2 on every rank").arg(step).arg(double(common), 0, 'g', 6)
                       : tr("step %1: loss scale %2 on most ranks; %3")
                             .arg(step)
                             .arg(double(common), 0, 'g', 6)
                             .arg(differing.join(QStringLiteral(", ")));
    if (!skipped.isEmpty())
        text += tr("\nupdate skipped on ranks %1").arg(skipped.join(QStringLiteral(", ")));
    return text;
}

} // namespace rs
