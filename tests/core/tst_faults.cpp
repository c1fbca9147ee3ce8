// The fault lab: spec parsing, and for every fault a short real run whose run file (read back with
// RunReader) shows the symptom the real mistake produces, while a clean run shows none of them.
#include "faults/FaultPlan.h"
#include "faults/FaultSpec.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "train/Trainer.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

using namespace rs;

class TestFaults : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void parsesSpecs_data();
    void parsesSpecs();
    void rejectsBadSpecs_data();
    void rejectsBadSpecs();
    void configKey();
    void cleanRunShowsNoSymptom();
    void duplicateRankId();
    void rankTableInvalid();
    void rankExit();
    void initMismatch();
    void shardOverlap();
    void shardUneven();
    void evalMode();
    void lossScaleTooHigh();
    void noLossScale();
    void overflowNotSynced();
    void lossScaleNotRestored();
    void gradSum();
    void paramNotSynced();
    void sdcBefore();
    void sdcAfter();
    void straggler();
    void flipBitChoosesTheBit();

private:
    struct Run {
        RunSummary summary;
        RunData data;
    };
    TrainConfig config(const QString& file, std::vector<std::string> faults, int ranks = 2, int64_t steps = 4,
                       ModelKind model = ModelKind::Mlp) const;
    static Run run(const TrainConfig& cfg);
    QTemporaryDir m_dir;
};

namespace {

bool hasEvent(const RunData& d, const std::string& code, const std::string& text, int rank = -2) {
    return std::any_of(d.events.begin(), d.events.end(), [&](const Event& e) {
        return e.code == code && e.message.find(text) != std::string::npos && (rank == -2 || e.rank == rank);
    });
}

// The TIMEOUT events `rank` wrote, as the ranks each waited for (/events/peer) and whether its node was gone.
std::vector<std::pair<int, int>> timeoutPeers(const RunData& d, int rank) {
    std::vector<std::pair<int, int>> out;
    for (const Event& e : d.events)
        if (e.code == "TIMEOUT" && e.rank == rank)
            out.emplace_back(e.peer, e.peerGone);
    return out;
}

float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.f : v[v.size() / 2];
}

std::vector<float> column(const RunData& d, int rank, float RankStep::*field, int64_t from = 1) {
    std::vector<float> out;
    for (const auto& s : d.steps)
        if (s.step >= from)
            out.push_back(s.ranks[rank].*field);
    return out;
}

} // namespace

void TestFaults::initTestCase() {
    QVERIFY(m_dir.isValid());
}

TrainConfig TestFaults::config(const QString& file, std::vector<std::string> faults, int ranks, int64_t steps,
                               ModelKind model) const {
    TrainConfig cfg;
    cfg.model = model;
    cfg.ranks = ranks;
    cfg.batchPerRank = 8;
    cfg.steps = steps;
    cfg.precision = Precision::O0;
    cfg.lossScale = parseLossScale("none");
    cfg.evalSamples = 32;
    cfg.weightEvery = 2;
    cfg.timeoutMs = 2000;
    cfg.faults = std::move(faults);
    cfg.out = m_dir.filePath(file).toStdString();
    cfg.overwrite = true;
    return cfg;
}

TestFaults::Run TestFaults::run(const TrainConfig& cfg) {
    Run r;
    Trainer trainer(cfg);
    r.summary = trainer.run();
    r.data = openRunFile(cfg.out)->readAll();
    return r;
}

void TestFaults::parsesSpecs_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("step");
    QTest::addColumn<int>("rank");
    QTest::addColumn<QString>("param");
    QTest::addColumn<int>("bit");
    QTest::addRow("bare") << "grad-sum"
                          << "grad-sum" << qint64(-1) << -1 << "" << -1;
    QTest::addRow("step and rank") << "rank-exit@12:3"
                                   << "rank-exit" << qint64(12) << 3 << "" << -1;
    QTest::addRow("rank only") << "duplicate-rank-id:1"
                               << "duplicate-rank-id" << qint64(-1) << 1 << "" << -1;
    QTest::addRow("step only") << "eval-mode@7"
                               << "eval-mode" << qint64(7) << -1 << "" << -1;
    QTest::addRow("parameter") << "param-not-synced:fc2.bias"
                               << "param-not-synced" << qint64(-1) << -1 << "fc2.bias" << -1;
    QTest::addRow("parameter at step") << "param-not-synced@3:fc1.weight"
                                       << "param-not-synced" << qint64(3) << -1 << "fc1.weight" << -1;
    QTest::addRow("bit flip, bit given") << "sdc-after@3:1:5"
                                         << "sdc-after" << qint64(3) << 1 << "" << 5;
    QTest::addRow("bit flip, sign bit") << "sdc-before:2:31"
                                        << "sdc-before" << qint64(-1) << 2 << "" << 31;
}

