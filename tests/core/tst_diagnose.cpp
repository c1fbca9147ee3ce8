// Diagnosis rules on hand-built runs (DiagnoseSim.h): the symptom present -> that cause on top with its first
// step and ranks; absent -> nothing; and what the diagnosis says when columns are missing. The straggler's
// timing rules are tst_straggler; real runs of the trainer and `ranksight-cli diagnose` are
// tst_diagnose_runs.
#include "DiagnoseSim.h"
#include "diagnose/Advice.h"
#include "diagnose/Cause.h"
#include "diagnose/Check.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/BatchPairs.h"
#include "diagnose/tally/RankDepartures.h"
#include "faults/FaultSpec.h"
#include "util/ConfigError.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <algorithm>
#include <iterator>
#include <set>

using namespace rs;
using namespace diagnose_sim;
using runfile_fixtures::h;

class TestDiagnose : public QObject {
    Q_OBJECT

private slots:
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
    void nanReplicaIsNotInEvalMode();
    void roundingRatioIsNoSdc();
    void batchPairsTallyEveryPairAsAPairwiseScanWould();
    void causeTable();
    void timeoutRanksFromMessage();
    void timeoutPeersAreData();
    void timeoutPeersOfOlderFiles();
};

// A DDP job's bias feeding BatchNorm has a gradient that is zero up to rounding: 9.7e-9 on one rank against
// 8.6e-12 and 0 is a 1e3x ratio of roundings, not a corrupted value, while every other parameter's max |g| is
// ~0.1. The same ratio on a value that matters is sdc-before.
void TestDiagnose::roundingRatioIsNoSdc() {
    auto tinyBias = [](float outlier) {
        Sim sim(4, 6, 60, false);
        for (auto& st : sim.steps)
            for (int r = 0; r < sim.R; ++r)
                st.ranks[size_t(r)].localMax[1] = r == 0 ? 8.6e-12f : 0.f;
        sim.steps[23].ranks[3].localMax[1] = outlier;
        return sim.diagnose();
    };
    const auto rounding = tinyBias(9.7e-9f);
    QVERIFY2(rounding.empty(), qPrintable(describe(rounding)));
    const auto material = tinyBias(0.05f); // 5.8e9x the others and half the step's scale
    QVERIFY2(!material.empty() && material.front().key() == "sdc-before", qPrintable(describe(material)));
    QCOMPARE(material.front().firstStep, int64_t(23));
    QCOMPARE(material.front().ranks, std::vector<int>{3});
}

