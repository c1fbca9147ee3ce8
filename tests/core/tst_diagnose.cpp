// Diagnosis: every rule on hand-built runs (the symptom present -> that cause on top with its first step and
// ranks; absent -> nothing), clean real runs of the trainer (no findings), and `ranksight-cli diagnose`'s
// exit codes and JSON.
#include "RunFileFixtures.h"
#include "diagnose/Advice.h"
#include "diagnose/Diagnoser.h"
#include "store/RunReader.h"
#include "store/RunWriter.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

using namespace rs;
using runfile_fixtures::h;

namespace {

// A healthy run, built by hand: every rank reads its own rank-strided shard, local gradients differ by rank
// (different batches) but synced gradients are the mean and bitwise alike, BatchNorm statistics move on
// every rank, dynamic loss scaling overflows on the first steps on every rank together.
struct Sim {
    RunMeta meta;
    int R, P, K, B;
    std::vector<StepRecord> steps;
    std::vector<WeightRecord> weights;
    std::vector<Event> events;

    Sim(int ranks, int params, int64_t n, bool warmup = true)
        : R(ranks)
        , P(params)
        , K(8)
        , B(8) {
        meta = runfile_fixtures::makeMeta(R, P, K, B);
        meta.plannedSteps = n;
        for (int64_t s = 0; s < n; ++s)
            steps.push_back(step(s, warmup));
        for (int64_t s = 0; s <= n; s += 10)
            weights.push_back(weightRow(s));
    }

    static double unit(int64_t s, int64_t r, int64_t p, int field) { // uniform in [-1, 1)
        return double(h(s, r, p, field) % 2000001) / 1000000.0 - 1.0;
    }

    StepRecord step(int64_t s, bool warmup) const {
        StepRecord st;
        st.step = s;
        st.epoch = 0;
        st.lr = 0.1f;
        const bool overflow = warmup && s < 8; // 2^24 halving down to 2^16
        const float scale = std::ldexp(1.0f, warmup ? std::max(16, 24 - int(s)) : 16);
        std::vector<double> meanSum(size_t(P), 0);
        for (int r = 0; r < R; ++r) {
            RankStep x;
            x.loss = float(2.0 - 0.01 * double(s) + 0.1 * unit(s, r, -1, 1));
            x.accuracy = 0.5f;
            x.lossScale = scale;
            x.overflow = overflow;
            x.skipped = overflow;
            x.computeMs = float(100 + 20 * unit(s, r, -1, 2));
            x.commMs = float(20 + 5 * unit(s, r, -1, 3));
            x.stepMs = x.computeMs + x.commMs;
            for (int b = 0; b < B; ++b)
                x.sampleIds.push_back(int32_t((s * R * B + b * R + r) % 50000));
            x.sampleFp = runfile_fixtures::mix(uint64_t(x.sampleIds[0]) * 7919 + 1);
            x.bufferFp = h(s, r, -1, 23) | 1; // BatchNorm statistics move every step, on every rank
            for (int p = 0; p < P; ++p) {
                x.localNorm.push_back(float(1.0 + 0.2 * unit(s, r, p, 4)));
                x.localMax.push_back(float(0.1 + 0.02 * unit(s, r, p, 5)));
                x.localSum.push_back(0.5 + 0.2 * unit(s, r, p, 6));
                x.nonfinite.push_back(overflow ? 3 : 0);
                x.overflowCount.push_back(overflow ? 3 : 0);
                x.underflowCount.push_back(0);
                for (int k = 0; k < K; ++k)
                    x.sketch.push_back(float(unit(s, r, p * 100 + k, 7)));
                meanSum[size_t(p)] += x.localSum.back() / R;
            }
            st.ranks.push_back(std::move(x));
        }
        for (auto& x : st.ranks)
            for (int p = 0; p < P; ++p) {
                x.syncedNorm.push_back(0.8f);
                x.syncedSum.push_back(meanSum[size_t(p)]);
                x.syncedFp.push_back(h(s, 99, p, 8) | 1);
            }
        return st;
    }

    WeightRecord weightRow(int64_t s) const {
        WeightRecord w;
        w.step = s;
        for (int r = 0; r < R; ++r) {
            std::vector<uint64_t> fp;
            for (int p = 0; p < P; ++p)
                fp.push_back(h(s, 77, p, 9) | 1);
            w.fp.push_back(fp);
            w.norm.push_back(std::vector<float>(size_t(P), 1.0f));
            w.bufferFp.push_back(h(s, r, -1, 10) | 1); // statistics move on every rank, differently
            w.bufferDrift.push_back(r ? 0.02f : 0.0f);
        }
        return w;
    }

