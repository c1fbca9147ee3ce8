// Tests for view/RankMatrix: every metric on a hand-built step of four ranks where rank 3 diverges, so each
// cell has a value worked out by hand; NaN for what was not recorded; the parameter x rank norm ratio with
// odd and even rank counts.
#include "view/RankMatrix.h"

#include <QTest>
#include <cmath>
#include <limits>
#include <set>

using namespace rs;
using namespace rs::view;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int R = 4, P = 3, K = 2;

RunMeta makeMeta(int ranks) {
    RunMeta m;
    m.worldSize = ranks;
    m.batchPerRank = 4;
    m.sketchDim = K;
    for (int p = 0; p < P; ++p) {
        std::string name = "p"; // not "p" + ...: GCC 12 -O3 warns falsely (-Wrestrict) on that
        name += std::to_string(p);
        m.params.push_back(ParamInfo{name, {1}, 1, p});
    }
    return m;
}

// Ranks 0-2 agree on the synced gradient; rank 3's synced parameter 1 differs (fingerprint and norm 3 vs 2).
// Local sketches (K = 2): p0 (1,0), p1 (0,1), p2 (1,1), except rank 1's p0 (3,4) and rank 3's p1 (0,-1).
// Samples: rank 0 {0,1,2,3}, rank 1 {4,5,6,7}, rank 2 {8,9,10,-1}, rank 3 {0,1,8,11} (overlaps 0 and 2).
StepRecord makeStep() {
    StepRecord s;
    s.step = 42;
    const std::vector<std::vector<int32_t>> ids = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, -1}, {0, 1, 8, 11}};
    for (int r = 0; r < R; ++r) {
        RankStep x;
        x.syncedFp = {100, 101, 102};
        x.syncedNorm = {1.f, 2.f, 0.f};
        x.sketch = {1, 0, 0, 1, 1, 1};
        x.localNorm = {1.f, 2.f, 3.f};
        x.sampleIds = ids[size_t(r)];
        s.ranks.push_back(x);
    }
    s.ranks[1].sketch[0] = 3;
    s.ranks[1].sketch[1] = 4;
    s.ranks[3].syncedFp[1] = 999;
    s.ranks[3].syncedNorm[1] = 3.f;
    s.ranks[3].sketch[3] = -1;
    return s;
}

// Rank 3's weights differ on parameters 0 and 2.
WeightRecord makeWeights() {
    WeightRecord w;
    w.step = 40;
    for (int r = 0; r < R; ++r)
        w.fp.push_back({7, 8, 9});
    w.fp[3][0] = 70;
    w.fp[3][2] = 90;
    return w;
}

bool same(double a, double b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b));
}

// "" when every cell of row/column `rank` (diagonal included) is NaN and every other cell is not.
QString nanExactlyAt(const Matrix& m, int rank) {
    for (int i = 0; i < m.rows; ++i)
        for (int j = 0; j < m.cols; ++j)
            if (std::isnan(m.at(i, j)) != (i == rank || j == rank))
                return QStringLiteral("cell (%1,%2) = %3").arg(i).arg(j).arg(m.at(i, j));
    return {};
}

bool allNaN(const Matrix& m) {
    return std::all_of(m.v.begin(), m.v.end(), [](double x) { return std::isnan(x); });
}

} // namespace

class TestRankMatrix : public QObject {
    Q_OBJECT
private slots:
    void cells_data();
    void cells();
    void shapeAndSymmetry_data();
    void shapeAndSymmetry();
    void emptyVectorsGiveNaN_data();
    void emptyVectorsGiveNaN();
    void telemetryOffGivesNaN();
    void unrecordedFingerprintsGiveNaN();
    void weightsMissingOrWrongSize();
    void paramOutOfRange();
    void sketchZeroOrNonFinite();
    void syncedNormNonFinite();
    void normRatio_data();
    void normRatio();
    void normRatioOneRankTenTimes();
    void normRatioWrongSizeRank();
    void finiteRangeSkipsNonFinite();
    void metricNames();
};

