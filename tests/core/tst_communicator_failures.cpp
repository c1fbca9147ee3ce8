// How the emulated HCCL communicator fails: timeouts that name the missing rank (and ignore a rank that is
// computing), a failed rank, sequence numbers, prompt cancel, mismatched calls and invalid arguments.
#include "cluster/Communicator.h"
#include "core/RankThreads.h"

#include <QtTest>
#include <atomic>
#include <thread>

using namespace std::chrono_literals;
using namespace rankthreads;

class TestCommunicatorFailures : public QObject {
    Q_OBJECT

private slots:
    void timeoutNamesMissingRank() {
        const int n = 4;
        rs::Communicator comm(n, 200ms);
        std::vector<long long> elapsed(n, -1);
        const auto start = Clock::now();
        const auto errors = runRanks(n, [&](int r) {
            if (r == 2)
                return; // this card never calls
            const auto t0 = Clock::now();
            std::vector<float> grad(100, 1.0f);
            try {
                comm.allReduce(r, grad.data(), grad.size(), rs::DType::F32, rs::ReduceOp::Sum);
            } catch (...) {
                elapsed[static_cast<size_t>(r)] = msSince(t0);
                throw;
            }
        });
        QVERIFY2(msSince(start) < 1500, "the timeout took far longer than 200 ms");
        QString firstMessage;
        for (int r = 0; r < n; ++r) {
            if (r == 2) {
                QVERIFY(!errors[2]);
                continue;
            }
            std::optional<rs::CollectiveTimeout> holder;
            const rs::CollectiveTimeout* t =
                as<rs::CollectiveTimeout>(errors[static_cast<size_t>(r)], holder);
            QVERIFY2(
                t, qPrintable(
                       QStringLiteral("rank %1: %2").arg(r).arg(errorText(errors[static_cast<size_t>(r)]))));
            QCOMPARE(t->missingRanks, std::vector<int>{2});
            QCOMPARE(t->collective, std::string("AllReduce"));
            QCOMPARE(t->sequence, int64_t(1));
            QVERIFY(t->failedRanks.empty());
            const QString what = QString::fromUtf8(t->what());
            QVERIFY2(what.contains("rank(s) 2") && what.contains("AllReduce") && what.contains("200 ms") &&
                         what.contains("call #1"),
                     qPrintable(what));
            if (firstMessage.isEmpty())
                firstMessage = what;
            QCOMPARE(what, firstMessage);
            QVERIFY2(
                elapsed[static_cast<size_t>(r)] >= 150 && elapsed[static_cast<size_t>(r)] < 1000,
                qPrintable(
                    QStringLiteral("rank %1 threw after %2 ms").arg(r).arg(elapsed[static_cast<size_t>(r)])));
        }

        // broken: every later call, by any rank, throws the same timeout at once
        QVERIFY(comm.broken());
        for (int r : {0, 2}) {
            const auto t0 = Clock::now();
            try {
                comm.barrier(r);
                QFAIL("a broken communicator accepted a call");
            } catch (const rs::CollectiveTimeout& t) {
                QCOMPARE(QString::fromUtf8(t.what()), firstMessage);
                QCOMPARE(t.missingRanks, std::vector<int>{2});
            }
            QVERIFY(msSince(t0) < 100);
        }
    }

    // Emulated cards share cores: a rank that is computing (or queued for a core) past the timeout is slow,
    // not gone. Once it stops computing and still does not arrive, the timeout counts from then.
    void computingRankIsNotLate() {
        rs::Communicator comm(2, 200ms);
        const auto errors = runRanks(2, [&](int r) {
            float v = 1.f;
            if (r == 1) {
                comm.setComputing(1, true);
                std::this_thread::sleep_for(600ms); // three timeouts' worth of "compute"
                comm.setComputing(1, false);
            }
            comm.allReduce(r, &v, 1, rs::DType::F32, rs::ReduceOp::Sum);
            QCOMPARE(v, 2.f);
        });
        for (const auto& e : errors)
            QVERIFY(!e);

        rs::Communicator dead(2, 200ms);
        Clock::time_point thrown;
        const auto t0 = Clock::now();
        const auto errors2 = runRanks(2, [&](int r) {
            float v = 1.f;
            if (r == 1) { // computes for 400 ms, then dies without arriving
                dead.setComputing(1, true);
                std::this_thread::sleep_for(400ms);
                dead.setComputing(1, false);
                return;
            }
            try {
                dead.allReduce(r, &v, 1, rs::DType::F32, rs::ReduceOp::Sum);
            } catch (const rs::CollectiveTimeout& e) {
                thrown = Clock::now();
                QCOMPARE(e.missingRanks, std::vector<int>{1});
            }
        });
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(thrown - t0);
        QVERIFY2(waited >= 550ms && waited < 2000ms,
                 qPrintable(QString("timed out after %1 ms").arg(waited.count())));
    }

