// The run's event log as a table (step, rank, severity, code, message): the lines users know from their
// training logs, e.g. GRADIENT_SYNC "Rank 0 and Rank 1 parameter gradient mismatch at step 1200". Rows are
// appended as the run model reports new events, never re-read, so a live log stays cheap to show.
#pragma once

#include <QAbstractTableModel>
#include <cstdint>

namespace rs {

class RunModel;
struct Event;

class EventLogModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { StepCol, RankCol, SeverityCol, CodeCol, MessageCol, ColumnCount };
    // The raw, sortable value of a cell: step (qlonglong), rank (int, -1 for all), severity (int), text.
    static constexpr int SortRole = Qt::UserRole;
    static constexpr int StepRole = Qt::UserRole + 1;     // the event's step, on every column
    static constexpr int SeverityRole = Qt::UserRole + 2; // the event's rs::Severity as int, on every column

    explicit EventLogModel(RunModel* model, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    void onRunReset();
    void onEventsAppended(int firstIndex, int count);
    QVariant display(const Event& e, int column) const;
    QVariant sortValue(const Event& e, int column) const;

    RunModel* m_model;
    int m_count = 0; // events shown; the run model may already hold more until eventsAppended arrives
};

} // namespace rs
