// The cards panel: the table of emulated Ascend cards at the cursor's step, set in a monospace font like
// `npu-smi info`, with a caption that says which step it shows and how many cards are in trouble.
#pragma once

#include <QWidget>

class QLabel;
class QTableView;

namespace rs {

class CardsModel;
class RunModel;
class StepCursor;

class CardsPanel : public QWidget {
    Q_OBJECT
public:
    CardsPanel(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    CardsModel* cardsModel() const { return m_cards; }
    QTableView* view() const { return m_view; }
    QString caption() const; // the text above the table, e.g. "Step 45 · 4 cards · 1 alarm"

signals:
    void rankActivated(int rank); // a card's row was double-clicked or activated

private:
    void updateCaption();

    RunModel* m_model;
    CardsModel* m_cards;
    QTableView* m_view;
    QLabel* m_caption;
};

} // namespace rs
