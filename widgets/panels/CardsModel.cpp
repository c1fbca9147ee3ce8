// The cards table model: see CardsModel.h.
#include "panels/CardsModel.h"

#include "model/RunModel.h"
#include "model/StepColumn.h"
#include "model/StepCursor.h"
#include "store/RunRecords.h"
#include "store/RunSource.h"
#include "view/RankGroups.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <algorithm>
#include <cmath>

namespace rs {

namespace {

// ~25 redraws per second at most, whatever the replay speed or the live step rate.
constexpr int kCoalesceMs = 40;
constexpr double kMiB = 1024.0 * 1024.0;

const QColor kAlarmColor(0xc6, 0x28, 0x28);   // red: a dead card
const QColor kWarningColor(0xb2, 0x6a, 0x00); // amber, dark enough to read on white

QString ms(float v) {
    return std::isfinite(v) ? QString::number(double(v), 'f', 1) : QStringLiteral("-");
}

QString notRecorded() {
    return QString::fromLatin1(kNotRecorded);
}

bool isBad(CardActivity a) {
    return a == CardActivity::Dead || a == CardActivity::TimedOut;
}

} // namespace

CardsModel::CardsModel(RunModel* model, StepCursor* cursor, QObject* parent)
    : QAbstractTableModel(parent)
    , m_model(model)
    , m_cursor(cursor) {
    m_refreshTimer.setSingleShot(true);
    m_refreshTimer.setInterval(kCoalesceMs);
    connect(&m_refreshTimer, &QTimer::timeout, this, &CardsModel::refreshNow);
    connect(m_model, &RunModel::runReset, this, &CardsModel::onRunReset);
    connect(m_model, &RunModel::stepsAppended, this, &CardsModel::scheduleRefresh);
    connect(m_model, &RunModel::statusChanged, this, &CardsModel::scheduleRefresh);
    connect(m_model, &RunModel::eventsAppended, this, &CardsModel::scheduleRefresh);
    connect(m_cursor, &StepCursor::stepChanged, this, &CardsModel::scheduleRefresh);
    refreshNow();
}

int CardsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

int CardsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

void CardsModel::scheduleRefresh() {
    if (!m_refreshTimer.isActive())
        m_refreshTimer.start();
}

void CardsModel::onRunReset() {
    // At once, not coalesced: the rows of the old run must not outlive it.
    m_refreshTimer.stop();
    beginResetModel();
    m_rows.clear();
    m_nodeOfRank.clear();
    m_shownStep = -1;
    endResetModel();
    scheduleRefresh();
}

void CardsModel::refreshNow() {
    m_refreshTimer.stop();
    if (m_rows.empty())
        readNodes(); // a new run (or none)
    int64_t step = -1;
    m_alarms = m_warnings = 0;
    std::vector<Row> rows = buildRows(&step, &m_alarms, &m_warnings);
    m_shownStep = step;
    m_grouped = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.lastRank > r.rank; });
    m_cardCount = m_model->hasRun() ? m_model->worldSize() : 0;

    if (rows.size() != m_rows.size()) {
        beginResetModel();
        m_rows = std::move(rows);
        endResetModel();
    } else {
        m_rows = std::move(rows);
        if (!m_rows.empty())
            emit dataChanged(index(0, 0), index(int(m_rows.size()) - 1, ColumnCount - 1));
    }
    emit refreshed();
}

void CardsModel::readNodes() {
    m_nodeOfRank = m_model->hasRun() ? nodeOfRank(m_model->meta()) : std::vector<int>{};
}

bool CardsModel::hasNodes() const {
    return !m_nodeOfRank.empty();
}

bool CardsModel::hasServers() const {
    return m_model->hasRun() && serverCount(m_model->meta()) > 0 &&
           std::any_of(m_model->meta().cards.begin(), m_model->meta().cards.end(),
                       [](const CardInfo& c) { return !c.serverId.empty(); });
}

