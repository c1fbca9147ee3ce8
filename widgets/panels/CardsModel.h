// The cards table, one row per emulated Ascend card, as `npu-smi info` would show it at the cursor's step:
// device, rank, IP, health, HBM, step and communication time, state. It keeps a snapshot of the rows so the
// view always sees a consistent table while the run model grows underneath, and rebuilds it at most once
// per ~40 ms however often the cursor moves or steps arrive. Past kMaxCardRows cards, a row stands for a
// group of servers (their worst health and state, their largest memory and times), and the cards that stand
// out (dead, timed out, a step 1.5 times the median or longer) follow their group in rows of their own.
#pragma once

#include "store/RunRecords.h"

#include <QAbstractTableModel>
#include <QString>
#include <QTimer>
#include <cstdint>
#include <vector>

namespace rs {

class RunModel;
class StepCursor;

// What the State column says of a card at a step. Imported: the source records no card state (an msprobe
// tree), so the card is neither running nor stopped, only imported.
enum class CardActivity { WaitingForData, Running, Finished, Stopped, Dead, TimedOut, Imported };

class CardsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    // Node: the node process hosting the card (multi-node engine runs); Server: the rank table's server, or
    // the host of a PyTorch DDP job. CardsPanel hides the two where the run has one node or names no server.
    enum Column { Npu, Rank, Node, Server, DeviceIp, Health, Hbm, StepTime, CommWait, State, ColumnCount };
    // Qt::UserRole gives the raw value of a cell: ints for ids, float ms, int64 bytes, CardActivity as int.
    static constexpr int RawRole = Qt::UserRole;

    CardsModel(RunModel* model, StepCursor* cursor, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    int64_t shownStep() const { return m_shownStep; } // the step the values are of; -1 before any step
    CardActivity activity(int row) const { return m_rows[size_t(row)].activity; }
    static constexpr int kMaxCardRows = 64;
    bool grouped() const { return m_grouped; }
    bool isGroupRow(int row) const { return m_rows[size_t(row)].lastRank > m_rows[size_t(row)].rank; }
    // Over every card, not the rows: how many there are, dead (alarm) and timed out (warning).
    int cardCount() const { return m_cardCount; }
    int alarmCount() const { return m_alarms; }
    int warningCount() const { return m_warnings; }
    // Rebuilds from the run model now instead of at the next coalesced update.
    void refreshNow();

    bool hasNodes() const;   // the run spans more than one node process
    bool hasServers() const; // the card table names servers (hosts)
    static QString activityName(CardActivity a);
    static QString healthName(CardActivity a); // npu-smi's words: OK, Warning, Alarm

signals:
    void refreshed(); // after each rebuild (the panel's caption follows it)

private:
    struct Row {
        int rank = 0;
        int deviceId = 0;
        int node = -1; // -1: not recorded
        QString deviceIp, serverId;
        int64_t hbmUsedBytes = 0, hbmTotalBytes = 0;
        float stepMs = 0, computeMs = 0, commMs = 0;
        CardActivity activity = CardActivity::WaitingForData;
        int64_t badSince = -1; // first step of the current dead/timed-out streak
        int lastRank = -1;     // a group row: its ranks are rank..lastRank
        QString standsOut;     // a card drawn out of its group: why
    };
    // rows (one per card) into a row per group of servers, each followed by its cards that stand out.
    std::vector<Row> groupRows(std::vector<Row> rows) const;

    void scheduleRefresh();
    void onRunReset();
    std::vector<Row> buildRows(int64_t* shownStep, int* alarms, int* warnings) const;
    Row buildRow(int rank, int64_t row) const;
    int64_t badStreakStart(int rank, int64_t row) const;
    void applyFailureEvent(Row& r, int rank, int64_t row) const;
    QVariant displayText(const Row& r, int column) const;
    QVariant rawValue(const Row& r, int column) const;
    QString cellToolTip(const Row& r, int column) const;

    void readNodes(); // m_nodeOfRank from the run's meta

    RunModel* m_model;
    StepCursor* m_cursor;
    std::vector<int> m_nodeOfRank; // empty: one node, or not recorded
    QTimer m_refreshTimer;
    std::vector<Row> m_rows;
    int64_t m_shownStep = -1;
    bool m_grouped = false;
    int m_cardCount = 0, m_alarms = 0, m_warnings = 0;
};

} // namespace rs
