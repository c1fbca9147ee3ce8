// The event log model: see EventLogModel.h.
#include "panels/EventLogModel.h"

#include "model/RunModel.h"
#include "store/RunRecords.h"

#include <QApplication>
#include <QBrush>
#include <QColor>
#include <QIcon>
#include <QStyle>

namespace rs {

namespace {

// The event panel's label (capitalised, unlike the files' severityName).
QString severityLabel(Severity s) {
    switch (s) {
    case Severity::Info:
        return QStringLiteral("Info");
    case Severity::Warning:
        return QStringLiteral("Warning");
    case Severity::Error:
        return QStringLiteral("Error");
    }
    return QStringLiteral("?");
}

QColor severityColor(Severity s) {
    switch (s) {
    case Severity::Warning:
        return {0xb2, 0x6a, 0x00}; // amber, readable on white
    case Severity::Error:
        return {0xc6, 0x28, 0x28};
    default:
        return {};
    }
}

QIcon severityIcon(Severity s) {
    const QStyle::StandardPixmap px = s == Severity::Error     ? QStyle::SP_MessageBoxCritical
                                      : s == Severity::Warning ? QStyle::SP_MessageBoxWarning
                                                               : QStyle::SP_MessageBoxInformation;
    return QApplication::style()->standardIcon(px);
}

} // namespace

EventLogModel::EventLogModel(RunModel* model, QObject* parent)
    : QAbstractTableModel(parent)
    , m_model(model)
    , m_count(int(model->events().size())) {
    connect(m_model, &RunModel::runReset, this, &EventLogModel::onRunReset);
    connect(m_model, &RunModel::eventsAppended, this, &EventLogModel::onEventsAppended);
}

int EventLogModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : m_count;
}

int EventLogModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

void EventLogModel::onRunReset() {
    beginResetModel();
    m_count = int(m_model->events().size());
    endResetModel();
}

void EventLogModel::onEventsAppended(int firstIndex, int count) {
    const int available = int(m_model->events().size());
    if (firstIndex != m_count || firstIndex + count > available) {
        // Out of step with the run model (a signal missed or a reset we were not told of): start over
        // rather than show rows that are not the model's.
        onRunReset();
        return;
    }
    if (count <= 0)
        return;
    beginInsertRows({}, m_count, m_count + count - 1);
    m_count += count;
    endInsertRows();
}

QVariant EventLogModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const auto& events = m_model->events();
    if (size_t(index.row()) >= events.size())
        return {}; // the run model was cleared; our reset is on its way
    const Event& e = events[size_t(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        return display(e, index.column());
    case SortRole:
        return sortValue(e, index.column());
    case StepRole:
        return qlonglong(e.step);
    case SeverityRole:
        return int(e.severity);
    case Qt::ToolTipRole:
        return tr("Step %1, %2, %3 %4\n%5")
            .arg(e.step)
            .arg(e.rank < 0 ? tr("all ranks") : tr("rank %1").arg(e.rank))
            .arg(severityLabel(e.severity), QString::fromStdString(e.code),
                 QString::fromStdString(e.message));
    case Qt::DecorationRole:
        return index.column() == SeverityCol ? QVariant(severityIcon(e.severity)) : QVariant();
    case Qt::ForegroundRole:
        if (e.severity != Severity::Info && (index.column() == SeverityCol || index.column() == CodeCol))
            return QBrush(severityColor(e.severity));
        return {};
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::AlignVCenter |
                                   (index.column() == StepCol ? Qt::AlignRight : Qt::AlignLeft));
    default:
        return {};
    }
}

QVariant EventLogModel::display(const Event& e, int column) const {
    switch (column) {
    case StepCol:
        return qlonglong(e.step);
    case RankCol:
        return e.rank < 0 ? tr("all") : QString::number(e.rank);
    case SeverityCol:
        return severityLabel(e.severity);
    case CodeCol:
        return QString::fromStdString(e.code);
    case MessageCol:
        return QString::fromStdString(e.message);
    default:
        return {};
    }
}

QVariant EventLogModel::sortValue(const Event& e, int column) const {
    switch (column) {
    case StepCol:
        return qlonglong(e.step);
    case RankCol:
        return e.rank;
    case SeverityCol:
        return int(e.severity);
    default:
        return display(e, column);
    }
}

QVariant EventLogModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QAbstractTableModel::headerData(section, orientation, role);
    static const char* const titles[ColumnCount] = {QT_TR_NOOP("Step"), QT_TR_NOOP("Rank"),
                                                    QT_TR_NOOP("Severity"), QT_TR_NOOP("Code"),
                                                    QT_TR_NOOP("Message")};
    static const char* const tips[ColumnCount] = {
        QT_TR_NOOP("The training step the event happened at; click a row to move the cursor there"),
        QT_TR_NOOP("The rank the event is about, or \"all\" when it concerns the whole group"),
        QT_TR_NOOP("Info, Warning or Error, as in MindSpore's log levels"),
        QT_TR_NOOP("What kind of event: GRADIENT_SYNC, LOSS_FLUCTUATION, OVERFLOW, TIMEOUT, ..."),
        QT_TR_NOOP("The log line, in the words training logs use")};
    if (role == Qt::DisplayRole)
        return tr(titles[section]);
    if (role == Qt::ToolTipRole)
        return tr(tips[section]);
    return {};
}

} // namespace rs
