// FindingNotifier: a finding newly named on a live run is announced once (its text: the cause in words, the
// first step, the ranks; the evidence's first sentence), a complete file opened or replayed announces
// nothing, the setting off announces nothing, and in the offscreen test environment the backend is the tray
// or none while the task-bar alert still runs.
#include "core/RunFileFixtures.h"
#include "diagnose/Finding.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "notify/FindingNotifier.h"
#include "panels/FindingsModel.h"
#include "panels/FindingsPanel.h"
#include "store/RunWriter.h"

#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace rs;

namespace {

void appendBadStep(RunWriter& w, int step, int rank);

// A healthy run of `steps` steps, except that rank 2 changes a synced gradient's copy at step `badStep`
// (sdc-after on rank 2; -1: never); the writer is returned open (live) and the caller closes it.
std::unique_ptr<RunWriter> writeRun(const std::string& path, int steps, int badStep) {
    RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
    auto w = RunWriter::create(path, meta);
    for (int s = 0; s < steps; ++s) {
        if (s == badStep) {
            appendBadStep(*w, s, 2);
            continue;
        }
        StepRecord rec = runfile_fixtures::makeStep(meta, s);
        runfile_fixtures::makeHealthy(rec);
        w->appendStep(rec);
    }
    w->flush();
    return w;
}

void appendBadStep(RunWriter& w, int step, int rank) {
    RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
    StepRecord rec = runfile_fixtures::makeStep(meta, step);
    runfile_fixtures::makeHealthy(rec);
    rec.ranks[size_t(rank)].syncedFp[1] ^= 1;
    w.appendStep(rec);
    Event e;
    e.step = step;
    e.severity = Severity::Error;
    e.code = eventcode::kGradientSync;
    e.message = QStringLiteral("Rank 0 and Rank %1 parameter gradient mismatch at step %2")
                    .arg(rank)
                    .arg(step)
                    .toStdString();
    w.appendEvent(e);
    w.flush();
}

struct Window {
    RunModel model;
    StepCursor cursor;
    QWidget window; // never shown, so never active: the alert path runs
    DiagnosisRunner diagnosis{&model};
    FindingsPanel panel{&model, &diagnosis, &cursor};
    FindingNotifier notifier{&model, panel.runner(), &window};
};

bool diagnosedThrough(Window& w, int64_t step) {
    return w.model.hasRun() && !w.model.isLoading() && w.panel.runner()->hasResult() &&
           !w.panel.runner()->isRunning() && w.panel.runner()->diagnosedThrough() >= step;
}

} // namespace