    void timeoutReportsFailedRank() {
        rs::Communicator comm(3, 200ms);
        comm.markFailed(1);
        const auto errors = runRanks(3, [&](int r) {
            if (r != 1)
                comm.barrier(r);
        });
        for (int r : {0, 2}) {
            std::optional<rs::CollectiveTimeout> holder;
            const rs::CollectiveTimeout* t =
                as<rs::CollectiveTimeout>(errors[static_cast<size_t>(r)], holder);
            QVERIFY2(t, qPrintable(errorText(errors[static_cast<size_t>(r)])));
            QCOMPARE(t->missingRanks, std::vector<int>{1});
            QCOMPARE(t->failedRanks, std::vector<int>{1});
            QCOMPARE(t->collective, std::string("Barrier"));
            QVERIFY2(QString(t->what()).contains("rank(s) 1 marked failed"), t->what());
        }
    }

    // Sequence numbers count calls: the timeout names the call that never completed.
    void timeoutSequenceNumber() {
        rs::Communicator comm(2, 200ms);
        const auto errors = runRanks(2, [&](int r) {
            for (int i = 0; i < 5; ++i)
                comm.barrier(r);
            if (r == 0)
                comm.barrier(r); // call #6: rank 1 does not come
        });
        QVERIFY(!errors[1]);
        std::optional<rs::CollectiveTimeout> holder;
        const rs::CollectiveTimeout* t = as<rs::CollectiveTimeout>(errors[0], holder);
        QVERIFY2(t, qPrintable(errorText(errors[0])));
        QCOMPARE(t->sequence, int64_t(6));
        QCOMPARE(t->missingRanks, std::vector<int>{1});
        QVERIFY2(QString(t->what()).contains("(call #6)"), t->what());
    }

    void cancelWakesWaiters_data() {
        QTest::addColumn<QString>("collective");
        QTest::addRow("AllReduce") << "AllReduce";
        QTest::addRow("Broadcast") << "Broadcast";
        QTest::addRow("AllGather") << "AllGather";
        QTest::addRow("Barrier") << "Barrier";
    }

    void cancelWakesWaiters() {
        QFETCH(QString, collective);
        const int n = 4;
        rs::Communicator comm(n); // default 30 s timeout: only cancel can end the wait in time
        std::atomic<int> waiting{0};
        std::vector<Clock::time_point> thrownAt(n);
        Clock::time_point cancelledAt;
        std::thread canceller([&] {
            const auto deadline = Clock::now() + 5s;
            while (waiting.load() < n - 1 && Clock::now() < deadline)
                std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(50ms); // let them block
            cancelledAt = Clock::now();
            comm.cancel();
        });
        const auto errors = runRanks(n, [&](int r) {
            if (r == 3)
                return;
            std::vector<float> buf(64, 1.0f);
            std::vector<float> recv(64 * n);
            waiting.fetch_add(1);
            try {
                if (collective == "AllReduce")
                    comm.allReduce(r, buf.data(), buf.size(), rs::DType::F32, rs::ReduceOp::Sum);
                else if (collective == "Broadcast")
                    comm.broadcast(r, buf.data(), buf.size() * 4, 0);
                else if (collective == "AllGather")
                    comm.allGather(r, buf.data(), buf.size() * 4, recv.data());
                else
                    comm.barrier(r);
            } catch (...) {
                thrownAt[static_cast<size_t>(r)] = Clock::now();
                throw;
            }
        });
        canceller.join();
        QVERIFY(comm.cancelled());
        for (int r = 0; r < 3; ++r) {
            std::optional<rs::CollectiveCancelled> holder;
            const rs::CollectiveCancelled* c =
                as<rs::CollectiveCancelled>(errors[static_cast<size_t>(r)], holder);
            QVERIFY2(c, qPrintable(errorText(errors[static_cast<size_t>(r)])));
            QCOMPARE(QString::fromStdString(c->collective), collective);
            QVERIFY2(QString(c->what()).contains("cancelled"), c->what());
            const auto latency = std::chrono::duration_cast<std::chrono::milliseconds>(
                thrownAt[static_cast<size_t>(r)] - cancelledAt);
            QVERIFY2(
                latency < 1000ms,
                qPrintable(QStringLiteral("rank %1 woke %2 ms after cancel").arg(r).arg(latency.count())));
        }
        // later calls throw at once, even by the rank that never came
        const auto t0 = Clock::now();
        QVERIFY_THROWS_EXCEPTION(rs::CollectiveCancelled, comm.barrier(3));
        QVERIFY(msSince(t0) < 100);
    }

