// MainWindow: see MainWindow.h.
#include "MainWindow.h"

#include "RecentFiles.h"
#include "TrainController.h"
#include "charts/ChartExport.h"
#include "charts/LossChart.h"
#include "charts/OverflowTimeline.h"
#include "charts/ParamRankHeatmap.h"
#include "charts/RankHeatmap.h"
#include "charts/ReferenceChart.h"
#include "diagnose/EvidenceView.h"
#include "diagnose/Finding.h"
#include "import/FlightRecorderDumps.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "notify/FindingNotifier.h"
#include "panels/CardsModel.h"
#include "panels/CardsPanel.h"
#include "panels/CollectivesPanel.h"
#include "panels/ComparisonPanel.h"
#include "panels/EventLogPanel.h"
#include "panels/FileDialogs.h"
#include "panels/FindingsPanel.h"
#include "panels/ReplayControl.h"
#include "panels/RunEstimate.h"
#include "panels/RunPanel.h"
#include "panels/TensorsPanel.h"
#include "report/ReportExporter.h"
#include "store/RunSource.h"
#include "train/TrainConfig.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QProgressDialog>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <utility>

namespace rs {

namespace {
bool isRunFile(const QUrl& url) {
    return url.isLocalFile() && QFileInfo(url.toLocalFile()).isFile();
}
// A dropped folder is an msprobe monitor tree to import (the import says so if it is not one).
bool isFolder(const QUrl& url) {
    return url.isLocalFile() && QFileInfo(url.toLocalFile()).isDir();
}
} // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent) {
    setObjectName(QStringLiteral("MainWindow"));
    setAcceptDrops(true);
    m_model = new RunModel(this);
    m_cursor = new StepCursor(this);
    m_train = new TrainController(this);
    m_runsDir = QDir::current().absoluteFilePath(QStringLiteral("runs"));

    createCharts();
    createDocks();
    createMenus();
    createStatusBar();
    wireModel();
    m_defaultState = saveState();
    restoreLayout();
    updateTitle();
    updateStatus();
    updateActions();
}

MainWindow::~MainWindow() = default;

QList<ChartWidget*> MainWindow::charts() const {
    return {m_loss, m_overflow, m_rankHeatmap, m_paramHeatmap, m_comparison->chart()};
}

void MainWindow::setRunsDir(const QString& dir) {
    m_runsDir = dir;
    m_runPanel->setRunsDir(dir);
}

void MainWindow::createCharts() {
    m_loss = new LossChart(m_model, m_cursor);
    m_overflow = new OverflowTimeline(m_model, m_cursor);
    auto* split = new QSplitter(Qt::Vertical);
    split->setObjectName(QStringLiteral("chartSplitter"));
    split->addWidget(m_loss);
    split->addWidget(m_overflow);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    // The run against a reference is a page of its own beside the training charts: its map needs their room.
    m_comparison = new ComparisonPanel(m_model, m_cursor);
    connect(m_comparison, &ComparisonPanel::spreadRequested, this, &MainWindow::spreadDialog);
    connect(m_comparison, &ComparisonPanel::comparisonChanged, this, &MainWindow::updateActions);
    m_centralTabs = new QTabWidget;
    m_centralTabs->setObjectName(QStringLiteral("centralTabs"));
    m_centralTabs->setDocumentMode(true);
    m_centralTabs->addTab(split, tr("Training"));
    m_centralTabs->addTab(m_comparison, tr("Against the Reference"));
    m_centralTabs->setTabToolTip(
        1, tr("The open run compared with a reference run (File › Compare With Reference…)"));
    setCentralWidget(m_centralTabs);

    m_rankHeatmap = new RankHeatmap(m_model, m_cursor);
    m_paramHeatmap = new ParamRankHeatmap(m_model, m_cursor);
    connect(m_paramHeatmap, &ParamRankHeatmap::paramClicked, m_rankHeatmap, &RankHeatmap::setParam);
}