void TestRankMatrix::cells_data() {
    QTest::addColumn<int>("metric");
    QTest::addColumn<int>("param");
    QTest::addColumn<int>("i");
    QTest::addColumn<int>("j");
    QTest::addColumn<double>("expected");
    const int sm = int(RankMetric::SyncedMismatch), nd = int(RankMetric::SyncedNormDiff),
              sc = int(RankMetric::SketchCosine), wm = int(RankMetric::WeightMismatch),
              so = int(RankMetric::ShardOverlap);
    QTest::addRow("synced mismatch all, healthy pair") << sm << -1 << 0 << 1 << 0.0;
    QTest::addRow("synced mismatch all, divergent") << sm << -1 << 0 << 3 << 1.0;
    QTest::addRow("synced mismatch all, divergent mirrored") << sm << -1 << 3 << 2 << 1.0;
    QTest::addRow("synced mismatch diagonal") << sm << -1 << 3 << 3 << 0.0;
    QTest::addRow("synced mismatch p1 divergent") << sm << 1 << 1 << 3 << 1.0;
    QTest::addRow("synced mismatch p0 divergent rank agrees") << sm << 0 << 1 << 3 << 0.0;
    QTest::addRow("norm diff all, divergent") << nd << -1 << 0 << 3 << 1.0 / 3.0;
    QTest::addRow("norm diff all, healthy") << nd << -1 << 0 << 2 << 0.0;
    QTest::addRow("norm diff p1") << nd << 1 << 3 << 1 << 1.0 / 3.0;
    QTest::addRow("norm diff p0") << nd << 0 << 3 << 1 << 0.0;
    QTest::addRow("norm diff p2 both zero") << nd << 2 << 3 << 1 << 0.0;
    QTest::addRow("cosine p1 opposite") << sc << 1 << 0 << 3 << -1.0;
    QTest::addRow("cosine p1 same") << sc << 1 << 0 << 2 << 1.0;
    QTest::addRow("cosine p0 rank 1 rotated") << sc << 0 << 0 << 1 << 0.6;
    QTest::addRow("cosine p0 divergent rank agrees") << sc << 0 << 0 << 3 << 1.0;
    QTest::addRow("cosine all 0-3") << sc << -1 << 0 << 3 << 0.5; // (1,0,0,1,1,1).(1,0,0,-1,1,1)/4
    QTest::addRow("cosine all 0-1") << sc << -1 << 0 << 1 << 3.0 / std::sqrt(28.0); // 6 / (2 sqrt 28)
    QTest::addRow("cosine all 1-3") << sc << -1 << 1 << 3 << 2.0 / std::sqrt(28.0); // 4 / (2 sqrt 28)
    QTest::addRow("cosine diagonal") << sc << -1 << 1 << 1 << 1.0;
    QTest::addRow("weights all divergent") << wm << -1 << 3 << 0 << 2.0;
    QTest::addRow("weights all healthy") << wm << -1 << 1 << 2 << 0.0;
    QTest::addRow("weights p0 divergent") << wm << 0 << 2 << 3 << 1.0;
    QTest::addRow("weights p1 divergent rank agrees") << wm << 1 << 2 << 3 << 0.0;
    QTest::addRow("weights diagonal") << wm << -1 << 3 << 3 << 0.0;
    QTest::addRow("shards disjoint") << so << -1 << 0 << 1 << 0.0;
    QTest::addRow("shards 0 in 3") << so << -1 << 0 << 3 << 0.5;
    QTest::addRow("shards 3 in 0") << so << -1 << 3 << 0 << 0.5;
    QTest::addRow("shards 2 in 3 (padded)") << so << -1 << 2 << 3 << 1.0 / 3.0;
    QTest::addRow("shards 3 in 2") << so << -1 << 3 << 2 << 0.25;
    QTest::addRow("shards diagonal") << so << -1 << 2 << 2 << 1.0;
    QTest::addRow("shards ignore param") << so << 1 << 3 << 2 << 0.25;
}

void TestRankMatrix::cells() {
    QFETCH(int, metric);
    QFETCH(int, param);
    QFETCH(int, i);
    QFETCH(int, j);
    QFETCH(double, expected);
    const StepRecord step = makeStep();
    const WeightRecord weights = makeWeights();
    const Matrix m = rankMatrix(RankMetric(metric), makeMeta(R), step, &weights, param);
    QCOMPARE(m.rows, R);
    QCOMPARE(m.cols, R);
    QVERIFY2(same(m.at(i, j), expected), qPrintable(QStringLiteral("got %1").arg(m.at(i, j), 0, 'g', 17)));
}

