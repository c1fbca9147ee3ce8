// Rank × rank heatmap (see RankHeatmap.h).
#include "charts/RankHeatmap.h"

#include "charts/ChartPalette.h"
#include "charts/GreyCellLegend.h"
#include "model/RunModel.h"
#include "model/StepDetail.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QtConcurrent>
#include <array>
#include <cmath>
#include <limits>
#include <qcustomplot.h>

namespace rs {
namespace {

using view::RankMetric;

constexpr std::array<RankMetric, 5> kMetrics = {RankMetric::SyncedMismatch, RankMetric::SyncedNormDiff,
                                                RankMetric::SketchCosine, RankMetric::WeightMismatch,
                                                RankMetric::ShardOverlap};

QString metricLabel(RankMetric m) {
    switch (m) {
    case RankMetric::SyncedMismatch:
        return QObject::tr("synced gradient mismatch");
    case RankMetric::SyncedNormDiff:
        return QObject::tr("synced norm difference");
    case RankMetric::SketchCosine:
        return QObject::tr("local gradient cosine (sketch)");
    case RankMetric::WeightMismatch:
        return QObject::tr("weight fingerprint mismatch");
    case RankMetric::ShardOverlap:
        return QObject::tr("shard overlap");
    }
    return {};
}

// What the color scale measures, per metric.
QString scaleLabel(RankMetric m) {
    switch (m) {
    case RankMetric::SyncedMismatch:
        return QObject::tr("parameters whose synced gradient differs");
    case RankMetric::SyncedNormDiff:
        return QObject::tr("max relative synced norm difference");
    case RankMetric::SketchCosine:
        return QObject::tr("cosine of local gradients");
    case RankMetric::WeightMismatch:
        return QObject::tr("parameters whose weights differ");
    case RankMetric::ShardOverlap:
        return QObject::tr("share of row rank's samples seen by column rank");
    }
    return {};
}

// The colour bar's title: the unit, short enough for a bar about 90 px long (the caption above the map names
// the metric; scaleLabel, the bar's tooltip, says it in full).
QString barTitle(RankMetric m) {
    switch (m) {
    case RankMetric::SyncedMismatch:
    case RankMetric::WeightMismatch:
        return QObject::tr("parameters differing");
    case RankMetric::SyncedNormDiff:
        return QObject::tr("relative norm difference");
    case RankMetric::SketchCosine:
        return QObject::tr("cosine");
    case RankMetric::ShardOverlap:
        return QObject::tr("share of samples");
    }
    return {};
}

// Why a cell is grey (NaN in view::rankMatrix), per metric.
QString greyReason(RankMetric m) {
    switch (m) {
    case RankMetric::SyncedMismatch:
        return QObject::tr("synced gradients not recorded on both ranks");
    case RankMetric::SyncedNormDiff:
        return QObject::tr("synced norms not recorded, or NaN on both ranks");
    case RankMetric::SketchCosine:
        return QObject::tr("a sketch not recorded, zero or not finite");
    case RankMetric::WeightMismatch:
        return QObject::tr("no weight fingerprints of both ranks (yet)");
    case RankMetric::ShardOverlap:
        return QObject::tr("a rank recorded no sample ids this step");
    }
    return {};
}

// The parameter box may be narrower than its longest entry: a ResNet's parameter names run to 35
// characters, and a box as wide as them made the header, and so the dock, wider than a 1280x800 window
// gives it (the title was cut). It is as wide as "All parameters" at least, grows up to its entries' width
// where there is room, and its open list and tooltip show the names whole.
void makeShrinkable(QComboBox* box, QHBoxLayout* header) {
    box->setMinimumWidth(box->sizeHint().width()); // its first entry, "All parameters", whole
    box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    box->setMinimumContentsLength(0);
    box->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    header->setStretchFactor(box, 1);
}

void fitBox(QComboBox* box) {
    const int full = box->view()->sizeHintForColumn(0) + 40; // and the arrow and frame
    box->view()->setMinimumWidth(full);
    box->setMaximumWidth(std::max(full, box->minimumWidth()));
    box->setToolTip(box->currentText());
}

bool isCount(RankMetric m) {
    return m == RankMetric::SyncedMismatch || m == RankMetric::WeightMismatch;
}

} // namespace

RankHeatmap::RankHeatmap(RunModel* model, StepCursor* cursor, QWidget* parent)
    : DetailChart(model, cursor, QStringLiteral("rank-heatmap"), QStringLiteral("Rank × rank"), parent)
    , m_metricBox(new QComboBox(this))
    , m_paramBox(new QComboBox(this)) {
    m_metricBox->setObjectName(QStringLiteral("metric"));
    for (RankMetric m : kMetrics)
        m_metricBox->addItem(metricLabel(m), int(m));
    m_paramBox->setObjectName(QStringLiteral("param"));
    m_paramBox->addItem(tr("All parameters"), -1);
    header()->addWidget(m_metricBox);
    header()->addWidget(m_paramBox);
    m_metricBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    makeShrinkable(m_paramBox, header());
    fitBox(m_paramBox);
    for (QComboBox* box : {m_metricBox, m_paramBox})
        connect(box, &QComboBox::currentIndexChanged, box, [box] { box->setToolTip(box->currentText()); });
    connect(m_metricBox, &QComboBox::currentIndexChanged, this,
            [this](int i) { setMetric(RankMetric(m_metricBox->itemData(i).toInt())); });
    connect(m_paramBox, &QComboBox::currentIndexChanged, this,
            [this](int i) { setParam(m_paramBox->itemData(i).toInt()); });
    connect(model, &RunModel::runReset, this, [this] {
        m_matrix = {};
        m_ready = {};
        ++m_run;
        setParam(-1);
    });

    setupColorMap(&m_map, &m_scale);
    QCustomPlot* p = plot();
    p->xAxis->setLabel(tr("rank (column)"));
    p->yAxis->setLabel(tr("rank (row)"));
    p->yAxis->setRangeReversed(true); // rank 0 top left, as matrices are read
    p->xAxis->setTicker(integerTicker());
    p->yAxis->setTicker(integerTicker());
    m_watcher = new QFutureWatcher<view::Matrix>(this);
    connect(m_watcher, &QFutureWatcher<view::Matrix>::finished, this, [this] {
        m_ready = m_watcher->result();
        m_readyKey = m_runningKey;
        if (m_wantedKey == m_readyKey)
            markDirty();
        else
            computeInBackground(m_wantedKey); // the cursor moved on meanwhile
    });
    // Zooming a large run's map switches between groups and single ranks (queued: one redraw per wheel turn).
    connect(p->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
        if (m_matrix.rows <= kMaxCellRanks || m_redrawQueued)
            return;
        m_redrawQueued = true;
        QTimer::singleShot(0, this, [this] {
            m_redrawQueued = false;
            if (m_matrix.rows <= kMaxCellRanks)
                return;
            const bool wasPooled = pooled();
            if (wasPooled != (ranksInView() > kMaxCellRanks)) {
                drawCells();
                setCaption(m_captionBase + poolNote()); // the caption says what a cell is
            }
            fitIntegerTicks(plot()->xAxis, std::min(m_matrix.rows, ranksInView()));
            fitIntegerTicks(plot()->yAxis, std::min(m_matrix.rows, ranksInView()));
            plot()->replot(QCustomPlot::rpQueuedReplot);
        });
    });
    placeLegendBelow();
    m_grey = std::make_unique<GreyCellLegend>(p);
    m_grey->setShown(false); // until there are cells
    applyMetricStyle();
}