void MainWindow::createDocks() {
    setDockNestingEnabled(true);
    auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(name);
        d->setWidget(w);
        addDockWidget(area, d);
        return d;
    };
    m_runPanel = new RunPanel;
    m_runPanel->setRunsDir(m_runsDir);
    connect(m_runPanel, &RunPanel::startRequested, this, &MainWindow::startFromPanel);
    connect(m_runPanel, &RunPanel::stopRequested, this, &MainWindow::stopRun);
    dock(tr("Run"), QStringLiteral("runDock"), m_runPanel, Qt::LeftDockWidgetArea);

    auto* rank =
        dock(tr("Rank × rank"), QStringLiteral("rankHeatmapDock"), m_rankHeatmap, Qt::RightDockWidgetArea);
    auto* param = dock(tr("Layers × ranks"), QStringLiteral("paramHeatmapDock"), m_paramHeatmap,
                       Qt::RightDockWidgetArea);
    splitDockWidget(rank, param, Qt::Vertical);

    m_cards = new CardsPanel(m_model, m_cursor);
    m_events = new EventLogPanel(m_model, m_cursor);
    auto* cards = dock(tr("Cards"), QStringLiteral("cardsDock"), m_cards, Qt::BottomDockWidgetArea);
    auto* events = dock(tr("Events"), QStringLiteral("eventsDock"), m_events, Qt::BottomDockWidgetArea);
    splitDockWidget(cards, events, Qt::Horizontal);
    // The window's diagnosis of the run: the Findings panel shows it, the notifier announces it, a reference
    // comparison feeds it.
    m_diagnosis = new DiagnosisRunner(m_model, this);
    m_findings = new FindingsPanel(m_model, m_diagnosis, m_cursor);
    auto* findings =
        dock(tr("Findings"), QStringLiteral("findingsDock"), m_findings, Qt::BottomDockWidgetArea);
    tabifyDockWidget(events, findings);
    m_collectives = new CollectivesPanel(m_model);
    auto* collectives =
        dock(tr("Collectives"), QStringLiteral("collectivesDock"), m_collectives, Qt::BottomDockWidgetArea);
    tabifyDockWidget(findings, collectives);
    m_tensors = new TensorsPanel(m_model, m_cursor);
    auto* tensors = dock(tr("Tensors"), QStringLiteral("tensorsDock"), m_tensors, Qt::BottomDockWidgetArea);
    tabifyDockWidget(collectives, tensors);
    findings->raise();
    // An import's own records are what the user opened it for: show their panel.
    connect(m_model, &RunModel::importsChanged, this, [this, collectives, tensors] {
        if (!m_model->collectives().empty())
            collectives->raise();
        else if (!m_model->tensorStats().empty())
            tensors->raise();
    });
    connect(m_findings, &FindingsPanel::findingActivated, this, &MainWindow::showFinding);
    // A new finding on a live run, announced outside the window (the user may be elsewhere for hours).
    m_notifier = new FindingNotifier(m_model, m_diagnosis, this, this);
    connect(m_notifier, &FindingNotifier::noticed, this, [this](const QString& summary) {
        statusBar()->showMessage(tr("Finding: %1").arg(summary), 30000);
    });
    connect(m_notifier, &FindingNotifier::activated, this, [this, findings] {
        showNormal();
        raise();
        activateWindow();
        findings->raise();
    });
    connect(m_findings, &FindingsPanel::referenceActivated, this,
            [this] { m_centralTabs->setCurrentWidget(m_comparison); });
    // Findings are the answer a user came for: bring them to the front when there are some.
    // An import's own panel (which names the same disagreement, with every rank's position) comes first.
    // After a comparison its page is what the user asked to see (the Findings panel's first line says where
    // the run parts, a tab away).
    connect(m_diagnosis, &DiagnosisRunner::findingsChanged, this, [this, findings] {
        if (!m_diagnosis->findings().empty() && m_model->collectives().empty() && !m_comparison->comparison())
            findings->raise();
    });
    resizeDocks({rank, param}, {420, 420}, Qt::Horizontal);

    m_replay = new ReplayControl(m_model, m_cursor);
    auto* bar = addToolBar(tr("Replay"));
    bar->setObjectName(QStringLiteral("replayToolBar"));
    bar->addWidget(m_replay);
}