void TestRankMatrix::shapeAndSymmetry_data() {
    QTest::addColumn<int>("metric");
    QTest::addColumn<bool>("symmetric");
    QTest::addRow("synced mismatch") << int(RankMetric::SyncedMismatch) << true;
    QTest::addRow("synced norm diff") << int(RankMetric::SyncedNormDiff) << true;
    QTest::addRow("sketch cosine") << int(RankMetric::SketchCosine) << true;
    QTest::addRow("weight mismatch") << int(RankMetric::WeightMismatch) << true;
    QTest::addRow("shard overlap") << int(RankMetric::ShardOverlap) << false; // fractions of each own batch
}

void TestRankMatrix::shapeAndSymmetry() {
    QFETCH(int, metric);
    QFETCH(bool, symmetric);
    const WeightRecord weights = makeWeights();
    const Matrix m = rankMatrix(RankMetric(metric), makeMeta(R), makeStep(), &weights);
    QCOMPARE(m.v.size(), size_t(R * R));
    QVERIFY(!std::any_of(m.v.begin(), m.v.end(), [](double x) { return std::isnan(x); }));
    bool isSymmetric = true;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < R; ++j)
            isSymmetric = isSymmetric && same(m.at(i, j), m.at(j, i));
    QCOMPARE(isSymmetric, symmetric);
}

void TestRankMatrix::emptyVectorsGiveNaN_data() {
    QTest::addColumn<int>("metric");
    QTest::addColumn<int>("param");
    QTest::addRow("synced mismatch all") << int(RankMetric::SyncedMismatch) << -1;
    QTest::addRow("synced mismatch p2") << int(RankMetric::SyncedMismatch) << 2;
    QTest::addRow("synced norm diff all") << int(RankMetric::SyncedNormDiff) << -1;
    QTest::addRow("synced norm diff p0") << int(RankMetric::SyncedNormDiff) << 0;
    QTest::addRow("sketch cosine all") << int(RankMetric::SketchCosine) << -1;
    QTest::addRow("sketch cosine p1") << int(RankMetric::SketchCosine) << 1;
    QTest::addRow("weight mismatch all") << int(RankMetric::WeightMismatch) << -1;
    QTest::addRow("shard overlap") << int(RankMetric::ShardOverlap) << -1;
}

// Rank 2 recorded nothing (empty vectors); its row and column are NaN, everything else still has values.
void TestRankMatrix::emptyVectorsGiveNaN() {
    QFETCH(int, metric);
    QFETCH(int, param);
    StepRecord step = makeStep();
    RankStep& r2 = step.ranks[2];
    r2.syncedFp.clear();
    r2.syncedNorm.clear();
    r2.sketch.clear();
    r2.sampleIds.clear();
    WeightRecord weights = makeWeights();
    weights.fp[2].clear();
    const Matrix m = rankMatrix(RankMetric(metric), makeMeta(R), step, &weights, param);
    QCOMPARE(nanExactlyAt(m, 2), QString());
}

// Telemetry off in memory: every per-parameter vector empty; also a step with fewer ranks than the meta.
void TestRankMatrix::telemetryOffGivesNaN() {
    StepRecord step = makeStep();
    for (RankStep& r : step.ranks)
        r = RankStep{};
    for (RankMetric metric : {RankMetric::SyncedMismatch, RankMetric::SyncedNormDiff,
                              RankMetric::SketchCosine, RankMetric::ShardOverlap}) {
        const Matrix m = rankMatrix(metric, makeMeta(R), step, nullptr);
        QCOMPARE(m.v.size(), size_t(R * R));
        QVERIFY2(allNaN(m), rankMetricName(metric));
    }
    StepRecord shortStep = makeStep();
    shortStep.ranks.pop_back(); // rank 3 missing altogether
    const Matrix m = rankMatrix(RankMetric::SketchCosine, makeMeta(R), shortStep, nullptr);
    QCOMPARE(nanExactlyAt(m, 3), QString());
}

// Read back from a run without telemetry, fingerprints are the file's fill value 0: not "all equal".
void TestRankMatrix::unrecordedFingerprintsGiveNaN() {
    StepRecord step = makeStep();
    for (RankStep& r : step.ranks)
        r.syncedFp.assign(P, 0);
    QVERIFY(allNaN(rankMatrix(RankMetric::SyncedMismatch, makeMeta(R), step, nullptr)));
    // One parameter unrecorded on rank 3 only: that parameter is skipped, the others still count.
    step = makeStep();
    step.ranks[3].syncedFp[1] = 0;
    const Matrix all = rankMatrix(RankMetric::SyncedMismatch, makeMeta(R), step, nullptr);
    QCOMPARE(all.at(0, 3), 0.0);
    QVERIFY(std::isnan(rankMatrix(RankMetric::SyncedMismatch, makeMeta(R), step, nullptr, 1).at(0, 3)));
}