class TestFindingNotifier : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true); // the setting goes to a test folder
        qunsetenv("DBUS_SESSION_BUS_ADDRESS");    // this test is about the decision, not a desktop's bus
    }
    void init() { QSettings().remove(FindingNotifier::settingsKey()); }

    void noticeText() {
        Finding f;
        f.cause = findCause("sdc-after")->id;
        f.firstStep = 12;
        f.ranks = {1};
        f.evidence =
            "synced gradient of fc.weight differs on rank 1 by 4.00 at step 12. Rank 0 agrees with 3.";
        const auto n = FindingNotifier::noticeFor(f);
        QCOMPARE(n.summary, QString("Silent data corruption after the all-reduce at step 12, rank 1"));
        QCOMPARE(n.body, QString("synced gradient of fc.weight differs on rank 1 by 4.00 at step 12."));
        f.ranks = {0, 3};
        f.firstStep = -1;
        f.cause = Cause::GradSum;
        f.evidence = "one sentence without a stop";
        const auto m = FindingNotifier::noticeFor(f);
        QString title = QString::fromUtf8(causeInfo(Cause::GradSum).title);
        title[0] = title[0].toUpper();
        QCOMPARE(m.summary, title + QString(", ranks 0, 3")); // no step: none named
        QCOMPARE(m.body, QString("one sentence without a stop"));
    }

    // Offscreen there is no session bus and no tray: nothing can show the notice outside the window, but it
    // is still counted, sent to the status bar and the window is marked.
    void offscreenBackendIsTrayOrNone() {
        RunModel model;
        StepCursor cursor;
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
        FindingNotifier n(&model, panel.runner(), nullptr);
        QVERIFY2(n.backend() != DesktopNotice::Backend::Freedesktop,
                 qPrintable(DesktopNotice::backendName(n.backend())));
        QVERIFY(n.isEnabled()); // on by default
        QVERIFY(!n.backendText().isEmpty());
    }

    // A live run: the finding is announced once, although every later pass names it again; a second finding
    // (another rank) once more; the run's end announces nothing new.
    void liveRunNotifiesOncePerNewFinding() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("live.h5").toStdString();
        auto writer = writeRun(path, 10, -1);
        Window w;
        QSignalSpy noticed(&w.notifier, &FindingNotifier::noticed);
        w.panel.runner()->setLiveInterval(50);
        w.model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(diagnosedThrough(w, 9), 30000);
        QVERIFY(w.model.isLive());
        QCOMPARE(w.notifier.noticeCount(), 0); // a clean live run: nothing to say

        appendBadStep(*writer, 10, 2);
        QTRY_COMPARE_WITH_TIMEOUT(w.notifier.noticeCount(), 1, 30000);
        QCOMPARE(w.notifier.lastNotice().summary,
                 QString("Silent data corruption after the all-reduce at step 10, rank 2"));
        QVERIFY(!w.notifier.lastNotice().body.isEmpty());
        QCOMPARE(w.notifier.lastNotice().body, FindingNotifier::firstSentence(QString::fromStdString(
                                                   w.panel.runner()->findings()[0].evidence)));
        QCOMPARE(noticed.count(), 1);
        QCOMPARE(w.notifier.alertCount(), 1); // the window is not in front
        QVERIFY(w.notifier.lastBackend() != DesktopNotice::Backend::Freedesktop);

        // Healthy steps: the live run is diagnosed again and again, naming the same finding.
        RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
        for (int s = 11; s < 14; ++s) {
            StepRecord rec = runfile_fixtures::makeStep(meta, s);
            runfile_fixtures::makeHealthy(rec);
            writer->appendStep(rec);
            writer->flush();
            QTRY_VERIFY_WITH_TIMEOUT(diagnosedThrough(w, s), 30000);
        }
        QCOMPARE(w.notifier.noticeCount(), 1);

        // Rank 1's copies now differ on more steps than rank 2's did: diagnosis names rank 1 instead, a new
        // finding (cause and ranks), announced once more.
        for (int s = 14; s < 17; ++s)
            appendBadStep(*writer, s, 1);
        QTRY_VERIFY_WITH_TIMEOUT(diagnosedThrough(w, 16), 30000);
        QCOMPARE(w.panel.runner()->findings().size(), size_t(1));
        QCOMPARE(w.panel.runner()->findings()[0].ranks, std::vector<int>{1});
        QCOMPARE(w.notifier.noticeCount(), 2);
        QCOMPARE(w.notifier.lastNotice().summary,
                 QString("Silent data corruption after the all-reduce at step 10, rank 1"));

        const int before = w.notifier.noticeCount();
        writer->close(); // complete: one last pass
        QTRY_VERIFY_WITH_TIMEOUT(w.model.isComplete() && !w.panel.runner()->isRunning(), 30000);
        QTest::qWait(200);
        QCOMPARE(w.notifier.noticeCount(), before);
    }

    // Ranks 2 and 3 change their copies the same way: no rank is alone, so the finding names every rank. Once
    // rank 2 alone differs on a later step, diagnosis narrows it to rank 2: the same news, not told again.
    void aNarrowedFindingIsNotToldAgain() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("narrow.h5").toStdString();
        auto writer = writeRun(path, 10, -1);
        Window w;
        w.panel.runner()->setLiveInterval(50);
        w.model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(diagnosedThrough(w, 9), 30000);

        const RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
        StepRecord split = runfile_fixtures::makeStep(meta, 10);
        runfile_fixtures::makeHealthy(split);
        split.ranks[2].syncedFp[1] ^= 1;
        split.ranks[3].syncedFp[1] ^= 1;
        writer->appendStep(split);
        writer->flush();
        QTRY_COMPARE_WITH_TIMEOUT(w.notifier.noticeCount(), 1, 30000);
        QCOMPARE(w.notifier.lastNotice().summary,
                 QString("Silent data corruption after the all-reduce at step 10, ranks 0, 1, 2, 3"));

        appendBadStep(*writer, 11, 2);
        QTRY_VERIFY_WITH_TIMEOUT(diagnosedThrough(w, 11), 30000);
        QCOMPARE(w.panel.runner()->findings().size(), size_t(1));
        QCOMPARE(w.panel.runner()->findings()[0].ranks, std::vector<int>{2});
        QTest::qWait(200);
        QCOMPARE(w.notifier.noticeCount(), 1);
        writer->close();
    }

    // A complete file with the same finding, opened (and replayed, which only moves the cursor): nothing.
    void completeFileNotifiesNothing() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("saved.h5").toStdString();
        writeRun(path, 20, 8)->close();
        Window w;
        w.model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(diagnosedThrough(w, 19), 30000);
        QVERIFY(!w.panel.runner()->findings().empty()); // there is something it could have announced
        for (int64_t s = 0; s < 20; ++s)
            w.cursor.setStep(s);
        QTest::qWait(100);
        QCOMPARE(w.notifier.noticeCount(), 0);
        QCOMPARE(w.notifier.alertCount(), 0);
    }

    // The setting off (remembered): the live run's finding is not announced, and not later when it is on.
    void settingOffNotifiesNothing() {
        {
            RunModel model;
            DiagnosisRunner runner(&model);
            FindingNotifier n(&model, &runner, nullptr);
            n.setEnabled(false);
        }
        QCOMPARE(QSettings().value(FindingNotifier::settingsKey()).toBool(), false);
        QTemporaryDir dir;
        const std::string path = dir.filePath("live.h5").toStdString();
        auto writer = writeRun(path, 10, -1);
        Window w;
        QVERIFY(!w.notifier.isEnabled());
        w.panel.runner()->setLiveInterval(50);
        w.model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(diagnosedThrough(w, 9), 30000);
        appendBadStep(*writer, 10, 2);
        QTRY_VERIFY_WITH_TIMEOUT(!w.panel.runner()->findings().empty(), 30000);
        QCOMPARE(w.notifier.noticeCount(), 0);
        QCOMPARE(w.notifier.alertCount(), 0);
        w.notifier.setEnabled(true); // the finding already shown is not announced late
        QTest::qWait(300);
        QCOMPARE(w.notifier.noticeCount(), 0);
        writer->close();
    }
};

QTEST_MAIN(TestFindingNotifier)
#include "tst_findingnotifier.moc"
