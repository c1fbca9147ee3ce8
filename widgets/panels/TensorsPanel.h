// The tensors panel: for a run imported from msprobe's dump tool, every API's and module's input and output
// tensor at the cursor's step, one row each in execution order, one column per rank (past 16 ranks: the
// spread and the rank furthest out), on the statistic the user picks (norm, max, min, mean). Non-finite
// values are marked, and the caption names the first tensor that went non-finite, on which rank and step:
// where a NaN was born. A run without dump statistics says "not recorded".
#pragma once

#include <QWidget>
#include <cstdint>
#include <map>
#include <vector>

class QComboBox;
class QLabel;
class QTableWidget;

namespace rs {

class RunModel;
class StepCursor;

class TensorsPanel : public QWidget {
    Q_OBJECT
public:
    TensorsPanel(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    QString caption() const;
    QTableWidget* table() const { return m_table; }
    void setStatistic(int index); // 0 norm, 1 max, 2 min, 3 mean

private:
    void reindex();
    void rebuild();

    RunModel* m_model;
    StepCursor* m_cursor;
    QLabel* m_caption;
    QComboBox* m_stat;
    QTableWidget* m_table;
    std::map<int64_t, std::vector<size_t>> m_byStep; // dumped step -> its rows of RunModel::tensorStats()
    int64_t m_firstBad = -1;                         // row of the first non-finite tensor
    int64_t m_shownStep = -1;
};

} // namespace rs