RankHeatmap::~RankHeatmap() = default;

QString RankHeatmap::greyLegendText() const {
    return m_grey->isShown() ? m_grey->text() : QString();
}

void RankHeatmap::setMetric(RankMetric metric) {
    const QSignalBlocker block(m_metricBox);
    m_metricBox->setCurrentIndex(m_metricBox->findData(int(metric)));
    m_metricBox->setToolTip(m_metricBox->currentText()); // signals blocked: the tooltip follows here
    if (metric == m_metric)
        return;
    m_metric = metric;
    applyMetricStyle();
    markDirty();
}

void RankHeatmap::setParam(int param) {
    if (param < -1 || param >= model()->paramCount())
        param = -1;
    syncParamBox();
    const QSignalBlocker block(m_paramBox);
    m_paramBox->setCurrentIndex(m_paramBox->findData(param));
    m_paramBox->setToolTip(m_paramBox->currentText());
    if (param == m_param)
        return;
    m_param = param;
    markDirty();
}

// The parameter list follows the run's meta (known once the first rows of a run are in).
void RankHeatmap::syncParamBox() {
    const auto& params = model()->meta().params;
    if (m_paramBox->count() == int(params.size()) + 1 &&
        (params.empty() || m_paramBox->itemText(1) == QString::fromStdString(params.front().name)))
        return;
    const QSignalBlocker block(m_paramBox);
    m_paramBox->clear();
    m_paramBox->addItem(tr("All parameters"), -1);
    for (size_t i = 0; i < params.size(); ++i)
        m_paramBox->addItem(QString::fromStdString(params[i].name), int(i));
    m_paramBox->setCurrentIndex(m_paramBox->findData(m_param));
    fitBox(m_paramBox);
}

