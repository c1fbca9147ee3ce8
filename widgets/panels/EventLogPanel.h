// The event log panel: the run's events in a sortable table, filtered by minimum severity and by text, with
// a count of what is shown. Clicking or activating an event moves the window's step cursor to its step, so
// every chart jumps to where the log says things went wrong.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QModelIndex;
class QTableView;

namespace rs {

class EventFilterProxy;
class EventLogModel;
class RunModel;
class StepCursor;

class EventLogPanel : public QWidget {
    Q_OBJECT
public:
    EventLogPanel(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    EventLogModel* eventModel() const { return m_events; }
    EventFilterProxy* proxy() const { return m_proxy; }
    QTableView* view() const { return m_view; }
    QComboBox* severityFilter() const { return m_severity; } // items: all, warnings and errors, errors
    QLineEdit* textFilter() const { return m_text; }
    QString countText() const; // e.g. "3 of 12 events"

private:
    void buildFilterBar(QWidget* bar);
    void setupView();
    void goToEvent(const QModelIndex& proxyIndex);
    void updateCount();
    void onRowsAboutToBeInserted();
    void onRowsInserted();

    StepCursor* m_cursor;
    EventLogModel* m_events;
    EventFilterProxy* m_proxy;
    QTableView* m_view;
    QComboBox* m_severity = nullptr;
    QLineEdit* m_text = nullptr;
    QLabel* m_count = nullptr;
    bool m_wasAtBottom = true; // a live log keeps its newest event in view unless the user scrolled up
};

} // namespace rs