std::vector<CardsModel::Row> CardsModel::buildRows(int64_t* shownStep, int* alarms, int* warnings) const {
    std::vector<Row> rows;
    if (!m_model->hasRun())
        return rows;
    const int64_t row = m_model->rowOf(m_cursor->step());
    *shownStep = row < 0 ? -1 : m_model->stepAt(row);
    for (int rank = 0; rank < m_model->worldSize(); ++rank) {
        rows.push_back(buildRow(rank, row));
        *alarms += rows.back().activity == CardActivity::Dead;
        *warnings += rows.back().activity == CardActivity::TimedOut;
    }
    return rows.size() > size_t(kMaxCardRows) ? groupRows(std::move(rows)) : rows;
}

namespace {

// Which state of a group's cards its row shows: the worst.
int severity(CardActivity a) {
    switch (a) {
    case CardActivity::Dead:
        return 6;
    case CardActivity::TimedOut:
        return 5;
    case CardActivity::Stopped:
        return 4;
    case CardActivity::WaitingForData:
        return 3;
    case CardActivity::Running:
        return 2;
    case CardActivity::Finished:
        return 1;
    case CardActivity::Imported:
        return 0;
    }
    return 0;
}

} // namespace

std::vector<CardsModel::Row> CardsModel::groupRows(std::vector<Row> rows) const {
    constexpr size_t kMostDrawnOut = 32; // past this, the caption's counts speak for the rest
    const view::RankGroups groups = view::rankGroups(m_model->meta(), kMaxCardRows);
    std::vector<float> times;
    for (const Row& r : rows)
        if (std::isfinite(r.stepMs))
            times.push_back(r.stepMs);
    float median = std::nanf("");
    if (!times.empty()) {
        std::nth_element(times.begin(), times.begin() + std::ptrdiff_t(times.size() / 2), times.end());
        median = times[times.size() / 2];
    }
    std::vector<Row> out;
    size_t drawnOut = 0;
    for (int g = 0; g < groups.size(); ++g) {
        const int first = groups.start[size_t(g)], last = groups.end(g) - 1;
        Row agg = rows[size_t(first)];
        agg.lastRank = last;
        agg.deviceId = -1;
        agg.deviceIp.clear();
        const QString lastServer = rows[size_t(last)].serverId;
        if (lastServer != agg.serverId)
            agg.serverId += QStringLiteral(" … ") + lastServer;
        std::vector<size_t> standOut;
        for (int k = first; k <= last; ++k) {
            Row& r = rows[size_t(k)];
            agg.hbmUsedBytes = std::max(agg.hbmUsedBytes, r.hbmUsedBytes);
            agg.stepMs = std::fmax(agg.stepMs, r.stepMs);
            agg.computeMs = std::fmax(agg.computeMs, r.computeMs);
            agg.commMs = std::fmax(agg.commMs, r.commMs);
            if (severity(r.activity) > severity(agg.activity)) {
                agg.activity = r.activity;
                agg.badSince = r.badSince;
            }
            if (isBad(r.activity))
                r.standsOut = activityName(r.activity);
            else if (std::isfinite(median) && median > 0 && r.stepMs >= 1.5f * median)
                r.standsOut = QObject::tr("a step %1x the median of all cards")
                                  .arg(double(r.stepMs / median), 0, 'f', 1);
            if (!r.standsOut.isEmpty())
                standOut.push_back(size_t(k));
        }
        out.push_back(agg);
        for (size_t k : standOut)
            if (drawnOut++ < kMostDrawnOut)
                out.push_back(rows[k]);
    }
    return out;
}

