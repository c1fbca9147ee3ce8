// `ranksight-cli watch` and the RunWatcher under it: a run followed while it is written alerts on the first
// finding asked for (and only once it settled), completes with exit 0, reports a writer that stopped, and
// answers a parent process step by step. The watcher is driven with a writer in this process and injected
// time; the command, on real engine runs (one process, and node processes) started after it.
#include "DiagnoseSim.h"
#include "cluster/NodeGroup.h"
#include "diagnose/RunWatcher.h"
#include "reader/OpenRunFile.h"
#include "store/RunWriter.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <stdexcept>

using namespace rs;
using namespace diagnose_sim;

namespace {

// Writes a Sim's steps [from, to) and the weight rows up to them.
void writeSteps(RunWriter& w, const Sim& sim, int64_t from, int64_t to) {
    for (int64_t s = from; s < to; ++s) {
        w.appendStep(sim.steps[size_t(s)]);
        for (const WeightRecord& row : sim.weights)
            if (row.step == s + 1)
                w.appendWeights(row);
    }
}

// The sdc-after of tst_diagnose: rank 1's copy of parameter 2 changed after the all-reduce at step 25.
Sim sdcAfterAt25() {
    Sim sim(4, 6, 40);
    auto& x = sim.steps[25].ranks[1];
    x.syncedFp[2] ^= 1ull << 40;
    x.syncedSum[2] += 1e20;
    return sim;
}

struct Exit {
    int code = -1;
    QString out, err;
};

Exit finish(QProcess& p, int ms = 120000) {
    if (!p.waitForFinished(ms)) {
        p.kill();
        p.waitForFinished();
        return {-1, p.readAllStandardOutput(), "did not finish: " + p.readAllStandardError()};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

} // namespace

class TestWatch : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    QString file(const QString& name) const { return m_dir.filePath(name); }

private slots:
    void alertFilterReadsCausesAndDimensions() {
        Finding f;
        f.cause = findCause("param-not-synced")->id;
        QVERIFY(AlertFilter::parse("any").matches(f));
        QVERIFY(AlertFilter::parse("parallel").matches(f));
        QVERIFY(AlertFilter::parse("sdc-after,param-not-synced").matches(f));
        QVERIFY(!AlertFilter::parse("numerics").matches(f));
        QVERIFY(!AlertFilter::parse("sdc-after").matches(f));
        f.cause = findCause("shard-overlap")->id;
        QVERIFY(AlertFilter::parse("data").matches(f));
        QVERIFY(AlertFilter::parse("numerics,shard-overlap").matches(f));
        try {
            AlertFilter::parse("parallel,sdc-afterr");
            QFAIL("an unknown word was accepted");
        } catch (const std::invalid_argument& e) {
            QVERIFY2(std::string(e.what()).find("'sdc-afterr'") != std::string::npos, e.what());
        }
    }

    // A sign on the run's last step can be the start of another cause: it is alerted once two more steps
    // show it still holds.
    void anAlertWaitsForTheFindingToSettle() {
        const Sim sim = sdcAfterAt25();
        const QString path = file("settle.h5");
        RunWatcher w(path.toStdString(), AlertFilter::parse("any"), 0, 0);
        QCOMPARE(w.poll(0), RunWatcher::Status::NoFile);
        auto writer = RunWriter::create(path.toStdString(), sim.meta, true);
        writeSteps(*writer, sim, 0, 26);
        QCOMPARE(w.poll(1), RunWatcher::Status::Following);
        QCOMPARE(w.lastStep(), qint64(25));
        // The diagnosis already names it; the watcher holds it back.
        const auto seen = diagnoseRun(*openRunFile(path.toStdString()));
        QVERIFY(!seen.empty() && seen.front().key() == "sdc-after");
        writeSteps(*writer, sim, 26, 27);
        QCOMPARE(w.poll(2), RunWatcher::Status::Following);
        writeSteps(*writer, sim, 27, 28);
        QCOMPARE(w.poll(3), RunWatcher::Status::Alert);
        QCOMPARE(w.alert().key(), std::string("sdc-after"));
        QCOMPARE(w.alert().firstStep, qint64(25));
        QCOMPARE(w.alert().ranks, std::vector<int>{1});
        QCOMPARE(w.stepsRead(), qint64(28));
        // It stays an alert whatever the file does next.
        writeSteps(*writer, sim, 28, 40);
        writer->close();
        QCOMPARE(w.poll(4), RunWatcher::Status::Alert);
        const std::string line = alertLine(w.alert());
        QVERIFY2(line.rfind("sdc-after at step 25, rank 1, parameter ", 0) == 0, line.c_str());
    }

    // A filter that does not take the finding lets the run complete.
    void aFindingNotAskedForCompletes() {
        const Sim sim = sdcAfterAt25();
        const QString path = file("other.h5");
        auto writer = RunWriter::create(path.toStdString(), sim.meta, true);
        writeSteps(*writer, sim, 0, 40);
        RunWatcher w(path.toStdString(), AlertFilter::parse("data,param-not-synced"), 0, 0);
        QCOMPARE(w.poll(0), RunWatcher::Status::Following);
        writer->close("completed");
        QCOMPARE(w.poll(1), RunWatcher::Status::Completed);
        QCOMPARE(w.stopReason(), std::string("completed"));
        QCOMPARE(w.stepsRead(), qint64(40));
    }

    void aWriterThatStopsIsStalled() {
        const Sim sim(2, 4, 20);
        const QString path = file("stall.h5");
        auto writer = RunWriter::create(path.toStdString(), sim.meta, true);
        writeSteps(*writer, sim, 0, 5);
        RunWatcher w(path.toStdString(), AlertFilter::parse("any"), 10, 100);
        RunWatcher never(path.toStdString(), AlertFilter::parse("any"), 0, 100);
        QCOMPARE(w.poll(100), RunWatcher::Status::Following);
        QCOMPARE(w.poll(109), RunWatcher::Status::Following);
        writeSteps(*writer, sim, 5, 6); // a new step restarts the clock
        QCOMPARE(w.poll(109.5), RunWatcher::Status::Following);
        QCOMPARE(w.poll(119), RunWatcher::Status::Following);
        QCOMPARE(w.poll(119.6), RunWatcher::Status::Stalled);
        QCOMPARE(w.lastStep(), qint64(5));
        QCOMPARE(never.poll(1e6), RunWatcher::Status::Following);
        // A file that never comes is a stall too, once the time has passed.
        RunWatcher none(file("never.h5").toStdString(), AlertFilter::parse("any"), 10, 0);
        QCOMPARE(none.poll(9), RunWatcher::Status::NoFile);
        QCOMPARE(none.poll(10), RunWatcher::Status::Stalled);
        QVERIFY(!none.fileOpened());
    }

    // A file that is not a run file is refused at once when it has not changed for a while, and after a
    // few seconds when its writer may still be creating it.
    void anUnreadableFileIsRefused() {
        const QString path = file("garbage.h5");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a run file at all");
        f.close();
        RunWatcher fresh(path.toStdString(), AlertFilter::parse("any"), 0, 0);
        QCOMPARE(fresh.poll(0), RunWatcher::Status::NoFile);
        QVERIFY_THROWS_EXCEPTION(RunFileError, fresh.poll(6));
        std::filesystem::last_write_time(path.toStdString(), std::filesystem::file_time_type::clock::now() -
                                                                 std::chrono::minutes(1));
        RunWatcher old(path.toStdString(), AlertFilter::parse("any"), 0, 0);
        QVERIFY_THROWS_EXCEPTION(RunFileError, old.poll(0));
    }

    // --- the command ------------------------------------------------------------------------------------

    void aCleanLiveRunExitsZeroAtItsEnd() {
        const QString path = file("clean.h5");
        QProcess watch, train;
        watch.start(RANKSIGHT_CLI, {"watch", path});
        QVERIFY(watch.waitForStarted());
        QTest::qWait(300); // watch is up before the file exists
        QVERIFY(!QFile::exists(path));
        train.start(RANKSIGHT_CLI, {"train", "--model", "smallcnn", "--ranks", "2", "--batch", "8", "--steps",
                                    "40", "--quiet", "--out", path});
        const Exit t = finish(train), w = finish(watch);
        QVERIFY2(t.code == 0, qPrintable(t.err));
        QVERIFY2(w.code == 0, qPrintable(w.out + w.err));
        QVERIFY2(w.out.contains("the run completed after 40 steps with no finding"), qPrintable(w.out));
    }

    // A parameter left out of the all-reduce from step 10, on a run spread over two node processes: watch
    // alerts while node 0 still writes, runs --exec once with the finding, and names the cause.
    void aFaultOnANodeRunExitsThreeWhileTheRunIsWritten() {
        const QString path = file("fault.h5"), marks = file("exec.txt");
        QProcess watch;
        watch.start(
            RANKSIGHT_CLI,
            {"watch", path, "--fail-on", "parallel", "--json", "--exec",
             "echo \"$RANKSIGHT_CAUSE|$RANKSIGHT_STEP|$RANKSIGHT_RANKS|$RANKSIGHT_PARAMETER|$RANKSIGHT_RUN\" "
             ">> '" +
                 marks + "'"});
        QVERIFY(watch.waitForStarted());
        const QString master = QStringLiteral("127.0.0.1:%1").arg(freeLoopbackPort());
        const QStringList common = {"train",
                                    "--model",
                                    "smallcnn",
                                    "--ranks",
                                    "4",
                                    "--batch",
                                    "8",
                                    "--steps",
                                    "100000",
                                    "--fault",
                                    "param-not-synced@10",
                                    "--nodes",
                                    "2",
                                    "--master",
                                    master,
                                    "--quiet"};
        QProcess node1, node0;
        node1.start(RANKSIGHT_CLI, common + QStringList{"--node-rank", "1"});
        node0.start(RANKSIGHT_CLI, common + QStringList{"--node-rank", "0", "--out", path});
        QVERIFY(node1.waitForStarted() && node0.waitForStarted());
        const Exit w = finish(watch);
        const bool stillWriting = node0.state() == QProcess::Running;
        if (!stillWriting)
            qWarning() << "node 0 ended:" << node0.exitCode() << node0.readAllStandardError();
        for (QProcess* p : {&node0, &node1}) {
            p->kill();
            p->waitForFinished();
        }
        QVERIFY2(w.code == 3, qPrintable(w.out + w.err));
        QVERIFY(stillWriting);
        const QJsonObject j = QJsonDocument::fromJson(w.out.toUtf8()).object();
        QCOMPARE(j["alert"].toString(), QString("finding"));
        QCOMPARE(j["cause"].toString(), QString("param-not-synced"));
        QCOMPARE(j["first_step"].toInt(), 10);
        QCOMPARE(j["run"].toString(), path);
        QVERIFY(j["steps_read"].toInt() >= 10 + int(kSettleSteps) + 1);
        QVERIFY(j["last_step"].toInt() < 100000);
        QFile f(marks);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString(f.readAll()).split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 1);
        QCOMPARE(
            lines.front(),
            QString("param-not-synced|10|0,1,2,3|%1|%2").arg(j["parameters"].toArray()[0].toString(), path));
    }

