// The settings of a run that was opened from a file, read-only: what trained it (model, cards, batch,
// length, precision, loss scale, data, seed, source) as the file records them. The run panel shows
// it instead of its form while a saved run is open, so the form never claims settings the run did not have.
#pragma once

#include "store/RunRecords.h"

#include <QWidget>

class QFormLayout;
class QLabel;

namespace rs {

class RunSummaryView : public QWidget {
    Q_OBJECT
public:
    explicit RunSummaryView(QWidget* parent = nullptr);

    void showRun(const RunMeta& meta, const QString& path);
    QString fieldText(const QString& name) const; // a row's value by its label without the colon (tests)

signals:
    void newRunRequested(); // the "New Run" button: back to the editable form

private:
    void addRow(const QString& label, const QString& value, const QString& tip = {});

    QLabel* m_title = nullptr;
    QFormLayout* m_form = nullptr;
};

} // namespace rs
