// Tests for view/Decimate: min/max decimation keeps spikes and gaps, emits points in x order, leaves small
// series alone and never reads past its inputs; visibleRange widens by one point and clamps at the edges.
#include "view/Decimate.h"

#include <QTest>
#include <cmath>
#include <limits>
#include <numeric>

using namespace rs::view;

namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<int64_t> steps(int64_t n, int64_t first = 0, int64_t every = 1) {
    std::vector<int64_t> xs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        xs[size_t(i)] = first + i * every;
    return xs;
}

// A smooth, bounded wiggle (|y| <= 1) with nothing that looks like a spike.
std::vector<float> wiggle(int64_t n) {
    std::vector<float> ys(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        ys[size_t(i)] = float(std::sin(double(i) * 0.01));
    return ys;
}

bool strictlyIncreasing(const std::vector<double>& x) {
    return std::adjacent_find(x.begin(), x.end(), [](double a, double b) { return b <= a; }) == x.end();
}

int64_t countNaN(const std::vector<double>& y) {
    return std::count_if(y.begin(), y.end(), [](double v) { return std::isnan(v); });
}

} // namespace

class TestDecimate : public QObject {
    Q_OBJECT
private slots:
    void unchangedWhenSmall_data();
    void unchangedWhenSmall();
    void spikesSurvive();
    void minMaxInXOrder();
    void flatBucketGivesOnePoint();
    void gaps();
    void subrangeAndStride();
    void clampsToInputs_data();
    void clampsToInputs();
    void visibleRange_data();
    void visibleRange();
    void visibleRangeEmpty();
};

void TestDecimate::unchangedWhenSmall_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("buckets");
    QTest::addRow("exactly 2 x buckets") << 200 << 100;
    QTest::addRow("fewer than buckets") << 37 << 100;
    QTest::addRow("no buckets") << 5000 << 0;
    QTest::addRow("negative buckets") << 50 << -3;
    QTest::addRow("empty") << 0 << 10;
}

void TestDecimate::unchangedWhenSmall() {
    QFETCH(int, n);
    QFETCH(int, buckets);
    const auto xs = steps(n, 5, 2);
    auto ys = wiggle(n);
    if (n > 3)
        ys[3] = kInf; // non-finite values come out as gaps even when nothing is decimated
    const XY out = minMaxDecimate(xs, ys, 0, n, buckets);
    QCOMPARE(out.x.size(), size_t(n));
    QCOMPARE(out.y.size(), size_t(n));
    for (int i = 0; i < n; ++i) {
        QCOMPARE(out.x[size_t(i)], double(xs[size_t(i)]));
        if (i == 3)
            QVERIFY(std::isnan(out.y[size_t(i)]));
        else
            QCOMPARE(out.y[size_t(i)], double(ys[size_t(i)]));
    }
}

// The point of min/max decimation: one-sample spikes in a 100k series are still drawn at 200 buckets.
void TestDecimate::spikesSurvive() {
    const int64_t n = 100000;
    const auto xs = steps(n);
    auto ys = wiggle(n);
    ys[43210] = 1000.f;
    ys[777] = -500.f;
    ys[99999] = 77.f; // the very last point
    const XY out = minMaxDecimate(xs, ys, 0, n, 200);
    QVERIFY(out.x.size() <= 400);
    QVERIFY(out.x.size() >= 200);
    QCOMPARE(out.x.size(), out.y.size());
    auto yAt = [&](double x) {
        const auto it = std::find(out.x.begin(), out.x.end(), x);
        return it == out.x.end() ? std::nan("") : out.y[size_t(it - out.x.begin())];
    };
    QCOMPARE(*std::max_element(out.y.begin(), out.y.end()), 1000.0);
    QCOMPARE(yAt(43210), 1000.0);
    QCOMPARE(yAt(777), -500.0);
    QCOMPARE(yAt(99999), 77.0);
    QVERIFY(strictlyIncreasing(out.x));
    QCOMPARE(countNaN(out.y), int64_t(0));
}

// In a falling bucket the max comes first: emitting min then max regardless would draw a zigzag back in x.
void TestDecimate::minMaxInXOrder() {
    const std::vector<int64_t> xs = steps(12);
    const std::vector<float> ys = {5, 4, 3, 2, 1, 0, 0, 1, 2, 3, 4, 5}; // two buckets of 6: falling, rising
    const XY out = minMaxDecimate(xs, ys, 0, 12, 2);
    QCOMPARE(out.x, (std::vector<double>{0, 5, 6, 11}));
    QCOMPARE(out.y, (std::vector<double>{5, 0, 0, 5}));
}

void TestDecimate::flatBucketGivesOnePoint() {
    const std::vector<int64_t> xs = steps(9);
    const std::vector<float> ys = {2, 2,     2, 1,    3,
                                   2, kNaNf, 4, kNaNf}; // buckets of 3: flat, varied, one value
    const XY out = minMaxDecimate(xs, ys, 0, 9, 3);
    QCOMPARE(out.x, (std::vector<double>{0, 3, 4, 7}));
    QCOMPARE(out.y, (std::vector<double>{2, 1, 3, 4}));
}