    void aStoppedWriterIsReportedWithItsFlightDumps() {
        const Sim sim(2, 4, 20);
        const QString path = file("hung.h5"), dumps = file("dumps"), marks = file("stall-exec.txt");
        QVERIFY(QDir().mkpath(dumps));
        for (const char* name : {"nccl_trace_rank_0", "nccl_trace_rank_1"}) {
            QFile d(dumps + "/" + name);
            QVERIFY(d.open(QIODevice::WriteOnly));
        }
        auto writer = RunWriter::create(path.toStdString(), sim.meta, true);
        writeSteps(*writer, sim, 0, 3); // and then nothing: the job hung
        QProcess watch;
        watch.start(RANKSIGHT_CLI, {"watch", path, "--stall", "1.5", "--flight-dumps", dumps, "--exec",
                                    "echo \"$RANKSIGHT_CAUSE $RANKSIGHT_STEP\" >> '" + marks + "'"});
        const Exit w = finish(watch, 30000);
        QVERIFY2(w.code == 4, qPrintable(w.out + w.err));
        QVERIFY2(w.out.contains("no step for 1.5 s since step 2: the job hung or died"), qPrintable(w.out));
        QVERIFY2(w.out.contains("flight-recorder dumps of ranks 0,1 in " + dumps), qPrintable(w.out));
        QFile f(marks);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(QString(f.readAll()), QString("stall 2\n"));
    }

