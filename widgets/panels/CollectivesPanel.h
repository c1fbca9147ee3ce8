// The collectives panel: for a run holding a hung job's flight-recorder dumps, which collective each rank
// reached (per process group), the ranks that are not where the others are drawn out, and the first
// collective where ranks disagree (view/CollectiveProgress.h) named above the table. A run joined with its
// recorded run shows each rank's step ("before the run" for what came before its first step). torch_npu's
// Python tracebacks show below the table for the selected rank. A run without dumps says so: not recorded,
// never an empty "all clear".
#pragma once

#include <QWidget>
#include <map>
#include <string>

class QLabel;
class QPlainTextEdit;
class QTableWidget;

namespace rs {

class RunModel;

class CollectivesPanel : public QWidget {
    Q_OBJECT
public:
    explicit CollectivesPanel(RunModel* model, QWidget* parent = nullptr);

    QString headline() const; // the text above the table
    QTableWidget* table() const { return m_table; }
    // The Python traceback shown below the table ("" when the run holds none), and showing rank's.
    QString tracebackText() const;
    void showTraceback(int rank);

private:
    void rebuild();
    void selectionChanged();

    RunModel* m_model;
    QLabel* m_headline;
    QTableWidget* m_table;
    QPlainTextEdit* m_traceback;
    std::map<int, std::string> m_tracebacks; // by rank
    int m_tracebackRank = -1;
};

} // namespace rs