// BatchPairs visits only the pairs with equal batch keys or a shared id; its tallies must be those of
// comparing every pair: identical batches, partly shared ids, ranks without ids, ids a rank lists twice.
void TestDiagnose::batchPairsTallyEveryPairAsAPairwiseScanWould() {
    Sim sim(12, 3, 40, false);
    for (auto& st : sim.steps)
        for (int r = 0; r < sim.R; ++r) {
            RankStep& x = st.ranks[size_t(r)];
            const uint64_t mode = h(st.step, r, -1, 41) % 7;
            if (mode == 0 && r > 0) { // the previous rank's batch, exactly
                x.sampleIds = st.ranks[size_t(r - 1)].sampleIds;
                x.sampleFp = st.ranks[size_t(r - 1)].sampleFp;
            } else if (mode == 1) { // nothing recorded
                std::fill(x.sampleIds.begin(), x.sampleIds.end(), -1);
            } else if (mode == 2) { // ids from a small pool: shared with some ranks, one maybe twice
                for (auto& id : x.sampleIds)
                    id = int32_t(h(st.step, r, int64_t(&id - x.sampleIds.data()), 42) % 20);
            } else if (mode == 3 && r > 0) { // the same key as the previous rank, other ids
                x.sampleFp = st.ranks[size_t(r - 1)].sampleFp;
            } else if (mode == 4 && r > 0) { // the same key as the previous rank, and neither has ids
                RankStep& prev = st.ranks[size_t(r - 1)];
                std::fill(prev.sampleIds.begin(), prev.sampleIds.end(), -1);
                x.sampleIds = prev.sampleIds;
                x.sampleFp = prev.sampleFp;
            }
        }
    const RunFacts facts(sim.meta);
    BatchPairs tally(facts);
    const size_t pairs = size_t(sim.R) * size_t(sim.R);
    std::vector<int64_t> identical(pairs, 0), overlapping(pairs, 0), first(pairs, kNoStep);
    std::vector<double> overlapSum(pairs, 0);
    for (const auto& st : sim.steps) {
        tally.addStep(st, RunExtent{});
        for (int i = 0; i < sim.R; ++i)
            for (int j = i + 1; j < sim.R; ++j) {
                const RankStep &a = st.ranks[size_t(i)], &b = st.ranks[size_t(j)];
                const size_t k = size_t(i) * size_t(sim.R) + size_t(j);
                const bool same = a.sampleFp != 0 && a.sampleFp == b.sampleFp && a.sampleIds == b.sampleIds;
                if (same) {
                    ++identical[k];
                    first[k] = std::min(first[k], st.step);
                }
                std::set<int32_t> ia, ib;
                for (int32_t id : a.sampleIds)
                    if (id >= 0)
                        ia.insert(id);
                for (int32_t id : b.sampleIds)
                    if (id >= 0)
                        ib.insert(id);
                // The share of the smaller batch's ids the other holds too; identical batches without ids
                // share everything; otherwise a rank without ids shares nothing to count.
                std::vector<int32_t> both;
                std::set_intersection(ia.begin(), ia.end(), ib.begin(), ib.end(), std::back_inserter(both));
                const size_t smaller = std::min(ia.size(), ib.size());
                const double share = smaller > 0 ? double(both.size()) / double(smaller) : same ? 1.0 : -1.0;
                if (share >= 0) {
                    overlapSum[k] += share;
                    overlapping[k] += share >= 0.25 ? 1 : 0;
                }
            }
    }
    QCOMPARE(tally.steps, int64_t(sim.steps.size()));
    QVERIFY(std::count_if(identical.begin(), identical.end(), [](int64_t n) { return n > 0; }) > 3);
    QVERIFY(std::count_if(overlapSum.begin(), overlapSum.end(), [](double x) { return x > 0 && x < 40; }) >
            3);
    QCOMPARE(tally.identical, identical);
    QCOMPARE(tally.overlapping, overlapping);
    QCOMPARE(tally.firstIdentical, first);
    QCOMPARE(tally.overlapSum, overlapSum);
}

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
                     ": HCCL AllReduce timed out after 2000 ms waiting for rank(s) 2 (call #91)",
                 2});
    }) << "rank-exit" << qint64(30)
                               << ints({2});
    QTest::addRow("shard-uneven, the rank left without failing") << 4 << Edit([](Sim& s) {
        s.steps.resize(33);
        s.events.push_back({33, 0, Severity::Error, "TIMEOUT",
                            "Rank 0: HCCL AllGather timed out after 2000 ms waiting for rank(s) 3 (call #99)",
                            3});
    }) << "shard-uneven" << qint64(33) << ints({3});
    QTest::addRow("shard-uneven") << 4 << Edit([](Sim& s) {
        s.steps.resize(30);
        for (auto& st : s.steps)
            st.epoch = st.step / 10;
        s.events.push_back({30, 0, Severity::Error, "TIMEOUT",
                            "Rank 0: HCCL AllReduce timed out after 2000 ms waiting for rank(s) 1 (call #91)",
                            1});
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
    // Rank 2 runs its own learning rate from step 15 on: its weights part at the next weight row (step 20)
    // while every synced gradient still agrees, and the first row agreed (no init-mismatch).
    QTest::addRow("optimizer-mismatch") << 4 << Edit([](Sim& s) {
        for (size_t i = 2; i < s.weights.size(); ++i)
            for (auto& fp : s.weights[i].fp[2])
                fp ^= 0x9e3779b97f4a7c15ull;
    }) << "optimizer-mismatch" << qint64(20)
                                        << ints({2});
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
    // Turned slow late (step 44 of 60: a third of the run) and stayed slow: named from where it began.
    QTest::addRow("late straggler") << 4 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (int r = 0; r < s.R; ++r) {
                auto& x = st.ranks[size_t(r)];
                if (r == 1 && st.step >= 44)
                    x.computeMs *= 8;
                else if (st.step >= 44)
                    x.commMs += 800;
            }
    }) << "straggler" << qint64(44) << ints({1});
    // 16 emulated cards on 2 cores: every card waits ~600 ms per collective for the CPU, and the others
    // wait 200 ms more for rank 5. Its comm time is not much below theirs, but they wait for it.
    QTest::addRow("straggler among cards sharing cores") << 16 << Edit([](Sim& s) {
        for (auto& st : s.steps)
            for (int r = 0; r < s.R; ++r) {
                auto& x = st.ranks[size_t(r)];
                x.commMs += 600;
                if (r == 5)
                    x.computeMs *= 3;
                else
                    x.commMs += 200;
            }
    }) << "straggler" << qint64(0) << ints({5});
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
    QVERIFY2(f.front().key() == cause.toStdString(), qPrintable(describe(f)));
    QCOMPARE(f.front().firstStep, firstStep);
    QCOMPARE(f.front().ranks, expectRanks);
    QVERIFY(f.front().confidence > 0 && f.front().confidence <= 1);
    QVERIFY(!f.front().evidence.empty());
    QVERIFY(!f.front().fix.empty());
    QVERIFY(!f.front().dimension().empty());
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
    QVERIFY2(!f.empty() && f.front().key() == "sdc-after", qPrintable(describe(f)));
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
        QCOMPARE(whole[i].key(), single[i].key());
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
    QCOMPARE(notRun[0].causes, (std::vector<std::string>{"init-mismatch", "optimizer-mismatch"}));
    QCOMPARE(notRun[0].reason,
             std::string("the source (msprobe) recorded no weight fingerprints or weight norms"));
    QCOMPARE(notRun[2].causes, std::vector<std::string>{"straggler"});
    QCOMPARE(checkNotRunLine(notRun[2]),
             std::string("step timing (straggler): the source (msprobe) recorded no compute time"));
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
    QVERIFY2(!f.empty() && f.front().key() == "param-not-synced", qPrintable(describe(f)));
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
    QVERIFY2(!f.empty() && f.front().key() == "shard-overlap", qPrintable(describe(f)));
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
    f.cause = findCause("grad-sum")->id;
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
        QVERIFY2(f.key() != "eval-mode", qPrintable(QString::fromStdString(findingLine(f))));
    // The same statistics with a finite loss are eval mode.
    for (auto& st : sim.steps)
        st.ranks[2].loss = 1.5f;
    const auto f = sim.diagnose();
    QVERIFY(std::any_of(f.begin(), f.end(), [](const Finding& x) { return x.key() == "eval-mode"; }));
}

