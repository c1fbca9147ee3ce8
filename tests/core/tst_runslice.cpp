// Tests for store/RunSlice: a slice of a fixture run reopens as a valid run holding exactly the source's rows
// of the window (bit for bit, across several read chunks), filters weights, evaluations, events and flight
// dumps by step, refuses to overwrite, carries the stop reason; firstAnomalyStep and sliceWindow pick the
// window.
#include "RunFileFixtures.h"
#include "reader/OpenRunFile.h"
#include "store/RunSlice.h"

#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <filesystem>
#include <numeric>

using namespace rs;
using namespace rs::runfile_fixtures;

Q_DECLARE_METATYPE(std::vector<rs::Event>)

namespace {

constexpr int kSteps = 600; // more than two of the slicer's 256-row read chunks

template <class T> bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class T> bool sameBits(T a, T b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// "" if the two steps are equal bit for bit (NaN payloads included), else the first difference.
QString stepDiff(const StepRecord& a, const StepRecord& b) {
    if (a.step != b.step || a.epoch != b.epoch || !sameBits(a.lr, b.lr) || a.ranks.size() != b.ranks.size())
        return QStringLiteral("step %1 vs %2: scalars").arg(a.step).arg(b.step);
    for (size_t r = 0; r < a.ranks.size(); ++r) {
        const RankStep& x = a.ranks[r];
        const RankStep& y = b.ranks[r];
        const bool scalars = sameBits(x.loss, y.loss) && sameBits(x.accuracy, y.accuracy) &&
                             sameBits(x.lossScale, y.lossScale) && x.overflow == y.overflow &&
                             x.skipped == y.skipped && x.state == y.state && sameBits(x.stepMs, y.stepMs) &&
                             sameBits(x.computeMs, y.computeMs) && sameBits(x.commMs, y.commMs) &&
                             x.sampleFp == y.sampleFp && x.bufferFp == y.bufferFp;
        const bool vectors = sameBits(x.sampleIds, y.sampleIds) && sameBits(x.localNorm, y.localNorm) &&
                             sameBits(x.localMax, y.localMax) && sameBits(x.localSum, y.localSum) &&
                             sameBits(x.nonfinite, y.nonfinite) &&
                             sameBits(x.overflowCount, y.overflowCount) &&
                             sameBits(x.underflowCount, y.underflowCount) && sameBits(x.sketch, y.sketch) &&
                             sameBits(x.syncedNorm, y.syncedNorm) && sameBits(x.syncedSum, y.syncedSum) &&
                             sameBits(x.syncedFp, y.syncedFp);
        if (!scalars || !vectors || x.sketch.empty()) // empty: per-parameter data was not read at all
            return QStringLiteral("step %1 rank %2: %3")
                .arg(a.step)
                .arg(r)
                .arg(scalars ? "vectors" : "scalars");
    }
    return {};
}

Event anomalyEvent(int64_t step, Severity severity, const std::string& code) {
    return Event{step, -1, severity, code, code + " at step " + std::to_string(step)};
}

} // namespace

class TestRunSlice : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void slice_data();
    void slice();
    void copiesWeightsEvalsEventsDumps();
    void emptyWindow();
    void incompleteSource();
    void refusesOverwrite();
    void refusesBadArguments();
    void anomalyWindowOfFixture();
    void firstAnomalyStep_data();
    void firstAnomalyStep();
    void sliceWindow_data();
    void sliceWindow();

private:
    QString path(const QString& name) const { return m_dir.filePath(name); }
    QTemporaryDir m_dir;
    QString m_src;
    RunMeta m_meta;
};

// 600 steps, weights every 10, evaluations every 50, an event every 3 steps, flight dumps at 30 and 120.
void TestRunSlice::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_src = path("source.h5");
    m_meta = makeMeta(3, 5, 4, 6);
    auto w = RunWriter::create(m_src.toStdString(), m_meta);
    for (int s = 0; s < kSteps; ++s) {
        w->appendStep(makeStep(m_meta, s));
        if (s % 10 == 0)
            w->appendWeights(makeWeights(m_meta, s));
        if (s % 50 == 0)
            w->appendEval(makeEval(m_meta, s));
        if (s % 3 == 0)
            w->appendEvent(makeEvent(s / 3));
        if (s == 30 || s == 120)
            w->appendFlightDump(makeDump(m_meta, s, 4));
    }
    w->close("completed");
}