    void mismatchedCallsThrowLogicError_data() {
        QTest::addColumn<int>("variant");
        QTest::addColumn<QStringList>("fragments");
        QTest::addRow("count") << 0 << QStringList{"count 10", "count 12"};
        QTest::addRow("collective") << 1 << QStringList{"AllReduce", "Barrier", "same collectives"};
        QTest::addRow("dtype") << 2 << QStringList{"fp32", "fp16"};
        QTest::addRow("op") << 3 << QStringList{"sum", "mean"};
        QTest::addRow("root") << 4 << QStringList{"root 0", "root 1"};
        QTest::addRow("bytes") << 5 << QStringList{"bytes 8", "bytes 16"};
    }

    void mismatchedCallsThrowLogicError() {
        QFETCH(int, variant);
        QFETCH(QStringList, fragments);
        rs::Communicator comm(2, 5s);
        const auto start = Clock::now();
        const auto errors = runRanks(2, [&](int r) {
            std::vector<float> buf(16, 1.0f);
            std::vector<float> recv(32);
            switch (variant) {
            case 0:
                comm.allReduce(r, buf.data(), r == 0 ? 10 : 12, rs::DType::F32, rs::ReduceOp::Sum);
                break;
            case 1:
                if (r == 0)
                    comm.allReduce(r, buf.data(), 10, rs::DType::F32, rs::ReduceOp::Sum);
                else
                    comm.barrier(r);
                break;
            case 2:
                comm.allReduce(r, buf.data(), 10, r == 0 ? rs::DType::F32 : rs::DType::F16,
                               rs::ReduceOp::Sum);
                break;
            case 3:
                comm.allReduce(r, buf.data(), 10, rs::DType::F32,
                               r == 0 ? rs::ReduceOp::Sum : rs::ReduceOp::Mean);
                break;
            case 4:
                comm.broadcast(r, buf.data(), 16, r);
                break;
            case 5:
                comm.allGather(r, buf.data(), r == 0 ? 8 : 16, recv.data());
                break;
            }
        });
        QVERIFY2(msSince(start) < 1000, "a mismatch must not wait for the timeout");
        for (int r = 0; r < 2; ++r) {
            std::optional<std::logic_error> holder;
            const std::logic_error* e = as<std::logic_error>(errors[static_cast<size_t>(r)], holder);
            QVERIFY2(
                e, qPrintable(
                       QStringLiteral("rank %1: %2").arg(r).arg(errorText(errors[static_cast<size_t>(r)]))));
            for (const QString& f : fragments)
                QVERIFY2(QString(e->what()).contains(f), e->what());
        }
        QVERIFY(comm.broken());
        QVERIFY_THROWS_EXCEPTION(std::logic_error, comm.barrier(0));
    }

    void invalidArguments() {
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rs::Communicator(0));
        rs::Communicator comm(2, 100ms);
        float x = 1.0f;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 comm.allReduce(2, &x, 1, rs::DType::F32, rs::ReduceOp::Sum));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 comm.allReduce(-1, &x, 1, rs::DType::F32, rs::ReduceOp::Sum));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 comm.allReduce(0, nullptr, 1, rs::DType::F32, rs::ReduceOp::Sum));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, comm.broadcast(0, &x, 4, 2));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, comm.allGather(0, &x, 4, nullptr));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, comm.markFailed(5));
        QVERIFY(!comm.broken()); // bad arguments are rejected before the call joins anything
        QCOMPARE(comm.worldSize(), 2);
        comm.setTimeout(250ms);
        QCOMPARE(comm.timeout(), std::chrono::milliseconds(250));
    }
};

QTEST_GUILESS_MAIN(TestCommunicatorFailures)
#include "tst_communicator_failures.moc"
