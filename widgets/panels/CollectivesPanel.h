// The collectives panel: for a run holding a hung job's flight-recorder dumps, which collective each rank
// reached (per process group), the ranks that are not where the others are drawn out, and the first
// collective where ranks disagree (view/CollectiveProgress.h) named above the table. A run without dumps says
// so: not recorded, never an empty "all clear".
#pragma once

#include <QWidget>

class QLabel;
class QTableWidget;

namespace rs {

class RunModel;

class CollectivesPanel : public QWidget {
    Q_OBJECT
public:
    explicit CollectivesPanel(RunModel* model, QWidget* parent = nullptr);

    QString headline() const; // the text above the table
    QTableWidget* table() const { return m_table; }

private:
    void rebuild();

    RunModel* m_model;
    QLabel* m_headline;
    QTableWidget* m_table;
};

} // namespace rs
