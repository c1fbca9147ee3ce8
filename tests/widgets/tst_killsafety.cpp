// Nothing is lost when training is killed: `ranksight-cli train` is SIGKILLed at 14 random moments (a fixed
// seed, printed, so a failure can be replayed). Every time the file opens, holds every step a live reader saw
// before the kill with all its per-parameter data, `inspect` reports it as incomplete, and the app's model
// opens it.
#include "model/RunModel.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

using namespace rs;

class TestKillSafety : public QObject {
    Q_OBJECT
private slots:
    void killedAtRandomMoments() {
        constexpr quint32 kSeed = 20261130;
        constexpr int kKills = 14;
        qInfo("kill moments from seed %u", kSeed);
        QRandomGenerator rng(kSeed);
        QTemporaryDir dir;
        QElapsedTimer total;
        total.start();
        for (int i = 0; i < kKills; ++i) {
            // One line per phase, so that a run the suite's timeout stops shows where it was.
            QElapsedTimer phase;
            phase.start();
            const QString path = dir.filePath(QStringLiteral("killed%1.h5").arg(i));
            const QString model = i % 2 ? QStringLiteral("smallcnn") : QStringLiteral("mlp");
            QProcess cli;
            cli.start(RANKSIGHT_CLI, {"train", "--model", model, "--ranks", QString::number(2 + i % 3),
                                      "--batch", "4", "--steps", "1000000", "--precision",
                                      i % 4 == 1 ? "O2" : "O0", "--quiet", "--out", path});
            QVERIFY(cli.waitForStarted());
            // Once the file has its first step, a live reader follows it until the random moment.
            std::unique_ptr<RunReader> live;
            QTRY_VERIFY_WITH_TIMEOUT(
                [&] {
                    try {
                        if (!live)
                            live = openRunFile(path.toStdString());
                        live->refresh();
                        return live->stepCount() >= 1;
                    } catch (const std::exception&) {
                        return false;
                    }
                }(),
                60000);
            qInfo("kill %d: %s x %d cards, first step after %lld ms", i, qPrintable(model), 2 + i % 3,
                  phase.restart());
            QTest::qWait(int(rng.bounded(1500)));
            live->refresh();
            const int64_t seen = live->stepCount();
            ::kill(pid_t(cli.processId()), SIGKILL);
            QVERIFY(cli.waitForFinished(10000));
            QCOMPARE(cli.exitStatus(), QProcess::CrashExit);
            live.reset();
            qInfo("kill %d: killed after step %lld, %lld ms later", i, (long long)seen, phase.restart());

            const auto after = openRunFile(path.toStdString());
            QVERIFY2(after->stepCount() >= seen,
                     qPrintable(QStringLiteral("kill %1: %2 steps after, %3 seen before")
                                    .arg(i)
                                    .arg(after->stepCount())
                                    .arg(seen)));
            QVERIFY(!after->complete());
            const auto steps = after->readSteps(0, after->stepCount(), true); // every row, whole
            QCOMPARE(int64_t(steps.size()), after->stepCount());
            for (int64_t s = 0; s < int64_t(steps.size()); ++s)
                QCOMPARE(steps[size_t(s)].step, s);
            QCOMPARE(steps.back().ranks.front().localNorm.size(), after->meta().params.size());

            qInfo("kill %d: %lld steps read back in %lld ms", i, (long long)after->stepCount(),
                  phase.restart());

            QProcess inspect;
            inspect.start(RANKSIGHT_CLI, {"inspect", path, "--json"});
            QVERIFY(inspect.waitForFinished(30000));
            QCOMPARE(inspect.exitCode(), 0);
            const QJsonObject j = QJsonDocument::fromJson(inspect.readAllStandardOutput()).object();
            QCOMPARE(j.value("complete").toBool(true), false);

            RunModel app;
            app.open(path);
            QTRY_VERIFY_WITH_TIMEOUT(app.hasRun() && !app.isLoading(), 10000);
            QCOMPARE(app.stepCount(), after->stepCount());
            qInfo("kill %d: inspect and the app's model in %lld ms (%lld ms in all)", i, phase.elapsed(),
                  total.elapsed());
        }
    }
};

QTEST_MAIN(TestKillSafety)
#include "tst_killsafety.moc"
