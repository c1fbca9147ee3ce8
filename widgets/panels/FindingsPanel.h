// The Findings panel: what diagnosis concluded about the run (the likely cause of cross-rank disagreement,
// with evidence and the fix), updated as a live run grows. Clicking a finding moves the step cursor to its
// first step and asks the window to show its ranks and parameter (findingActivated). A saved run opened with
// findings shows the first one's evidence that way at once, unless the user has moved the cursor already; a
// live run's findings never move a cursor that follows the run.
#pragma once

#include <QWidget>

class QLabel;
class QTableView;
class QTextBrowser;

namespace rs {

class DiagnosisRunner;
class FindingsModel;
class RunModel;
class StepCursor;
struct Finding;

class FindingsPanel : public QWidget {
    Q_OBJECT
public:
    FindingsPanel(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    DiagnosisRunner* runner() const { return m_runner; }
    FindingsModel* findingsModel() const { return m_findings; }
    QTableView* view() const { return m_view; }
    QString statusText() const;
    QString detailText() const;
    QString notRunText() const; // the checks that could not run on this file, "" when all ran
    QString adviceText() const; // configuration advice (diagnose/Advice.h), "" when there is none
    void activate(int row);     // what a click on a row does

signals:
    void findingActivated(const rs::Finding& finding);

private:
    void update();
    void showDetail(int row);

    RunModel* m_model;
    StepCursor* m_cursor;
    DiagnosisRunner* m_runner;
    FindingsModel* m_findings;
    QTableView* m_view;
    QTextBrowser* m_detail;
    QLabel* m_status;
    QLabel* m_notRun;
    QLabel* m_advice;
    int m_progress = -1;
    bool m_diagnosedOnce = false; // this run's findings arrived before (a jump to the first is only on open)
};

} // namespace rs
