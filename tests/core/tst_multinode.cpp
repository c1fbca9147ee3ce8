// Multi-node runs through ranksight-cli (issue 12): N node processes on 127.0.0.1, joined by gloo, write one
// run file on node 0 that equals, bit for bit, the same run in one process whose rank table has N servers of
// the same cards (losses, local gradient norms, synced gradient and weight fingerprints, evaluations; and
// `compare` finds them equal bit for bit); nodes
// whose configurations differ refuse to start, naming the key and every node's value.
#include "cluster/NodeGroup.h"
#include "compare/CompareRuns.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "store/RunSource.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <csignal>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace rs;

namespace {

struct Result {
    int code = -1;
    QString err;
};

Result finish(QProcess& p) {
    Result r;
    if (!p.waitForFinished(180000)) {
        p.kill();
        p.waitForFinished();
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

// Steps a run being written has so far; 0 before the file exists or while it is created but not yet in SWMR
// mode (opening it then fails: the writer holds the lock).
int64_t stepsSoFar(const QString& path) {
    if (!QFile::exists(path))
        return 0;
    try {
        return openRunFile(path.toStdString())->stepCount();
    } catch (const std::exception&) {
        return 0;
    }
}

template <class T> bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The server size a run's arguments set (--set devices_per_server=N), else a whole Ascend server's 8.
int serverSize(const QStringList& run) {
    for (const QString& a : run)
        if (a.startsWith("devices_per_server="))
            return a.section('=', 1).toInt();
    return 8;
}

} // namespace

class TestMultiNode : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    // Starts `nodes` node processes (node 0 last, writing `out`) and waits for all; the results per node.
    std::vector<Result> runNodes(const QStringList& common, int nodes, const QString& out,
                                 const std::vector<QStringList>& perNode = {}) {
        const QString master = QStringLiteral("127.0.0.1:%1").arg(freeLoopbackPort());
        std::vector<std::unique_ptr<QProcess>> ps(static_cast<size_t>(nodes));
        for (int k = nodes - 1; k >= 0; --k) {
            QStringList args =
                QStringList{"train"} + common + QStringList{"--nodes",     QString::number(nodes),
                                                            "--node-rank", QString::number(k),
                                                            "--master",    master,
                                                            "--quiet"};
            if (size_t(k) < perNode.size())
                args += perNode[size_t(k)];
            if (k == 0)
                args += QStringList{"--out", out};
            ps[size_t(k)] = std::make_unique<QProcess>();
            ps[size_t(k)]->start(RANKSIGHT_CLI, args);
        }
        std::vector<Result> results;
        for (auto& p : ps)
            results.push_back(finish(*p));
        return results;
    }

private slots:
    void nodesEqualServersInOneProcess_data() {
        QTest::addColumn<QStringList>("run");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("cards");
        const QStringList base = {"--batch", "8", "--steps", "8", "--set", "eval_samples=64"};
        QTest::addRow("mlp O0, 2 nodes x 2")
            << base + QStringList{"--model", "mlp", "--precision", "O0", "--loss-scale", "none"} << 2 << 2;
        QTest::addRow("mlp O2 dynamic, 3 nodes x 2")
            << base + QStringList{"--model", "mlp", "--precision", "O2", "--loss-scale", "dynamic"} << 3 << 2;
        QTest::addRow("smallcnn O2 dynamic, 2 nodes x 2")
            << base + QStringList{"--model", "smallcnn", "--precision", "O2", "--loss-scale", "dynamic"} << 2
            << 2;
        // A node process holding several servers (3 x 2 per node here, as 8 x 8 at 1,024 ranks).
        QTest::addRow("mlp O2 dynamic, 2 nodes x 3 servers of 2")
            << base + QStringList{"--model",      "mlp",     "--precision", "O2",
                                  "--loss-scale", "dynamic", "--set",       "devices_per_server=2"}
            << 2 << 6;
    }

    void nodesEqualServersInOneProcess() {
        QFETCH(QStringList, run);
        QFETCH(int, nodes);
        QFETCH(int, cards);
        const QStringList common = run + QStringList{"--ranks", QString::number(nodes * cards)};
        const QString multi = m_dir.filePath(QStringLiteral("multi-%1.h5").arg(QTest::currentDataTag()));
        const auto results = runNodes(common, nodes, multi);
        for (size_t k = 0; k < results.size(); ++k)
            QVERIFY2(results[k].code == 0,
                     qPrintable(QStringLiteral("node %1: %2").arg(k).arg(results[k].err)));

        const QString one = m_dir.filePath(QStringLiteral("one-%1.h5").arg(QTest::currentDataTag()));
        QProcess p;
        p.start(RANKSIGHT_CLI,
                QStringList{"train"} + common +
                    QStringList{"--set",
                                QStringLiteral("devices_per_server=%1").arg(std::min(cards, serverSize(run))),
                                "--quiet", "--out", one});
        const Result single = finish(p);
        QVERIFY2(single.code == 0, qPrintable(single.err));

        const auto a = openRunFile(multi.toStdString());
        const auto b = openRunFile(one.toStdString());
        QVERIFY(a->complete());
        QCOMPARE(a->meta().worldSize, nodes * cards);
        QCOMPARE(a->stepCount(), int64_t(8));
        QCOMPARE(a->stepCount(), b->stepCount());
        const auto sa = a->readSteps(0, a->stepCount(), true), sb = b->readSteps(0, b->stepCount(), true);
        for (size_t s = 0; s < sa.size(); ++s)
            for (int r = 0; r < nodes * cards; ++r) {
                const RankStep &x = sa[s].ranks[size_t(r)], &y = sb[s].ranks[size_t(r)];
                QVERIFY2(std::memcmp(&x.loss, &y.loss, 4) == 0,
                         qPrintable(QStringLiteral("step %1 rank %2").arg(s).arg(r)));
                QVERIFY(x.lossScale == y.lossScale && x.skipped == y.skipped);
                QVERIFY(sameBits(x.localNorm, y.localNorm));
                QVERIFY(sameBits(x.syncedFp, y.syncedFp));
                QVERIFY(sameBits(x.sampleIds, y.sampleIds));
            }
        const auto wa = a->readWeights(), wb = b->readWeights();
        QCOMPARE(wa.size(), wb.size());
        QVERIFY(!wa.empty());
        for (size_t i = 0; i < wa.size(); ++i)
            for (int r = 0; r < nodes * cards; ++r)
                QVERIFY(sameBits(wa[i].fp[size_t(r)], wb[i].fp[size_t(r)]));
        const auto ea = a->readEvals(), eb = b->readEvals();
        QCOMPARE(ea.size(), eb.size());
        QVERIFY(!ea.empty() && sameBits(ea.back().accuracy, eb.back().accuracy));

        // What `compare` says of the pair: the same arithmetic, equal bit for bit on every step, no
        // divergence.
        const RunComparison c = compareRuns(*a, *b);
        QCOMPARE(c.expectation, Expectation::Bitwise);
        QCOMPARE(c.alignedSteps, int64_t(8));
        QVERIFY2(!c.first, c.first ? c.first->statistic.c_str() : "");
        QCOMPARE(c.bitwiseThrough, int64_t(7));
        QVERIFY(std::find(c.compared.begin(), c.compared.end(), "local_fp") != c.compared.end());
    }

    // Faults strike cards of any node and the diagnosis of node 0's file names them: a straggler on rank 2,
    // corruption after the all-reduce on rank 3 and then rank 3's card failing (late enough that the
    // straggler rule has 20 timed steps, not only the 8 it needs: noise on a loaded machine), all cards of
    // node 1. Node 1's own reports reach node 0's file: rank 3's CARD_FAILED and rank 2's timeout, and the
    // flight recorder's dump holds every rank's tensors. (Not compared bit for bit: the corrupted gradient
    // turns NaN, and NaN payloads are not preserved by the reduction.)
    void faultsOnAnotherNodesCardsAreNamed() {
        const QString out = m_dir.filePath("faults.h5");
        // SmallCNN, not the MLP: an MLP step (~1 ms) is within scheduling jitter on a loaded machine, so a 4x
        // slower card is not reliably slow there (the fault sweep does not draw a straggler on the MLP
        // either).
        const auto results =
            runNodes({"--model", "smallcnn", "--ranks", "4", "--batch", "8", "--steps", "24", "--precision",
                      "O0", "--fault", "straggler@2:2", "--fault", "sdc-after@4:3", "--fault",
                      "rank-exit@22:3", "--set", "timeout_ms=3000"},
                     2, out);
        for (const Result& r : results)
            QCOMPARE(r.code, 1); // the run ends in rank 3's failure
        QVERIFY2(results[1].err.contains("rank 3: EL0004") && results[1].err.contains("node 1 of 2"),
                 qPrintable(results[1].err));
        const auto reader = openRunFile(out.toStdString());
        QVERIFY(reader->complete());
        QCOMPARE(reader->stepCount(), int64_t(22));
        QSet<QString> remote;
        for (const Event& e : reader->readEvents())
            if (e.rank >= 2)
                remote.insert(QString::fromStdString(e.code) + "@" + QString::number(e.rank));
        for (const Event& e : reader->readEvents()) // node 1's report carries the event's data too
            if (e.code == "TIMEOUT" && e.rank == 2)
                QCOMPARE(e.peer, 3);
        QVERIFY2(remote.contains("CARD_FAILED@3") && remote.contains("TIMEOUT@2"),
                 qPrintable(QStringList(remote.values()).join(' ')));
        const auto dumps = reader->readFlightDumps();
        QVERIFY(!dumps.empty());
        QSet<int> dumped;
        for (const FlightEntry& e : dumps.front().entries)
            dumped.insert(e.rank);
        QCOMPARE(dumped, QSet<int>({0, 1, 2, 3}));

        QProcess diagnose;
        diagnose.start(RANKSIGHT_CLI, {"diagnose", out, "--json"});
        QVERIFY(diagnose.waitForFinished(60000));
        const auto findings =
            QJsonDocument::fromJson(diagnose.readAllStandardOutput()).object()["findings"].toArray();
        QMap<QString, QJsonObject> byCause;
        for (const auto& f : findings)
            byCause[f.toObject()["cause"].toString()] = f.toObject();
        QVERIFY2(QSet<QString>(byCause.keyBegin(), byCause.keyEnd()) ==
                     QSet<QString>({"sdc-after", "straggler", "rank-exit"}),
                 qPrintable(QJsonDocument(findings).toJson()));
        QCOMPARE(byCause["sdc-after"]["ranks"].toArray(), QJsonArray({3}));
        QCOMPARE(byCause["sdc-after"]["first_step"].toInt(), 4);
        QCOMPARE(byCause["straggler"]["ranks"].toArray(), QJsonArray({2}));
        QCOMPARE(byCause["rank-exit"]["ranks"].toArray(), QJsonArray({3}));
        QCOMPARE(byCause["rank-exit"]["first_step"].toInt(), 22);
    }

    void differentConfigurationsRefuseToStart() {
        const QString out = m_dir.filePath("mismatch.h5");
        const auto results = runNodes({"--model", "mlp", "--ranks", "4", "--steps", "4", "--precision", "O0"},
                                      2, out, {{"--batch", "8"}, {"--batch", "4"}});
        for (const Result& r : results) {
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains("the nodes' configurations differ: batch is 8 on node 0, 4 on node 1"),
                     qPrintable(r.err));
        }
    }

