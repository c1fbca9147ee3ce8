// Stopping never hangs and never loses the file: Trainer::stop() from another thread, Ctrl-C (SIGINT) to
// `ranksight-cli train`, and a card dying (rank-exit) at random moments, each time with a short collective
// timeout. Every run ends well within that timeout, the file is complete (the writer closed it) and holds
// every step up to the last one, contiguous and whole. The moments come from a fixed, printed seed so a
// failure can be replayed. (Closing the window at random moments is in tst_mainwindow; SIGKILL in
// tst_killsafety; a full disk in tst_fulldisk.)
#include "faults/FaultSpec.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "train/TrainConfig.h"
#include "train/Trainer.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <chrono>
#include <csignal>
#include <thread>

using namespace rs;

namespace {

constexpr int kTimeoutMs = 3000; // the collective timeout of every run here

TrainConfig smallRun(const QString& out, ModelKind model, int ranks, int64_t steps) {
    TrainConfig c;
    c.model = model;
    c.ranks = ranks;
    c.batchPerRank = 4;
    c.steps = steps;
    c.precision = Precision::O2;
    c.lossScale = parseLossScale("dynamic");
    c.evalEvery = 0;
    c.evalSamples = 16;
    c.timeoutMs = kTimeoutMs;
    c.out = out.toStdString();
    return c;
}

// Every row is there, in order, with its per-parameter data: nothing half-written is counted.
void checkWhole(const QString& path, int64_t expectSteps) {
    const auto r = openRunFile(path.toStdString());
    QVERIFY2(r->complete(), qPrintable(path + " was not closed: " + QString::fromStdString(r->stopReason())));
    if (expectSteps >= 0)
        QCOMPARE(r->stepCount(), expectSteps);
    const auto steps = r->readSteps(0, r->stepCount(), true);
    QCOMPARE(int64_t(steps.size()), r->stepCount());
    for (int64_t s = 0; s < int64_t(steps.size()); ++s) {
        QCOMPARE(steps[size_t(s)].step, s);
        QCOMPARE(steps[size_t(s)].ranks.back().localNorm.size(), r->meta().params.size());
    }
}

} // namespace

class TestStopSafety : public QObject {
    Q_OBJECT
private slots:
    void stopFromAnotherThreadAtRandomMoments() {
        constexpr quint32 kSeed = 20261201;
        qInfo("stop moments from seed %u", kSeed);
        QRandomGenerator rng(kSeed);
        QTemporaryDir dir;
        for (int i = 0; i < 10; ++i) {
            const QString path = dir.filePath(QStringLiteral("stopped%1.h5").arg(i));
            Trainer trainer(smallRun(path, i % 2 ? ModelKind::SmallCnn : ModelKind::Mlp, 2 + i % 3, 1000000));
            // Moments from 0 (during setup, before the first step) to 1.5 s into training.
            const int delayMs = i == 0 ? 0 : int(rng.bounded(1500));
            QElapsedTimer sinceStop;
            std::thread stopper([&] {
                std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
                sinceStop.start();
                trainer.stop();
            });
            const RunSummary s = trainer.run();
            stopper.join();
            const qint64 stopMs = sinceStop.elapsed();
            qInfo("stop %d at %d ms: %lld steps, ended %lld ms after stop()", i, delayMs,
                  qlonglong(s.stepsCompleted), qlonglong(stopMs));
            QVERIFY2(stopMs < kTimeoutMs, qPrintable(QString("stop %1 took %2 ms").arg(i).arg(stopMs)));
            QCOMPARE(QString::fromStdString(s.stopReason), QString("stopped"));
            checkWhole(path, s.stepsCompleted);
        }
    }

    void ctrlCAtRandomMoments() {
        constexpr quint32 kSeed = 20261202;
        qInfo("Ctrl-C moments from seed %u", kSeed);
        QRandomGenerator rng(kSeed);
        QTemporaryDir dir;
        for (int i = 0; i < 8; ++i) {
            const QString path = dir.filePath(QStringLiteral("interrupted%1.h5").arg(i));
            QProcess cli;
            cli.start(RANKSIGHT_CLI,
                      {"train", "--model", i % 2 ? "smallcnn" : "mlp", "--ranks", QString::number(2 + i % 3),
                       "--batch", "4", "--steps", "1000000", "--set",
                       QStringLiteral("timeout_ms=%1").arg(kTimeoutMs), "--quiet", "--out", path});
            QVERIFY(cli.waitForStarted());
            // Half the moments land while the process starts up (before the file or its first step).
            if (i % 2 == 0)
                QTest::qWait(int(rng.bounded(600)));
            else {
                QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(path), 60000);
                QTest::qWait(200 + int(rng.bounded(1500)));
            }
            QElapsedTimer t;
            t.start();
            ::kill(pid_t(cli.processId()), SIGINT);
            QVERIFY2(cli.waitForFinished(kTimeoutMs + 5000), qPrintable(QString("Ctrl-C %1 hung").arg(i)));
            qInfo("Ctrl-C %d: exited %lld ms after SIGINT, code %d: %s", i, t.elapsed(), cli.exitCode(),
                  cli.readAllStandardError().trimmed().constData());
            if (!QFile::exists(path)) {
                // Interrupted while the process started, before the run file existed: Ctrl-C ended it
                // (by default, or through the handler) and there was nothing to lose.
                continue;
            }
            QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
            QCOMPARE(cli.exitCode(), 0);
            checkWhole(path, -1);
            QProcess inspect;
            inspect.start(RANKSIGHT_CLI, {"inspect", path, "--json"});
            QVERIFY(inspect.waitForFinished(30000));
            const QJsonObject j = QJsonDocument::fromJson(inspect.readAllStandardOutput()).object();
            QCOMPARE(j.value("complete").toBool(false), true);
            QCOMPARE(j.value("stop_reason").toString(), QString("stopped"));
        }
    }

    void aCardDyingAtRandomStepsEndsTheRunWithinTheTimeout() {
        constexpr quint32 kSeed = 20261203;
        qInfo("rank-exit steps and ranks from seed %u", kSeed);
        QRandomGenerator rng(kSeed);
        QTemporaryDir dir;
        for (int i = 0; i < 6; ++i) {
            const QString path = dir.filePath(QStringLiteral("died%1.h5").arg(i));
            const int ranks = 2 + i % 3;
            const int step = int(rng.bounded(12));
            const int rank = int(rng.bounded(ranks));
            TrainConfig c = smallRun(path, i % 2 ? ModelKind::SmallCnn : ModelKind::Mlp, ranks, 1000000);
            c.addFault(QStringLiteral("rank-exit@%1:%2").arg(step).arg(rank).toStdString());
            QElapsedTimer t;
            t.start();
            const RunSummary s = Trainer(c).run();
            qInfo("rank-exit@%d:%d on %d ranks: %lld steps, %s, %lld ms", step, rank, ranks,
                  qlonglong(s.stepsCompleted), s.stopReason.c_str(), t.elapsed());
            QVERIFY(s.stopReason.rfind("error", 0) == 0);
            QCOMPARE(s.cardStates.at(size_t(rank)), CardState::Dead);
            QCOMPARE(s.stepsCompleted, int64_t(step)); // every step before the death, none after
            checkWhole(path, step);
            // The peers gave up after one collective timeout, not a hang: the whole run took a few
            // timeouts at most (setup and the steps before the death included).
            QVERIFY2(t.elapsed() < 4 * kTimeoutMs + 20000, qPrintable(QString::number(t.elapsed())));
        }
    }
};

QTEST_GUILESS_MAIN(TestStopSafety)
#include "tst_stopsafety.moc"
