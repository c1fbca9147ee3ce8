// MainWindow's menus, tool bar and their actions: see MainWindow.h.
#include "MainWindow.h"
#include "RecentFiles.h"
#include "VersionText.h"
#include "charts/ChartWidget.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "notify/FindingNotifier.h"
#include "panels/RunPanel.h"

#include <QApplication>
#include <QDockWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QToolBar>

namespace rs {

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* newRun = file->addAction(tr("&New Run"), QKeySequence::New, this, [this] {
        m_runPanel->showForm();
        if (auto* d = findChild<QDockWidget*>(QStringLiteral("runDock"))) {
            d->show();
            d->raise();
        }
    });
    newRun->setStatusTip(tr("Set up a new run in the run panel (the open run stays shown until Start)"));
    QAction* open = file->addAction(tr("&Open Run…"), QKeySequence::Open, this, &MainWindow::openFileDialog);
    open->setStatusTip(
        tr("Open a run file written by RankSight or ranksight-cli (also while it is being written)"));
    m_compareAction =
        file->addAction(tr("Compare With &Reference…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R), this,
                        &MainWindow::compareDialog);
    m_compareAction->setToolTip(tr("Compare the open run with a reference run of the same job, step by step, "
                                   "parameter by parameter and rank by rank"));
    m_spreadAction = file->addAction(tr("Add &Spread Reference…"), this, &MainWindow::spreadDialog);
    m_spreadAction->setToolTip(
        tr("Compare again, with the tolerances widened by the drift measured between the reference and "
           "this run of the reference's job with other arithmetic (another layout, or another card count "
           "at the same global batch): what runs of other arithmetic drift apart over many steps is then "
           "not taken for a fault"));
    QAction* import = file->addAction(tr("&Import msprobe Folder…"), QKeySequence(Qt::CTRL | Qt::Key_I), this,
                                      &MainWindow::importMsprobeDialog);
    import->setStatusTip(
        tr("An Ascend or PyTorch run recorded by msprobe's monitor (Monitor V1: monitor_output/; V2: the "
           "folder holding rank_<N>/) or its dump tool (step<N>/rank<R>/dump.json): imported into a run file "
           "and opened. Dropping the folder does the same."));
    QAction* importFr =
        file->addAction(tr("Import &Flight Recorder Dumps…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_I),
                        this, &MainWindow::importFlightRecorderDialog);
    importFr->setStatusTip(
        tr("The dumps a hung or timed-out PyTorch job left, one per rank (nccl_trace_rank_<N>, "
           "hccl_trace_rank_<N>): which collective each rank reached and where they part. Placed in the "
           "steps of the open run when it recorded the same job."));
    QMenu* recent = file->addMenu(tr("Open &Recent"));
    m_recent = new RecentFiles(recent, this);
    connect(m_recent, &RecentFiles::openRequested, this, &MainWindow::openRun);
    file->addSeparator();
    m_exportChartMenu = file->addMenu(tr("Export &Chart"));
    for (ChartWidget* c : charts())
        m_exportChartMenu->addAction(c->chartTitle() + QStringLiteral("…"), this,
                                     [this, c] { exportChartDialog(c); });
    m_exportReportAction = file->addAction(tr("Export &Bug Report…"), QKeySequence(Qt::CTRL | Qt::Key_E),
                                           this, &MainWindow::exportReportDialog);
    m_exportReportAction->setStatusTip(tr("A folder with report.md, every chart as PNG and SVG, steps.csv "
                                          "and the run cut around the first anomaly"));
    file->addSeparator();
    file->addAction(tr("&Close Run"), QKeySequence::Close, this, [this] { m_model->close(); });
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    m_startAction = run->addAction(tr("&Start"), QKeySequence(Qt::Key_F5), this, &MainWindow::startFromPanel);
    m_startAction->setStatusTip(tr("Train with the run panel's settings and watch the ranks live"));
    m_stopAction =
        run->addAction(tr("S&top"), QKeySequence(Qt::SHIFT | Qt::Key_F5), this, &MainWindow::stopRun);
    m_stopAction->setStatusTip(tr("Stop the cards within a second; the run file stays complete"));
    run->addSeparator();
    m_followAction = run->addAction(tr("&Follow Latest Step"), QKeySequence(Qt::Key_End), m_cursor,
                                    &StepCursor::followLatest);
    run->addAction(tr("First Step"), QKeySequence(Qt::Key_Home), this,
                   [this] { m_cursor->setStep(m_model->firstStep()); });
    run->addSeparator();
    createNotifyAction(run);

    auto* toolbar = addToolBar(tr("Main"));
    toolbar->setObjectName(QStringLiteral("mainToolBar"));
    toolbar->addAction(open);
    toolbar->addAction(m_startAction);
    toolbar->addAction(m_stopAction);
    toolbar->addAction(m_followAction);
    insertToolBar(findChild<QToolBar*>(QStringLiteral("replayToolBar")), toolbar);

    m_viewMenu = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : findChildren<QDockWidget*>())
        m_viewMenu->addAction(d->toggleViewAction());
    m_viewMenu->addSeparator();
    m_viewMenu->addAction(tr("&Reset Layout"), this, [this] { restoreState(m_defaultState); });

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About RankSight"), this, [this] {
        QMessageBox::about(this, tr("About RankSight"),
                           tr("<b>RankSight %1</b><p>Rank against rank: where and between which ranks "
                              "data-parallel training drifted apart.</p><pre>%2</pre>")
                               .arg(QApplication::applicationVersion(), versionText().toHtmlEscaped()));
    });
}

// Run › Notify on Findings: on by default and remembered; its tooltip names how this desktop shows notices
// (asked again each time the menu opens: a notification daemon may start after the window).
void MainWindow::createNotifyAction(QMenu* menu) {
    m_notifyAction = menu->addAction(tr("&Notify on Findings During a Live Run"));
    m_notifyAction->setObjectName(QStringLiteral("notifyAction"));
    m_notifyAction->setCheckable(true);
    m_notifyAction->setChecked(m_notifier->isEnabled());
    menu->setToolTipsVisible(true);
    auto describe = [this] {
        // Rich text, so the tooltip wraps instead of running off the screen.
        m_notifyAction->setToolTip(
            QStringLiteral("<p>%1</p>")
                .arg(
                    tr("A desktop notice and a mark on the window in the task bar when diagnosis names a new "
                       "cause while a run is written. %1")
                        .arg(m_notifier->backendText())
                        .toHtmlEscaped()));
    };
    describe();
    connect(menu, &QMenu::aboutToShow, this, describe);
    connect(m_notifyAction, &QAction::toggled, m_notifier, &FindingNotifier::setEnabled);
}

} // namespace rs