    // A node killed with SIGKILL mid-run: node 0 times out within the timeout naming the lost ranks and node,
    // and closes a complete file with every step before the loss, diagnosed as those ranks leaving the job;
    // node 0 killed: the other node exits within the timeout with an error naming node 0.
    void aKilledNodeIsNamedAndTheFileIsComplete() {
        const QString out = m_dir.filePath("killed.h5");
        const QString master = QStringLiteral("127.0.0.1:%1").arg(freeLoopbackPort());
        const QStringList common = {
            "train",   "--model",  "mlp",         "--ranks", "4",     "--batch",         "8",
            "--steps", "100000",   "--precision", "O0",      "--set", "timeout_ms=3000", "--nodes",
            "2",       "--master", master,        "--quiet"};
        QProcess node1, node0;
        node1.start(RANKSIGHT_CLI, common + QStringList{"--node-rank", "1"});
        node0.start(RANKSIGHT_CLI, common + QStringList{"--node-rank", "0", "--out", out});
        QTRY_VERIFY_WITH_TIMEOUT(stepsSoFar(out) >= 3, 60000);
        ::kill(pid_t(node1.processId()), SIGKILL);
        node1.waitForFinished();
        QElapsedTimer t;
        t.start();
        const Result r = finish(node0);
        QVERIFY2(t.elapsed() < 30000, "node 0 ends within a few timeouts");
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("waiting for rank(s) 2, 3") && r.err.contains("node 1 is gone"),
                 qPrintable(r.err));
        const auto reader = openRunFile(out.toStdString());
        QVERIFY(reader->complete());
        QVERIFY(reader->stepCount() >= 3);
        QSet<int> goneInData; // node 0's cards' TIMEOUTs name each rank they waited for, and that it is gone
        for (const Event& e : reader->readEvents())
            if (e.code == "TIMEOUT" && e.peerGone)
                goneInData.insert(e.peer);
        QCOMPARE(goneInData, QSet<int>({2, 3}));
        QProcess diagnose;
        diagnose.start(RANKSIGHT_CLI, {"diagnose", out, "--json"});
        QVERIFY(diagnose.waitForFinished(60000));
        const auto findings =
            QJsonDocument::fromJson(diagnose.readAllStandardOutput()).object()["findings"].toArray();
        QSet<int> gone;
        for (const auto& f : findings) {
            QCOMPARE(f.toObject()["cause"].toString(), QString("rank-exit"));
            for (const auto& rank : f.toObject()["ranks"].toArray())
                gone.insert(rank.toInt());
        }
        QCOMPARE(gone, QSet<int>({2, 3}));

