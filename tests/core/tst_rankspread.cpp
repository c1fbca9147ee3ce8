// Tests for view/RankSpread: the lowest and highest rank per row, the band's decimation (spikes stay inside
// it, gaps stay gaps) and which ranks stand out: a rank offset from 63 noisy others, a rank gone non-finite,
// and nobody in plain noise or in rows without spread.
#include "view/RankSpread.h"

#include <QTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace rs::view;

namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// rows x ranks losses: 2.0 plus normal noise of sd 0.05 (seeded), row-major.
std::vector<float> noisyLosses(int64_t rows, int ranks, unsigned seed = 7) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> noise(0.0f, 0.05f);
    std::vector<float> v(size_t(rows) * size_t(ranks));
    for (float& x : v)
        x = 2.0f + noise(gen);
    return v;
}

std::vector<int> ranksOf(const std::vector<Standout>& s) {
    std::vector<int> r;
    for (const Standout& x : s)
        r.push_back(x.rank);
    return r;
}

} // namespace

class TestRankSpread : public QObject {
    Q_OBJECT
private slots:
    void rowRangeSkipsNonFinite() {
        const float row[] = {3.0f, kNaNf, -1.5f, kInf, 2.0f};
        const RowRange r = rowRange(row, 5);
        QCOMPARE(r.low, -1.5f);
        QCOMPARE(r.high, 3.0f);
        const float none[] = {kNaNf, kInf};
        const RowRange n = rowRange(none, 2);
        QVERIFY(std::isnan(n.low) && std::isnan(n.high));
    }

    void bandKeepsEverySpikeInside() {
        const int64_t n = 10000;
        std::vector<int64_t> xs(static_cast<size_t>(n));
        std::vector<float> lows(static_cast<size_t>(n)), highs(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            xs[size_t(i)] = i * 2;
            lows[size_t(i)] = 1.0f;
            highs[size_t(i)] = 2.0f;
        }
        lows[4321] = -7.0f; // one low spike and one high spike
        highs[8765] = 9.0f;
        const Band b = bandDecimate(xs, lows, highs, 0, n, 500);
        QCOMPARE(b.x.size(), size_t(500));
        QCOMPARE(b.low.size(), size_t(500));
        QCOMPARE(*std::min_element(b.low.begin(), b.low.end()), -7.0);
        QCOMPARE(*std::max_element(b.high.begin(), b.high.end()), 9.0);
        QCOMPARE(b.x.front(), 0.0);
        QVERIFY(std::is_sorted(b.x.begin(), b.x.end()));
        // Few points: one per row, unchanged.
        const Band small = bandDecimate(xs, lows, highs, 100, 110, 500);
        QCOMPARE(small.x.size(), size_t(10));
        QCOMPARE(small.x.front(), 200.0);
        QCOMPARE(small.high.back(), 2.0);
    }

    void bandGapsAndClamping() {
        const std::vector<int64_t> xs{0, 1, 2, 3};
        const std::vector<float> lows{1, kNaNf, 1, 1};
        const std::vector<float> highs{2, kNaNf, 2}; // shorter: a live buffer mid-append
        const Band b = bandDecimate(xs, lows, highs, -5, 99, 0);
        QCOMPARE(b.x.size(), size_t(3));
        QVERIFY(std::isnan(b.low[1]) && std::isnan(b.high[1]));
        QCOMPARE(b.low[2], 1.0);
        QVERIFY(bandDecimate(xs, lows, highs, 3, 2, 10).x.empty());
    }

    void offsetRankStandsOut() {
        const int R = 64;
        const int64_t rows = 300;
        std::vector<float> v = noisyLosses(rows, R);
        for (int64_t row = 0; row < rows; ++row)
            v[size_t(row) * R + 17] += 0.3f; // six standard deviations above the others
        const auto s = standoutRanks(v, R, 0, rows);
        QCOMPARE(ranksOf(s), std::vector<int>{17});
        QVERIFY2(s[0].score > 5, qPrintable(QString::number(s[0].score)));
        QCOMPARE(s[0].nonFinite, int64_t(0));
        // Only in the rows where it differs: a range before the offset starts shows nobody.
        for (int64_t row = 0; row < 150; ++row)
            v[size_t(row) * R + 17] -= 0.3f;
        QVERIFY(standoutRanks(v, R, 0, 150).empty());
        QCOMPARE(ranksOf(standoutRanks(v, R, 150, rows)), std::vector<int>{17});
    }

    void severalRanksDoNotHideEachOther() {
        const int R = 64;
        std::vector<float> v = noisyLosses(200, R);
        const std::vector<int> bad{3, 11, 20, 29, 38, 47, 56, 63}; // an eighth of the ranks, all 0.3 high
        for (int64_t row = 0; row < 200; ++row)
            for (int r : bad)
                v[size_t(row) * R + size_t(r)] += 0.3f;
        std::vector<int> found = ranksOf(standoutRanks(v, R, 0, 200, 8));
        std::sort(found.begin(), found.end());
        QCOMPARE(found, bad);
        QCOMPARE(standoutRanks(v, R, 0, 200).size(), size_t(4)); // the default shows four
    }

