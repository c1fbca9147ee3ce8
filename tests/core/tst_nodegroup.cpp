// NodeGroup (issue 12's foundation): node processes on 127.0.0.1 joined through c10d's TCPStore and gloo.
// Each test starts this executable again as node processes (RS_NODE_CHILD=1) and checks what they print and
// how they exit: a world of three nodes forms and gathers every node's bytes, configurations that differ are
// refused on every node naming the key and each node's value, and the rendezvous errors (node rank out of
// range, a world that never fills, a master nobody listens on, a port already taken) come within the timeout.
#include "cluster/NodeGroup.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QtTest>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace rs;

namespace {

// Child mode: join, agree on RS_CONFIG (key=value,...), all-gather "node<k>", print the gathered text.
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

int freePort() {
    return Listener().port; // free again once closed
}

struct Node {
    std::unique_ptr<QProcess> p;
    QString out, err;
};

} // namespace

class TestNodeGroup : public QObject {
    Q_OBJECT

    std::unique_ptr<QProcess> start(int nodes, int rank, int port, const QString& config,
                                    int timeoutMs = 20000) {
        auto p = std::make_unique<QProcess>();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("RS_NODE_CHILD", "1");
        env.insert("MASTER_ADDR", "127.0.0.1");
        env.insert("MASTER_PORT", QString::number(port));
        env.insert("NNODES", QString::number(nodes));
        env.insert("NODE_RANK", QString::number(rank));
        env.insert("RS_CONFIG", config);
        env.insert("RS_TIMEOUT_MS", QString::number(timeoutMs));
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
        const int port = freePort();
        std::vector<std::unique_ptr<QProcess>> ps;
        for (int k = 2; k >= 0; --k) // node 0 last: the others wait for its store
            ps.push_back(start(3, k, port, "model=mlp,ranks=6"));
        for (auto& p : ps) {
            const Node n = finish(std::move(p));
            QVERIFY2(n.p->exitStatus() == QProcess::NormalExit && n.p->exitCode() == 0, qPrintable(n.err));
            QCOMPARE(n.out.trimmed(), QString("gathered node0 node1 node2  root 4242"));
        }
    }

    void differentConfigurationsAreRefusedOnEveryNode() {
        const int port = freePort();
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
        const Node n = finish(start(2, 2, freePort(), ""));
        QCOMPARE(n.p->exitCode(), 1);
        QVERIFY2(n.err.contains("--node-rank 2 is out of range for --nodes 2 (0..1)"), qPrintable(n.err));
    }

    void aWorldThatNeverFillsNamesTheMissingNodes() {
        QElapsedTimer t;
        t.start();
        const Node n = finish(start(3, 0, freePort(), "", 1500));
        QCOMPARE(n.p->exitCode(), 1);
        QVERIFY2(n.err.contains("the world never filled: node rank(s) 1, 2 of 3 did not join"),
                 qPrintable(n.err));
        QVERIFY2(t.elapsed() < 30000, "bounded by the timeout, not hanging");
    }

    void aMasterNobodyListensOnIsNamed() {
        const Node n = finish(start(2, 1, freePort(), "", 1500));
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
