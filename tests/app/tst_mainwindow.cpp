// The window as a user drives it (offscreen): Start on a tiny config fills the charts and Stop ends the run
// within a second with a complete file; closing mid-run keeps the file complete; opening a run shows its
// steps, ranks and parameters; bad files show an error and leave the window usable; drag and drop; and the
// `ranksight` binary's --start / SIGTERM path.
#include "DialogDriving.h"
#include "MainWindow.h"
#include "TrainController.h"
#include "charts/ChartWidget.h"
#include "charts/RankHeatmap.h"
#include "charts/ReferenceChart.h"
#include "compare/RunComparison.h"
#include "core/RunFileFixtures.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/ComparisonPanel.h"
#include "panels/FindingsModel.h"
#include "panels/FindingsPanel.h"
#include "panels/RunPanel.h"
#include "panels/RunSummaryView.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "train/TrainConfig.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QMimeData>
#include <QProcess>
#include <QPushButton>
#include <QRandomGenerator>
#include <QScopeGuard>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>
#include <csignal>
#include <functional>
#include <qcustomplot.h>
#include <set>

using namespace rs;
using namespace rs::runfile_fixtures;
using namespace rs::dialog_driving;

namespace {

TrainConfig tinyConfig(const QString& out, int64_t steps) {
    TrainConfig c;
    c.model = ModelKind::Mlp;
    c.ranks = 2;
    c.batchPerRank = 4;
    c.steps = steps;
    c.precision = Precision::O0;
    c.lossScale = parseLossScale("none");
    c.evalSamples = 16;
    c.warmupSteps = 0;
    c.out = out.toStdString();
    return c;
}

std::unique_ptr<RunReader> reopen(const QString& path) {
    return openRunFile(path.toStdString());
}

// The app's first run file in `runsDir` once it holds `steps` steps; empty until then.
QString firstRunWithSteps(const QString& runsDir, int64_t steps) {
    const auto files = QDir(runsDir).entryList({"*.h5"});
    if (files.isEmpty())
        return {};
    const QString run = QDir(runsDir).filePath(files.front());
    try {
        return reopen(run)->stepCount() >= steps ? run : QString();
    } catch (const std::exception&) {
        return {};
    }
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void startFillsChartsAndStopEndsWithinASecond() {
        QTemporaryDir dir;
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QString path = dir.filePath("run.h5");
        QVERIFY(w.startRun(tinyConfig(path, 1000000)));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->stepCount() >= 5, 60000);
        QVERIFY(w.windowTitle().contains("run.h5"));
        QVERIFY(w.windowTitle().contains("live"));
        // The loss chart drew the live steps (per-rank lines and the mean).
        QCustomPlot* loss = w.charts().front()->plot();
        QTRY_VERIFY_WITH_TIMEOUT(loss->graphCount() > 0 && loss->graph(0)->dataCount() > 0, 5000);
        QVERIFY(w.cursor()->following());

        QElapsedTimer t;
        t.start();
        w.stopRun();
        QTRY_VERIFY_WITH_TIMEOUT(!w.trainController()->isRunning(), 1000);
        qInfo("stop took %lld ms", t.elapsed());
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->isComplete(), 5000);
        QCOMPARE(w.model()->stopReason(), QString("stopped"));
        auto r = reopen(path);
        QVERIFY(r->complete());
        QCOMPARE(r->stepCount(), w.model()->stepCount());
        QVERIFY(!w.windowTitle().contains("live"));
    }

    void aFaultyRunIsNamedAndItsFindingShown() {
        QTemporaryDir dir;
        const QString path = dir.filePath("faulty.h5");
        TrainConfig c = tinyConfig(path, 30);
        c.ranks = 3;
        c.faults = {"sdc-after@12:1"};
        MainWindow w;
        w.show();
        QVERIFY(w.startRun(c));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->isComplete(), 60000);
        FindingsPanel* panel = w.findingsPanel();
        QTRY_VERIFY_WITH_TIMEOUT(!panel->runner()->isRunning() && panel->findingsModel()->rowCount() > 0,
                                 30000);
        const Finding top = panel->findingsModel()->findings().front();
        QCOMPARE(QString::fromStdString(top.key()), QString("sdc-after"));
        QCOMPARE(top.ranks, std::vector<int>{1});
        w.cursor()->setStep(29);
        panel->activate(0); // what a click does
        QCOMPARE(w.cursor()->step(), top.firstStep);
        auto* heatmap = qobject_cast<RankHeatmap*>(w.charts().at(2));
        QVERIFY(heatmap);
        QCOMPARE(heatmap->rankMetric(), view::RankMetric::SyncedMismatch);
        if (!top.parameters.empty())
            QCOMPARE(QString::fromStdString(w.model()->meta().params[size_t(heatmap->param())].name),
                     QString::fromStdString(top.parameters.front()));
    }

    void aRunEndingInAnErrorSaysSoInFront() {
        QTemporaryDir dir;
        TrainConfig c = tinyConfig(dir.filePath("died.h5"), 1000);
        c.faults = {"rank-exit@3:1"};
        c.timeoutMs = 2000;
        MainWindow w;
        w.show();
        QVERIFY(w.startRun(c));
        QTRY_VERIFY_WITH_TIMEOUT(!w.trainController()->isRunning(), 60000);
        QTRY_VERIFY_WITH_TIMEOUT(w.lastError().contains("error"), 5000);
        QVERIFY2(w.lastError().contains("died.h5"), qPrintable(w.lastError()));
        QVERIFY2(w.lastError().contains("rank 1") || w.lastError().contains("card 1"),
                 qPrintable(w.lastError()));
    }

    void aRefusedRankTableIsShownAndNamed() {
        QTemporaryDir dir;
        TrainConfig c = tinyConfig(dir.filePath("refused.h5"), 30);
        c.faults = {"rank-table-invalid"};
        MainWindow w;
        w.show();
        QVERIFY(w.startRun(c));
        QTRY_VERIFY_WITH_TIMEOUT(!w.trainController()->isRunning(), 60000);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && w.model()->isComplete(), 10000);
        QCOMPARE(w.model()->stepCount(), int64_t(0));
        QVERIFY(std::any_of(w.model()->events().begin(), w.model()->events().end(),
                            [](const Event& e) { return e.code == "RANK_TABLE"; }));
        FindingsPanel* panel = w.findingsPanel();
        QTRY_VERIFY_WITH_TIMEOUT(panel->findingsModel()->rowCount() > 0, 30000);
        QCOMPARE(QString::fromStdString(panel->findingsModel()->findings().front().key()),
                 QString("rank-table-invalid"));
    }

    void closingAtRandomMomentsKeepsTheFileComplete() {
        // From "right after Start" (the trainer still setting up) to well into the run; a fixed seed.
        constexpr quint32 kSeed = 20261204;
        qInfo("close moments from seed %u", kSeed);
        QRandomGenerator rng(kSeed);
        QTemporaryDir dir;
        for (int i = 0; i < 5; ++i) {
            const QString path = dir.filePath(QStringLiteral("closed%1.h5").arg(i));
            TrainConfig c = tinyConfig(path, 1000000);
            c.timeoutMs = 3000;
            QElapsedTimer t;
            {
                MainWindow w;
                w.show();
                QVERIFY(w.startRun(c));
                if (i > 0)
                    QTRY_VERIFY_WITH_TIMEOUT(w.model()->stepCount() >= 1, 60000);
                QTest::qWait(i == 0 ? 0 : int(rng.bounded(800)));
                t.start();
                QVERIFY(w.close());
            }
            qInfo("close %d: window gone %lld ms after close()", i, t.elapsed());
            QVERIFY(t.elapsed() < c.timeoutMs);
            auto r = reopen(path);
            QVERIFY(r->complete());
            QCOMPARE(QString::fromStdString(r->stopReason()), QString("stopped"));
            const auto steps = r->readSteps(0, r->stepCount(), true);
            for (int64_t s = 0; s < int64_t(steps.size()); ++s)
                QCOMPARE(steps[size_t(s)].step, s);
        }
    }

    void startRefusesToOverwrite() {
        QTemporaryDir dir;
        const QString path = dir.filePath("exists.h5");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("keep me");
        f.close();
        MainWindow w;
        w.show();
        QVERIFY(!w.startRun(tinyConfig(path, 10)));
        QVERIFY(w.lastError().contains("exists.h5"));
        QVERIFY(!w.trainController()->isRunning());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("keep me"));
    }

    void openShowsStepsRanksAndParameters() {
        QTemporaryDir dir;
        const QString path = dir.filePath("fixture.h5");
        const RunMeta meta = makeMeta(3, 5, 4, 8);
        writeRun(path, meta, 40);
        MainWindow w;
        w.show();
        w.openRun(path);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->isLoading(), 10000);
        QCOMPARE(w.model()->stepCount(), int64_t(40));
        QCOMPARE(w.model()->worldSize(), 3);
        QCOMPARE(w.model()->paramCount(), 5);
        for (int p = 0; p < 5; ++p)
            QCOMPARE(w.model()->meta().params[size_t(p)].name, meta.params[size_t(p)].name);
        QVERIFY(w.model()->isComplete());
        QVERIFY(w.windowTitle().startsWith("fixture.h5"));
        // A replay starts at the last step, like a finished live run; once diagnosed, at the first finding's
        // step if there is one (FindingsPanel). The cursor did not wait for diagnosis.
        QTRY_VERIFY_WITH_TIMEOUT(w.findingsPanel()->runner()->hasResult(), 30000);
        const Finding* first = w.findingsPanel()->findingsModel()->findingAt(0);
        QCOMPARE(w.cursor()->step(), first && first->firstStep >= 0 ? first->firstStep : int64_t(39));
    }

    void anOpenedRunShowsItsOwnSettingsUntilNewRun() {
        // The form holds the ResNet-50 seed preset; the file is a SmallCNN x 3 run. The panel must say what
        // the file was recorded with, read-only, and give the form back, as the user left it, on New Run.
        QTemporaryDir dir;
        const QString path = dir.filePath("fixture.h5");
        writeRun(path, makeMeta(3, 5, 4, 8), 40);
        MainWindow w;
        w.show();
        QVERIFY(w.runPanel()->loadPreset("seed"));
        QVERIFY(!w.runPanel()->showsLoadedRun());
        w.openRun(path);
        QTRY_VERIFY_WITH_TIMEOUT(w.runPanel()->showsLoadedRun(), 10000);
        auto* summary = w.runPanel()->findChild<RunSummaryView*>();
        QVERIFY(summary && summary->isVisible());
        QCOMPARE(summary->fieldText("Model"), QString("smallcnn"));
        QCOMPARE(summary->fieldText("Ranks"), QString("3"));
        QCOMPARE(summary->fieldText("Batch per rank"), QString("8"));
        QCOMPARE(summary->fieldText("Precision"), QString("O2"));
        QVERIFY(!w.runPanel()->findChild<QPushButton*>("start")->isVisible());

        QAction* newRun = nullptr;
        for (QAction* a : w.findChildren<QAction*>())
            if (a->shortcut() == QKeySequence(QKeySequence::New))
                newRun = a;
        QVERIFY(newRun);
        newRun->trigger();
        QVERIFY(!w.runPanel()->showsLoadedRun());
        QCOMPARE(w.runPanel()->presetName(), QString("seed"));
        QVERIFY(w.runPanel()->findChild<QPushButton*>("start")->isVisible());
        // The seed preset (ResNet-50, 4 x 32, 200 steps) says what it costs before Start: minutes, not
        // the seconds of the quick preset.
        const QString seedEstimate = w.runPanel()->estimateText();
        QVERIFY2(seedEstimate.contains(" min") || seedEstimate.contains(" h"), qPrintable(seedEstimate));
        QVERIFY(w.runPanel()->loadPreset("quick"));
        QVERIFY2(w.runPanel()->estimateText().contains(" s in all"),
                 qPrintable(w.runPanel()->estimateText()));

        // Start (F5) while a saved run's settings are shown brings the form back instead of starting what
        // the user cannot see.
        w.openRun(path);
        QTRY_VERIFY_WITH_TIMEOUT(w.runPanel()->showsLoadedRun(), 10000);
        w.startFromPanel();
        QVERIFY(!w.runPanel()->showsLoadedRun());
        QVERIFY(!w.trainController()->isRunning());
    }

    void badFilesShowAnErrorAndTheWindowStaysUsable_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("expected");
        QTest::addRow("not hdf5") << QByteArray("this is not a run file\n") << "HDF5";
        QTest::addRow("empty") << QByteArray() << "HDF5";
        QTest::addRow("truncated") << QByteArray("truncate") << "truncated";
        QTest::addRow("newer version") << QByteArray("newer") << "newer RankSight";
        QTest::addRow("foreign HDF5") << QByteArray("foreign") << "format";
    }
    void badFilesShowAnErrorAndTheWindowStaysUsable() {
        QFETCH(QByteArray, content);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString bad = dir.filePath("bad.h5");
        if (content == "truncate") {
            writeRun(bad, makeMeta(2, 3, 4, 4), 30);
            QFile f(bad);
            QVERIFY(f.resize(f.size() / 3));
        } else if (content == "newer") {
            writeRun(bad, makeMeta(2, 3, 4, 4), 5);
            mutateFile(bad, [](H5::H5File& f) {
                const int v = 99;
                f.removeAttr("format_version");
                f.createAttribute("format_version", H5::PredType::STD_I32LE, H5::DataSpace(H5S_SCALAR))
                    .write(H5::PredType::NATIVE_INT, &v);
            });
        } else if (content == "foreign") {
            H5::H5File f(bad.toStdString(), H5F_ACC_TRUNC); // an HDF5 file from some other tool
            f.createGroup("/data");
        } else {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(content);
        }
        MainWindow w;
        w.show();
        w.openRun(bad);
        QTRY_VERIFY_WITH_TIMEOUT(!w.lastError().isEmpty(), 10000);
        QVERIFY2(w.lastError().contains("bad.h5"), qPrintable(w.lastError()));
        if (!expected.isEmpty())
            QVERIFY2(w.lastError().contains(expected), qPrintable(w.lastError()));
        expectErrorShownThenGoodFileOpens(w, dir);
    }

    // Files on which libhdf5 itself crashes or hangs (tests/data/damaged-*.h5: issue 10's file and those the
    // long fuzzing found, from tests/data/fuzz-regressions/runfile-contained/): the reader process dies or is
    // stopped, the window names the file as damaged and where the reader was, and stays usable.
    void filesThatCrashOrHangLibhdf5ShowAnErrorAndTheWindowStaysUsable_data() {
        QTest::addColumn<QString>("file");
        const QDir data(QStringLiteral(RANKSIGHT_TEST_DATA));
        const QStringList files = data.entryList({QStringLiteral("damaged-*.h5")}, QDir::Files, QDir::Name);
        QVERIFY(files.size() >= 7);
        for (const QString& f : files)
            QTest::addRow("%s", qPrintable(f)) << data.filePath(f);
    }
    void filesThatCrashOrHangLibhdf5ShowAnErrorAndTheWindowStaysUsable() {
        QFETCH(QString, file);
        // The hang's no-progress limit, shortened from 30 s (it is what that file tests).
        qputenv("RANKSIGHT_READER_TIMEOUT_MS", "3000");
        const auto restore = qScopeGuard([] { qunsetenv("RANKSIGHT_READER_TIMEOUT_MS"); });
        QTemporaryDir dir;
        const QString bad = dir.filePath(QFileInfo(file).fileName());
        QVERIFY(QFile::copy(file, bad));
        MainWindow w;
        w.show();
        w.openRun(bad);
        QTRY_VERIFY_WITH_TIMEOUT(!w.lastError().isEmpty(), 20000);
        const QString error = w.lastError();
        QVERIFY2(error.contains(bad + ": the file is damaged") && error.contains("root attribute '"),
                 qPrintable(error));
        QVERIFY2(error.contains("crashed the HDF5 library") || error.contains("exit code") ||
                     error.contains("made no progress"),
                 qPrintable(error));
        expectErrorShownThenGoodFileOpens(w, dir);
    }

    void exportsTheBugReportOfTheOpenRun() {
        QTemporaryDir dir;
        const QString path = dir.filePath("reported.h5");
        writeRun(path, makeMeta(2, 3, 4, 4), 30);
        MainWindow w;
        w.show();
        w.openRun(path);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->isLoading(), 10000);
        QString error;
        const QString out = dir.filePath("report");
        QVERIFY2(w.exportReport(out, &error), qPrintable(error));
        for (const char* f : {"report.md", "steps.csv", "slice.h5", "loss.png", "loss.svg", "overflow.png",
                              "rank-heatmap.png", "param-heatmap.svg"})
            QVERIFY2(QFileInfo(QDir(out).filePath(f)).size() > 0, f);
        QCOMPARE(reopen(QDir(out).filePath("slice.h5"))->stepCount(), int64_t(30)); // no anomaly: whole run
        QVERIFY(!w.exportReport(out, &error)); // never into an existing folder
        QVERIFY(error.contains("report"));

        // Exported from where the user looks: the cursor the user put on step 12 and the heatmap's metric.
        w.cursor()->setStep(12);
        auto* heatmap = w.findChild<RankHeatmap*>();
        QVERIFY(heatmap);
        heatmap->setMetric(view::RankMetric::ShardOverlap);
        const QString here = dir.filePath("report-here");
        QVERIFY2(w.exportReport(here, &error), qPrintable(error));
        QFile md(QDir(here).filePath("report.md"));
        QVERIFY(md.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(md.readAll());
        QVERIFY2(text.contains("Cursor and heatmaps at step 12 (the window's cursor)."), qPrintable(text));
        QVERIFY(text.contains("### Rank × rank (data shard overlap, all parameters)"));
        QVERIFY(text.contains("+-50 steps around step 12, the window's cursor"));
    }

    // File > Export Bug Report asks once, for the new folder itself: <run>-report in the folder used last,
    // which is remembered. A name that exists is refused (a report goes into a new folder), nothing written.
    void bugReportDialogAsksForTheNewFolder() {
        QTemporaryDir dir;
        const QString path = dir.filePath("asked.h5");
        writeRun(path, makeMeta(2, 3, 4, 4), 10);
        QSettings().setValue("lastReportDir", dir.path());
        MainWindow w;
        w.show();
        w.openRun(path);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->isLoading(), 10000);
        QAction* exportReport = actionNamed(w, "Export &Bug Report…");
        QVERIFY(exportReport && exportReport->isEnabled());

        QString suggested, shownDir;
        QDir(dir.path()).mkdir("elsewhere");
        const QString chosen = dir.filePath("elsewhere/for-the-ticket");
        answerReportDialog([&](QFileDialog* d) {
            suggested = d->selectedFiles().value(0);
            shownDir = d->directory().absolutePath();
            type(d, chosen);
            static_cast<QDialog*>(d)->accept(); // QFileDialog::accept, as the Write Report button
        });
        exportReport->trigger();
        QCOMPARE(suggested, dir.filePath("asked-report"));
        QCOMPARE(shownDir, QDir(dir.path()).absolutePath());
        QVERIFY2(QFileInfo(QDir(chosen).filePath("report.md")).size() > 0, qPrintable(w.lastError()));
        QCOMPARE(QSettings().value("lastReportDir").toString(), dir.filePath("elsewhere"));

        // A taken name: said so, and the file there is left as it was.
        QFile taken(dir.filePath("elsewhere/taken"));
        QVERIFY(taken.open(QIODevice::WriteOnly));
        taken.write("mine");
        taken.close();
        answerReportDialog([&](QFileDialog* d) {
            suggested = d->selectedFiles().value(0);
            type(d, taken.fileName());
            static_cast<QDialog*>(d)->accept(); // QFileDialog::accept, as the Write Report button
        });
        exportReport->trigger();
        QCOMPARE(suggested, dir.filePath("elsewhere/asked-report"));
        QVERIFY2(w.lastError().contains("already exists") && w.lastError().contains("new folder"),
                 qPrintable(w.lastError()));
        QCOMPARE(taken.size(), qint64(4));
        w.errorBox()->accept();

        answerReportDialog([](QFileDialog* d) { d->reject(); }); // Cancel: nothing
        const QString before = w.lastError();
        exportReport->trigger();
        QCOMPARE(w.lastError(), before);
        QVERIFY(!QFileInfo::exists(dir.filePath("elsewhere/asked-report")));
    }

    void dropOpensTheFile() {
        QTemporaryDir dir;
        const QString path = dir.filePath("dropped.h5");
        writeRun(path, makeMeta(2, 3, 4, 4), 7);
        MainWindow w;
        w.show();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(path)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &drop);
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->stepCount(), int64_t(7), 10000);
    }

    // An msprobe monitor folder dropped on the window is imported into the runs folder and opened, named
    // after the job's folder; its Findings panel lists what msprobe does not record. A broken tree shows the
    // import's error (file and line) and leaves nothing behind.
    void droppingAnMsprobeFolderImportsAndOpensIt() {
        QTemporaryDir dir;
        auto tree = [&](const QString& name, const QStringList& options) {
            QProcess gen;
            gen.start("/usr/bin/python3",
                      QStringList{QStringLiteral(RANKSIGHT_SOURCE_DIR "/tests/msprobe/make_msprobe_tree.py"),
                                  dir.filePath(name)} +
                          options);
            return gen.waitForFinished(60000) && gen.exitCode() == 0;
        };
        QVERIFY(tree("job", {"--mistake", "grad-sum"}));
        MainWindow w;
        w.setRunsDir(dir.filePath("runs"));
        w.show();
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(dir.filePath("job/monitor_output"))});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&w, &drop);
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->stepCount(), int64_t(12), 20000);
        QCOMPARE(QFileInfo(w.model()->path()).absoluteFilePath(),
                 QFileInfo(dir.filePath("runs/job-msprobe.h5")).absoluteFilePath());
        QCOMPARE(w.model()->worldSize(), 4);
        QTRY_VERIFY_WITH_TIMEOUT(w.findingsPanel()->runner()->hasResult(), 30000);
        QCOMPARE(w.findingsPanel()->findingsModel()->rowCount(), 1);
        QCOMPARE(w.findingsPanel()->findingsModel()->findingAt(0)->key(), std::string("grad-sum"));
        QVERIFY2(w.findingsPanel()->notRunText().contains("step timing (straggler): the source (msprobe)"),
                 qPrintable(w.findingsPanel()->notRunText()));
        QCOMPARE(w.importTarget(dir.filePath("job/monitor_output")), dir.filePath("runs/job-msprobe-2.h5"));

        QVERIFY(tree("broken", {"--broken", "bad-number"}));
        QVERIFY(!w.importMsprobe(dir.filePath("broken"), dir.filePath("runs/broken.h5")));
        QVERIFY(w.errorBox() && w.errorBox()->isVisible());
        QVERIFY2(w.lastError().contains("grad_unreduced_5-9.csv:4: column 'norm': '1.2.3' is not a number"),
                 qPrintable(w.lastError()));
        QVERIFY(!QFile::exists(dir.filePath("runs/broken.h5")));
        QCOMPARE(QDir(dir.filePath("runs")).entryList(QDir::Files), QStringList{"job-msprobe.h5"});
    }

    // Flight-recorder dumps of another job (of 2025, against a run recorded now) are not joined with the open
    // run: the window says why, and writes nothing; imported alone they open.
    void flightDumpsOfAnotherJobAreNotJoined() {
        QTemporaryDir dir;
        QProcess gen;
        gen.start("/usr/bin/python3",
                  QStringList{QStringLiteral(RANKSIGHT_SOURCE_DIR "/tests/flight/make_fr_dumps.py"),
                              dir.filePath("fr"), "--ranks", "2", "--scenario", "hang"});
        QVERIFY(gen.waitForFinished(60000) && gen.exitCode() == 0);
        QProcess train;
        train.start(RANKSIGHT_CLI, QStringList{"train", "--model", "mlp", "--ranks", "4", "--steps", "5",
                                               "--quiet", "--out", dir.filePath("run.h5")});
        QVERIFY(train.waitForFinished(120000) && train.exitCode() == 0);
        MainWindow w;
        w.show();
        w.openRun(dir.filePath("run.h5"));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->isLoading(), 10000);
        QVERIFY(!w.importFlightRecorder(dir.filePath("fr"), dir.filePath("joined.h5"), /*joinOpenRun=*/true));
        QVERIFY(w.errorBox() && w.errorBox()->isVisible());
        QCOMPARE(w.errorBox()->windowTitle(), QString("The dumps were not joined with run"));
        QVERIFY2(w.lastError().contains("cannot belong to the open run") &&
                     w.lastError().contains("rank 0's collectives were enqueued 2025-12-03") &&
                     w.lastError().contains("outside the run"),
                 qPrintable(w.lastError()));
        QVERIFY(!QFile::exists(dir.filePath("joined.h5")));
        w.errorBox()->close();
        QVERIFY2(w.importFlightRecorder(dir.filePath("fr"), dir.filePath("alone.h5"), /*joinOpenRun=*/false),
                 qPrintable(w.lastError()));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->collectives().empty(), 10000);
        QCOMPARE(w.model()->worldSize(), 2);
    }

    void watchesAFileAnotherWriterIsStillWriting() {
        QTemporaryDir dir;
        const QString path = dir.filePath("growing.h5");
        const RunMeta meta = makeMeta(2, 3, 4, 4);
        auto writer = RunWriter::create(path.toStdString(), meta);
        for (int s = 0; s < 5; ++s)
            writer->appendStep(makeStep(meta, s));
        MainWindow w;
        w.show();
        w.openRun(path);
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->stepCount(), int64_t(5), 10000);
        QVERIFY(w.model()->isLive());
        for (int s = 5; s < 25; ++s)
            writer->appendStep(makeStep(meta, s));
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->stepCount(), int64_t(25), 10000);
        QCOMPARE(w.cursor()->step(), int64_t(24)); // following the live run
        writer->close("completed");
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->isComplete(), 10000);
    }

    void appStartsARunAtLaunchAndStopsCleanlyOnSigterm() {
        QTemporaryDir dir;
        const QString config = dir.filePath("tiny.json");
        {
            QFile f(config);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(
                R"({"model":"mlp","ranks":2,"batch":4,"steps":1000000,"precision":"O0","loss_scale":"none",
                        "eval_samples":16})");
        }
        QProcess app;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_CONFIG_HOME", dir.filePath("config")); // keep the user's settings out of it
        app.setProcessEnvironment(env);
        app.start(RANKSIGHT_GUI, {"--start", "--config", config, "--runs-dir", dir.filePath("runs")});
        QVERIFY(app.waitForStarted());
        QString run;
        QTRY_VERIFY_WITH_TIMEOUT(!(run = firstRunWithSteps(dir.filePath("runs"), 3)).isEmpty(), 60000);
        ::kill(pid_t(app.processId()), SIGTERM);
        QVERIFY(app.waitForFinished(10000));
        QCOMPARE(app.exitStatus(), QProcess::NormalExit);
        QCOMPARE(app.exitCode(), 0);
        auto r = reopen(run);
        QVERIFY(r->complete());
        QCOMPARE(QString::fromStdString(r->stopReason()), QString("stopped"));
    }

    // A run of 2 nodes started from the window (`ranksight --nodes 2 --start`, the run panel's Nodes): node 1
    // is a ranksight-cli process the app starts, the window follows node 0's file, which describes 2 servers;
    // SIGTERM stops both nodes and the file is complete.
    void appRunsAMultiNodeRunAndStopsItsNodes() {
        QTemporaryDir dir;
        const QString config = dir.filePath("nodes.json");
        {
            QFile f(config);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(R"({"model":"mlp","ranks":4,"batch":4,"steps":1000000,"precision":"O0",
                        "loss_scale":"none","eval_samples":16})");
        }
        QProcess app;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_CONFIG_HOME", dir.filePath("config"));
        app.setProcessEnvironment(env);
        app.start(RANKSIGHT_GUI,
                  {"--start", "--nodes", "2", "--config", config, "--runs-dir", dir.filePath("runs")});
        QVERIFY(app.waitForStarted());
        QString run;
        QTRY_VERIFY_WITH_TIMEOUT(!(run = firstRunWithSteps(dir.filePath("runs"), 3)).isEmpty(), 60000);
        // The app's children: node 1 (and the reader process).
        QFile children(QStringLiteral("/proc/%1/task/%1/children").arg(app.processId()));
        QVERIFY(children.open(QIODevice::ReadOnly));
        QList<int> nodePids;
        for (const QByteArray& pid : children.readAll().split(' ')) {
            QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(QString::fromLatin1(pid.trimmed())));
            if (!pid.trimmed().isEmpty() && cmdline.open(QIODevice::ReadOnly) &&
                cmdline.readAll().replace('\0', ' ').contains("train --config"))
                nodePids << pid.trimmed().toInt();
        }
        QCOMPARE(nodePids.size(), 1);
        {
            const auto r = reopen(run);
            std::set<std::string> servers;
            for (const CardInfo& c : r->meta().cards)
                servers.insert(c.serverId);
            QCOMPARE(int(servers.size()), 2);
            QVERIFY2(r->meta().environment.find("\"nodes\":2") != std::string::npos,
                     r->meta().environment.c_str());
        }
        ::kill(pid_t(app.processId()), SIGTERM);
        QVERIFY(app.waitForFinished(15000));
        QCOMPARE(app.exitStatus(), QProcess::NormalExit);
        QCOMPARE(app.exitCode(), 0);
        QTRY_VERIFY_WITH_TIMEOUT(!QFileInfo::exists(QStringLiteral("/proc/%1/cmdline").arg(nodePids.front())),
                                 5000);
        auto r = reopen(run);
        QVERIFY(r->complete());
        QCOMPARE(QString::fromStdString(r->stopReason()), QString("stopped"));
        QCOMPARE(r->meta().worldSize, 4);
    }

private:
    // After a refused file: the error dialog is up, no run is loaded; dismissed, a good file still opens.
    static void expectErrorShownThenGoodFileOpens(MainWindow& w, const QTemporaryDir& dir) {
        QVERIFY(w.errorBox() && w.errorBox()->isVisible());
        QVERIFY(!w.model()->hasRun());
        w.errorBox()->accept();
        const QString good = dir.filePath("good.h5");
        writeRun(good, makeMeta(2, 3, 4, 4), 12);
        w.openRun(good);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && w.model()->stepCount() == 12, 10000);
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