void TestRankMatrix::weightsMissingOrWrongSize() {
    const RunMeta meta = makeMeta(R);
    const StepRecord step = makeStep();
    QVERIFY(allNaN(rankMatrix(RankMetric::WeightMismatch, meta, step, nullptr)));
    WeightRecord w = makeWeights();
    w.fp.pop_back(); // 3 ranks for a 4-rank run
    QVERIFY(allNaN(rankMatrix(RankMetric::WeightMismatch, meta, step, &w)));
    w = makeWeights();
    w.fp[1].push_back(5); // 4 parameters for a 3-parameter run
    QCOMPARE(nanExactlyAt(rankMatrix(RankMetric::WeightMismatch, meta, step, &w), 1), QString());
}

void TestRankMatrix::paramOutOfRange() {
    const WeightRecord w = makeWeights();
    for (int param : {-2, P, P + 10})
        for (RankMetric metric : {RankMetric::SyncedMismatch, RankMetric::SyncedNormDiff,
                                  RankMetric::SketchCosine, RankMetric::WeightMismatch}) {
            const Matrix m = rankMatrix(metric, makeMeta(R), makeStep(), &w, param);
            QCOMPARE(m.rows, R);
            QVERIFY2(allNaN(m),
                     qPrintable(QStringLiteral("%1 param %2").arg(rankMetricName(metric)).arg(param)));
        }
    QVERIFY(allNaN(rankMatrix(RankMetric::SketchCosine, makeMeta(R), StepRecord{}, &w)));
}

void TestRankMatrix::sketchZeroOrNonFinite() {
    StepRecord step = makeStep();
    step.ranks[1].sketch[2] = 0; // rank 1's p1 sketch becomes (0, 0)
    step.ranks[1].sketch[3] = 0;
    step.ranks[2].sketch[4] = std::numeric_limits<float>::infinity(); // rank 2's p2
    const RunMeta meta = makeMeta(R);
    QCOMPARE(nanExactlyAt(rankMatrix(RankMetric::SketchCosine, meta, step, nullptr, 1), 1), QString());
    QCOMPARE(nanExactlyAt(rankMatrix(RankMetric::SketchCosine, meta, step, nullptr, 2), 2), QString());
    // Concatenated: the zero part alone does not zero the whole, the inf does poison it.
    const Matrix all = rankMatrix(RankMetric::SketchCosine, meta, step, nullptr);
    QCOMPARE(nanExactlyAt(all, 2), QString());
    QVERIFY(same(all.at(0, 1), 5.0 / (2.0 * std::sqrt(27.0)))); // (1,0,0,1,1,1).(3,4,0,0,1,1)
}

void TestRankMatrix::syncedNormNonFinite() {
    StepRecord step = makeStep();
    step.ranks[3].syncedNorm[0] = std::numeric_limits<float>::quiet_NaN();
    const RunMeta meta = makeMeta(R);
    // A NaN synced norm on one rank is as different as it gets; NaN on both ranks says nothing.
    QCOMPARE(rankMatrix(RankMetric::SyncedNormDiff, meta, step, nullptr, 0).at(0, 3), 1.0);
    QCOMPARE(rankMatrix(RankMetric::SyncedNormDiff, meta, step, nullptr).at(0, 3), 1.0);
    QVERIFY(std::isnan(rankMatrix(RankMetric::SyncedNormDiff, meta, step, nullptr, 0).at(3, 3)));
    for (RankStep& r : step.ranks)
        r.syncedNorm[1] = std::numeric_limits<float>::infinity();
    QCOMPARE(rankMatrix(RankMetric::SyncedNormDiff, meta, step, nullptr, 1).at(0, 2), 0.0);
}