void TestRunSlice::slice_data() {
    QTest::addColumn<qint64>("first");
    QTest::addColumn<qint64>("last");
    QTest::addColumn<qint64>("expectedFirst");
    QTest::addColumn<qint64>("expectedCount");
    QTest::addRow("window") << qint64(100) << qint64(150) << qint64(100) << qint64(51);
    QTest::addRow("one step") << qint64(7) << qint64(7) << qint64(7) << qint64(1);
    QTest::addRow("three read chunks") << qint64(10) << qint64(590) << qint64(10) << qint64(581);
    QTest::addRow("whole run") << qint64(0) << qint64(kSteps - 1) << qint64(0) << qint64(kSteps);
    QTest::addRow("past both ends") << qint64(-100) << qint64(100000) << qint64(0) << qint64(kSteps);
    QTest::addRow("tail") << qint64(550) << qint64(100000) << qint64(550) << qint64(50);
}

void TestRunSlice::slice() {
    QFETCH(qint64, first);
    QFETCH(qint64, last);
    QFETCH(qint64, expectedFirst);
    QFETCH(qint64, expectedCount);
    const QString dst = path(QStringLiteral("slice-%1.h5").arg(QTest::currentDataTag()));
    sliceRun(*openRunFile(m_src.toStdString()), dst.toStdString(), first, last);

    const auto src = openRunFile(m_src.toStdString());
    const auto out = openRunFile(dst.toStdString());
    QCOMPARE(out->stepCount(), int64_t(expectedCount));
    std::vector<int64_t> expectedSteps(static_cast<size_t>(expectedCount));
    std::iota(expectedSteps.begin(), expectedSteps.end(), int64_t(expectedFirst));
    QCOMPARE(out->readStepNumbers(0, out->stepCount()), expectedSteps);

    // Source rows = step numbers here, so row expectedFirst + i of the source is row i of the slice.
    const auto want = src->readSteps(expectedFirst, expectedFirst + expectedCount, true);
    const auto got = out->readSteps(0, expectedCount, true);
    for (size_t i = 0; i < got.size(); ++i)
        QCOMPARE(stepDiff(got[i], want[i]), QString());

    const RunMeta& m = out->meta();
    QCOMPARE(m.plannedSteps, m_meta.plannedSteps);
    QCOMPARE(m.worldSize, m_meta.worldSize);
    QCOMPARE(m.params.size(), m_meta.params.size());
    QCOMPARE(m.params[3].name, m_meta.params[3].name);
    QCOMPARE(m.createdUtc, m_meta.createdUtc);
    QCOMPARE(m.cards.size(), m_meta.cards.size());
    QVERIFY(out->complete());
    QCOMPARE(out->stopReason(), std::string("completed"));
}

void TestRunSlice::copiesWeightsEvalsEventsDumps() {
    const QString dst = path("filtered.h5");
    sliceRun(*openRunFile(m_src.toStdString()), dst.toStdString(), 95, 150);
    const auto src = openRunFile(m_src.toStdString());
    const RunData in = src->readAll();
    const RunData out = openRunFile(dst.toStdString())->readAll();

    QCOMPARE(out.weights.size(), size_t(6)); // 100, 110, ..., 150
    for (const WeightRecord& w : out.weights) {
        const auto it = std::find_if(in.weights.begin(), in.weights.end(),
                                     [&](const WeightRecord& x) { return x.step == w.step; });
        QVERIFY(it != in.weights.end());
        QCOMPARE(w.fp, it->fp);
        QCOMPARE(w.bufferFp, it->bufferFp);
        QVERIFY(sameBits(w.norm[2], it->norm[2]));
    }
    QCOMPARE(out.weights.front().step, int64_t(100));
    QCOMPARE(out.weights.back().step, int64_t(150));

    QCOMPARE(out.evals.size(), size_t(2)); // 100, 150
    QCOMPARE(out.evals[0].step, int64_t(100));
    QCOMPARE(out.evals[1].step, int64_t(150));
    QVERIFY(sameBits(out.evals[1].loss, in.evals[3].loss));

    std::vector<int64_t> eventSteps;
    for (const Event& e : out.events)
        eventSteps.push_back(e.step);
    std::vector<int64_t> expected;
    for (int64_t s = 96; s <= 150; s += 3)
        expected.push_back(s);
    QCOMPARE(eventSteps, expected);
    QCOMPARE(out.events.front().message, in.events[32].message);
    QCOMPARE(out.events.front().code, in.events[32].code);
    QCOMPARE(int(out.events.front().severity), int(in.events[32].severity));
    QCOMPARE(out.events.front().rank, in.events[32].rank);

    QCOMPARE(out.flightDumps.size(), size_t(1)); // 120 in, 30 out
    const FlightDump& d = out.flightDumps[0];
    QCOMPARE(d.triggerStep, int64_t(120));
    QCOMPARE(d.reason, in.flightDumps[1].reason);
    QCOMPARE(d.entries.size(), size_t(4));
    for (size_t i = 0; i < d.entries.size(); ++i) {
        QCOMPARE(d.entries[i].step, in.flightDumps[1].entries[i].step);
        QCOMPARE(d.entries[i].rank, in.flightDumps[1].entries[i].rank);
        QCOMPARE(d.entries[i].kind, in.flightDumps[1].entries[i].kind);
        QVERIFY(sameBits(d.entries[i].data, in.flightDumps[1].entries[i].data));
    }
}

