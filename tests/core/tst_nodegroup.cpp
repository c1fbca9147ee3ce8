// NodeGroup (issue 12's foundation): node processes on 127.0.0.1 joined through c10d's TCPStore and gloo.
// Each test starts this executable again as node processes (RS_NODE_CHILD=1) and checks what they print and
// how they exit: a world of three nodes forms and gathers every node's bytes, configurations that differ are
// refused on every node naming the key and each node's value, and the rendezvous errors (node rank out of
// range, a world that never fills, a master nobody listens on, a port already taken) come within the timeout.
#include "cluster/Communicator.h"
#include "cluster/NodeGroup.h"
#include "telemetry/Fingerprint.h"
#include "util/Half.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QtTest>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace rs;

namespace {

// Every rank's payload for the all-reduce equivalence: deterministic per global rank, not integer-valued (so
// the summation order shows in the bits), some values large enough that fp16 sums overflow.
constexpr size_t kCount = 1000;

std::vector<float> payload(int globalRank) {
    std::vector<float> v(kCount);
    uint64_t x = 0x1234 + uint64_t(globalRank);
    for (size_t i = 0; i < kCount; ++i) {
        x = splitmix64(x);
        v[i] = float(int64_t(x % 2000001) - 1000000) / 997.0f * (i % 97 == 0 ? 40.0f : 1.0f);
    }
    return v;
}

// Runs `cards` threads on comm (global ranks base..base+cards-1 of `world`) doing the three all-reduces, a
// broadcast from the run's last rank, an all-gather of every rank's id and a barrier; returns one
// fingerprint per card of all the results, or throws what a card threw.
std::vector<uint64_t> reduceOnCards(Communicator& comm, int cards, int base, int world) {
    std::vector<uint64_t> fps(static_cast<size_t>(cards));
    std::vector<std::string> errors(static_cast<size_t>(cards));
    std::vector<std::thread> threads;
    for (int r = 0; r < cards; ++r)
        threads.emplace_back([&, r] {
            try {
                std::vector<float> mean = payload(base + r), mx = mean;
                std::vector<uint16_t> half(kCount);
                for (size_t i = 0; i < kCount; ++i)
                    half[i] = floatToHalf(mean[i] * 7.0f);
                comm.allReduce(r, mean.data(), kCount, DType::F32, ReduceOp::Mean);
                comm.allReduce(r, half.data(), kCount, DType::F16, ReduceOp::Sum);
                comm.allReduce(r, mx.data(), kCount, DType::F32, ReduceOp::Max);
                // Broadcast from the last rank of the run, an all-gather of every rank's id, a barrier.
                std::vector<float> root = payload(base + r);
                comm.broadcast(r, root.data(), kCount * 4, world - 1);
                int32_t id = base + r;
                std::vector<int32_t> ids(static_cast<size_t>(world), -1);
                comm.allGather(r, &id, sizeof id, ids.data());
                comm.barrier(r);
                uint64_t h = fingerprint(mean.data(), kCount * 4);
                h = fingerprint(half.data(), kCount * 2, h);
                h = fingerprint(root.data(), kCount * 4, h);
                h = fingerprint(ids.data(), ids.size() * 4, h);
                fps[size_t(r)] = fingerprint(mx.data(), kCount * 4, h);
            } catch (const std::exception& e) {
                errors[size_t(r)] = e.what();
            }
        });
    for (auto& t : threads)
        t.join();
    for (const auto& e : errors)
        if (!e.empty())
            throw std::runtime_error(e);
    return fps;
}

// Child mode: join, agree on RS_CONFIG (key=value,...), all-gather "node<k>", print the gathered text; with
// RS_CARDS, run that many cards (in RS_SERVERS servers, one unless set) as one node and print their results'
// fingerprints.
int childMain() {
    try {
        NodeOptions o = nodeOptionsFromEnvironment();
        o.timeout = std::chrono::milliseconds(std::atoi(std::getenv("RS_TIMEOUT_MS")));
        auto group = NodeGroup::join(o);
        std::map<std::string, std::string> config;
        const QString text = qEnvironmentVariable("RS_CONFIG");
        for (const QString& kv : text.split(',', Qt::SkipEmptyParts))
            config[kv.section('=', 0, 0).toStdString()] = kv.section('=', 1).toStdString();
        group->agreeOnConfig(config);
        if (qEnvironmentVariableIsSet("RS_DIE") &&
            group->nodeRank() == qEnvironmentVariableIntValue("RS_DIE"))
            _exit(9); // a node lost after the rendezvous, before the first collective
        if (const int cards = qEnvironmentVariableIntValue("RS_CARDS"); cards > 0) {
            Communicator comm(cards, std::chrono::seconds(20));
            if (const int servers = qEnvironmentVariableIntValue("RS_SERVERS"); servers > 1)
                comm.setServers(servers);
            comm.setNodes(
                group->nodes(), group->nodeRank(),
                [&](const void* send, size_t bytes, void* recv) { group->allGather(send, bytes, recv); },
                [&](const void* send, size_t block, void* recv) { group->allToAll(send, block, recv); });
            for (uint64_t fp : reduceOnCards(comm, cards, group->nodeRank() * cards, group->nodes() * cards))
                std::printf("%016llx\n", static_cast<unsigned long long>(fp));
            return 0;
        }
        char mine[8] = {};
        std::snprintf(mine, sizeof mine, "node%d", group->nodeRank());
        std::vector<char> all(size_t(group->nodes()) * sizeof mine);
        group->allGather(mine, sizeof mine, all.data());
        std::string joined;
        for (int k = 0; k < group->nodes(); ++k)
            joined += std::string(all.data() + size_t(k) * sizeof mine) + " ";
        int root = 0;
        if (group->nodeRank() == 0)
            root = 4242;
        group->broadcast(&root, sizeof root, 0);
        group->barrier();
        std::printf("gathered %s root %d\n", joined.c_str(), root);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "node error: %s\n", e.what());
        return 1;
    }
}