    void plainNoiseHasNoStandout() {
        for (unsigned seed : {1u, 2u, 3u}) {
            const auto v = noisyLosses(400, 64, seed);
            QVERIFY2(standoutRanks(v, 64, 0, 400).empty(), qPrintable(QString::number(seed)));
        }
    }

    void nonFiniteRankComesFirst() {
        const int R = 16;
        const int64_t rows = 100;
        std::vector<float> v = noisyLosses(rows, R);
        for (int64_t row = 0; row < rows; ++row)
            v[size_t(row) * R + 3] += 0.4f; // a strong offset
        v[size_t(50) * R + 9] = kInf;       // one non-finite step
        const auto s = standoutRanks(v, R, 0, rows);
        QCOMPARE(ranksOf(s), (std::vector<int>{9, 3}));
        QCOMPARE(s[0].nonFinite, int64_t(1));
        // A row where every rank is non-finite singles nobody out.
        std::vector<float> allBad(size_t(R) * 4, kNaNf);
        QVERIFY(standoutRanks(allBad, R, 0, 4).empty());
    }

    void outliersAmongPerRankFigures() {
        std::vector<float> steps(64);
        for (size_t r = 0; r < steps.size(); ++r)
            steps[r] = 1280.0f + float((r * 37) % 17); // 1280..1296 ms
        QVERIFY(outlierRanks(steps).empty());
        steps[9] = 1900.0f;  // far out
        steps[41] = kNaNf;   // no figure
        steps[20] = 1299.0f; // just past the others: not an outlier
        QCOMPARE(outlierRanks(steps), (std::vector<int>{9, 41}));
        // Most agree exactly (MAD 0): the one that differs at all is out.
        std::vector<float> counts(32, 102.0f);
        counts[5] = 101.0f;
        QCOMPARE(outlierRanks(counts), std::vector<int>{5});
        QVERIFY(outlierRanks(std::vector<float>(8, 3.0f)).empty());
        QVERIFY(outlierRanks(std::vector<float>(4, kNaNf)).empty()); // nobody has a figure
        QCOMPARE(outlierRanks({1.0f, kInf}),
                 std::vector<int>{1}); // too few to measure spread: non-finite only
    }

    void equalRowsAndLimits() {
        const int R = 12;
        std::vector<float> same(size_t(R) * 50, 1.25f); // ranks agree exactly: no spread, nobody stands out
        QVERIFY(standoutRanks(same, R, 0, 50).empty());
        for (size_t row = 0; row < 50; ++row)
            same[row * R + 5] = 1.3f; // all others agree exactly (MAD 0): the one that differs stands out
        QCOMPARE(ranksOf(standoutRanks(same, R, 0, 50)), std::vector<int>{5});
        std::vector<float> v = noisyLosses(200, R);
        for (int64_t row = 0; row < 200; ++row)
            for (int r : {1, 4, 7})
                v[size_t(row) * R + size_t(r)] += 0.2f * float(r);
        QCOMPARE(ranksOf(standoutRanks(v, R, 0, 200, 2)), (std::vector<int>{7, 4}));
        QVERIFY(standoutRanks(v, R, 0, 200, 0).empty());
        QVERIFY(standoutRanks(v, 0, 0, 200).empty());
        // Sampling a bounded number of rows finds the same ranks.
        QCOMPARE(ranksOf(standoutRanks(v, R, 0, 200, 4, 2.0, 16)), ranksOf(standoutRanks(v, R, 0, 200)));
    }

    // The loss scale most ranks used: the seed story's one rank at 2^24 among three at 2^14 gives 2^14; a tie
    // gives the smaller; non-finite and non-positive values (fill, not recorded) do not count.
    void commonValueIsWhatMostRanksHold() {
        const float nan = std::nanf("");
        const float story[] = {16384.f, 16777216.f, 16384.f, 16384.f};
        QCOMPARE(commonValue(story, 4), 16384.f);
        const float tie[] = {4.f, 2.f, 4.f, 2.f};
        QCOMPARE(commonValue(tie, 4), 2.f);
        const float holes[] = {nan, 8.f, 0.f, -1.f, 8.f, 1.f};
        QCOMPARE(commonValue(holes, 6), 8.f);
        const float none[] = {nan, 0.f};
        QVERIFY(std::isnan(commonValue(none, 2)));
        QVERIFY(std::isnan(commonValue(story, 0)));
    }
};

QTEST_APPLESS_MAIN(TestRankSpread)
#include "tst_rankspread.moc"