    std::vector<Finding> diagnose(int chunk = 7) const {
        Diagnoser d(meta);
        d.addWeights(weights);
        d.addEvents(events);
        for (size_t b = 0; b < steps.size(); b += size_t(chunk)) // chunked, as a live file arrives
            d.addSteps(
                {steps.begin() + long(b), steps.begin() + long(std::min(steps.size(), b + size_t(chunk)))});
        d.setStatus(true, "completed");
        return d.findings();
    }
};

QString describe(const std::vector<Finding>& f) {
    QStringList out;
    for (const auto& x : f)
        out << QString::fromStdString(findingLine(x));
    return out.join(QStringLiteral("\n"));
}

std::vector<int> ints(std::initializer_list<int> v) {
    return v;
}

} // namespace

class TestDiagnose : public QObject {
    Q_OBJECT

private slots:
    void followingAGrowingFileEqualsReadingItWhole();
    void cleanSynthetic_data();
    void cleanSynthetic();
    void rule_data();
    void rule();
    void twoRankSdcAfterUsesSumCheck();
    void chunkingDoesNotMatter();
    void checksNotRunNameWhatIsMissing();
    void withoutFingerprintsRanksCompareOnSyncedNorms();
    void withoutSampleIdsBatchesCompareOnLocalGradients();
    void absentColumnsGiveNoFindingFromTheirFill();
    void jsonKeys();
    void cleanRealRuns();
    void cliExitCodes();
    void configAdviceIsNotAFinding();
    void nanReplicaIsNotInEvalMode();

private:
    QString trainRun(const QStringList& args, const QString& name);
    QTemporaryDir m_dir;
    QString m_cleanFile;
};

void TestDiagnose::cleanSynthetic_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<bool>("warmup");
    QTest::addRow("2 ranks") << 2 << false;
    QTest::addRow("4 ranks, dynamic loss scale warm-up") << 4 << true;
    QTest::addRow("8 ranks, dynamic loss scale warm-up") << 8 << true;
}

void TestDiagnose::cleanSynthetic() {
    QFETCH(int, ranks);
    QFETCH(bool, warmup);
    Sim sim(ranks, 6, 60, warmup);
    // Healthy extras: a later overflow every rank skips together.
    for (auto& x : sim.steps[40].ranks)
        x.overflow = x.skipped = 1;
    const auto f = sim.diagnose();
    QVERIFY2(f.empty(), qPrintable(describe(f)));
}

// Each row edits a healthy run to show one fault's symptom.
using Edit = std::function<void(Sim&)>;
Q_DECLARE_METATYPE(Edit)