// A listening TCP socket on 127.0.0.1 (port 0: any free one); closed with the object.
struct Listener {
    int fd = -1, port = 0;
    Listener() {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 4) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
            port = ntohs(a.sin_port);
    }
    ~Listener() {
        if (fd >= 0)
            ::close(fd);
    }
};

struct Node {
    std::unique_ptr<QProcess> p;
    QString out, err;
};

} // namespace

class TestNodeGroup : public QObject {
    Q_OBJECT

    std::unique_ptr<QProcess> start(int nodes, int rank, int port, const QString& config,
                                    int timeoutMs = 20000, int cards = 0, int servers = 1) {
        auto p = std::make_unique<QProcess>();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("RS_NODE_CHILD", "1");
        env.insert("MASTER_ADDR", "127.0.0.1");
        env.insert("MASTER_PORT", QString::number(port));
        env.insert("NNODES", QString::number(nodes));
        env.insert("NODE_RANK", QString::number(rank));
        env.insert("RS_CONFIG", config);
        env.insert("RS_TIMEOUT_MS", QString::number(timeoutMs));
        env.insert("RS_CARDS", QString::number(cards));
        env.insert("RS_SERVERS", QString::number(servers));
        p->setProcessEnvironment(env);
        p->start(QCoreApplication::applicationFilePath(), {});
        return p;
    }

    static Node finish(std::unique_ptr<QProcess> p, int waitMs = 60000) {
        Node n;
        if (!p->waitForFinished(waitMs)) {
            p->kill();
            p->waitForFinished();
        }
        n.out = QString::fromUtf8(p->readAllStandardOutput());
        n.err = QString::fromUtf8(p->readAllStandardError());
        n.p = std::move(p);
        return n;
    }

private slots:
    void threeNodesFormAWorldAndGather() {
        const int port = freeLoopbackPort();
        std::vector<std::unique_ptr<QProcess>> ps;
        for (int k = 2; k >= 0; --k) // node 0 last: the others wait for its store
            ps.push_back(start(3, k, port, "model=mlp,ranks=6"));
        for (auto& p : ps) {
            const Node n = finish(std::move(p));
            QVERIFY2(n.p->exitStatus() == QProcess::NormalExit && n.p->exitCode() == 0, qPrintable(n.err));
            QCOMPARE(n.out.trimmed(), QString("gathered node0 node1 node2  root 4242"));
        }
    }