        // Node 0 (the rendezvous host) lost: node 1 exits with a clear error within the timeout.
        const QString out2 = m_dir.filePath("killed0.h5");
        const QString master2 = QStringLiteral("127.0.0.1:%1").arg(freeLoopbackPort());
        QStringList common2 = common;
        common2[common2.indexOf(master)] = master2;
        QProcess a, b;
        b.start(RANKSIGHT_CLI, common2 + QStringList{"--node-rank", "1"});
        a.start(RANKSIGHT_CLI, common2 + QStringList{"--node-rank", "0", "--out", out2});
        QTRY_VERIFY_WITH_TIMEOUT(stepsSoFar(out2) >= 3, 60000);
        ::kill(pid_t(a.processId()), SIGKILL);
        a.waitForFinished();
        t.restart();
        const Result rb = finish(b);
        QVERIFY2(t.elapsed() < 30000, "node 1 ends within a few timeouts");
        QCOMPARE(rb.code, 1);
        QVERIFY2(rb.err.contains("waiting for rank(s) 0, 1") && rb.err.contains("node 0 is gone"),
                 qPrintable(rb.err));
    }

    // Ctrl-C (SIGTERM) on one node stops every node after the same step, well within the collective timeout
    // (30 s by default): no node is left waiting in gloo for one that stopped; node 0's file is complete.
    void stoppingOneNodeStopsEveryNodeTogether() {
        const QString out = m_dir.filePath("stopped.h5");
        const QString master = QStringLiteral("127.0.0.1:%1").arg(freeLoopbackPort());
        const QStringList common = {"train",  "--model", "mlp", "--ranks",  "4",    "--batch", "4", "--steps",
                                    "100000", "--nodes", "2",   "--master", master, "--quiet"};
        QProcess node1, node0;
        node1.start(RANKSIGHT_CLI, common + QStringList{"--node-rank", "1"});
        node0.start(RANKSIGHT_CLI, common + QStringList{"--node-rank", "0", "--out", out});
        QTRY_VERIFY_WITH_TIMEOUT(stepsSoFar(out) >= 3, 60000);
        ::kill(pid_t(node1.processId()), SIGTERM);
        QElapsedTimer t;
        t.start();
        const Result r0 = finish(node0), r1 = finish(node1);
        qInfo("both nodes ended %lld ms after the SIGTERM to node 1", t.elapsed());
        QVERIFY2(t.elapsed() < 10000, "the nodes waited for a collective timeout");
        QVERIFY2(r0.code == 0 && r1.code == 0, qPrintable(r0.err + r1.err));
        const auto reader = openRunFile(out.toStdString());
        QVERIFY(reader->complete());
        QCOMPARE(QString::fromStdString(reader->stopReason()), QString("stopped"));
    }

    // More ranks than one process may run (64): 128 over 2 node processes of 64 cards, each holding 8 servers
    // of 8 (as 1,024 ranks are 16 such processes). The file holds every rank, on 16 servers of 2 nodes.
    void moreRanksThanOneProcessRuns() {
        const QString out = m_dir.filePath("hundred-twenty-eight.h5");
        const auto results = runNodes({"--model", "mlp", "--ranks", "128", "--steps", "2"}, 2, out);
        for (size_t k = 0; k < results.size(); ++k)
            QVERIFY2(results[k].code == 0, qPrintable(QString("node %1: %2").arg(k).arg(results[k].err)));
        const auto reader = openRunFile(out.toStdString());
        QCOMPARE(reader->meta().worldSize, 128);
        QCOMPARE(reader->stepCount(), int64_t(2));
        QCOMPARE(reader->readSteps(0, 1, false).front().ranks.size(), size_t(128));
        QCOMPARE(serverCount(reader->meta()), 16);
        const std::vector<int> nodes = nodeOfRank(reader->meta());
        QCOMPARE(nodes.size(), size_t(128));
        QCOMPARE(nodes[63], 0);
        QCOMPARE(nodes[64], 1);
    }

    void nodeRankOutOfRangeAndUnevenRanks() {
        QProcess p;
        p.start(RANKSIGHT_CLI, {"train", "--model", "mlp", "--ranks", "4", "--nodes", "2", "--node-rank", "2",
                                "--out", m_dir.filePath("x.h5")});
        Result r = finish(p);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--node-rank 2 is out of range for --nodes 2 (0..1)"), qPrintable(r.err));
        p.start(RANKSIGHT_CLI,
                {"train", "--model", "mlp", "--ranks", "5", "--nodes", "2", "--out", m_dir.filePath("y.h5")});
        r = finish(p);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("5 ranks do not split evenly over 2 nodes"), qPrintable(r.err));
        // The cap is per process: 256 ranks in one process is refused, naming the nodes that would carry
        // them; past 1,024 ranks the run is refused whatever the nodes.
        p.start(RANKSIGHT_CLI,
                {"train", "--model", "mlp", "--ranks", "256", "--out", m_dir.filePath("z.h5")});
        r = finish(p);
        QCOMPARE(r.code, 2);
        QVERIFY2(
            r.err.contains("256 ranks over 1 node process is 256 card threads in each; a process runs at "
                           "most 64 (use --nodes 4 or more)"),
            qPrintable(r.err));
        p.start(RANKSIGHT_CLI, {"train", "--model", "mlp", "--ranks", "2048", "--nodes", "256", "--out",
                                m_dir.filePath("w.h5")});
        r = finish(p);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("ranks: 2048 is out of range [1, 1024]"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestMultiNode)
#include "tst_multinode.moc"