void MainWindow::createStatusBar() {
    m_stateLabel = new QLabel;
    m_stepLabel = new QLabel;
    m_progress = new QProgressBar;
    m_progress->setMaximumWidth(180);
    m_progress->setRange(0, 100);
    m_progress->setVisible(false);
    statusBar()->addWidget(m_stateLabel, 1);
    statusBar()->addPermanentWidget(m_stepLabel);
    statusBar()->addPermanentWidget(m_progress);
}

void MainWindow::wireModel() {
    connect(m_model, &RunModel::runReset, this, [this] {
        m_cursor->reset();
        updateTitle();
        updateStatus();
    });
    connect(m_model, &RunModel::stepsAppended, this, [this] {
        if (m_cursor->following())
            m_cursor->advanceTo(m_model->lastStep(), double(m_model->firstStep()),
                                double(m_model->lastStep()));
        updateStatus();
    });
    connect(m_model, &RunModel::statusChanged, this, [this] {
        updateTitle();
        updateStatus();
        updateActions();
    });
    connect(m_model, &RunModel::opened, this, [this](const QString& path) {
        // A saved run: the run panel shows what it was recorded with, not the form's last preset. This
        // window's own run keeps the (disabled) form it started from.
        if (path != m_ownRunOpening)
            m_runPanel->showLoadedRun(m_model->meta(), path);
        m_ownRunOpening.clear();
        m_recent->add(path);
        updateActions();
    });
    connect(m_model, &RunModel::loadProgress, this, [this](int percent) {
        m_progress->setValue(percent);
        m_progress->setVisible(percent < 100);
    });
    connect(m_model, &RunModel::openFailed, this, [this](const QString& path, const QString& message) {
        showError(tr("Cannot open run file"), tr("%1\n\n%2").arg(QDir::toNativeSeparators(path), message));
    });
    connect(m_cursor, &StepCursor::stepChanged, this, &MainWindow::updateStatus);
    connect(m_cursor, &StepCursor::followingChanged, this, [this](bool following) {
        // Following jumps to the latest step at once, also when no new step is coming (a finished run).
        if (following && m_model->stepCount() > 0)
            m_cursor->advanceTo(m_model->lastStep(), double(m_model->firstStep()),
                                double(m_model->lastStep()));
        updateActions();
    });

    connect(m_train, &TrainController::runStarted, this, [this](const QString& path) {
        m_ownRunOpening = path;
        m_model->open(path);
    });
    connect(m_train, &TrainController::runningChanged, this, [this](bool running) {
        m_runPanel->setRunning(running);
        updateActions();
        updateStatus();
    });
    connect(m_train, &TrainController::runFinished, this,
            [this](const QString& path, const QString& reason, double imagesPerSecond) {
                // A run that ended in an error (a full disk, a dead card) says so in front: a status-bar line
                // is easy to miss, and the user has to know the file stops there.
                if (reason.startsWith(QLatin1String("error")))
                    showError(tr("The run stopped with an error"),
                              tr("%1\n\n%2\n\nThe file keeps every step recorded before it.")
                                  .arg(QDir::toNativeSeparators(path), reason));
                else
                    statusBar()->showMessage(
                        tr("Run ended: %1 (%2 images/s)").arg(reason).arg(imagesPerSecond, 0, 'f', 1), 10000);
                // What this machine does for that model and precision: the run panel's next estimate. Only
                // runs long enough for start-up not to dominate (the rate counts the whole run).
                const RunMeta& meta = m_model->meta();
                const auto model = parseModelKind(meta.model);
                const auto precision = parsePrecision(meta.precision);
                if (reason == QLatin1String("completed") && model && precision &&
                    m_model->stepCount() >= 50) {
                    QSettings settings;
                    rememberThroughput(settings, *model, *precision, imagesPerSecond);
                    m_runPanel->refreshEstimate();
                }
            });
    connect(m_train, &TrainController::nodeFailed, this, [this](int node, const QString& message) {
        statusBar()->showMessage(tr("Node %1: %2").arg(node).arg(message), 15000);
    });
    connect(m_train, &TrainController::runFailed, this, [this](const QString& path, const QString& message) {
        showError(tr("The run could not start"), tr("%1\n\n%2").arg(QDir::toNativeSeparators(path), message));
        // A refused pre-flight (e.g. a wrong rank table) still writes a run file saying why: show it, so the
        // event log and the Findings panel explain it like any other run.
        if (QFileInfo(path).size() > 0)
            m_model->open(path);
    });
}