    // HCCL-like hierarchy: N nodes x c cards (gloo between the nodes), each node holding S servers, give the
    // same bits as one process with N x S servers of c / S cards, for fp32 Mean, fp16 Sum (overflowing to inf
    // like hardware) and Max, and the same broadcast from a rank of the last node, all-gather in global rank
    // order and barrier; every card of every node holds the same result.
    void nodesReduceBitForBitLikeServersInOneProcess_data() {
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("cards");
        QTest::addColumn<int>("servers"); // per node
        QTest::addRow("2 nodes x 2 cards") << 2 << 2 << 1;
        QTest::addRow("3 nodes x 2 cards") << 3 << 2 << 1;
        QTest::addRow("2 nodes x 3 cards") << 2 << 3 << 1;
        QTest::addRow("2 nodes x 2 servers of 2") << 2 << 4 << 2;
        QTest::addRow("3 nodes x 3 servers of 1") << 3 << 3 << 3;
    }
    void nodesReduceBitForBitLikeServersInOneProcess() {
        QFETCH(int, nodes);
        QFETCH(int, cards);
        QFETCH(int, servers);
        Communicator one(nodes * cards, std::chrono::seconds(20));
        one.setServers(nodes * servers);
        const std::vector<uint64_t> reference = reduceOnCards(one, nodes * cards, 0, nodes * cards);
        for (uint64_t fp : reference)
            QCOMPARE(fp, reference.front()); // every card of the one process agrees
        Communicator flat(nodes * cards, std::chrono::seconds(20));
        QVERIFY2(
            reduceOnCards(flat, nodes * cards, 0, nodes * cards).front() != reference.front(),
            "the hierarchy changes the summation order, so the flat ring's bits differ (the test can fail)");

        const int port = freeLoopbackPort();
        std::vector<std::unique_ptr<QProcess>> ps;
        for (int k = nodes - 1; k >= 0; --k)
            ps.push_back(start(nodes, k, port, "", 20000, cards, servers));
        for (auto& p : ps) {
            const Node n = finish(std::move(p));
            QVERIFY2(n.p->exitCode() == 0, qPrintable(n.err));
            const QStringList lines = n.out.split('\n', Qt::SkipEmptyParts);
            QCOMPARE(lines.size(), cards);
            for (const QString& line : lines)
                QCOMPARE(line,
                         QString::asprintf("%016llx", static_cast<unsigned long long>(reference.front())));
        }
    }

    // A node lost after the rendezvous: every card of the others fails its collective within the timeout,
    // saying it was the exchange across nodes that failed; nothing hangs.
    void aLostNodeFailsTheOthersCollectivesWithinTheTimeout() {
        const int port = freeLoopbackPort();
        qputenv("RS_DIE", "1");
        auto lost = start(2, 1, port, "", 3000, 2);
        auto survivor = start(2, 0, port, "", 3000, 2);
        qunsetenv("RS_DIE");
        QElapsedTimer t;
        t.start();
        const Node n = finish(std::move(survivor));
        finish(std::move(lost));
        QCOMPARE(n.p->exitCode(), 1);
        QVERIFY2(n.err.contains("HCCL AllReduce across nodes (node 0 of 2)"), qPrintable(n.err));
        QVERIFY2(t.elapsed() < 30000, "bounded");
    }