void TestDiagnose::rule_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<Edit>("edit");
    QTest::addColumn<QString>("cause");
    QTest::addColumn<qint64>("firstStep");
    QTest::addColumn<std::vector<int>>("expectRanks");

    QTest::addRow("rank-table-invalid") << 4 << Edit([](Sim& s) {
        s.steps.clear();
        s.weights.clear();
        s.events.push_back({0, -1, Severity::Error, "RANK_TABLE",
                            "rank table: server_list[0].device[2].rank_id '1' is used twice"});
    }) << "rank-table-invalid" << qint64(-1)
                                        << ints({});
    QTest::addRow("rank-exit") << 4 << Edit([](Sim& s) {
        s.steps.resize(30);
        s.weights.resize(3);
        s.events.push_back({30, 2, Severity::Error, "CARD_FAILED", "Rank 2 failed at step 30: device lost"});
        for (int r : {0, 1, 3})
            s.events.push_back(
                {30, r, Severity::Error, "TIMEOUT",
                 "Rank " + std::to_string(r) +
                     ": HCCL AllReduce timed out after 2000 ms waiting for rank(s) 2 (call #91)"});
    }) << "rank-exit" << qint64(30)
                               << ints({2});
    QTest::addRow("shard-uneven, the rank left without failing") << 4 << Edit([](Sim& s) {
        s.steps.resize(33);
        s.events.push_back(
            {33, 0, Severity::Error, "TIMEOUT",
             "Rank 0: HCCL AllGather timed out after 2000 ms waiting for rank(s) 3 (call #99)"});
    }) << "shard-uneven" << qint64(33) << ints({3});
    QTest::addRow("shard-uneven") << 4 << Edit([](Sim& s) {
        s.steps.resize(30);
        for (auto& st : s.steps)
            st.epoch = st.step / 10;
        s.events.push_back(
            {30, 0, Severity::Error, "TIMEOUT",
             "Rank 0: HCCL AllReduce timed out after 2000 ms waiting for rank(s) 1 (call #91)"});
    }) << "shard-uneven" << qint64(30)
                                  << ints({1});
    QTest::addRow("init-mismatch") << 4 << Edit([](Sim& s) {
        for (size_t i = 0; i < s.weights.size(); ++i)
            for (int r = 1; r < s.R; ++r)
                for (auto& fp : s.weights[i].fp[size_t(r)])
                    fp ^= uint64_t(r) << 8;
    }) << "init-mismatch" << qint64(0)
                                   << ints({0, 1, 2, 3});
    QTest::addRow("shard-overlap") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (auto& x : st.ranks) {
                x.sampleIds = st.ranks[0].sampleIds;
                x.sampleFp = st.ranks[0].sampleFp;
            }
    }) << "shard-overlap" << qint64(0)
                                   << ints({0, 1, 2, 3});
    QTest::addRow("shard-overlap, partial") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (int r = 1; r < s.R; ++r)
                for (int b = 0; b < s.B / 2; ++b)
                    st.ranks[size_t(r)].sampleIds[size_t(b)] = st.ranks[0].sampleIds[size_t(b)];
    }) << "shard-overlap" << qint64(0) << ints({0, 1, 2, 3});
    QTest::addRow("duplicate-rank-id") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps) {
            auto& a = st.ranks[1];
            auto& b = st.ranks[2];
            b.sampleIds = a.sampleIds;
            b.sampleFp = a.sampleFp;
            b.localNorm = a.localNorm;
            b.localMax = a.localMax;
            b.localSum = a.localSum;
            b.sketch = a.sketch;
        }
    }) << "duplicate-rank-id" << qint64(0)
                                       << ints({1, 2});
    QTest::addRow("eval-mode") << 4 << Edit([](Sim& s) {
        for (auto& w : s.weights)
            w.bufferFp[3] = 12345;
        for (auto& st : s.steps) {
            st.ranks[3].bufferFp = 12345;
            for (auto& n : st.ranks[3].localNorm)
                n *= 2;
        }
    }) << "eval-mode" << qint64(0)
                               << ints({3});
    // Per step: dated to the step the statistics stop, not the next weight row.
    QTest::addRow("eval-mode mid-run") << 4 << Edit([](Sim& s) {
        const uint64_t last = s.steps[22].ranks[1].bufferFp; // step 23's forward no longer moves them
        for (auto& st : s.steps)
            if (st.step >= 23)
                st.ranks[1].bufferFp = last;
        for (auto& w : s.weights)
            if (w.step >= 30)
                w.bufferFp[1] = last;
    }) << "eval-mode" << qint64(23) << ints({1});
    // Files without per-step statistics (older files, other sources): over the weight rows.
    QTest::addRow("eval-mode from weight rows") << 4 << Edit([](Sim& s) {
        s.meta.absent = {"/steps/buffer_fp"};
        for (auto& w : s.weights)
            w.bufferFp[3] = 12345;
    }) << "eval-mode" << qint64(0) << ints({3});
    QTest::addRow("loss-scale-too-high") << 4 << Edit([](Sim& s) {
        s.meta.lossScale = "fixed:1e+09";
        for (auto& st : s.steps)
            for (auto& x : st.ranks) {
                x.lossScale = 1e9f;
                x.overflow = x.skipped = st.step % 10 != 9;
            }
    }) << "loss-scale-too-high" << qint64(0)
                                         << ints({0, 1, 2, 3});
    QTest::addRow("no-loss-scale") << 4 << Edit([](Sim& s) {
        s.meta.precision = "O3";
        s.meta.lossScale = "none";
        for (auto& st : s.steps)
            for (auto& x : st.ranks) {
                x.lossScale = 1;
                x.overflow = x.skipped = 0;
                for (size_t p = 0; p < x.underflowCount.size(); ++p)
                    x.underflowCount[p] = uint32_t(s.meta.params[p].numel / 3);
            }
    }) << "no-loss-scale" << qint64(0)
                                   << ints({0, 1, 2, 3});
    // The rank that skipped alone halves its scale alone: its scale is apart from the next step on, which the
    // skip explains (not a scaler that started over).
    QTest::addRow("overflow-not-synced") << 4 << Edit([](Sim& s) {
        for (int64_t t : {15, 31, 44})
            s.steps[size_t(t)].ranks[1].overflow = s.steps[size_t(t)].ranks[1].skipped = 1;
        for (size_t t = 16; t < s.steps.size(); ++t)
            s.steps[t].ranks[1].lossScale /= 2;
        for (size_t i = 2; i < s.weights.size(); ++i)
            s.weights[i].fp[1][0] ^= 1;
    }) << "overflow-not-synced" << qint64(15)
                                         << ints({1});
    // Rank 2's loss-scale manager starts over at step 30 (2^24 against the others' 2^16): every rank divides
    // the same all-reduced sum by its own scale, so its synced fingerprints differ from then on too; that
    // is the scale's doing, not a corrupted copy (no sdc-after).
    QTest::addRow("loss-scale-not-restored") << 4 << Edit([](Sim& s) {
        for (size_t t = 30; t < s.steps.size(); ++t) {
            auto& x = s.steps[t].ranks[2];
            x.lossScale = std::ldexp(1.0f, 24);
            for (auto& fp : x.syncedFp)
                fp ^= 0x5bd1e995;
        }
        for (size_t i = 4; i < s.weights.size(); ++i)
            for (auto& fp : s.weights[i].fp[2])
                fp ^= 1;
    }) << "loss-scale-not-restored" << qint64(30)
                                             << ints({2});
    QTest::addRow("grad-sum") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (auto& x : st.ranks)
                for (auto& v : x.syncedSum)
                    v *= s.R;
    }) << "grad-sum" << qint64(8)
                              << ints({0, 1, 2, 3});
    QTest::addRow("param-not-synced") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (int r = 0; r < s.R; ++r) {
                auto& x = st.ranks[size_t(r)];
                x.syncedFp[3] ^= uint64_t(r + 1) << 20;
                x.syncedSum[3] = x.localSum[3];
            }
    }) << "param-not-synced" << qint64(0)
                                      << ints({0, 1, 2, 3});
    // Left out from step 25 on (a layer unfrozen after the reducer was built): not a one-step corruption.
    QTest::addRow("param-not-synced mid-run") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (int r = 0; r < s.R && st.step >= 25; ++r) {
                auto& x = st.ranks[size_t(r)];
                x.syncedFp[3] ^= uint64_t(r + 1) << 20;
                x.syncedSum[3] = x.localSum[3];
            }
    }) << "param-not-synced" << qint64(25) << ints({0, 1, 2, 3});
    QTest::addRow("sdc-before") << 4 << Edit([](Sim& s) {
        auto& x = s.steps[20].ranks[2];
        x.localMax[0] = 3e30f;
        x.localNorm[0] = 3e30f;
    }) << "sdc-before" << qint64(20)
                                << ints({2});
    QTest::addRow("sdc-after") << 4 << Edit([](Sim& s) {
        auto& x = s.steps[25].ranks[1];
        x.syncedFp[2] ^= 1ull << 40;
        x.syncedSum[2] += 1e20;
        for (size_t i = 3; i < s.weights.size(); ++i)
            for (auto& fp : s.weights[i].fp[1])
                fp ^= 1;
    }) << "sdc-after" << qint64(25)
                               << ints({1});
    // Slow from step 12 on, with a noisy neighbour's marks: one slow spike at step 1, and step 13 not slow.
    // The date is where the streak starts, not the spike nor the step after the gap.
    QTest::addRow("straggler") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (int r = 0; r < s.R; ++r) {
                auto& x = st.ranks[size_t(r)];
                const bool slow = st.step == 1 || (st.step >= 12 && st.step != 13);
                if (r == 3 && slow)
                    x.computeMs *= 5;
                else if (slow)
                    x.commMs += 400;
            }
    }) << "straggler" << qint64(12)
                               << ints({3});
}