QTEST_GUILESS_MAIN(TestDiagnose)
// The cause table is the one place a cause is named: every row complete, its fault-lab spec parsing back to
// it, its check made, its fix filled in with the particulars.
void TestDiagnose::causeTable() {
    std::set<std::string> keys;
    const std::set<std::string> dimensions = {"environment", "data-model", "numerics", "parallel"};
    RunMeta meta;
    meta.worldSize = 4;
    const RunFacts facts(meta);
    Tallies tallies(facts);
    CheckContext context{facts, tallies};
    QCOMPARE(causes().size(), kCauseCount);
    for (const CauseInfo& c : causes()) {
        QVERIFY2(keys.insert(c.key).second, c.key);
        QVERIFY2(dimensions.count(c.dimension), c.key);
        QVERIFY2(std::string(c.title).size() > 10, c.key);
        QCOMPARE(&causeInfo(c.id), &c);
        QCOMPARE(findCause(c.key), &c);
        if (c.reproduce) {
            const FaultSpec spec = parseFault(c.reproduce);
            QVERIFY2(spec.cause == c.id && spec.name == c.key, c.reproduce);
        } else { // only what the lab cannot make: the import of a hung job's flight-recorder dumps
            QCOMPARE(c.id, Cause::CollectiveMismatch);
            QVERIFY_THROWS_EXCEPTION(rs::ConfigError, parseFault(c.key));
        }
        QVERIFY2(checks::makeCheck(c.id, context), c.key);
        for (const auto& by : c.explainedBy)
            QVERIFY2(!by || *by != c.id, c.key);
        const std::string fix = causeFix(c.id, 7, 123, "layer.bias");
        QVERIFY2(fix.find('{') == std::string::npos && fix.size() > 40, fix.c_str());
        if (std::string(c.fix).find("{rank}") != std::string::npos)
            QVERIFY2(fix.find("card 7") != std::string::npos || fix.find("rank 7") != std::string::npos,
                     c.key);
    }
    QCOMPARE(findCause("cosmic-ray"), nullptr);
    QVERIFY(causeFix(Cause::ParamNotSynced, -1, 0, "fc2.bias").find("fc2.bias is missing") !=
            std::string::npos);
    QVERIFY(causeFix(Cause::SdcAfter, 3, 5, {}, false).find("card 3") == std::string::npos);
}

