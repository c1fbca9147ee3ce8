// The RankSight window: the run panel, the charts and the panels over one RunModel and one StepCursor, the
// menus (File: open, recent, export; Run: start, stop; View: docks and layout), the status bar, drag and
// drop of run files, and a remembered layout. Training and file reading run in other threads
// (TrainController, RunModel's loader); this class only wires them to the widgets.
#pragma once

#include <QMainWindow>
#include <QMessageBox>
#include <QPointer>

class QLabel;
class QProgressBar;

class QMenu;
class QTabWidget;
class QAction;

namespace rs {

class RunModel;
class StepCursor;
class TrainController;
class RecentFiles;
class RunPanel;
class ReplayControl;
class CardsPanel;
class EventLogPanel;
class DiagnosisRunner;
class FindingsPanel;
class FindingNotifier;
class CollectivesPanel;
class TensorsPanel;
class ComparisonPanel;
struct Finding;
class ChartWidget;
class LossChart;
class OverflowTimeline;
class RankHeatmap;
class ParamRankHeatmap;
struct TrainConfig;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    RunModel* model() const { return m_model; }
    StepCursor* cursor() const { return m_cursor; }
    TrainController* trainController() const { return m_train; }
    RunPanel* runPanel() const { return m_runPanel; }
    DiagnosisRunner* diagnosis() const { return m_diagnosis; }
    FindingsPanel* findingsPanel() const { return m_findings; }
    FindingNotifier* findingNotifier() const { return m_notifier; }
    CollectivesPanel* collectivesPanel() const { return m_collectives; }
    TensorsPanel* tensorsPanel() const { return m_tensors; }
    QList<ChartWidget*> charts() const;
    // The message of the last error shown (a dialog the user dismisses; the window stays usable).
    QString lastError() const { return m_lastError; }
    QMessageBox* errorBox() const { return m_errorBox; }

    void setRunsDir(const QString& dir); // where Start writes run files by default
    // Where File > Export bug report writes unless asked: tests set it to skip the folder dialog.
    bool exportReport(const QString& dir, QString* error);

    // Where an imported msprobe folder's run file goes by default: the runs folder, named after the job's
    // folder, never over an existing file.
    QString importTarget(const QString& monitorDir, const QString& suffix = QStringLiteral("msprobe")) const;

public slots:
    void openRun(const QString& path);
    // Imports an msprobe monitor folder into `out` (in a worker, with a progress dialog) and opens it; false
    // and an error dialog naming the file and line if the tree is broken (nothing written then).
    bool importMsprobe(const QString& monitorDir, const QString& out);
    // Imports a hung job's flight-recorder dumps (a folder of <prefix><rank> files) into `out`, placed in the
    // steps of the open run when it is a recorded run with step times and the user agrees (join), and opens
    // it; false and an error dialog naming the file and key if a dump is broken or refused.
    bool importFlightRecorder(const QString& dumpDir, const QString& out, bool joinOpenRun);
    // Compares the open run with the run file at `reference` (in a worker, with a progress dialog), shows the
    // "Against the Reference" page and diagnoses again with it; false and an error dialog naming the file if
    // it cannot. spreads: the reference's job run with other arithmetic, whose drift widens the tolerances
    // (SpreadReference).
    bool compareWithReference(const QString& reference, const QStringList& spreads = {});
    ComparisonPanel* comparisonPanel() const { return m_comparison; }
    bool startRun(const TrainConfig& config); // false and an error dialog if it cannot start
    void startFromPanel();
    void stopRun();

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createCharts();
    void createDocks();
    void createMenus();
    void createNotifyAction(QMenu* menu);
    void createStatusBar();
    void wireModel();
    void restoreLayout();
    void saveLayout();
    void updateTitle();
    void updateStatus();
    void updateActions();
    void showError(const QString& title, const QString& message);
    // A run file from a file dialog that starts in the folder used last (remembered); "" when cancelled.
    QString chooseRunFile(const QString& title);
    void openFileDialog();
    void importMsprobeDialog();
    void importFlightRecorderDialog();
    // Runs an import in a worker with a progress dialog; "" or the error's message.
    QString runImport(const QString& what, const std::function<void(const std::function<void(int)>&)>& work);
    // The same with a label of its own ("Comparing with …").
    QString runInWorker(const QString& label,
                        const std::function<void(const std::function<void(int)>&)>& work);
    void compareDialog();
    void spreadDialog(); // adds a spread reference to the comparison shown
    void exportChartDialog(ChartWidget* chart);
    void exportReportDialog();
    void showFinding(const Finding& finding);

    RunModel* m_model = nullptr;
    StepCursor* m_cursor = nullptr;
    TrainController* m_train = nullptr;
    RecentFiles* m_recent = nullptr;

    RunPanel* m_runPanel = nullptr;
    ReplayControl* m_replay = nullptr;
    CardsPanel* m_cards = nullptr;
    EventLogPanel* m_events = nullptr;
    DiagnosisRunner* m_diagnosis = nullptr;
    FindingsPanel* m_findings = nullptr;
    FindingNotifier* m_notifier = nullptr;
    QAction* m_notifyAction = nullptr;
    CollectivesPanel* m_collectives = nullptr;
    TensorsPanel* m_tensors = nullptr;
    ComparisonPanel* m_comparison = nullptr;
    QTabWidget* m_centralTabs = nullptr; // the training charts, and the run against its reference
    QAction* m_compareAction = nullptr;
    QAction* m_spreadAction = nullptr;
    LossChart* m_loss = nullptr;
    OverflowTimeline* m_overflow = nullptr;
    RankHeatmap* m_rankHeatmap = nullptr;
    ParamRankHeatmap* m_paramHeatmap = nullptr;

    QMenu* m_viewMenu = nullptr;
    QAction* m_startAction = nullptr;
    QAction* m_stopAction = nullptr;
    QAction* m_exportReportAction = nullptr;
    QAction* m_followAction = nullptr;
    QMenu* m_exportChartMenu = nullptr;
    QLabel* m_stateLabel = nullptr;
    QLabel* m_stepLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QPointer<QMessageBox> m_errorBox;
    QString m_lastError;
    QString m_runsDir;
    QString m_ownRunOpening; // the run this window just started, until it opens (its panel keeps the form)
    QByteArray m_defaultState;
};

} // namespace rs