void TestDiagnose::rule() {
    QFETCH(int, ranks);
    QFETCH(Edit, edit);
    QFETCH(QString, cause);
    QFETCH(qint64, firstStep);
    QFETCH(std::vector<int>, expectRanks);
    Sim sim(ranks, 6, 60);
    edit(sim);
    const auto f = sim.diagnose();
    QVERIFY2(!f.empty(), "no finding");
    QVERIFY2(f.front().cause == cause.toStdString(), qPrintable(describe(f)));
    QCOMPARE(f.front().firstStep, firstStep);
    QCOMPARE(f.front().ranks, expectRanks);
    QVERIFY(f.front().confidence > 0 && f.front().confidence <= 1);
    QVERIFY(!f.front().evidence.empty());
    QVERIFY(!f.front().fix.empty());
    QVERIFY(!f.front().dimension.empty());
    for (size_t i = 1; i < f.size(); ++i)
        QVERIFY(f[i - 1].confidence >= f[i].confidence);
    if (cause == "param-not-synced")
        QCOMPARE(f.front().parameters, std::vector<std::string>{sim.meta.params[3].name});
    if (cause == "loss-scale-not-restored" || cause == "overflow-not-synced")
        QVERIFY2(f.size() == 1, qPrintable(describe(f))); // the one cause, no second finding beside it
}

// With two ranks no majority says which copy is odd: the synced-sum check does.
void TestDiagnose::twoRankSdcAfterUsesSumCheck() {
    Sim sim(2, 4, 40);
    auto& x = sim.steps[17].ranks[0];
    x.syncedFp[1] ^= 1;
    x.syncedSum[1] *= 1e6;
    const auto f = sim.diagnose();
    QVERIFY2(!f.empty() && f.front().cause == "sdc-after", qPrintable(describe(f)));
    QCOMPARE(f.front().ranks, ints({0}));
    QCOMPARE(f.front().firstStep, int64_t(17));
}

