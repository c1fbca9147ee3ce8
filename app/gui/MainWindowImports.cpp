// MainWindow's work on files besides the open run: importing an msprobe tree or a hung job's flight-recorder
// dumps into a run file, and comparing the open run with a reference run. Each reads or writes whole files,
// so it runs in a worker behind a progress dialog while the window stays responsive (see MainWindow.h).
#include "MainWindow.h"
#include "TrainController.h"
#include "compare/CompareRuns.h"
#include "compare/ComparisonText.h"
#include "import/FlightRecorderDumps.h"
#include "import/FlightRecorderImport.h"
#include "import/MsprobeImport.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "panels/ComparisonPanel.h"
#include "panels/FileDialogs.h"
#include "panels/FindingsPanel.h"
#include "reader/OpenRunFile.h"
#include "reader/ReferenceRuns.h"
#include "store/RunReader.h"
#include "store/RunSource.h"

#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QMessageBox>
#include <QPointer>
#include <QProgressDialog>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QtConcurrent/QtConcurrentRun>

namespace rs {

QString MainWindow::importTarget(const QString& monitorDir, const QString& suffix) const {
    QFileInfo info(QDir::cleanPath(monitorDir));
    // monitor_output/ (V1) and monitor_v2_out/ (V2's documented default) say nothing: the job's folder above
    // them names the run.
    const bool generic = info.fileName() == QStringLiteral("monitor_output") ||
                         info.fileName() == QStringLiteral("monitor_v2_out");
    QString name = generic ? QFileInfo(info.absolutePath()).fileName() : info.fileName();
    if (name.isEmpty())
        name = suffix;
    const QDir runs(m_runsDir);
    QString path = runs.filePath(QStringLiteral("%1-%2.h5").arg(name, suffix));
    for (int i = 2; QFileInfo::exists(path); ++i)
        path = runs.filePath(QStringLiteral("%1-%2-%3.h5").arg(name, suffix).arg(i));
    return path;
}

void MainWindow::importMsprobeDialog() {
    QSettings s;
    const QString dir = filedialogs::existingDirectory(
        this,
        tr("Import msprobe Monitor Folder (V1: monitor_output or the folder holding it; V2: the folder "
           "holding rank_<N>)"),
        s.value(QStringLiteral("lastImportDir"), QDir::homePath()).toString());
    if (dir.isEmpty())
        return;
    s.setValue(QStringLiteral("lastImportDir"), dir);
    const QString out = filedialogs::saveFile(this, tr("Save the Imported Run As"), importTarget(dir),
                                              tr("RankSight runs (*.h5)"));
    if (!out.isEmpty())
        importMsprobe(dir, out);
}

QString MainWindow::runImport(const QString& what,
                              const std::function<void(const std::function<void(int)>&)>& work) {
    return runInWorker(tr("Importing %1…").arg(what), work);
}

QString MainWindow::runInWorker(const QString& label,
                                const std::function<void(const std::function<void(int)>&)>& work) {
    QProgressDialog progress(label, QString(), 0, 100, this);
    progress.setCancelButton(nullptr); // written whole under a temporary name or not at all
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(300);
    QPointer<QProgressDialog> dialog(&progress);
    QFutureWatcher<QString> watcher;
    QEventLoop loop;
    connect(&watcher, &QFutureWatcher<QString>::finished, &loop, &QEventLoop::quit);
    watcher.setFuture(QtConcurrent::run([work, dialog] {
        try {
            work([dialog](int percent) {
                QMetaObject::invokeMethod(dialog, [dialog, percent] {
                    if (dialog)
                        dialog->setValue(percent);
                });
            });
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
        return QString();
    }));
    if (!watcher.isFinished())
        loop.exec();
    progress.close();
    return watcher.result();
}

bool MainWindow::importMsprobe(const QString& monitorDir, const QString& out) {
    if (m_train->isRunning()) {
        showError(tr("A run is in progress"), tr("Stop the current run before importing another."));
        return false;
    }
    QDir().mkpath(QFileInfo(out).absolutePath());
    // The notes (dp_group, no fingerprints) reach the user through the Findings panel's list of checks that
    // could not run; here only the error matters. The caller's dialog said "replace?" (or the target is new).
    const QString error =
        runImport(QDir::toNativeSeparators(monitorDir),
                  [dir = monitorDir.toStdString(), path = out.toStdString()](const auto& progress) {
                      rs::importMsprobe(dir, path, /*overwrite=*/true, progress);
                  });
    if (!error.isEmpty()) {
        showError(tr("The msprobe folder could not be imported"), error);
        return false;
    }
    openRun(out);
    statusBar()->showMessage(
        tr("Imported %1 into %2").arg(QDir::toNativeSeparators(monitorDir), QDir::toNativeSeparators(out)),
        10000);
    return true;
}

void MainWindow::importFlightRecorderDialog() {
    QSettings s;
    const QString dir = filedialogs::existingDirectory(
        this, tr("Import Flight Recorder Dumps (the folder holding <prefix><rank> files)"),
        s.value(QStringLiteral("lastFlightDir"), QDir::homePath()).toString());
    if (dir.isEmpty())
        return;
    s.setValue(QStringLiteral("lastFlightDir"), dir);
    bool join = false;
    if (m_model->hasRun() && m_model->meta().recorded(runschema::kStepColumns[runschema::kEndNs].path) &&
        m_model->stepCount() > 0)
        join = QMessageBox::question(this, tr("Join with the Open Run?"),
                                     tr("Place the collectives in the steps of %1? Choose Yes when the dumps "
                                        "come from the job that recorded it: they are joined only if their "
                                        "ranks are ranks of the run and their times fall within its "
                                        "recorded time.")
                                         .arg(m_model->runName())) == QMessageBox::Yes;
    const QString out =
        filedialogs::saveFile(this, tr("Save the Imported Run As"),
                              importTarget(dir, QStringLiteral("flight")), tr("RankSight runs (*.h5)"));
    if (!out.isEmpty())
        importFlightRecorder(dir, out, join);
}

bool MainWindow::importFlightRecorder(const QString& dumpDir, const QString& out, bool joinOpenRun) {
    if (m_train->isRunning()) {
        showError(tr("A run is in progress"), tr("Stop the current run before importing another."));
        return false;
    }
    QDir().mkpath(QFileInfo(out).absolutePath());
    const std::string joinPath =
        joinOpenRun && m_model->hasRun() ? m_model->path().toStdString() : std::string();
    // Why the join was refused (the dumps' ranks or times do not fit the open run), set by the worker.
    auto refused = std::make_shared<std::string>();
    const QString error =
        runImport(QDir::toNativeSeparators(dumpDir), [dir = dumpDir.toStdString(), path = out.toStdString(),
                                                      joinPath, refused](const auto& progress) {
            std::unique_ptr<RunReader> run;
            FlightImportOptions o;
            o.overwrite = true;
            o.progress = progress;
            if (!joinPath.empty()) {
                run = openRunFile(joinPath);
                o.run = run.get();
            }
            try {
                rs::importFlightRecorder(dir, path, o);
            } catch (const JoinRefused& e) {
                *refused = e.what();
                throw;
            }
        });
    if (!refused->empty()) {
        showError(tr("The dumps were not joined with %1").arg(m_model->runName()),
                  tr("They cannot belong to the open run, so nothing was imported:\n\n%1\n\nTo see their "
                     "collectives anyway, import them again and answer No when asked to join them with the "
                     "open run.")
                      .arg(QString::fromStdString(*refused)));
        return false;
    }
    if (!error.isEmpty()) {
        showError(tr("The flight-recorder dumps could not be imported"), error);
        return false;
    }
    openRun(out);
    statusBar()->showMessage(
        tr("Imported %1 into %2").arg(QDir::toNativeSeparators(dumpDir), QDir::toNativeSeparators(out)),
        10000);
    return true;
}

void MainWindow::compareDialog() {
    if (const QString path = chooseRunFile(tr("Reference Run File")); !path.isEmpty())
        compareWithReference(path);
}

void MainWindow::spreadDialog() {
    const auto current = m_comparison->comparison();
    if (!current)
        return;
    const QString path = chooseRunFile(tr("Spread Reference: the Reference's Job With Other Arithmetic"));
    if (path.isEmpty())
        return;
    QStringList spreads;
    for (const SpreadReference& r : current->spreads)
        spreads << QString::fromStdString(r.name);
    compareWithReference(m_comparison->referencePath(), spreads << path);
}

bool MainWindow::compareWithReference(const QString& reference, const QStringList& spreads) {
    if (!m_model->hasRun() || m_model->path().isEmpty()) {
        showError(tr("No run to compare"), tr("Open a run first, then compare it with a reference."));
        return false;
    }
    std::vector<std::string> spreadPaths;
    for (const QString& s : spreads)
        spreadPaths.push_back(s.toStdString());
    auto result = std::make_shared<RunComparison>();
    const QString error = runInWorker(tr("Comparing with %1…").arg(QDir::toNativeSeparators(reference)),
                                      [result, run = m_model->path().toStdString(),
                                       ref = reference.toStdString(), spreadPaths](const auto& progress) {
                                          const auto a = openRunFile(run);
                                          const ReferenceRuns refs = openReferences(ref, spreadPaths);
                                          *result = compareRuns(*a, *refs.reference, progress, refs.spreads);
                                      });
    if (!error.isEmpty()) {
        showError(tr("The runs could not be compared"), error);
        return false;
    }
    m_comparison->setComparison(result, reference);
    m_diagnosis->setReference(result);
    m_centralTabs->setCurrentWidget(m_comparison);
    statusBar()->showMessage(tr("This run %1").arg(QString::fromStdString(comparisonLine(*result))), 10000);
    return true;
}

} // namespace rs