void RankHeatmap::applyMetricStyle() {
    m_map->setGradient(m_metric == RankMetric::SketchCosine ? palette::divergingGradient()
                                                            : palette::sequentialGradient());
    m_scaleTitle.setText(barTitle(m_metric));
    m_scaleTitle.fit(m_scale);
    m_grey->setText(tr("grey: %1").arg(greyReason(m_metric)));
    // Counts are whole numbers of parameters: no 0.2 ticks.
    if (isCount(m_metric))
        m_scale->axis()->setTicker(integerTicker());
    else
        m_scale->axis()->setTicker(QSharedPointer<QCPAxisTicker>::create());
}

void RankHeatmap::clear() {
    m_scaleTitle.fit(m_scale);
    m_matrix = {};
    m_groups = {};
    m_pooled = {};
    if (m_worstMark)
        m_worstMark->setVisible(false);
    fillColorMap(m_map, 0, 0, QCPRange(), QCPRange(), {});
    drawCellGrid(0, 0, false);
    drawCellTexts();
    m_grey->setShown(false);
    fitLegendColumns();
}

int RankHeatmap::ranksInView() const {
    return int(std::ceil(std::max(plot()->xAxis->range().size(), plot()->yAxis->range().size())));
}

void RankHeatmap::drawCells() {
    const int R = m_matrix.rows;
    m_groups = {};
    m_pooled = {};
    m_worstRow = m_worstCol = -1;
    if (R > kMaxCellRanks) {
        // The worst pair of ranks (off the diagonal), marked whatever the cells are.
        const bool low = m_metric == RankMetric::SketchCosine;
        double worst = std::numeric_limits<double>::quiet_NaN();
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < R; ++j) {
                const double v = m_matrix.at(i, j);
                if (i != j && std::isfinite(v) && (std::isnan(worst) || (low ? v < worst : v > worst))) {
                    worst = v;
                    m_worstRow = i;
                    m_worstCol = j;
                }
            }
        // A healthy run's worst is its best: nothing stands out.
        if (m_worstRow >= 0 && worst == (low ? 1.0 : 0.0))
            m_worstRow = m_worstCol = -1;
    }
    if (R > kMaxCellRanks && ranksInView() > kMaxCellRanks) {
        m_groups = view::rankGroups(model()->meta(), kMaxCellRanks);
        m_pooled = view::poolMatrix(m_matrix, m_groups, m_metric == RankMetric::SketchCosine);
        const int G = m_groups.size();
        const auto center = [&](int g) { return 0.5 * (m_groups.start[size_t(g)] + m_groups.end(g) - 1); };
        fillColorMap(m_map, G, G, QCPRange(center(0), center(G - 1)), QCPRange(center(0), center(G - 1)),
                     [this](int col, int row) { return m_pooled.at(row, col); });
        drawCellGrid(0, 0, false);
    } else {
        fillColorMap(m_map, R, R, QCPRange(0, R - 1), QCPRange(0, R - 1),
                     [this](int col, int row) { return m_matrix.at(row, col); });
        drawCellGrid(R <= kMaxCellRanks ? R : 0, R <= kMaxCellRanks ? R : 0, R <= kMaxCellRanks);
    }
    if (!m_worstMark) {
        m_worstMark = new QCPItemText(plot());
        m_worstMark->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        m_worstMark->setPadding(QMargins(3, 1, 3, 1));
        m_worstMark->setBrush(QBrush(QColor(255, 255, 255, 220)));
        m_worstMark->setPen(QPen(Qt::black));
        m_worstMark->setSelectable(false);
    }
    m_worstMark->setVisible(m_worstRow >= 0);
    if (m_worstRow >= 0) {
        m_worstMark->position->setCoords(m_worstCol, m_worstRow);
        m_worstMark->setText(QStringLiteral("◀ ") + worstPairText());
    }
}