CardsModel::Row CardsModel::buildRow(int rank, int64_t row) const {
    Row r;
    r.rank = rank;
    r.deviceId = rank;
    const auto& cards = m_model->meta().cards;
    if (rank < int(cards.size())) {
        const CardInfo& c = cards[size_t(rank)];
        r.deviceId = c.deviceId;
        r.deviceIp = QString::fromStdString(c.deviceIp);
        r.serverId = QString::fromStdString(c.serverId);
        r.hbmUsedBytes = c.hbmUsedBytes;
        r.hbmTotalBytes = c.hbmTotalBytes;
    }
    if (rank < int(m_nodeOfRank.size()))
        r.node = m_nodeOfRank[size_t(rank)];
    // Waiting for data, unless the file is complete and its source records no card state (an import).
    const bool imported = !m_model->recorded(StepColumn::State);
    if (row < 0 && !(imported && m_model->isComplete()))
        return r;
    if (imported) {
        r.stepMs = r.computeMs = r.commMs = std::nanf("");
        r.activity = CardActivity::Imported;
        return r;
    }
    r.stepMs = m_model->value(StepColumn::StepMs, row, rank);
    r.computeMs = m_model->value(StepColumn::ComputeMs, row, rank);
    r.commMs = m_model->value(StepColumn::CommMs, row, rank);
    switch (CardState(int(m_model->value(StepColumn::State, row, rank)))) {
    case CardState::Dead:
        r.activity = CardActivity::Dead;
        break;
    case CardState::TimedOut:
        r.activity = CardActivity::TimedOut;
        break;
    case CardState::Stopped:
        r.activity = CardActivity::Stopped;
        break;
    case CardState::Ok:
        // A complete run's last step is where the card finished (or was stopped by the user), not where it is
        // still running.
        if (m_model->isComplete() && row == m_model->stepCount() - 1)
            r.activity = m_model->stopReason() == QLatin1String("completed") ? CardActivity::Finished
                                                                             : CardActivity::Stopped;
        else
            r.activity = CardActivity::Running;
        break;
    }
    if (isBad(r.activity))
        r.badSince = badStreakStart(rank, row);
    else
        applyFailureEvent(r, rank, row);
    return r;
}

// A card that dies (CARD_FAILED) or stops hearing from its peers (TIMEOUT) writes no step row for that step:
// the event log is where the run file says so. Shown from the event's step on, and on the run's last row
// (the event's step is often the one step after it).
void CardsModel::applyFailureEvent(Row& r, int rank, int64_t row) const {
    const int64_t step = m_model->stepAt(row);
    const bool lastRow = row == m_model->stepCount() - 1;
    for (const Event& e : m_model->events()) {
        if (e.rank != rank || (e.code != eventcode::kCardFailed && e.code != eventcode::kTimeout))
            continue;
        if (e.step > step && !lastRow)
            continue;
        r.activity = e.code == eventcode::kCardFailed ? CardActivity::Dead : CardActivity::TimedOut;
        r.badSince = e.step;
        return;
    }
}

// The first step of the run of steps, ending at row, in which the rank was in the same bad state: the
// tooltip says "dead since step 40", which is what a user hunting the cause needs.
int64_t CardsModel::badStreakStart(int rank, int64_t row) const {
    const float state = m_model->value(StepColumn::State, row, rank);
    int64_t first = row;
    while (first > 0 && m_model->value(StepColumn::State, first - 1, rank) == state)
        --first;
    return m_model->stepAt(first);
}

QString CardsModel::activityName(CardActivity a) {
    switch (a) {
    case CardActivity::WaitingForData:
        return tr("waiting for data");
    case CardActivity::Running:
        return tr("running");
    case CardActivity::Finished:
        return tr("finished");
    case CardActivity::Stopped:
        return tr("stopped");
    case CardActivity::Dead:
        return tr("dead");
    case CardActivity::TimedOut:
        return tr("timed out");
    case CardActivity::Imported:
        return tr("imported");
    }
    return {};
}

QString CardsModel::healthName(CardActivity a) {
    switch (a) {
    case CardActivity::WaitingForData:
        return QStringLiteral("-");
    case CardActivity::Dead:
        return QStringLiteral("Alarm");
    case CardActivity::TimedOut:
        return QStringLiteral("Warning");
    case CardActivity::Imported:
        return notRecorded();
    default:
        return QStringLiteral("OK");
    }
}