void MainWindow::restoreLayout() {
    QSettings s;
    if (!restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray())) {
        // First launch: most of the screen, since every panel earns its space.
        const QRect screen = QGuiApplication::primaryScreen()->availableGeometry();
        resize(std::min(1600, screen.width() * 19 / 20), std::min(1000, screen.height() * 19 / 20));
        move(screen.center() - rect().center());
    }
    if (!restoreState(s.value(QStringLiteral("window/state")).toByteArray())) {
        // First launch: the charts get most of the height; the panels below and the heatmaps on the right a
        // fixed share (once the window has its size, hence queued).
        QTimer::singleShot(0, this, [this] {
            auto* cards = findChild<QDockWidget*>(QStringLiteral("cardsDock"));
            auto* rank = findChild<QDockWidget*>(QStringLiteral("rankHeatmapDock"));
            resizeDocks({cards}, {height() * 27 / 100}, Qt::Vertical);
            resizeDocks({rank}, {width() * 27 / 100}, Qt::Horizontal);
        });
    }
    m_runPanel->restoreState(s);
}

void MainWindow::saveLayout() {
    QSettings s;
    s.setValue(QStringLiteral("window/geometry"), saveGeometry());
    s.setValue(QStringLiteral("window/state"), saveState());
    m_runPanel->saveState(s);
}

void MainWindow::updateTitle() {
    QString title = QStringLiteral("RankSight");
    if (!m_model->path().isEmpty()) {
        title = QFileInfo(m_model->path()).fileName();
        if (m_model->hasRun())
            title += QStringLiteral(" — ") + QString::fromStdString(describeRun(m_model->meta()));
        if (m_model->hasRun() && m_model->isLive())
            title += tr(" [live]");
        title += QStringLiteral(" — RankSight");
    }
    setWindowTitle(title);
}

void MainWindow::updateStatus() {
    QString state;
    if (m_train->isRunning())
        state = tr("Training: %1 steps recorded").arg(m_model->stepCount());
    else if (m_model->isLoading())
        state = tr("Opening %1…").arg(m_model->runName());
    else if (!m_model->hasRun())
        state = tr("No run. Click Start, open a run file (Ctrl+O, or drop one here) or import an msprobe "
                   "folder (Ctrl+I).");
    else if (m_model->isLive())
        state = tr("Watching a run that is being written: %1 steps").arg(m_model->stepCount());
    else
        state = tr("%1 steps of %2 — %3")
                    .arg(m_model->stepCount())
                    .arg(QString::fromStdString(describeRun(m_model->meta())), m_model->stopReason());
    // A table a killed writer left torn is named where the user looks first, not only as "not recorded".
    if (m_model->hasRun() && !m_model->meta().unreadableWhy.empty())
        state += QStringLiteral(" — ") + QString::fromStdString(m_model->meta().unreadableWhy);
    m_stateLabel->setText(state);
    m_stepLabel->setText(m_model->hasRun() ? tr("step %1").arg(m_cursor->step()) : QString());
}

void MainWindow::updateActions() {
    const bool running = m_train->isRunning();
    m_startAction->setEnabled(!running);
    m_stopAction->setEnabled(running);
    m_exportReportAction->setEnabled(m_model->hasRun() && !m_model->isLoading());
    m_compareAction->setEnabled(m_model->hasRun() && !m_model->isLoading() && !m_model->path().isEmpty());
    m_spreadAction->setEnabled(m_compareAction->isEnabled() && m_comparison->comparison() != nullptr);
    m_exportChartMenu->setEnabled(m_model->hasRun());
    m_followAction->setEnabled(!m_cursor->following());
}