QString RankHeatmap::poolNote() const {
    if (!pooled())
        return {};
    const int k = m_groups.serversPerGroup;
    if (k == 1)
        return tr(" · a cell: a server x a server, its worst pair (the wheel zooms)");
    return k > 1 ? tr(" · a cell: %1 servers x %1 servers, its worst pair (the wheel zooms)").arg(k)
                 : tr(" · a cell: %1 x %1 ranks, its worst pair (the wheel zooms)").arg(m_groups.end(0));
}

QString RankHeatmap::worstPairText() const {
    if (m_worstRow < 0)
        return {};
    return tr("rank %1 vs rank %2: %3")
        .arg(m_worstRow)
        .arg(m_worstCol)
        .arg(cellText(m_matrix.at(m_worstRow, m_worstCol)));
}

void RankHeatmap::computeInBackground(const MatrixKey& key) {
    m_wantedKey = key;
    if (m_watcher->isRunning())
        return; // its end starts the one wanted now
    const std::shared_ptr<const StepDetail> d = detail();
    if (!d || d->step != key.step)
        return;
    m_runningKey = key;
    m_watcher->setFuture(QtConcurrent::run([d, meta = model()->meta(), key] {
        return view::rankMatrix(RankMetric(key.metric), meta, d->record, d->weights.get(), key.param);
    }));
}

void RankHeatmap::draw(const StepDetail& detail) {
    m_scaleTitle.fit(m_scale); // first: a large run's map may not be drawn until its matrix is ready
    syncParamBox();
    const RunMeta& meta = model()->meta();
    if (meta.worldSize > kMaxCellRanks) {
        const MatrixKey key{detail.step, int(m_metric), m_param, m_run};
        if (!(m_readyKey == key)) {
            computeInBackground(key);
            if (m_matrix.rows != meta.worldSize)
                return; // nothing to show until the first matrix is ready
            setCaption(m_captionBase + poolNote() + tr(" · computing step %1…").arg(detail.step));
            return; // the last map stays
        }
        m_matrix = m_ready;
    } else {
        m_matrix = view::rankMatrix(m_metric, meta, detail.record, detail.weights.get(), m_param);
    }
    const int R = m_matrix.rows;
    // A large run: the wheel zooms to single ranks (below kMaxCellRanks in view) and drags around.
    if (R > kMaxCellRanks) {
        plot()->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
        plot()->axisRect()->setRangeZoomAxes(plot()->xAxis, plot()->yAxis);
        plot()->axisRect()->setRangeDragAxes(plot()->xAxis, plot()->yAxis);
    } else {
        plot()->setInteractions({});
    }
    const QCPRange full(-0.5, R - 0.5);
    const bool zoomed = R > kMaxCellRanks && m_shownRanks == R && plot()->xAxis->range().size() < R - 0.5;
    if (!zoomed) {
        plot()->xAxis->setRange(full);
        plot()->yAxis->setRange(full);
    }
    m_shownRanks = R;
    drawCells();
    const double hi = view::finiteRange(m_matrix).second;
    const double top = std::isfinite(hi) ? hi : 0;
    switch (m_metric) {
    case RankMetric::SketchCosine:
        m_map->setDataRange(QCPRange(-1, 1));
        break;
    case RankMetric::ShardOverlap:
        m_map->setDataRange(QCPRange(0, 1));
        break;
    case RankMetric::SyncedNormDiff:
        // Synced gradients must match exactly: any difference is a finding, so even a tiny one shows.
        m_map->setDataRange(QCPRange(0, std::max(top, 1e-6)));
        break;
    default:
        m_map->setDataRange(QCPRange(0, std::max(top, 1.0)));
    }
    fitIntegerTicks(plot()->xAxis, std::min(R, ranksInView()));
    fitIntegerTicks(plot()->yAxis, std::min(R, ranksInView()));
    drawCellTexts();
    m_grey->setShown(true);
    m_grey->fit();
    fitLegendColumns();

    QString what = metricLabel(m_metric);
    if (m_param >= 0 && m_param < int(meta.params.size()))
        what += QStringLiteral(" · ") + QString::fromStdString(meta.params[size_t(m_param)].name);
    QString caption = tr("%1 · step %2").arg(what).arg(detail.step);

    if (m_metric == RankMetric::WeightMismatch)
        caption += detail.weights ? tr(" (weights of step %1)").arg(detail.weights->step)
                                  : tr(" (no weight fingerprints yet)");
    m_captionBase = caption;
    setCaption(caption + poolNote());
}