void TestRankMatrix::normRatio_data() {
    QTest::addColumn<QList<double>>("norms");
    QTest::addColumn<QList<double>>("expected");
    QTest::addRow("odd, plain") << QList<double>{1, 2, 30} << QList<double>{0.5, 1, 15};
    QTest::addRow("even, mean of middle two")
        << QList<double>{2, 4, 6, 8} << QList<double>{0.4, 0.8, 1.2, 1.6};
    QTest::addRow("even, unsorted") << QList<double>{8, 2, 6, 4} << QList<double>{1.6, 0.4, 1.2, 0.8};
    QTest::addRow("one rank") << QList<double>{3} << QList<double>{1};
    QTest::addRow("median zero") << QList<double>{0, 0, 1} << QList<double>{kNaN, kNaN, kNaN};
    QTest::addRow("NaN rank left out of the median")
        << QList<double>{1, kNaN, 3, 5} << QList<double>{1.0 / 3.0, kNaN, 1, 5.0 / 3.0};
    QTest::addRow("all NaN") << QList<double>{kNaN, kNaN} << QList<double>{kNaN, kNaN};
}

void TestRankMatrix::normRatio() {
    QFETCH(QList<double>, norms);
    QFETCH(QList<double>, expected);
    const int ranks = int(norms.size());
    StepRecord step;
    for (int r = 0; r < ranks; ++r) {
        RankStep x;
        x.localNorm = {1.f, float(norms[r]), 1.f};
        step.ranks.push_back(x);
    }
    const Matrix m = paramRankNormRatio(makeMeta(ranks), step);
    QCOMPARE(m.rows, P);
    QCOMPARE(m.cols, ranks);
    for (int r = 0; r < ranks; ++r) {
        QVERIFY2(same(m.at(1, r), expected[r]),
                 qPrintable(QStringLiteral("rank %1: %2").arg(r).arg(m.at(1, r))));
        QCOMPARE(m.at(0, r), 1.0);
    }
}

// The picture the heatmap exists for: one rank 10x on one parameter stands out, everything else is 1.
void TestRankMatrix::normRatioOneRankTenTimes() {
    StepRecord step = makeStep();
    step.ranks[2].localNorm[1] *= 10;
    const Matrix m = paramRankNormRatio(makeMeta(R), step);
    for (int p = 0; p < P; ++p)
        for (int r = 0; r < R; ++r)
            QCOMPARE(m.at(p, r), (p == 1 && r == 2) ? 10.0 : 1.0);
    QCOMPARE(finiteRange(m), std::make_pair(1.0, 10.0));
}

void TestRankMatrix::normRatioWrongSizeRank() {
    StepRecord step = makeStep();
    step.ranks[0].localNorm.clear();
    step.ranks[1].localNorm = {1.f, 2.f, 3.f, 4.f};
    step.ranks[3].localNorm = {2.f, 4.f, 6.f};
    const Matrix m = paramRankNormRatio(makeMeta(R), step);
    for (int p = 0; p < P; ++p) {
        QVERIFY(std::isnan(m.at(p, 0)));
        QVERIFY(std::isnan(m.at(p, 1)));
        QCOMPARE(m.at(p, 2), 2.0 / 3.0); // median of {1, 2} x (p + 1) = 1.5 x (p + 1)
        QCOMPARE(m.at(p, 3), 4.0 / 3.0);
    }
    QVERIFY(allNaN(paramRankNormRatio(makeMeta(R), StepRecord{})));
}

void TestRankMatrix::finiteRangeSkipsNonFinite() {
    const double inf = std::numeric_limits<double>::infinity();
    Matrix m{2, 3, {kNaN, -2.5, inf, 7, -inf, 0}};
    QCOMPARE(finiteRange(m), std::make_pair(-2.5, 7.0));
    m.v = {kNaN, inf, -inf, kNaN, kNaN, kNaN};
    const auto none = finiteRange(m);
    QVERIFY(std::isnan(none.first) && std::isnan(none.second));
    QVERIFY(std::isnan(finiteRange(Matrix{}).first));
}

void TestRankMatrix::metricNames() {
    std::set<std::string> names;
    for (RankMetric m : {RankMetric::SyncedMismatch, RankMetric::SyncedNormDiff, RankMetric::SketchCosine,
                         RankMetric::WeightMismatch, RankMetric::ShardOverlap}) {
        const std::string name = rankMetricName(m);
        QVERIFY(!name.empty());
        names.insert(name);
    }
    QCOMPARE(names.size(), size_t(5));
    QCOMPARE(QString(rankMetricName(RankMetric::SyncedMismatch)), QStringLiteral("synced gradient mismatch"));
}

QTEST_GUILESS_MAIN(TestRankMatrix)
#include "tst_rankmatrix.moc"