QVariant CardsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Row& r = m_rows[size_t(index.row())];
    const int column = index.column();
    switch (role) {
    case Qt::DisplayRole:
        return displayText(r, column);
    case RawRole:
        return rawValue(r, column);
    case Qt::ToolTipRole:
        return cellToolTip(r, column);
    case Qt::TextAlignmentRole: {
        const bool number = column == Npu || column == Rank || column == Node || column == Hbm ||
                            column == StepTime || column == CommWait;
        return QVariant::fromValue(Qt::AlignVCenter | (number ? Qt::AlignRight : Qt::AlignLeft));
    }
    case Qt::ForegroundRole:
        if ((column == Health || column == State) && isBad(r.activity))
            return QBrush(r.activity == CardActivity::Dead ? kAlarmColor : kWarningColor);
        return {};
    case Qt::FontRole:
        if (column == Health && isBad(r.activity)) {
            QFont f;
            f.setBold(true);
            return f;
        }
        return {};
    default:
        return {};
    }
}

QVariant CardsModel::displayText(const Row& r, int column) const {
    const bool hasStep = r.activity != CardActivity::WaitingForData;
    switch (column) {
    case Npu:
        if (r.lastRank > r.rank)
            return QObject::tr("%1 cards").arg(r.lastRank - r.rank + 1);
        return r.deviceId < 0 ? QVariant(notRecorded()) : QVariant(r.deviceId);
    case Rank:
        if (r.lastRank > r.rank)
            return QStringLiteral("%1–%2").arg(r.rank).arg(r.lastRank);
        return r.standsOut.isEmpty() ? QVariant(r.rank) : QVariant(QStringLiteral("↳ %1").arg(r.rank));
    case Node:
        return r.node < 0 ? notRecorded() : QString::number(r.node);
    case Server:
        return r.serverId.isEmpty() ? notRecorded() : r.serverId;
    case DeviceIp:
        if (r.lastRank > r.rank)
            return QStringLiteral("-");
        return r.deviceIp.isEmpty() ? notRecorded() : r.deviceIp;
    case Health:
        return healthName(r.activity);
    case Hbm:
        if (r.hbmTotalBytes <= 0)
            return notRecorded();
        return QStringLiteral("%1 / %2 MB")
            .arg(std::llround(double(r.hbmUsedBytes) / kMiB))
            .arg(std::llround(double(r.hbmTotalBytes) / kMiB));
    case StepTime:
        if (hasStep && !m_model->recorded(StepColumn::StepMs))
            return notRecorded();
        return hasStep ? ms(r.stepMs) : QStringLiteral("-");
    case CommWait:
        if (hasStep && !m_model->recorded(StepColumn::CommMs))
            return notRecorded();
        return hasStep ? ms(r.commMs) : QStringLiteral("-");
    case State:
        return activityName(r.activity);
    default:
        return {};
    }
}

QVariant CardsModel::rawValue(const Row& r, int column) const {
    switch (column) {
    case Npu:
        return r.deviceId;
    case Rank:
        return r.rank;
    case Node:
        return r.node;
    case Server:
        return r.serverId;
    case DeviceIp:
        return r.deviceIp;
    case Hbm:
        return qlonglong(r.hbmUsedBytes);
    case StepTime:
        return r.stepMs;
    case CommWait:
        return r.commMs;
    case Health:
    case State:
        return int(r.activity);
    default:
        return {};
    }
}