void TestFaults::parsesSpecs() {
    QFETCH(QString, text);
    const FaultSpec f = parseFault(text.toStdString());
    QTEST(QString::fromStdString(f.name), "name");
    QTEST(qint64(f.step), "step");
    QTEST(f.rank, "rank");
    QTEST(QString::fromStdString(f.param), "param");
    QTEST(f.bit, "bit");
}

void TestFaults::rejectsBadSpecs_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    QTest::addRow("unknown") << "cosmic-ray"
                             << "unknown fault 'cosmic-ray'";
    QTest::addRow("empty") << ""
                           << "unknown fault";
    QTest::addRow("bad step") << "rank-exit@x:1"
                              << "step 'x' is not an integer";
    QTest::addRow("negative rank") << "rank-exit@2:-1"
                                   << "rank '-1' is not an integer";
    QTest::addRow("empty rank") << "straggler:"
                                << "rank '' is not an integer";
    QTest::addRow("step on a setup fault") << "init-mismatch@3"
                                           << "takes no @STEP";
    QTest::addRow("rank on a job fault") << "grad-sum:1"
                                         << "takes no :RANK";
    QTest::addRow("empty parameter") << "param-not-synced:"
                                     << "empty parameter name";
    QTest::addRow("bit past 31") << "sdc-after@3:1:32"
                                 << "bit '32' is not an integer in [0, 31]";
    QTest::addRow("bit on another fault") << "straggler:1:3"
                                          << "rank '1:3' is not an integer";
}

void TestFaults::rejectsBadSpecs() {
    QFETCH(QString, text);
    QFETCH(QString, message);
    try {
        parseFault(text.toStdString());
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString what = e.what();
        QVERIFY2(what.contains(message) && what.contains("fault '" + text + "'"), e.what());
    }
}