// A live file arrives a few steps at a time; the findings must not depend on how the steps were cut.
void TestDiagnose::chunkingDoesNotMatter() {
    Sim sim(4, 6, 50);
    for (auto& st : sim.steps)
        for (auto& x : st.ranks)
            for (auto& v : x.syncedSum)
                v *= sim.R;
    sim.steps[20].ranks[2].localMax[0] = 1e30f;
    const auto whole = sim.diagnose(1000), single = sim.diagnose(1);
    QVERIFY(!whole.empty());
    QCOMPARE(whole.size(), single.size());
    for (size_t i = 0; i < whole.size(); ++i) {
        QCOMPARE(whole[i].cause, single[i].cause);
        QCOMPARE(whole[i].firstStep, single[i].firstStep);
        QCOMPARE(whole[i].evidence, single[i].evidence);
    }
    QCOMPARE(QString::fromStdString(findingsToJson(whole)), QString::fromStdString(findingsToJson(single)));
}

// What a source did not record: the checks that read it are listed (with the source and the dataset), the
// others are not; one rank lists the cross-rank comparison; the engine's full recording lists nothing.
void TestDiagnose::checksNotRunNameWhatIsMissing() {
    Sim sim(4, 3, 20);
    {
        Diagnoser full(sim.meta);
        full.addWeights(sim.weights);
        QVERIFY(full.checksNotRun().empty()); // everything recorded
    }
    sim.meta.source = "msprobe";
    sim.meta.absent = {"/weights/fp",      "/weights/norm",    "/weights/buffer_fp", "/steps/buffer_fp",
                       "/grads/synced_fp", "/steps/sample_fp", "/steps/compute_ms"};
    Diagnoser d(sim.meta);
    d.addWeights(sim.weights);
    d.addSteps(sim.steps);
    const auto notRun = d.checksNotRun();
    QStringList names;
    for (const auto& c : notRun)
        names << QString::fromStdString(c.check);
    // Synced agreement still runs on the synced norms; shards on the local gradients.
    QCOMPARE(names, QStringList({"weight consistency", "BatchNorm statistics", "step timing"}));
    QCOMPARE(notRun[0].causes, std::vector<std::string>{"init-mismatch"});
    QCOMPARE(notRun[0].reason,
             std::string("the source (msprobe) recorded no weight fingerprints (/weights/fp) or "
                         "weight norms (/weights/norm)"));
    QCOMPARE(notRun[2].causes, std::vector<std::string>{"straggler"});
    QCOMPARE(
        checkNotRunLine(notRun[2]),
        std::string(
            "step timing (straggler): the source (msprobe) recorded no compute time (/steps/compute_ms)"));
    const auto json = QJsonDocument::fromJson(QByteArray::fromStdString(findingsToJson({}, notRun))).object();
    QCOMPARE(json.value("not_run").toArray().size(), 3);
    QCOMPARE(json.value("not_run").toArray().at(1).toObject().value("check").toString(),
             QStringLiteral("BatchNorm statistics"));

    // Both synced columns gone: the agreement check cannot run either.
    sim.meta.absent.push_back("/grads/synced_norm");
    QCOMPARE(Diagnoser(sim.meta).checksNotRun().size(), size_t(4));
    // Synced columns recorded, but only on rank 0 (msprobe with dp_group set): said from the data.
    Sim dp(4, 3, 10);
    dp.meta.absent = {"/grads/synced_fp"};
    for (auto& st : dp.steps)
        for (size_t r = 1; r < st.ranks.size(); ++r)
            std::fill(st.ranks[r].syncedNorm.begin(), st.ranks[r].syncedNorm.end(), std::nanf(""));
    Diagnoser dd(dp.meta);
    dd.addSteps(dp.steps);
    bool said = false;
    for (const auto& c : dd.checksNotRun())
        said = said ||
               (c.check == "synced gradient agreement" && c.reason.find("dp_group") != std::string::npos);
    QVERIFY(said);

    const auto one = Diagnoser(Sim(1, 3, 1).meta).checksNotRun();
    QCOMPARE(one.size(), size_t(1));
    QCOMPARE(one[0].check, std::string("cross-rank comparison"));
    QCOMPARE(one[0].reason, std::string("the run has 1 rank"));
}