    void differentConfigurationsAreRefusedOnEveryNode() {
        const int port = freeLoopbackPort();
        auto a = start(2, 0, port, "batch=8,model=mlp");
        auto b = start(2, 1, port, "batch=4,model=mlp");
        for (auto* p : {&a, &b}) {
            const Node n = finish(std::move(*p));
            QCOMPARE(n.p->exitCode(), 1);
            QVERIFY2(n.err.contains("the nodes' configurations differ: batch is 8 on node 0, 4 on node 1"),
                     qPrintable(n.err));
        }
    }

    void aNodeRankOutOfRangeIsRefusedAtOnce() {
        const Node n = finish(start(2, 2, freeLoopbackPort(), ""));
        QCOMPARE(n.p->exitCode(), 1);
        QVERIFY2(n.err.contains("--node-rank 2 is out of range for --nodes 2 (0..1)"), qPrintable(n.err));
    }

    void aWorldThatNeverFillsNamesTheMissingNodes() {
        QElapsedTimer t;
        t.start();
        const Node n = finish(start(3, 0, freeLoopbackPort(), "", 1500));
        QCOMPARE(n.p->exitCode(), 1);
        QVERIFY2(n.err.contains("the world never filled: node rank(s) 1, 2 of 3 did not join"),
                 qPrintable(n.err));
        QVERIFY2(t.elapsed() < 30000, "bounded by the timeout, not hanging");
    }

    // A Stop while node 0 waits for the others ends the wait at once, not at the 30 s timeout.
    void aStopWhileWaitingForTheOtherNodesEndsTheWait() {
        std::atomic<bool> stop{false};
        NodeOptions o;
        o.nodes = 2;
        o.nodeRank = 0;
        o.masterPort = freeLoopbackPort();
        o.timeout = std::chrono::seconds(30);
        o.cancel = &stop;
        std::thread stopper([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            stop = true;
        });
        QElapsedTimer t;
        t.start();
        QString error;
        try {
            NodeGroup::join(o);
        } catch (const NodeError& e) {
            error = e.what();
        }
        stopper.join();
        QVERIFY2(error.contains("node 0 stopped while waiting for the other nodes"), qPrintable(error));
        QVERIFY2(t.elapsed() < 10000, "the stop ended the wait, not the timeout");
    }

    void aMasterNobodyListensOnIsNamed() {
        const Node n = finish(start(2, 1, freeLoopbackPort(), "", 1500));
        QCOMPARE(n.p->exitCode(), 1);
        QVERIFY2(n.err.contains("node 1 cannot reach node 0 at 127.0.0.1:"), qPrintable(n.err));
    }

    void aPortAlreadyTakenIsNamed() {
        Listener taken;
        QVERIFY(taken.port > 0);
        const Node n = finish(start(2, 0, taken.port, "", 1500));
        QCOMPARE(n.p->exitCode(), 1);
        QVERIFY2(n.err.contains("node 0 cannot listen on 127.0.0.1:"), qPrintable(n.err));
    }

    void optionsFromTheEnvironmentAndMaster() {
        NodeOptions o;
        parseMaster("10.0.0.7:29411", o);
        QCOMPARE(o.masterHost, std::string("10.0.0.7"));
        QCOMPARE(o.masterPort, 29411);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseMaster("10.0.0.7", o));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseMaster("host:70000", o));
        qputenv("NNODES", "x");
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, nodeOptionsFromEnvironment());
        qputenv("NNODES", "4");
        qputenv("NODE_RANK", "3");
        const NodeOptions e = nodeOptionsFromEnvironment();
        QCOMPARE(e.nodes, 4);
        QCOMPARE(e.nodeRank, 3);
        QCOMPARE(QString::fromStdString(e.problem()), QString());
        qunsetenv("NNODES");
        qunsetenv("NODE_RANK");
    }
};

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsSet("RS_NODE_CHILD"))
        return childMain();
    QCoreApplication app(argc, argv);
    TestNodeGroup t;
    return QTest::qExec(&t, argc, argv);
}

#include "tst_nodegroup.moc"