void TestFaults::configKey() {
    auto cfg = TrainConfig::fromJson(R"({"ranks": 3, "faults": ["grad-sum", "rank-exit@3:1"]})", "cfg.json");
    QCOMPARE(cfg.faults.size(), size_t(2));
    QVERIFY(QString::fromStdString(cfg.toJson()).indexOf("faults") < 0); // never named in the run file
    QVERIFY_THROWS_EXCEPTION(ConfigError, TrainConfig::fromJson(R"({"faults": ["bogus"]})", "c.json"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, TrainConfig::fromJson(R"({"faults": "grad-sum"})", "c.json"));
    cfg.out = "x.h5";
    cfg.addFault("straggler:5");
    try {
        cfg.validate();
        QFAIL("rank 5 of 3 accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("straggler:5"), e.what());
    }
    cfg.set("faults", "duplicate-rank-id:0");
    QVERIFY_THROWS_EXCEPTION(ConfigError, cfg.validate());
    cfg.set("faults", "shard-overlap,init-mismatch");
    QCOMPARE(cfg.faults.size(), size_t(2));
    cfg.validate();
}

void TestFaults::cleanRunShowsNoSymptom() {
    auto cfg = config("clean.h5", {}, 2, 6, ModelKind::SmallCnn);
    const Run r = run(cfg);
    QVERIFY(r.summary.completed);
    QCOMPARE(r.data.steps.size(), size_t(6));
    QVERIFY(r.data.events.empty() ||
            std::none_of(r.data.events.begin(), r.data.events.end(),
                         [](const Event& e) { return e.severity == Severity::Error; }));
    for (const auto& s : r.data.steps) {
        QVERIFY(s.ranks[0].sampleFp != s.ranks[1].sampleFp);
        QCOMPARE(s.ranks[0].syncedFp, s.ranks[1].syncedFp);
        QCOMPARE(s.ranks[0].skipped, s.ranks[1].skipped);
        for (int k = 0; k < 2; ++k) {
            QCOMPARE(s.ranks[k].overflow, uint8_t(0));
            QVERIFY(*std::max_element(s.ranks[k].localMax.begin(), s.ranks[k].localMax.end()) < 1e6f);
        }
        // Mean all-reduce: the synced sum is the mean of the local sums.
        const double mean = (s.ranks[0].localSum.back() + s.ranks[1].localSum.back()) / 2;
        QVERIFY(std::fabs(s.ranks[0].syncedSum.back() - mean) <= 1e-4 * std::fabs(mean) + 1e-6);
    }
    for (const auto& w : r.data.weights)
        QCOMPARE(w.fp[0], w.fp[1]);
    // Running statistics are local to each card (never all-reduced), but every card updates its own.
    for (int k = 0; k < 2; ++k)
        QVERIFY(r.data.weights.back().bufferFp[k] != r.data.weights.front().bufferFp[k]);
}

void TestFaults::duplicateRankId() {
    const Run r = run(config("dup.h5", {"duplicate-rank-id"}, 3, 3));
    QVERIFY(r.summary.completed);
    for (const auto& s : r.data.steps) {
        QCOMPARE(s.ranks[2].sampleIds, s.ranks[1].sampleIds); // rank 2 read rank 1's shard
        QVERIFY(s.ranks[0].sampleIds != s.ranks[1].sampleIds);
    }
}

void TestFaults::rankTableInvalid() {
    const QString out = m_dir.filePath("badtable.h5");
    QProcess cli;
    cli.start(RANKSIGHT_CLI,
              {"train", "--model", "mlp", "--ranks", "2", "--batch", "4", "--steps", "3", "--precision", "O0",
               "--fault", "rank-table-invalid", "--quiet", "--force", "--out", out});
    QVERIFY(cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 1);
    QVERIFY2(cli.readAllStandardError().contains("rank table"), "stderr names the rank table");
    const RunData d = openRunFile(out.toStdString())->readAll();
    QVERIFY(d.steps.empty());
    QVERIFY(hasEvent(d, "RANK_TABLE", "server_count"));
    QVERIFY(hasEvent(d, "RANK_TABLE", "duplicate device_ip"));
    QVERIFY2(d.stopReason.rfind("error: rank table", 0) == 0, d.stopReason.c_str());

    // A spec the CLI does not know is bad usage, named in the message.
    QProcess bad;
    bad.start(RANKSIGHT_CLI, {"train", "--model", "mlp", "--fault", "rank-exit@2:1", "--fault", "cosmic-ray",
                              "--out", m_dir.filePath("never.h5")});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY(bad.readAllStandardError().contains("fault 'cosmic-ray'"));
    QVERIFY(!QFile::exists(m_dir.filePath("never.h5")));
}

void TestFaults::rankExit() {
    auto cfg = config("exit.h5", {"rank-exit@3:1"}, 2, 10);
    cfg.timeoutMs = 500;
    const Run r = run(cfg);
    QVERIFY(!r.summary.completed);
    QCOMPARE(r.summary.cardStates.at(1), CardState::Dead);
    QCOMPARE(r.summary.cardStates.at(0), CardState::TimedOut);
    QCOMPARE(r.data.steps.size(), size_t(3));
    QVERIFY(hasEvent(r.data, "CARD_FAILED", "HBM", 1));
    QVERIFY(hasEvent(r.data, "TIMEOUT", "rank(s) 1", 0));
    QCOMPARE(timeoutPeers(r.data, 0), (std::vector<std::pair<int, int>>{{1, 0}})); // as data, one per peer
}

void TestFaults::initMismatch() {
    const Run r = run(config("init.h5", {"init-mismatch"}, 2, 2));
    QCOMPARE(r.data.weights.front().step, int64_t(0));
    const auto& fp = r.data.weights.front().fp;
    for (size_t p = 0; p < fp[0].size(); ++p)
        QVERIFY(fp[0][p] != fp[1][p]);
    QVERIFY(r.data.steps[0].ranks[0].syncedFp == r.data.steps[0].ranks[1].syncedFp); // the sync itself works
}

void TestFaults::shardOverlap() {
    const Run r = run(config("overlap.h5", {"shard-overlap"}, 3, 3));
    for (const auto& s : r.data.steps) {
        QCOMPARE(s.ranks[0].sampleFp, s.ranks[1].sampleFp);
        QCOMPARE(s.ranks[0].sampleFp, s.ranks[2].sampleFp);
    }
}

void TestFaults::shardUneven() {
    auto cfg = config("uneven.h5", {"shard-uneven@4:1"}, 2, 10);
    cfg.timeoutMs = 500;
    const Run r = run(cfg);
    QVERIFY(!r.summary.completed);
    QCOMPARE(r.data.steps.size(), size_t(4)); // rank 1's epoch ended after its 4 batches
    QCOMPARE(r.summary.cardStates.at(1), CardState::Ok);
    QCOMPARE(r.summary.cardStates.at(0), CardState::TimedOut);
    QVERIFY(hasEvent(r.data, "TIMEOUT", "waiting for rank(s) 1", 0));
    QCOMPARE(timeoutPeers(r.data, 0), (std::vector<std::pair<int, int>>{{1, 0}}));
    QVERIFY2(r.data.stopReason.find("timed out") != std::string::npos, r.data.stopReason.c_str());
}

void TestFaults::evalMode() {
    const Run r = run(config("eval.h5", {"eval-mode:1"}, 2, 4, ModelKind::SmallCnn));
    QVERIFY(r.summary.completed);
    const auto& first = r.data.weights.front();
    const auto& last = r.data.weights.back();
    QCOMPARE(last.bufferFp[1], first.bufferFp[1]); // rank 1 never updated its running statistics
    QVERIFY(last.bufferFp[0] != first.bufferFp[0]);
    QVERIFY(last.bufferDrift[1] > 1e-4f);
    // Per step: rank 1's statistics never move (equal to the row before the first forward), rank 0's move on
    // every step.
    for (size_t s = 0; s < r.data.steps.size(); ++s) {
        const auto& now = r.data.steps[s].ranks;
        QCOMPARE(now[1].bufferFp, first.bufferFp[1]);
        QVERIFY(now[0].bufferFp != (s ? r.data.steps[s - 1].ranks[0].bufferFp : first.bufferFp[0]));
    }
    // The gradients are still all-reduced: the mistake hides from the synced fingerprints.
    QCOMPARE(r.data.steps.back().ranks[0].syncedFp, r.data.steps.back().ranks[1].syncedFp);
}

void TestFaults::lossScaleTooHigh() {
    auto cfg = config("lsth.h5", {"loss-scale-too-high"}, 2, 4);
    cfg.precision = Precision::O2;
    cfg.lossScale = parseLossScale("dynamic"); // whatever the config says, the scale is fixed at 2^30
    const Run r = run(cfg);
    QCOMPARE(QString::fromStdString(r.data.meta.lossScale).left(6), QString("fixed:"));
    for (const auto& s : r.data.steps)
        for (const auto& rk : s.ranks) {
            QCOMPARE(rk.overflow, uint8_t(1));
            QCOMPARE(rk.skipped, uint8_t(1));
            QCOMPARE(rk.lossScale, 1073741824.0f);
        }
}

void TestFaults::noLossScale() {
    auto underflows = [](const RunData& d) {
        std::vector<uint64_t> perStep;
        for (const auto& s : d.steps) {
            uint64_t n = 0;
            for (const auto& rk : s.ranks)
                for (uint32_t u : rk.underflowCount)
                    n += u;
            perStep.push_back(n);
        }
        return perStep;
    };
    // A deep net: its small gradients are the ones fp16 cannot hold (the small presets have too few).
    auto cfg = config("nols.h5", {"no-loss-scale"}, 2, 2, ModelKind::ResNet18);
    cfg.batchPerRank = 4;
    cfg.evalSamples = 8;
    const Run r = run(cfg);
    QCOMPARE(QString::fromStdString(r.data.meta.precision), QString("O2")); // fp16 gradients, from O0
    QCOMPARE(QString::fromStdString(r.data.meta.lossScale), QString("none"));
    const auto lost = underflows(r.data);
    QVERIFY2(lost.back() > 1000, qPrintable(QString("%1 underflows").arg(lost.back())));
    for (const auto& rk : r.data.steps.back().ranks) // on every card, not one odd batch
        QVERIFY(std::accumulate(rk.underflowCount.begin(), rk.underflowCount.end(), uint64_t(0)) > 100);
}

void TestFaults::overflowNotSynced() {
    auto cfg = config("ovf.h5", {"overflow-not-synced"}, 2, 30);
    cfg.precision = Precision::O2;
    cfg.lossScale = parseLossScale("dynamic"); // 2^24 overflows at first; each rank backs off on its own
    const Run r = run(cfg);
    const bool differ = std::any_of(r.data.steps.begin(), r.data.steps.end(), [](const StepRecord& s) {
        return s.ranks[0].skipped != s.ranks[1].skipped;
    });
    QVERIFY(differ);
}

// Rank 1's loss scale starts over at 2^24 on step 6 while rank 0 keeps its own: from then on the ranks
// divide the same all-reduced sum by different scales, apply different gradients, and their weights part.
void TestFaults::lossScaleNotRestored() {
    auto cfg = config("lsnr.h5", {"loss-scale-not-restored@6:1"}, 2, 14);
    cfg.precision = Precision::O2;
    cfg.lossScale = parseLossScale("dynamic");
    const Run r = run(cfg);
    const auto& before = r.data.steps[5].ranks;
    const auto& at = r.data.steps[6].ranks;
    QCOMPARE(before[0].lossScale, before[1].lossScale);
    QCOMPARE(at[1].lossScale, std::ldexp(1.0f, 24));
    QVERIFY(at[0].lossScale < at[1].lossScale);
    QCOMPARE(before[0].syncedFp, before[1].syncedFp);
    QVERIFY(at[0].syncedFp != at[1].syncedFp); // the same bytes, unscaled by different scales
    QVERIFY(r.data.weights.back().fp[0] != r.data.weights.back().fp[1]);
    for (const auto& s : r.data.steps)
        QCOMPARE(s.ranks[0].skipped, s.ranks[1].skipped); // the overflow vote stays shared
    auto fixed = config("lsnr2.h5", {"loss-scale-not-restored@6:1"}, 2, 2);
    fixed.lossScale = parseLossScale("fixed:1024");
    try {
        run(fixed);
        QFAIL("a fixed loss scale accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("needs a dynamic loss scale"), e.what());
    }
}

void TestFaults::gradSum() {
    const Run r = run(config("sum.h5", {"grad-sum"}, 2, 3));
    for (const auto& s : r.data.steps) {
        // The largest-sum tensor: its ratio is far from rounding noise.
        size_t p = 0;
        for (size_t q = 0; q < s.ranks[0].localSum.size(); ++q)
            if (std::fabs(s.ranks[0].localSum[q] + s.ranks[1].localSum[q]) >
                std::fabs(s.ranks[0].localSum[p] + s.ranks[1].localSum[p]))
                p = q;
        const double meanLocal = (s.ranks[0].localSum[p] + s.ranks[1].localSum[p]) / 2;
        const double ratio = s.ranks[0].syncedSum[p] / meanLocal;
        QVERIFY2(std::fabs(ratio - 2.0) < 0.01, qPrintable(QString::number(ratio)));
    }
}

void TestFaults::paramNotSynced() {
    const Run r = run(config("pns.h5", {"param-not-synced"}, 2, 3));
    const size_t last = r.data.meta.params.size() - 1;
    for (const auto& s : r.data.steps)
        for (size_t p = 0; p <= last; ++p)
            QCOMPARE(s.ranks[0].syncedFp[p] != s.ranks[1].syncedFp[p], p == last);
    // Named parameter: the first one instead.
    const std::string first = r.data.meta.params.front().name;
    const Run n = run(config("pns2.h5", {"param-not-synced:" + first}, 2, 2));
    QVERIFY(n.data.steps[0].ranks[0].syncedFp[0] != n.data.steps[0].ranks[1].syncedFp[0]);
    QCOMPARE(n.data.steps[0].ranks[0].syncedFp[last], n.data.steps[0].ranks[1].syncedFp[last]);
    QVERIFY_THROWS_EXCEPTION(ConfigError, run(config("pns3.h5", {"param-not-synced:no.such"}, 2, 2)));
}

void TestFaults::sdcBefore() {
    const Run r = run(config("sdcb.h5", {"sdc-before@2:1"}, 2, 4));
    auto maxOf = [](const RankStep& rk) { return *std::max_element(rk.localMax.begin(), rk.localMax.end()); };
    QVERIFY(maxOf(r.data.steps[1].ranks[1]) < 1e6f);
    QVERIFY(maxOf(r.data.steps[2].ranks[1]) > 1e20f); // the flipped exponent bit
    QVERIFY(maxOf(r.data.steps[2].ranks[0]) < 1e6f);
    QCOMPARE(r.data.steps[2].ranks[0].syncedFp, r.data.steps[2].ranks[1].syncedFp); // spread to every rank
}

void TestFaults::sdcAfter() {
    const Run r = run(config("sdca.h5", {"sdc-after@2:1"}, 2, 4));
    for (int64_t s = 0; s < 2; ++s)
        QCOMPARE(r.data.steps[s].ranks[0].syncedFp, r.data.steps[s].ranks[1].syncedFp);
    QVERIFY(r.data.steps[2].ranks[0].syncedFp != r.data.steps[2].ranks[1].syncedFp);
    const auto& w = r.data.weights.back(); // the corrupted update stays in rank 1's weights
    QVERIFY(w.step > 2 && w.fp[0] != w.fp[1]);
}

// The bit a flip hits: 30 (the top exponent bit) by default, any bit when given, in one element below 1 in
// magnitude; only that bit of that element changes.
void TestFaults::flipBitChoosesTheBit() {
    for (const int bit : {0, 10, 22, 23, 30, 31}) {
        std::vector<float> v(101, 4.0f);
        v[70] = 0.375f; // the first small element from the middle on
        const std::vector<float> before = v;
        FaultPlan::flipBit(v.data(), int64_t(v.size()), bit);
        for (size_t i = 0; i < v.size(); ++i) {
            uint32_t a = 0, b = 0;
            std::memcpy(&a, &before[i], 4);
            std::memcpy(&b, &v[i], 4);
            QCOMPARE(a ^ b, i == 70 ? (1u << bit) : 0u);
        }
    }
    std::vector<float> v(8, 0.5f);
    const std::vector<float> before = v;
    FaultPlan::flipBit(v.data(), int64_t(v.size()), 32); // out of range: nothing
    QCOMPARE(v, before);
    // Through the trainer: a mantissa flip after the all-reduce still makes rank 1's synced gradient differ.
    const Run r = run(config("sdcbit.h5", {"sdc-after@2:1:3"}, 2, 4));
    QVERIFY(r.data.steps[2].ranks[0].syncedFp != r.data.steps[2].ranks[1].syncedFp);
    QCOMPARE(r.data.steps[1].ranks[0].syncedFp, r.data.steps[1].ranks[1].syncedFp);
}

void TestFaults::straggler() {
    const Run r = run(config("slow.h5", {"straggler"}, 2, 8, ModelKind::SmallCnn));
    QVERIFY(r.summary.completed);
    const float compute0 = median(column(r.data, 0, &RankStep::computeMs));
    const float compute1 = median(column(r.data, 1, &RankStep::computeMs));
    const float comm0 = median(column(r.data, 0, &RankStep::commMs));
    QVERIFY2(compute1 > 2.f * compute0, qPrintable(QString("%1 vs %2 ms").arg(compute1).arg(compute0)));
    QVERIFY2(comm0 > compute0, qPrintable(QString("comm %1 vs compute %2 ms").arg(comm0).arg(compute0)));
    QCOMPARE(r.data.weights.back().fp[0], r.data.weights.back().fp[1]); // slow, not wrong
}

QTEST_GUILESS_MAIN(TestFaults)
#include "tst_faults.moc"