// No fingerprints (msprobe): a parameter whose synced norm differs across ranks on every step is still found,
// and the evidence says on what it rests. A clean run compared the same way stays clean.
void TestDiagnose::withoutFingerprintsRanksCompareOnSyncedNorms() {
    Sim clean(4, 6, 40);
    clean.meta.absent = {"/grads/synced_fp"};
    for (auto& st : clean.steps)
        for (auto& x : st.ranks)
            std::fill(x.syncedFp.begin(), x.syncedFp.end(), 0);
    QVERIFY2(clean.diagnose().empty(), qPrintable(describe(clean.diagnose())));

    Sim sim = clean;
    for (auto& st : sim.steps)
        for (int r = 0; r < sim.R; ++r) {
            auto& x = st.ranks[size_t(r)];
            x.syncedNorm[3] = x.localNorm[3]; // never reduced: each rank keeps its own
            x.syncedSum[3] = x.localSum[3];
        }
    const auto f = sim.diagnose();
    QVERIFY2(!f.empty() && f.front().cause == "param-not-synced", qPrintable(describe(f)));
    QCOMPARE(f.front().parameters, std::vector<std::string>{sim.meta.params[3].name});
    QVERIFY2(f.front().evidence.find("records no fingerprints") != std::string::npos,
             f.front().evidence.c_str());
}

// No sample ids (a DDP job that does not pass them): ranks whose local gradients are identical on every
// parameter read the same batches.
void TestDiagnose::withoutSampleIdsBatchesCompareOnLocalGradients() {
    Sim clean(4, 6, 30);
    clean.meta.absent = {"/steps/sample_fp", "/steps/sample_ids"};
    for (auto& st : clean.steps)
        for (auto& x : st.ranks) {
            x.sampleFp = 0;
            x.sampleIds.clear();
        }
    QVERIFY2(clean.diagnose().empty(), qPrintable(describe(clean.diagnose())));
    Sim sim = clean;
    for (auto& st : sim.steps)
        for (auto& x : st.ranks) {
            x.localNorm = st.ranks[0].localNorm;
            x.localMax = st.ranks[0].localMax;
        }
    const auto f = sim.diagnose();
    QVERIFY2(!f.empty() && f.front().cause == "shard-overlap", qPrintable(describe(f)));
    QCOMPARE(f.front().ranks, ints({0, 1, 2, 3}));
    QVERIFY2(f.front().evidence.find("records no sample ids") != std::string::npos,
             f.front().evidence.c_str());
}

// The fill of absent columns (NaN floats, 0 integers) must not look like a symptom.
void TestDiagnose::absentColumnsGiveNoFindingFromTheirFill() {
    Sim sim(4, 6, 40);
    sim.meta.absent = {"/steps/loss_scale", "/steps/compute_ms", "/steps/comm_ms",     "/grads/local_sum",
                       "/grads/synced_sum", "/grads/local_max",  "/weights/buffer_fp", "/weights/fp"};
    const float nan = std::nanf("");
    for (auto& st : sim.steps)
        for (auto& x : st.ranks) {
            x.lossScale = x.computeMs = x.commMs = nan;
            std::fill(x.localSum.begin(), x.localSum.end(), std::nan(""));
            std::fill(x.syncedSum.begin(), x.syncedSum.end(), std::nan(""));
            std::fill(x.localMax.begin(), x.localMax.end(), nan);
        }
    for (auto& w : sim.weights) {
        std::fill(w.bufferFp.begin(), w.bufferFp.end(), 0);
        for (auto& fp : w.fp)
            std::fill(fp.begin(), fp.end(), 0);
    }
    const auto f = sim.diagnose();
    QVERIFY2(f.empty(), qPrintable(describe(f)));
}

void TestDiagnose::jsonKeys() {
    Finding f;
    f.cause = "grad-sum";
    f.dimension = "parallel";
    f.confidence = 0.9;
    f.firstStep = 3;
    f.ranks = {0, 1};
    f.parameters = {"fc.weight"};
    f.evidence = "ratio \"4\"";
    f.fix = "gradients_mean=True";
    const auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(findingsToJson({f})));
    const auto list = doc.object().value("findings").toArray();
    QCOMPARE(list.size(), 1);
    const auto o = list.at(0).toObject();
    for (const char* key :
         {"cause", "dimension", "confidence", "first_step", "ranks", "parameters", "evidence", "fix"})
        QVERIFY2(o.contains(key), key);
    QCOMPARE(o.value("first_step").toInt(), 3);
    QCOMPARE(o.value("ranks").toArray().size(), 2);
    QCOMPARE(o.value("evidence").toString(), QStringLiteral("ratio \"4\""));
    QCOMPARE(QJsonDocument::fromJson(QByteArray::fromStdString(findingsToJson({})))
                 .object()
                 .value("findings")
                 .toArray()
                 .size(),
             0);
}

// A replica gone NaN (an overflow applied on one rank) has NaN BatchNorm statistics, which stand still: that
// is not eval mode (found by tools/fault-sweep: overflow-not-synced at O3 was also named eval-mode).
void TestDiagnose::nanReplicaIsNotInEvalMode() {
    Sim sim(4, 3, 40);
    for (auto& st : sim.steps)
        if (st.step >= 20) {
            st.ranks[2].loss = std::nanf("");
            st.ranks[2].bufferFp = 4242;
        }
    for (const Finding& f : sim.diagnose())
        QVERIFY2(f.cause != "eval-mode", qPrintable(QString::fromStdString(findingLine(f))));
    // The same statistics with a finite loss are eval mode.
    for (auto& st : sim.steps)
        st.ranks[2].loss = 1.5f;
    const auto f = sim.diagnose();
    QVERIFY(std::any_of(f.begin(), f.end(), [](const Finding& x) { return x.cause == "eval-mode"; }));
}

