// DistributedSampler: PyTorch semantics (shuffle, drop_last): disjoint equal shards whose union is the
// permutation prefix, per-epoch reshuffling that every rank reproduces, rank-strided identity unshuffled.
#include "train/DistributedSampler.h"

#include <QTest>
#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>

using rs::DistributedSampler;

class TestSampler : public QObject {
    Q_OBJECT

private slots:
    void shardsPartitionThePermutationPrefix_data();
    void shardsPartitionThePermutationPrefix();
    void permutationIsAPermutation_data();
    void permutationIsAPermutation();
    void epochsReshuffleReproducibly();
    void seedsGiveDifferentOrders();
    void unshuffledIsRankStridedIdentity_data();
    void unshuffledIsRankStridedIdentity();
    void rejectsBadArguments_data();
    void rejectsBadArguments();
};

static void addSizeWorldRows() {
    QTest::addColumn<qint64>("size");
    QTest::addColumn<int>("world");
    QTest::addRow("10/1") << qint64(10) << 1;
    QTest::addRow("10/3 drops 1") << qint64(10) << 3;
    QTest::addRow("100/4 even") << qint64(100) << 4;
    QTest::addRow("101/4 drops 1") << qint64(101) << 4;
    QTest::addRow("1000/7 drops 6") << qint64(1000) << 7;
    QTest::addRow("50000/8 cifar") << qint64(50000) << 8;
    QTest::addRow("7/8 nothing left") << qint64(7) << 8;
    QTest::addRow("0/2 empty") << qint64(0) << 2;
}

void TestSampler::shardsPartitionThePermutationPrefix_data() {
    addSizeWorldRows();
}

void TestSampler::shardsPartitionThePermutationPrefix() {
    QFETCH(qint64, size);
    QFETCH(int, world);
    const uint64_t seed = 1234;
    for (int64_t epoch : {0, 1, 5}) {
        const std::vector<int64_t> perm = DistributedSampler::permutation(size, seed, epoch);
        const int64_t per = size / world;
        std::multiset<int64_t> all;
        for (int r = 0; r < world; ++r) {
            DistributedSampler s(size, world, r, seed);
            s.setEpoch(epoch);
            QCOMPARE(s.numSamples(), per);
            QCOMPARE(int64_t(s.indices().size()), per);
            for (int64_t i = 0; i < per; ++i) {
                const int64_t idx = s.indices()[size_t(i)];
                QVERIFY(idx >= 0 && idx < size);
                QCOMPARE(idx, perm[size_t(i * world + r)]); // rank r takes positions r, r+W, ...
                all.insert(idx);
            }
        }
        // Disjoint: no index appears twice; complete up to drop_last: exactly the prefix of per*W.
        const std::set<int64_t> unique(all.begin(), all.end());
        QCOMPARE(unique.size(), all.size());
        const std::set<int64_t> prefix(perm.begin(), perm.begin() + per * world);
        QVERIFY(unique == prefix);
        QCOMPARE(int64_t(size - unique.size()), size % world);
    }
}

void TestSampler::permutationIsAPermutation_data() {
    addSizeWorldRows();
}

void TestSampler::permutationIsAPermutation() {
    QFETCH(qint64, size);
    std::vector<int64_t> perm = DistributedSampler::permutation(size, 99, 3);
    QCOMPARE(int64_t(perm.size()), size);
    std::sort(perm.begin(), perm.end());
    std::vector<int64_t> identity(size_t(size), 0);
    std::iota(identity.begin(), identity.end(), int64_t{0});
    QVERIFY(perm == identity);
}

void TestSampler::epochsReshuffleReproducibly() {
    DistributedSampler a(1000, 4, 2, 42);
    const std::vector<int64_t> epoch0 = a.indices();
    a.setEpoch(1);
    const std::vector<int64_t> epoch1 = a.indices();
    QCOMPARE(a.epoch(), int64_t(1));
    QVERIFY(epoch0 != epoch1);
    // Not merely rotated or reversed: most positions hold a different sample.
    int same = 0;
    for (size_t i = 0; i < epoch0.size(); ++i)
        same += epoch0[i] == epoch1[i];
    QVERIFY2(same < 25, qPrintable(QString("%1 of 250 positions unchanged").arg(same)));

    DistributedSampler b(1000, 4, 2, 42); // another process / rank object, same (seed, epoch)
    QVERIFY(b.indices() == epoch0);
    b.setEpoch(1);
    QVERIFY(b.indices() == epoch1);
    a.setEpoch(0);
    QVERIFY(a.indices() == epoch0);

    // Shuffled at all: epoch 0 is not the unshuffled order.
    DistributedSampler plain(1000, 4, 2, 42, false);
    QVERIFY(plain.indices() != epoch0);
}

void TestSampler::seedsGiveDifferentOrders() {
    DistributedSampler a(500, 2, 0, 1), b(500, 2, 0, 2);
    QVERIFY(a.indices() != b.indices());
    // Every rank derives the same permutation: rank 1 of seed 1 is disjoint from rank 0 of seed 1.
    DistributedSampler a1(500, 2, 1, 1);
    const std::set<int64_t> s0(a.indices().begin(), a.indices().end());
    for (int64_t idx : a1.indices())
        QVERIFY(!s0.count(idx));
}

void TestSampler::unshuffledIsRankStridedIdentity_data() {
    addSizeWorldRows();
}

void TestSampler::unshuffledIsRankStridedIdentity() {
    QFETCH(qint64, size);
    QFETCH(int, world);
    for (int r = 0; r < world; ++r) {
        DistributedSampler s(size, world, r, 7, false);
        s.setEpoch(3); // the epoch does not matter without shuffle
        QCOMPARE(int64_t(s.indices().size()), size / world);
        for (size_t i = 0; i < s.indices().size(); ++i)
            QCOMPARE(s.indices()[i], int64_t(i) * world + r);
    }
}

void TestSampler::rejectsBadArguments_data() {
    QTest::addColumn<qint64>("size");
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("rank");
    QTest::addRow("negative size") << qint64(-1) << 2 << 0;
    QTest::addRow("world 0") << qint64(10) << 0 << 0;
    QTest::addRow("rank = world") << qint64(10) << 4 << 4;
    QTest::addRow("negative rank") << qint64(10) << 4 << -1;
}

void TestSampler::rejectsBadArguments() {
    QFETCH(qint64, size);
    QFETCH(int, world);
    QFETCH(int, rank);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DistributedSampler(size, world, rank, 0));
}

QTEST_GUILESS_MAIN(TestSampler)
#include "tst_sampler.moc"