void TestRunSlice::emptyWindow() {
    const QString dst = path("empty.h5");
    sliceRun(*openRunFile(m_src.toStdString()), dst.toStdString(), 5000, 6000);
    const RunData out = openRunFile(dst.toStdString())->readAll();
    QCOMPARE(out.steps.size(), size_t(0));
    QCOMPARE(out.weights.size(), size_t(0));
    QCOMPARE(out.events.size(), size_t(0));
    QVERIFY(out.complete);
    QCOMPARE(out.meta.params.size(), m_meta.params.size());
}

// A writer destroyed without close() leaves "aborted: ..."; the slice itself is closed and says so.
void TestRunSlice::incompleteSource() {
    const QString src = path("killed.h5");
    {
        auto w = RunWriter::create(src.toStdString(), m_meta);
        for (int s = 0; s < 20; ++s)
            w->appendStep(makeStep(m_meta, s));
    }
    const std::string srcReason = openRunFile(src.toStdString())->stopReason();
    QVERIFY(srcReason.rfind("aborted", 0) == 0);
    const QString dst = path("killed-slice.h5");
    sliceRun(*openRunFile(src.toStdString()), dst.toStdString(), 5, 9);
    const auto out = openRunFile(dst.toStdString());
    QVERIFY(out->complete());
    QCOMPARE(out->stopReason(), "incomplete: " + srcReason);
    QCOMPARE(out->stepCount(), int64_t(5));
}

void TestRunSlice::refusesOverwrite() {
    const QString dst = path("existing.h5");
    sliceRun(*openRunFile(m_src.toStdString()), dst.toStdString(), 10, 19);
    const QString error =
        errorOf([&] { sliceRun(*openRunFile(m_src.toStdString()), dst.toStdString(), 30, 69); });
    QVERIFY2(error.contains("exists"), qPrintable(error));
    QCOMPARE(openRunFile(dst.toStdString())->stepCount(), int64_t(10)); // untouched

    sliceRun(*openRunFile(m_src.toStdString()), dst.toStdString(), 30, 69, true);
    const auto out = openRunFile(dst.toStdString());
    QCOMPARE(out->stepCount(), int64_t(40));
    QCOMPARE(out->readStepNumbers(0, 1).front(), int64_t(30));
}

void TestRunSlice::refusesBadArguments() {
    const std::string src = m_src.toStdString();
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             sliceRun(*openRunFile(src), path("bad.h5").toStdString(), 20, 10));
    QVERIFY(!std::filesystem::exists(path("bad.h5").toStdString()));
    // Slicing onto the source (even with overwrite) would truncate what is being read.
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, sliceRun(*openRunFile(src), src, 0, 10, true));
    QCOMPARE(openRunFile(src)->stepCount(), int64_t(kSteps));
    QVERIFY(!errorOf([&] {
                 sliceRun(*openRunFile(path("missing.h5").toStdString()), path("x.h5").toStdString(), 0, 1);
             }).isEmpty());
    QVERIFY(!std::filesystem::exists(path("x.h5").toStdString()));
}

// The fixture's first event (step 0) is a GRADIENT_SYNC of severity Info: the code alone makes it an anomaly.
void TestRunSlice::anomalyWindowOfFixture() {
    const auto src = openRunFile(m_src.toStdString());
    const int64_t anomaly = rs::firstAnomalyStep(src->readEvents());
    QCOMPARE(anomaly, int64_t(0));
    const auto [first, last] = rs::sliceWindow(anomaly, 0, kSteps - 1);
    QCOMPARE(first, int64_t(0));
    QCOMPARE(last, int64_t(50));
}