void MainWindow::showError(const QString& title, const QString& message) {
    m_lastError = message;
    if (m_errorBox)
        m_errorBox->deleteLater();
    // Window-modal and non-blocking: the error is in front, the app keeps running (and tests keep going).
    m_errorBox = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
    m_errorBox->setAttribute(Qt::WA_DeleteOnClose);
    m_errorBox->setWindowModality(Qt::WindowModal);
    m_errorBox->open();
    statusBar()->showMessage(title, 10000);
}

void MainWindow::openRun(const QString& path) {
    if (m_train->isRunning() && QFileInfo(path) != QFileInfo(m_train->runPath())) {
        showError(tr("A run is in progress"), tr("Stop the current run before opening another file."));
        return;
    }
    m_model->open(path);
}

QString MainWindow::chooseRunFile(const QString& title) {
    QSettings s;
    const QString dir = s.value(QStringLiteral("lastOpenDir"), m_runsDir).toString();
    QString path = filedialogs::openFile(this, title, dir, tr("RankSight runs (*.h5 *.hdf5);;All files (*)"));
    if (!path.isEmpty())
        s.setValue(QStringLiteral("lastOpenDir"), QFileInfo(path).absolutePath());
    return path;
}

void MainWindow::openFileDialog() {
    if (const QString path = chooseRunFile(tr("Open Run File")); !path.isEmpty())
        openRun(path);
}

bool MainWindow::startRun(const TrainConfig& config) {
    QString error;
    if (!m_train->start(config, &error)) {
        showError(tr("The run could not start"), error);
        return false;
    }
    statusBar()->showMessage(tr("Starting %1…").arg(QString::fromStdString(config.out)), 5000);
    return true;
}

void MainWindow::startFromPanel() {
    if (m_runPanel->showsLoadedRun()) { // Start (F5) over a saved run's settings: show what would run first
        m_runPanel->showForm();
        statusBar()->showMessage(tr("The run form is back: check its settings, then Start again"), 8000);
        return;
    }
    TrainConfig config;
    QString error;
    if (!m_runPanel->buildConfig(&config, &error)) {
        showError(tr("The run settings are not valid"), error);
        return;
    }
    startRun(config);
}

void MainWindow::stopRun() {
    m_train->stop();
    statusBar()->showMessage(tr("Stopping…"), 3000);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (m_train->isRunning()) {
        // Closing mid-run stops the cards and waits (about a second) so the file is complete.
        statusBar()->showMessage(tr("Stopping the run…"));
        m_train->stopAndWait();
    }
    saveLayout();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const auto urls = event->mimeData()->urls();
    if (urls.size() == 1 && (isRunFile(urls.front()) || isFolder(urls.front())))
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const auto urls = event->mimeData()->urls();
    if (urls.size() != 1)
        return;
    if (isRunFile(urls.front())) {
        event->acceptProposedAction();
        openRun(urls.front().toLocalFile());
    } else if (isFolder(urls.front())) {
        event->acceptProposedAction();
        const QString dir = urls.front().toLocalFile();
        // Queued: the drag source waits for dropEvent to return, the import may take a while.
        bool dumps = false;
        try {
            flightrec::findDumps(dir.toStdString());
            dumps = true;
        } catch (const std::exception&) {
        }
        if (dumps)
            QTimer::singleShot(0, this, [this, dir] {
                importFlightRecorder(dir, importTarget(dir, QStringLiteral("flight")), false);
            });
        else
            QTimer::singleShot(0, this, [this, dir] { importMsprobe(dir, importTarget(dir)); });
    }
}

void MainWindow::exportChartDialog(ChartWidget* chart) {
    const QString exportKey = QStringLiteral("lastExportDir");
    const QString suggested =
        QDir(filedialogs::exportStartDir(exportKey, m_model->path()))
            .filePath(QStringLiteral("%1-%2.png").arg(m_model->runName(), chart->chartId()));
    QString selected;
    const QString path =
        filedialogs::saveFile(this, tr("Export %1").arg(chart->chartTitle()), suggested,
                              tr("PNG image (*.png);;SVG vector image (*.svg);;PDF (*.pdf)"), &selected);
    if (path.isEmpty())
        return;
    filedialogs::rememberExport(exportKey, m_model->path(), QFileInfo(path).absolutePath());
    ImageFormat format;
    if (!imageFormatFromPath(path, &format)) {
        showError(tr("Export failed"), tr("%1: use a .png, .svg or .pdf file name.").arg(path));
        return;
    }
    QString error;
    // The save dialog already asked before replacing a file.
    if (!exportChart(chart, m_model->runName(), path, format, &error, 0, 0, /*overwrite=*/true))
        showError(tr("Export failed"), error);
    else
        statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 5000);
}