bool RankHeatmap::layoutChanged() const {
    return m_scaleTitle.needsFit(m_scale);
}

QString RankHeatmap::cellText(double v) const {
    if (!std::isfinite(v))
        return QStringLiteral("–");
    if (isCount(m_metric))
        return QString::number(qRound64(v));
    return QString::number(v, 'g', 2);
}

void RankHeatmap::drawCellTexts() {
    for (QCPItemText* t : m_texts)
        plot()->removeItem(t);
    m_texts.clear();
    const int R = m_matrix.rows;
    if (R == 0 || R > kMaxTextRanks)
        return;
    QCPColorGradient gradient = m_map->gradient();
    QFont f = font();
    f.setPointSizeF(R <= 4 ? f.pointSizeF() * 1.1 : f.pointSizeF() * 0.9);
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < R; ++j) {
            const double v = m_matrix.at(i, j);
            auto* t = new QCPItemText(plot());
            t->position->setCoords(j, i);
            t->setText(cellText(v));
            t->setFont(f);
            const QColor bg =
                std::isfinite(v) ? QColor(gradient.color(v, m_map->dataRange())) : palette::nanColor();
            t->setColor(palette::textColorOn(bg));
            t->setSelectable(false);
            m_texts.push_back(t);
        }
}

bool RankHeatmap::cellAt(const QPointF& pos, int* row, int* col) const {
    if (m_matrix.rows == 0 || !plot()->axisRect()->rect().contains(pos.toPoint()))
        return false;
    *col = int(std::lround(plot()->xAxis->pixelToCoord(pos.x())));
    *row = int(std::lround(plot()->yAxis->pixelToCoord(pos.y())));
    return *row >= 0 && *row < m_matrix.rows && *col >= 0 && *col < m_matrix.cols;
}

QString RankHeatmap::toolTipAt(const QPointF& pos) const {
    int i = 0, j = 0;
    if (!cellAt(pos, &i, &j))
        return m_scale->outerRect().contains(pos.toPoint()) ? scaleLabel(m_metric) : m_grey->toolTipAt(pos);
    if (pooled()) {
        const int gi = m_groups.groupOf(i), gj = m_groups.groupOf(j);
        return tr("%1 vs %2\n%3, worst pair: %4\n(the wheel zooms to single ranks)")
            .arg(QString::fromStdString(m_groups.label(gi)), QString::fromStdString(m_groups.label(gj)),
                 metricLabel(m_metric), cellText(m_pooled.at(gi, gj)));
    }
    const double v = m_matrix.at(i, j);
    return tr("rank %1 vs rank %2\n%3: %4")
        .arg(i)
        .arg(j)
        .arg(scaleLabel(m_metric))
        .arg(std::isfinite(v) ? QString::number(v, 'g', 6) : tr("none (%1)").arg(greyReason(m_metric)));
}

} // namespace rs