void TestRunSlice::firstAnomalyStep_data() {
    QTest::addColumn<std::vector<Event>>("events");
    QTest::addColumn<qint64>("expected");
    using S = Severity;
    QTest::addRow("none") << std::vector<Event>{} << qint64(-1);
    QTest::addRow("only info") << std::vector<Event>{anomalyEvent(3, S::Info, "OVERFLOW"),
                                                     anomalyEvent(9, S::Info, "FLIGHT_RECORDER")}
                               << qint64(-1);
    QTest::addRow("warning") << std::vector<Event>{anomalyEvent(3, S::Info, "OVERFLOW"),
                                                   anomalyEvent(9, S::Warning, "X")}
                             << qint64(9);
    QTest::addRow("error of any code")
        << std::vector<Event>{anomalyEvent(4, S::Error, "CARD_FAILED")} << qint64(4);
    for (const char* code :
         {"GRADIENT_SYNC", "WEIGHT_SYNC", "SKIP_MISMATCH", "NONFINITE_LOSS", "LOSS_FLUCTUATION", "TIMEOUT"})
        QTest::addRow("info %s", code)
            << std::vector<Event>{anomalyEvent(1, S::Info, "OVERFLOW"), anomalyEvent(12, S::Info, code)}
            << qint64(12);
    QTest::addRow("smallest step, not first row")
        << std::vector<Event>{anomalyEvent(40, S::Error, "GRADIENT_SYNC"),
                              anomalyEvent(25, S::Warning, "LOSS_FLUCTUATION")}
        << qint64(25);
    QTest::addRow("code is case sensitive")
        << std::vector<Event>{anomalyEvent(2, S::Info, "timeout")} << qint64(-1);
}

void TestRunSlice::firstAnomalyStep() {
    QFETCH(std::vector<Event>, events);
    QFETCH(qint64, expected);
    QCOMPARE(rs::firstAnomalyStep(events), int64_t(expected));
}

void TestRunSlice::sliceWindow_data() {
    QTest::addColumn<qint64>("anomaly");
    QTest::addColumn<qint64>("first");
    QTest::addColumn<qint64>("last");
    QTest::addColumn<qint64>("half");
    QTest::addColumn<qint64>("lo");
    QTest::addColumn<qint64>("hi");
    const qint64 big = std::numeric_limits<qint64>::max();
    QTest::addRow("no anomaly: whole run")
        << qint64(-1) << qint64(0) << qint64(599) << qint64(50) << qint64(0) << qint64(599);
    QTest::addRow("middle") << qint64(300) << qint64(0) << qint64(599) << qint64(50) << qint64(250)
                            << qint64(350);
    QTest::addRow("near start") << qint64(10) << qint64(0) << qint64(599) << qint64(50) << qint64(0)
                                << qint64(60);
    QTest::addRow("near end") << qint64(580) << qint64(0) << qint64(599) << qint64(50) << qint64(530)
                              << qint64(599);
    QTest::addRow("run shorter than window")
        << qint64(5) << qint64(0) << qint64(8) << qint64(50) << qint64(0) << qint64(8);
    QTest::addRow("run starts late") << qint64(120) << qint64(100) << qint64(900) << qint64(50) << qint64(100)
                                     << qint64(170);
    QTest::addRow("anomaly after the run")
        << qint64(1000) << qint64(0) << qint64(599) << qint64(50) << qint64(599) << qint64(599);
    QTest::addRow("zero width") << qint64(300) << qint64(0) << qint64(599) << qint64(0) << qint64(300)
                                << qint64(300);
    QTest::addRow("negative width") << qint64(300) << qint64(0) << qint64(599) << qint64(-5) << qint64(300)
                                    << qint64(300);
    QTest::addRow("huge width") << qint64(300) << qint64(0) << qint64(599) << big << qint64(0) << qint64(599);
    QTest::addRow("empty run") << qint64(3) << qint64(0) << qint64(-1) << qint64(50) << qint64(0)
                               << qint64(-1);
    // Step numbers from a damaged file (found by fuzz_runfile): no overflow, a window inside the run.
    const qint64 least = std::numeric_limits<qint64>::min();
    QTest::addRow("first step at INT64_MIN")
        << qint64(2) << least << qint64(599) << qint64(1) << qint64(1) << qint64(3);
    QTest::addRow("steps span int64") << qint64(2) << least << big << big << least + 3 << big;
    QTest::addRow("anomaly near INT64_MAX") << big - 1 << qint64(0) << big << qint64(50) << big - 51 << big;
}

void TestRunSlice::sliceWindow() {
    QFETCH(qint64, anomaly);
    QFETCH(qint64, first);
    QFETCH(qint64, last);
    QFETCH(qint64, half);
    QFETCH(qint64, lo);
    QFETCH(qint64, hi);
    const auto window = rs::sliceWindow(anomaly, first, last, half);
    QCOMPARE(window.first, int64_t(lo));
    QCOMPARE(window.second, int64_t(hi));
}

QTEST_GUILESS_MAIN(TestRunSlice)
#include "tst_runslice.moc"
