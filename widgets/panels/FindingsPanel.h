// The Findings panel: what diagnosis concluded about the run (the likely cause of cross-rank disagreement,
// with evidence and the fix), updated as a live run grows. Clicking a finding moves the step cursor to its
// first step and asks the window to show its ranks and parameter (findingActivated). A saved run opened with
// findings shows the first one's evidence that way at once, unless the user has moved the cursor already; a
// live run's findings never move a cursor that follows the run.
//
// Layout: a vertical splitter of the table, the evidence and the notes (checks that could not run, advice).
// The table's columns fit their contents, so an id like loss-scale-not-restored is never cut; Parameters
// takes what is left and names every tensor in its tooltip. The evidence keeps room for several lines, and
// the notes scroll instead of squeezing the evidence.
#pragma once

#include <QWidget>

class QLabel;
class QScrollArea;
class QSplitter;
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
    // Shows what `runner` (the window's diagnosis of `model`) concludes.
    FindingsPanel(RunModel* model, DiagnosisRunner* runner, StepCursor* cursor, QWidget* parent = nullptr);

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
    void referenceActivated(); // the line about the reference was clicked: the cursor is at its step

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void setupTable();
    void setupDetail();
    void setupNotes();
    void update();
    QString noFindingsText() const;
    void showDetail(int row);
    void fitColumns(); // after the findings change: Ranks as wide as its text, up to a limit
    void fitPanes();   // after the findings or the notes change: each pane's height for what it holds
    int detailHeight(int width) const; // the evidence pane's height for its text at that width

    RunModel* m_model;
    StepCursor* m_cursor;
    DiagnosisRunner* m_runner;
    FindingsModel* m_findings;
    QTableView* m_view;
    QTextBrowser* m_detail;
    QLabel* m_status;
    QLabel* m_notRun;
    QLabel* m_advice;
    QScrollArea* m_notes;         // m_notRun and m_advice, scrolled when longer than their pane
    QSplitter* m_split = nullptr; // m_view, m_detail, m_notes
    int m_paneRows = -1;          // the findings fitPanes() sized the table for
    int m_progress = -1;
    bool m_diagnosedOnce = false; // this run's findings arrived before (a jump to the first is only on open)
    bool m_userSized = false;     // the user dragged a pane: its heights stay
};

} // namespace rs
