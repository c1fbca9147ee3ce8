// The event log's filter: a minimum severity and a case-insensitive text that must appear in some column
// (so "GRADIENT", "rank 3" in a message, or a step number all find their rows). Sorts by raw values.
#pragma once

#include <QSortFilterProxyModel>

namespace rs {

class EventFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit EventFilterProxy(QObject* parent = nullptr);

    int minimumSeverity() const { return m_minSeverity; }
    void setMinimumSeverity(int severity); // an rs::Severity as int; 0 (Info) shows everything
    void setText(const QString& text);

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

private:
    int m_minSeverity = 0;
};

} // namespace rs