QString CardsModel::cellToolTip(const Row& r, int column) const {
    if (r.lastRank > r.rank)
        return tr("Ranks %1–%2 on %3: each column the worst of their cards (the latest state, the largest "
                  "memory and times). The cards that stand out (dead, timed out, a step 1.5 times the median "
                  "or "
                  "longer) follow in rows of their own.")
            .arg(r.rank)
            .arg(r.lastRank)
            .arg(r.serverId.isEmpty() ? tr("their servers") : r.serverId);
    QString where =
        r.deviceId < 0 ? tr("Rank %1").arg(r.rank) : tr("NPU %1, rank %2").arg(r.deviceId).arg(r.rank);
    if (!r.deviceIp.isEmpty())
        where += tr(", device IP %1 on server %2").arg(r.deviceIp, r.serverId);
    if (r.activity == CardActivity::WaitingForData)
        return where + tr("\nNo step recorded yet.");
    if (r.activity == CardActivity::Imported)
        return where + tr("\nStep %1: imported from %2, which records no card state, step or communication "
                          "time")
                           .arg(m_shownStep)
                           .arg(QString::fromStdString(describeRun(m_model->meta())));
    if (!r.standsOut.isEmpty())
        where += tr("\nDrawn out of its group: %1").arg(r.standsOut);
    QString text = where + tr("\nStep %1: %2").arg(m_shownStep).arg(activityName(r.activity));
    if (isBad(r.activity))
        text += tr(" since step %1 (health %2)").arg(r.badSince).arg(healthName(r.activity));
    switch (column) {
    case Hbm:
        if (r.hbmTotalBytes > 0)
            text += tr("\nHBM: %1 %% of %2 MB used (estimate: weights, gradients, momentum, activations)")
                        .arg(100.0 * double(r.hbmUsedBytes) / double(r.hbmTotalBytes), 0, 'f', 1)
                        .arg(std::llround(double(r.hbmTotalBytes) / kMiB));
        break;
    case StepTime:
    case CommWait:
        text += tr("\nStep %1 ms = compute %2 ms + communication %3 ms + other")
                    .arg(ms(r.stepMs), ms(r.computeMs), ms(r.commMs));
        break;
    default:
        break;
    }
    return text;
}

QVariant CardsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* const titles[ColumnCount] = {
        QT_TR_NOOP("NPU"),       QT_TR_NOOP("Rank"),      QT_TR_NOOP("Node"),
        QT_TR_NOOP("Server"),    QT_TR_NOOP("Device IP"), QT_TR_NOOP("Health"),
        QT_TR_NOOP("HBM Usage"), QT_TR_NOOP("Step (ms)"), QT_TR_NOOP("Comm wait (ms)"),
        QT_TR_NOOP("State")};
    static const char* const tips[ColumnCount] = {
        QT_TR_NOOP("device_id: the card's index within its server (0..7), as in the rank table and npu-smi"),
        QT_TR_NOOP("rank_id: the card's place in the data-parallel group (RANK_ID)"),
        QT_TR_NOOP("The node process that hosted the card (each holds whole servers of the rank table)"),
        QT_TR_NOOP("server_id: the card's server in the rank table, or the host of a PyTorch DDP job"),
        QT_TR_NOOP("device_ip: the card's address for HCCL, from the rank table"),
        QT_TR_NOOP("npu-smi's health words: OK; Warning when the card timed out in a collective; Alarm when "
                   "it died"),
        QT_TR_NOOP("Estimated HBM in use / the card's HBM (Ascend 910: 32 GB): weights, gradients, momentum, "
                   "activations"),
        QT_TR_NOOP(
            "Wall time of the card's whole step at the cursor's step: forward, backward, all-reduce, update"),
        QT_TR_NOOP(
            "Time the card spent inside collectives at the cursor's step, including waiting for slower "
            "peers: one card with little wait while the others wait long is the straggler"),
        QT_TR_NOOP(
            "What the card was doing at the cursor's step: running, finished, stopped, dead, timed out, "
            "waiting for data, or imported (a source that records no card state)")};
    if (role == Qt::DisplayRole)
        return tr(titles[section]);
    if (role == Qt::ToolTipRole)
        return tr(tips[section]);
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::AlignVCenter | (section == Server || section == DeviceIp ||
                                                               section == Health || section == State
                                                           ? Qt::AlignLeft
                                                           : Qt::AlignRight));
    return {};
}

} // namespace rs