    // A parent asks, watch reads the file at once and answers how many steps it has checked; a closed stdin
    // (the parent is gone) ends it.
    void stdinSyncAnswersEachRequest() {
        const Sim sim(2, 4, 20);
        const QString path = file("sync.h5");
        auto writer = RunWriter::create(path.toStdString(), sim.meta, true);
        writeSteps(*writer, sim, 0, 5);
        QProcess watch;
        watch.start(RANKSIGHT_CLI, {"watch", path, "--stdin-sync", "--poll-ms", "60000"});
        QVERIFY(watch.waitForStarted());
        const auto ask = [&] {
            watch.write("\n");
            QElapsedTimer t;
            t.start();
            while (!watch.canReadLine() && t.elapsed() < 30000)
                watch.waitForReadyRead(1000);
            return QString(watch.readLine()).trimmed();
        };
        QCOMPARE(ask(), QString("checked 5"));
        writeSteps(*writer, sim, 5, 12);
        QCOMPARE(ask(), QString("checked 12"));
        watch.closeWriteChannel();
        const Exit w = finish(watch, 30000);
        QCOMPARE(w.code, 0);
        QCOMPARE(w.out, QString());
    }

    void anUnreadableFileExitsTwoWithOneLine() {
        const QString path = file("not-a-run.h5");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("garbage");
        f.close();
        std::filesystem::last_write_time(path.toStdString(), std::filesystem::file_time_type::clock::now() -
                                                                 std::chrono::minutes(1));
        QProcess watch;
        watch.start(RANKSIGHT_CLI, {"watch", path});
        const Exit w = finish(watch, 30000);
        QCOMPARE(w.code, 2);
        QCOMPARE(w.err.count('\n'), 1);
        QVERIFY2(w.err.startsWith("ranksight-cli: watch: " + path), qPrintable(w.err));
        QProcess bad;
        bad.start(RANKSIGHT_CLI, {"watch", path, "--fail-on", "loss-spike"});
        const Exit b = finish(bad, 30000);
        QCOMPARE(b.code, 2);
        QVERIFY2(b.err.contains("'loss-spike'"), qPrintable(b.err));
    }
};

QTEST_GUILESS_MAIN(TestWatch)
#include "tst_watch.moc"