// Advice comes from the configuration; findings from what training did. An O2 MLP without a loss scale
// flushes almost no gradient element (its gradients are large): advice, no finding, exit 0.
void TestDiagnose::configAdviceIsNotAFinding() {
    RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
    meta.precision = "O2";
    meta.lossScale = "none";
    meta.configJson = R"({"gradients_mean": false, "broadcast": false, "weight_every": 100, "telemetry": true,
                          "flight_steps": 4})";
    QStringList keys;
    for (const Advice& a : configAdvice(meta))
        keys << QString::fromStdString(a.key + "=" + a.value);
    QCOMPARE(keys,
             QStringList({"loss_scale=none", "gradients_mean=false", "broadcast=false", "weight_every=100"}));
    meta.lossScale = "dynamic";
    meta.configJson = R"({"gradients_mean": true, "broadcast": true, "weight_every": 10, "telemetry": true,
                          "flight_steps": 4})";
    QVERIFY(configAdvice(meta).empty());
    meta.configJson = "not json"; // a source without a config: only what the metadata says
    meta.precision = "O3";
    meta.lossScale = "fixed:1";
    QCOMPARE(configAdvice(meta).size(), size_t(1));

    const QString path =
        trainRun({"--model", "mlp", "--ranks", "2", "--steps", "12", "--loss-scale", "none"}, "advice.h5");
    QVERIFY(!path.isEmpty());
    QProcess p;
    p.start(RANKSIGHT_CLI, {"diagnose", path, "--json"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const auto doc = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(doc.value("findings").toArray().size(), 0);
    const auto advice = doc.value("advice").toArray();
    QCOMPARE(advice.size(), 1);
    QCOMPARE(advice.at(0).toObject().value("key").toString(), QStringLiteral("loss_scale"));
    QCOMPARE(advice.at(0).toObject().value("value").toString(), QStringLiteral("none"));
    QVERIFY(advice.at(0).toObject().value("advice").toString().contains("flush to zero"));
    p.start(RANKSIGHT_CLI, {"diagnose", path});
    QVERIFY(p.waitForFinished(60000));
    const QString text = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(text.contains("no findings") && text.contains("advice (the configuration, not findings):") &&
                 text.contains("loss_scale=none: O2 computes gradients in fp16"),
             qPrintable(text));
}

QString TestDiagnose::trainRun(const QStringList& args, const QString& name) {
    const QString out = m_dir.filePath(name);
    QProcess p;
    p.start(RANKSIGHT_CLI, QStringList{"train", "--quiet", "--force", "--out", out} + args);
    if (!p.waitForFinished(120000) || p.exitCode() != 0) {
        qWarning() << p.readAllStandardError();
        return {};
    }
    return out;
}

void TestDiagnose::cleanRealRuns() {
    // Short and small, within the suite's budget on 2 cores; they still cover the loss-scale warm-up.
    const QList<QStringList> runs = {
        {"--model", "mlp", "--ranks", "2", "--precision", "O0", "--seed", "1", "--steps", "40", "--batch",
         "8"},
        {"--model", "smallcnn", "--ranks", "4", "--precision", "O2", "--loss-scale", "dynamic", "--seed", "2",
         "--steps", "40", "--batch", "4"},
        {"--model", "smallcnn", "--ranks", "2", "--precision", "O3", "--loss-scale", "dynamic", "--seed", "3",
         "--steps", "40", "--batch", "8"},
        {"--model", "mlp", "--ranks", "4", "--precision", "O2", "--loss-scale", "dynamic", "--seed", "4",
         "--steps", "60", "--batch", "4"},
    };
    int i = 0;
    for (const auto& args : runs) {
        const QString path = trainRun(args, QStringLiteral("clean%1.h5").arg(i++));
        QVERIFY2(!path.isEmpty(), qPrintable(args.join(' ')));
        const auto reader = RunReader::open(path.toStdString());
        int last = -1;
        bool monotonic = true;
        const auto f = diagnoseRun(*reader, [&](int p) {
            monotonic = monotonic && p >= last;
            last = p;
        });
        QVERIFY2(f.empty(), qPrintable(args.join(' ') + "\n" + describe(f)));
        QVERIFY(monotonic);
        QCOMPARE(last, 100);
        m_cleanFile = path;
    }
}

void TestDiagnose::cliExitCodes() {
    auto run = [](const QStringList& args, QByteArray* out = nullptr, QByteArray* err = nullptr) {
        QProcess p;
        p.start(RANKSIGHT_CLI, QStringList{"diagnose"} + args);
        p.waitForFinished(60000);
        if (out)
            *out = p.readAllStandardOutput();
        if (err)
            *err = p.readAllStandardError();
        return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    };
    // Clean: 0 and an empty list.
    if (m_cleanFile.isEmpty())
        m_cleanFile =
            trainRun({"--model", "mlp", "--ranks", "2", "--steps", "12", "--batch", "4"}, "cli-clean.h5");
    QByteArray out, err;
    QCOMPARE(run({m_cleanFile, "--json"}, &out), 0);
    QCOMPARE(QJsonDocument::fromJson(out).object().value("findings").toArray().size(), 0);
    QCOMPARE(run({m_cleanFile}), 0);

    // Findings: 3, and every key in the JSON.
    Sim sim(4, 6, 30);
    for (auto& st : sim.steps)
        for (auto& x : st.ranks)
            for (auto& v : x.syncedSum)
                v *= sim.R;
    const QString bad = m_dir.filePath("gradsum.h5");
    {
        auto w = RunWriter::create(bad.toStdString(), sim.meta, true);
        for (const auto& st : sim.steps)
            w->appendStep(st);
        for (const auto& wr : sim.weights)
            w->appendWeights(wr);
        w->close("completed");
    }
    QCOMPARE(run({bad, "--json"}, &out), 3);
    const auto list = QJsonDocument::fromJson(out).object().value("findings").toArray();
    QVERIFY(!list.isEmpty());
    const auto o = list.at(0).toObject();
    QCOMPARE(o.value("cause").toString(), QStringLiteral("grad-sum"));
    for (const char* key :
         {"cause", "dimension", "confidence", "first_step", "ranks", "parameters", "evidence", "fix"})
        QVERIFY2(o.contains(key), key);
    QCOMPARE(run({bad}, &out), 3);
    QVERIFY(out.contains("grad-sum"));
    QVERIFY(out.contains("fix:"));

    // Unreadable: 2 and the reader's message.
    const QString junk = m_dir.filePath("junk.h5");
    QFile f(junk);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not an hdf5 file at all");
    f.close();
    QCOMPARE(run({junk}, nullptr, &err), 2);
    QVERIFY2(err.startsWith("ranksight-cli: diagnose:"), err.constData());
    QCOMPARE(run({m_dir.filePath("missing.h5")}, nullptr, &err), 2);
    QCOMPARE(run({}, nullptr, &err), 2);
}

// A live run diagnosed pass by pass, each reading only the rows added since the last, ends with the same
// findings as one pass over the finished file (what the window's diagnosis runner relies on).
void TestDiagnose::followingAGrowingFileEqualsReadingItWhole() {
    using namespace runfile_fixtures;
    QTemporaryDir dir;
    const QString path = dir.filePath("growing.h5");
    const RunMeta meta = makeMeta(4, 6, 8, 4);
    auto writer = RunWriter::create(path.toStdString(), meta, true);
    auto append = [&](int64_t from, int64_t to) {
        for (int64_t s = from; s < to; ++s) {
            writer->appendStep(makeStep(meta, s));
            if (s % 10 == 0)
                writer->appendWeights(makeWeights(meta, s));
            if (s % 7 == 0)
                writer->appendEvent(makeEvent(s));
            if (s % 25 == 0)
                writer->appendEval(makeEval(meta, s));
        }
    };
    append(0, 40);
    const auto live = RunReader::open(path.toStdString());
    Diagnoser d(live->meta());
    DiagnosisCursor at;
    diagnoseMore(*live, d, at);
    QCOMPARE(at.steps, int64_t(40));
    append(40, 300);
    writer->close("completed");
    QVERIFY(live->refresh());
    int lastPercent = -1;
    diagnoseMore(*live, d, at, [&](int p) { lastPercent = p; });
    QCOMPARE(lastPercent, 100);
    QCOMPARE(at.steps, int64_t(300));
    QCOMPARE(at.weights, int64_t(30));
    QCOMPARE(at.evals, int64_t(12));
    const auto whole = diagnoseRun(*RunReader::open(path.toStdString()));
    const auto followed = d.findings();
    QVERIFY2(!whole.empty(), "the fixture's data should give findings to compare");
    QCOMPARE(followed.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
        QCOMPARE(followed[i].cause, whole[i].cause);
        QCOMPARE(followed[i].ranks, whole[i].ranks);
        QCOMPARE(followed[i].firstStep, whole[i].firstStep);
        QCOMPARE(followed[i].evidence, whole[i].evidence);
    }
}

QTEST_GUILESS_MAIN(TestDiagnose)
#include "tst_diagnose.moc"