// A bucket with nothing finite is one NaN point at its first x; a bucket with some finite values is not a
// gap.
void TestDecimate::gaps() {
    const int64_t n = 1000;
    const auto xs = steps(n, 0, 10);
    auto ys = wiggle(n);
    for (int64_t i = 300; i < 500; ++i) // buckets of 100: buckets 3 and 4 empty
        ys[size_t(i)] = (i % 2) ? kNaNf : kInf;
    ys[650] = kNaNf; // one NaN inside bucket 6
    const XY out = minMaxDecimate(xs, ys, 0, n, 10);
    QCOMPARE(countNaN(out.y), int64_t(2));
    std::vector<double> gapXs;
    for (size_t i = 0; i < out.y.size(); ++i)
        if (std::isnan(out.y[i]))
            gapXs.push_back(out.x[i]);
    QCOMPARE(gapXs, (std::vector<double>{3000, 4000}));
    QVERIFY(strictlyIncreasing(out.x));

    const std::vector<float> allNaN(size_t(n), kNaNf);
    const XY none = minMaxDecimate(xs, allNaN, 0, n, 10);
    QCOMPARE(none.x.size(), size_t(10));
    QCOMPARE(countNaN(none.y), int64_t(10));
}

// Per-rank columns are interleaved (row-major step x rank): stride = ranks, offset = rank.
void TestDecimate::subrangeAndStride() {
    const int64_t n = 1000, ranks = 3;
    const auto xs = steps(n);
    std::vector<float> ys(size_t(n * ranks));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t r = 0; r < ranks; ++r)
            ys[size_t(i * ranks + r)] = float(r * 10000 + i);
    const XY out = minMaxDecimate(xs, ys, 200, 700, 50, int(ranks), 2);
    QCOMPARE(out.x.size(), size_t(100));
    QCOMPARE(out.x.front(), 200.0);
    QCOMPARE(out.x.back(), 699.0);
    for (size_t i = 0; i < out.x.size(); ++i)
        QCOMPARE(out.y[i], 20000.0 + out.x[i]);
}

void TestDecimate::clampsToInputs_data() {
    QTest::addColumn<int>("ysSize");
    QTest::addColumn<int>("begin");
    QTest::addColumn<int>("end");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("offset");
    QTest::addColumn<int>("expectedPoints");
    QTest::addRow("end past xs") << 100 << 0 << 500 << 1 << 0 << 100;
    QTest::addRow("ys shorter than xs (live buffer)") << 60 << 0 << 100 << 1 << 0 << 60;
    QTest::addRow("ys shorter, strided") << 31 << 0 << 100 << 3 << 1 << 10; // indices 1,4,..,28
    QTest::addRow("negative begin") << 100 << -20 << 10 << 1 << 0 << 10;
    QTest::addRow("begin after end") << 100 << 50 << 40 << 1 << 0 << 0;
    QTest::addRow("offset past ys") << 100 << 0 << 100 << 1 << 100 << 0;
    QTest::addRow("zero stride") << 100 << 0 << 100 << 0 << 0 << 0;
    QTest::addRow("negative offset") << 100 << 0 << 100 << 1 << -1 << 0;
}

void TestDecimate::clampsToInputs() {
    QFETCH(int, ysSize);
    QFETCH(int, begin);
    QFETCH(int, end);
    QFETCH(int, stride);
    QFETCH(int, offset);
    QFETCH(int, expectedPoints);
    const auto xs = steps(100);
    const auto ys = wiggle(ysSize);
    const XY out = minMaxDecimate(xs, ys, begin, end, 1000, stride, offset);
    QCOMPARE(out.x.size(), size_t(expectedPoints));
    QCOMPARE(out.y.size(), size_t(expectedPoints));
}

void TestDecimate::visibleRange_data() {
    QTest::addColumn<double>("lower");
    QTest::addColumn<double>("upper");
    QTest::addColumn<qint64>("begin");
    QTest::addColumn<qint64>("end");
    // xs = 0, 10, 20, 30, 40
    QTest::addRow("between points") << 15.0 << 25.0 << qint64(1) << qint64(4);
    QTest::addRow("on points") << 10.0 << 30.0 << qint64(0) << qint64(5);
    QTest::addRow("inner points") << 20.0 << 20.0 << qint64(1) << qint64(4);
    QTest::addRow("whole and more") << -1e9 << 1e9 << qint64(0) << qint64(5);
    QTest::addRow("left of data") << -50.0 << -10.0 << qint64(0) << qint64(1);
    QTest::addRow("right of data") << 100.0 << 200.0 << qint64(4) << qint64(5);
    QTest::addRow("left edge") << 0.0 << 5.0 << qint64(0) << qint64(2);
    QTest::addRow("right edge") << 35.0 << 40.0 << qint64(3) << qint64(5);
    QTest::addRow("fractional") << 9.5 << 10.5 << qint64(0) << qint64(3);
    QTest::addRow("inverted") << 30.0 << 10.0 << qint64(2) << qint64(3);
}

void TestDecimate::visibleRange() {
    QFETCH(double, lower);
    QFETCH(double, upper);
    QFETCH(qint64, begin);
    QFETCH(qint64, end);
    const auto range = rs::view::visibleRange(steps(5, 0, 10), lower, upper);
    QCOMPARE(range.first, int64_t(begin));
    QCOMPARE(range.second, int64_t(end));
}

void TestDecimate::visibleRangeEmpty() {
    QCOMPARE(rs::view::visibleRange({}, 0, 100), std::make_pair(int64_t(0), int64_t(0)));
    QCOMPARE(rs::view::visibleRange({7}, 0, 100), std::make_pair(int64_t(0), int64_t(1)));
    QCOMPARE(rs::view::visibleRange({7}, 100, 200), std::make_pair(int64_t(0), int64_t(1)));
}

QTEST_GUILESS_MAIN(TestDecimate)
#include "tst_decimate.moc"