// A finding's evidence on screen: the cursor at its first step (FindingsPanel did that), the heatmap on the
// metric that shows this cause and on its parameter, its ranks selected in the cards panel.
void MainWindow::showFinding(const Finding& f) {
    const EvidenceView evidence = evidenceView(f, m_model->meta());
    if (evidence.metric)
        m_rankHeatmap->setMetric(*evidence.metric);
    m_rankHeatmap->setParam(evidence.param);
    QTableView* cards = m_cards->view();
    cards->clearSelection();
    bool scrolled = false;
    for (int r : f.ranks)
        if (r >= 0 && r < cards->model()->rowCount()) {
            cards->selectionModel()->select(cards->model()->index(r, 0),
                                            QItemSelectionModel::Select | QItemSelectionModel::Rows);
            if (!std::exchange(scrolled, true)) // at 64 cards the first named one may be far down
                cards->scrollTo(cards->model()->index(r, 0));
        }
}

bool MainWindow::exportReport(const QString& dir, QString* error) {
    QProgressDialog progress(tr("Writing the bug report…"), QString(), 0, 100, this);
    progress.setCancelButton(nullptr); // the folder is written whole or removed: nothing to cancel halfway
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(300);
    ReportExporter exporter(m_model);
    // The report shows what the user is looking at; a cursor still following the run was not put anywhere, so
    // the report then opens on the first finding like a report from the command line.
    if (!m_cursor->following())
        exporter.setView(m_cursor->step(), int(m_rankHeatmap->rankMetric()), m_rankHeatmap->param());
    if (m_comparison->comparison())
        exporter.setReference(m_comparison->comparison(), m_comparison->referencePath());
    connect(&exporter, &ReportExporter::progress, &progress, &QProgressDialog::setValue);
    return exporter.write(dir, error);
}

void MainWindow::exportReportDialog() {
    // One dialog that names the report's new folder, suggested as <run>-report in the folder used last (a
    // folder picker wanted the folder chosen, then Choose clicked twice).
    const QString reportKey = QStringLiteral("lastReportDir");
    const QString base = filedialogs::exportStartDir(reportKey, m_model->path());
    QString suggested = QDir(base).filePath(m_model->runName() + QStringLiteral("-report"));
    for (int i = 2; QFileInfo::exists(suggested); ++i)
        suggested = QDir(base).filePath(QStringLiteral("%1-report-%2").arg(m_model->runName()).arg(i));
    QFileDialog dialog(this, tr("New folder for the bug report"), base);
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.setFileMode(QFileDialog::AnyFile);
    dialog.setOption(QFileDialog::DontConfirmOverwrite); // an existing name is refused below, not replaced
    dialog.setLabelText(QFileDialog::FileName, tr("Folder name:"));
    dialog.setLabelText(QFileDialog::Accept, tr("Write Report"));
    dialog.selectFile(suggested);
    if (!filedialogs::exec(dialog))
        return;
    const QString dir = dialog.selectedFiles().constFirst();
    filedialogs::rememberExport(reportKey, m_model->path(), QFileInfo(dir).absolutePath());
    if (QFileInfo::exists(dir)) { // a report goes into a folder of its own: never into or over another
        showError(tr("The bug report was not written"),
                  tr("%1 already exists. A report is written into a new folder: choose a name that is not "
                     "taken.")
                      .arg(QDir::toNativeSeparators(dir)));
        return;
    }
    QString error;
    if (!exportReport(dir, &error))
        showError(tr("The bug report could not be written"), error);
    else
        statusBar()->showMessage(tr("Bug report written to %1").arg(QDir::toNativeSeparators(dir)), 10000);
}

} // namespace rs
