// The event log's filter: see EventFilterProxy.h.
#include "panels/EventFilterProxy.h"

#include "panels/EventLogModel.h"

namespace rs {

EventFilterProxy::EventFilterProxy(QObject* parent)
    : QSortFilterProxyModel(parent) {
    setSortRole(EventLogModel::SortRole);
    setFilterKeyColumn(-1); // the text may match any column
    setFilterCaseSensitivity(Qt::CaseInsensitive);
}

void EventFilterProxy::setMinimumSeverity(int severity) {
    if (severity == m_minSeverity)
        return;
    m_minSeverity = severity;
    invalidateRowsFilter();
}

void EventFilterProxy::setText(const QString& text) {
    setFilterFixedString(text);
}

bool EventFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const {
    const QModelIndex index = sourceModel()->index(sourceRow, 0, sourceParent);
    if (index.data(EventLogModel::SeverityRole).toInt() < m_minSeverity)
        return false;
    return QSortFilterProxyModel::filterAcceptsRow(sourceRow, sourceParent);
}

} // namespace rs