// Older files name the ranks a TIMEOUT waited for only in its message.
void TestDiagnose::timeoutRanksFromMessage() {
    QCOMPARE(
        ranksNamedIn("Rank 0: HCCL AllReduce timed out after 30000 ms waiting for rank(s) 1, 3 (call #12)"),
        std::vector<int>({1, 3}));
    QCOMPARE(
        ranksNamedIn("HCCL Barrier timed out after 5 ms waiting for rank(s) 12 (call #1); node 1 is gone"),
        std::vector<int>({12}));
    QCOMPARE(ranksNamedIn("rank 2 failed at step 4"), std::vector<int>());
}

namespace {

// A 4-rank run whose rank 2's node process went at step 30: ranks 0, 1 and 3 wait for it, each with one
// TIMEOUT naming it in /events/peer and /events/peer_gone. `message` is what they say.
Sim nodeGoneRun(const std::string& message) {
    Sim s(4, 6, 60, false);
    s.steps.resize(30);
    s.weights.resize(3);
    for (int r : {0, 1, 3})
        s.events.push_back({30, r, Severity::Error, "TIMEOUT", message, 2, 1});
    return s;
}

const Finding* findingOf(const std::vector<Finding>& fs, const std::string& cause) {
    for (const Finding& f : fs)
        if (f.key() == cause)
            return &f;
    return nullptr;
}

} // namespace

// Diagnosis reads which rank a TIMEOUT waited for from the event's data: a message worded otherwise (another
// communicator, a translated one) names the same rank, and a message naming another rank changes nothing.
void TestDiagnose::timeoutPeersAreData() {
    for (const std::string& message :
         {std::string("Rank 0: collective stalled; peer unreachable"),
          std::string("Rank 0: HCCL AllReduce timed out after 2000 ms waiting for rank(s) 1 (call #91)")}) {
        const auto fs = nodeGoneRun(message).diagnose();
        const Finding* f = findingOf(fs, "rank-exit");
        QVERIFY2(f, qPrintable(describe(fs)));
        QCOMPARE(f->ranks, std::vector<int>({2}));
        QCOMPARE(f->firstStep, int64_t(30));
        QVERIFY2(f->evidence.find("rank 2's node process is gone") != std::string::npos, f->evidence.c_str());
    }
}

// A file written before /events/peer lists it as absent: then, and only then, the ranks come from the
// communicator's message.
void TestDiagnose::timeoutPeersOfOlderFiles() {
    Sim s = nodeGoneRun("Rank 0: HCCL AllReduce timed out after 2000 ms waiting for rank(s) 1 (call #91)");
    for (Event& e : s.events)
        e.peer = 0, e.peerGone = 0; // what the reader gives for a column the file lacks
    s.meta.absent = {"/events/peer", "/events/peer_gone"};
    const auto fs = s.diagnose();
    const Finding* f = findingOf(fs, "shard-uneven");
    QVERIFY2(f, qPrintable(describe(fs)));
    QCOMPARE(f->ranks, std::vector<int>({1}));
}

#include "tst_diagnose.moc"
