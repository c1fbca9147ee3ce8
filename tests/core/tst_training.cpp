// The proof that data parallelism is real: N ranks x batch b give the gradients and the loss trajectory of
// one replica on the concatenated batch; a clean run keeps every replica bitwise identical; Stop is prompt.
#include "cluster/Communicator.h"
#include "diagnose/Diagnoser.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "train/LocalStatistics.h"
#include "train/Replica.h"
#include "train/StepPhases.h"
#include "train/Trainer.h"

#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

using namespace rs;

class TestTraining : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void gradientsMatchSingleReplica_data();
    void gradientsMatchSingleReplica();
    void lossTrajectoryMatchesSingleReplica_data();
    void lossTrajectoryMatchesSingleReplica();
    void cleanRunKeepsReplicasIdentical_data();
    void cleanRunKeepsReplicasIdentical();
    void resnet50HasTheUsualParameterTensors();
    void smallCnnLearnsTheBuiltInDataSet();
    void stopEndsPromptlyAndFileIsComplete();
    void preflightRejectsAWrongRankTable();
    void flightRecorderDumpsOnRequest();
    void flightRingCarriesWeightsOverSkippedSteps_data();
    void flightRingCarriesWeightsOverSkippedSteps();
    void flightDepthOneDumpsTheLiveTensors_data();
    void flightDepthOneDumpsTheLiveTensors();
    void flightRecorderDumpsOnNonFiniteLoss();
    void localStatisticsInTheAllReduceAreTheGradients_data();
    void localStatisticsInTheAllReduceAreTheGradients();
    void telemetryDoesNotChangeWhatIsTrained_data();
    void telemetryDoesNotChangeWhatIsTrained();
    void stepTrafficFollowsThePasses();
    void shardedUpdateEqualsReplicated_data();
    void shardedUpdateEqualsReplicated();
    void shardedUpdateStillShowsOneRanksOptimizer();

private:
    TrainConfig tinyConfig(ModelKind model, int ranks, int batch, int64_t steps, const QString& file) const;
    QTemporaryDir m_dir;
};

namespace {

// Collects what the trainer recorded, as the GUI would.
struct Recorder : TrainObserver {
    std::mutex mutex;
    std::vector<StepRecord> steps;
    std::vector<WeightRecord> weights;
    void stepRecorded(const StepRecord& s) override {
        std::lock_guard lock(mutex);
        steps.push_back(s);
    }
    void weightsRecorded(const WeightRecord& w) override {
        std::lock_guard lock(mutex);
        weights.push_back(w);
    }
    size_t stepCount() {
        std::lock_guard lock(mutex);
        return steps.size();
    }
};

std::vector<float> randomImages(int n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d;
    std::vector<float> v(static_cast<size_t>(n) * 3072);
    for (auto& x : v)
        x = d(gen);
    return v;
}

} // namespace

void TestTraining::initTestCase() {
    QVERIFY(m_dir.isValid());
}

// The shape of a short test run. A file name means a run file in the test directory, replaced if it exists;
// an empty one leaves cfg.out unset.
TrainConfig TestTraining::tinyConfig(ModelKind model, int ranks, int batch, int64_t steps,
                                     const QString& file) const {
    TrainConfig cfg;
    cfg.model = model;
    cfg.ranks = ranks;
    cfg.batchPerRank = batch;
    cfg.steps = steps;
    if (!file.isEmpty()) {
        cfg.out = m_dir.filePath(file).toStdString();
        cfg.overwrite = true;
    }
    return cfg;
}

void TestTraining::gradientsMatchSingleReplica_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("batch");
    QTest::addRow("2 x 8") << 2 << 8;
    QTest::addRow("4 x 4") << 4 << 4;
    QTest::addRow("8 x 2") << 8 << 2;
}

void TestTraining::gradientsMatchSingleReplica() {
    QFETCH(int, ranks);
    QFETCH(int, batch);
    const int total = ranks * batch;
    const auto images = randomImages(total, 11);
    std::vector<int64_t> labels(total);
    for (int i = 0; i < total; ++i)
        labels[i] = (i * 7) % 10;

    ReplicaOptions opt;
    opt.model = ModelKind::Mlp;
    opt.initSeed = 42;
    Replica single(opt);
    const auto whole = single.forwardBackward(images.data(), labels.data(), total, 1.f);
    const int64_t n = single.numParams();

    std::vector<std::unique_ptr<Replica>> replicas;
    for (int r = 0; r < ranks; ++r)
        replicas.push_back(std::make_unique<Replica>(opt));
    Communicator comm(ranks, std::chrono::seconds(10));
    std::vector<float> losses(ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            setTorchThreads(1);
            const auto res = replicas[r]->forwardBackward(images.data() + size_t(r) * batch * 3072,
                                                          labels.data() + r * batch, batch, 1.f);
            losses[r] = res.loss;
            comm.allReduce(r, replicas[r]->grads(), static_cast<size_t>(n), DType::F32, ReduceOp::Mean);
        });
    for (auto& t : threads)
        t.join();

    float meanLoss = 0;
    for (float l : losses)
        meanLoss += l / ranks;
    QVERIFY(std::fabs(meanLoss - whole.loss) <= 1e-5f * std::fabs(whole.loss));
    float maxRef = 0;
    for (int64_t i = 0; i < n; ++i)
        maxRef = std::max(maxRef, std::fabs(single.grads()[i]));
    QVERIFY(maxRef > 0);
    for (int r = 0; r < ranks; ++r) {
        QCOMPARE(std::memcmp(replicas[r]->grads(), replicas[0]->grads(), n * 4), 0); // bitwise equal on ranks
        for (int64_t i = 0; i < n; ++i) {
            const float a = replicas[r]->grads()[i], b = single.grads()[i];
            if (std::fabs(a - b) > 1e-5f * maxRef)
                QFAIL(qPrintable(
                    QString("rank %1 element %2: %3 vs single replica %4").arg(r).arg(i).arg(a).arg(b)));
        }
    }
}

void TestTraining::lossTrajectoryMatchesSingleReplica_data() {
    QTest::addColumn<int>("ranks");
    QTest::addRow("4 ranks") << 4;
    QTest::addRow("2 ranks") << 2;
}

void TestTraining::lossTrajectoryMatchesSingleReplica() {
    QFETCH(int, ranks);
    const int global = 32;
    auto run = [&](int w) {
        TrainConfig cfg = tinyConfig(ModelKind::Mlp, w, global / w, 12, QString("traj_%1.h5").arg(w));
        cfg.precision = Precision::O0;
        cfg.lossScale = parseLossScale("none");
        cfg.lr = 0.02f;
        cfg.evalSamples = 0;
        Recorder rec;
        Trainer trainer(cfg);
        trainer.setObserver(&rec);
        const auto summary = trainer.run();
        std::vector<double> loss;
        if (!summary.completed) // an empty trajectory fails the size checks below, with the reason logged
            qWarning("run with %d ranks did not complete: %s", w, summary.stopReason.c_str());
        for (const auto& s : rec.steps) {
            double m = 0;
            for (const auto& r : s.ranks)
                m += r.loss / s.ranks.size();
            loss.push_back(m);
        }
        return loss;
    };
    const auto multi = run(ranks), single = run(1);
    QCOMPARE(multi.size(), size_t(12));
    QCOMPARE(single.size(), size_t(12));
    QVERIFY(single.back() < single.front()); // it learns
    for (size_t i = 0; i < multi.size(); ++i)
        QVERIFY2(std::fabs(multi[i] - single[i]) <= 1e-5 * std::fabs(single[i]),
                 qPrintable(QString("step %1: %2 ranks %3, one rank %4")
                                .arg(i)
                                .arg(ranks)
                                .arg(multi[i], 0, 'g', 10)
                                .arg(single[i], 0, 'g', 10)));
}

void TestTraining::cleanRunKeepsReplicasIdentical_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("precision");
    QTest::addColumn<int>("ranks");
    QTest::addRow("smallcnn O2 dynamic, 4 ranks") << "smallcnn"
                                                  << "O2" << 4;
    QTest::addRow("mlp O0, 3 ranks") << "mlp"
                                     << "O0" << 3;
    QTest::addRow("smallcnn O3, 2 ranks") << "smallcnn"
                                          << "O3" << 2;
}

void TestTraining::cleanRunKeepsReplicasIdentical() {
    QFETCH(QString, model);
    QFETCH(QString, precision);
    QFETCH(int, ranks);
    TrainConfig cfg = tinyConfig(parseModelKind(model.toStdString()).value(), ranks, 8, 12,
                                 "clean_" + model + precision + ".h5");
    cfg.set("precision", precision.toStdString());
    cfg.set("loss_scale", precision == "O0" ? "none" : "dynamic");
    cfg.weightEvery = 4;
    cfg.evalSamples = 64;
    Recorder rec;
    Trainer trainer(cfg);
    trainer.setObserver(&rec);
    const auto summary = trainer.run();
    QVERIFY2(summary.completed, summary.stopReason.c_str());
    QCOMPARE(summary.cardStates, std::vector<CardState>(static_cast<size_t>(ranks), CardState::Ok));
    QCOMPARE(rec.steps.size(), size_t(12));
    for (const auto& s : rec.steps) {
        QCOMPARE(int(s.ranks.size()), ranks);
        for (const auto& r : s.ranks) {
            QCOMPARE(r.syncedFp, s.ranks[0].syncedFp);
            QCOMPARE(r.skipped, s.ranks[0].skipped);
            QVERIFY(r.localNorm.size() == s.ranks[0].syncedFp.size());
        }
        // Different batches: the local gradients must differ, or the ranks are not data parallel at all.
        // (Steps where the dynamic loss scale overflowed hold no finite gradient to compare.)
        if (!s.ranks[0].overflow)
            QVERIFY(s.ranks[0].localNorm != s.ranks[1].localNorm);
        QVERIFY(s.ranks[0].sampleIds != s.ranks[1].sampleIds);
    }
    QCOMPARE(rec.weights.size(), size_t(4)); // steps 0, 4, 8, 12
    for (const auto& w : rec.weights)
        for (const auto& fp : w.fp)
            QCOMPARE(fp, w.fp[0]);

    const auto reader = openRunFile(cfg.out);
    QVERIFY(reader->complete());
    QCOMPARE(reader->stepCount(), int64_t(12));
    QCOMPARE(reader->meta().worldSize, ranks);
    QCOMPARE(reader->readWeights().size(), size_t(4));
    QCOMPARE(reader->readEvals().size(), size_t(1));
}

void TestTraining::resnet50HasTheUsualParameterTensors() {
    ReplicaOptions opt;
    opt.model = ModelKind::ResNet50;
    Replica r50(opt);
    QCOMPARE(r50.params().size(), size_t(161)); // as torchvision's resnet50
    QCOMPARE(r50.params().front().name, std::string("conv1.weight"));
    QCOMPARE(r50.params().front().shape, (std::vector<int64_t>{64, 3, 3, 3})); // CIFAR stem: 3x3
    QVERIFY(r50.numParams() > 23000000 && r50.numParams() < 24000000);
    opt.model = ModelKind::ResNet18;
    Replica r18(opt);
    QCOMPARE(r18.params().size(), size_t(62));
    QCOMPARE(r18.params()[3].name, std::string("layer1.0.conv1.weight"));
}

void TestTraining::smallCnnLearnsTheBuiltInDataSet() {
    // A healthy run must look healthy: the default data set is learnable, judged on its held-out split.
    TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 2, 32, 100, {});
    cfg.precision = Precision::O0;
    cfg.lossScale = parseLossScale("none");
    cfg.evalSamples = 1000;
    cfg.telemetry = false;
    cfg.writeFile = false;
    Trainer trainer(cfg);
    const auto summary = trainer.run();
    QVERIFY2(summary.completed, summary.stopReason.c_str());
    QVERIFY2(summary.evalAccuracy > 0.75f,
             qPrintable(QString("held-out accuracy %1").arg(summary.evalAccuracy)));
    QVERIFY(summary.lossLast < 0.5f * summary.lossFirst);
}

void TestTraining::stopEndsPromptlyAndFileIsComplete() {
    const TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 4, 16, 100000, "stop.h5");
    Recorder rec;
    Trainer trainer(cfg);
    trainer.setObserver(&rec);
    RunSummary summary;
    std::thread t([&] { summary = trainer.run(); });
    QTRY_VERIFY_WITH_TIMEOUT(rec.stepCount() >= 3, 60000);
    QElapsedTimer timer;
    timer.start();
    trainer.stop();
    t.join();
    QVERIFY2(timer.elapsed() < 1000, qPrintable(QString("stop took %1 ms").arg(timer.elapsed())));
    QCOMPARE(summary.stopReason, std::string("stopped"));
    QCOMPARE(summary.cardStates, std::vector<CardState>(4, CardState::Stopped));
    const auto reader = openRunFile(cfg.out);
    QVERIFY(reader->complete());
    QCOMPARE(reader->stepCount(), summary.stepsCompleted);
    QVERIFY(reader->stepCount() >= 3);
}

void TestTraining::preflightRejectsAWrongRankTable() {
    const QString table = QString(RANKSIGHT_TEST_DATA) + "/ranktables/valid_4p.json";
    TrainConfig cfg;
    cfg.model = ModelKind::Mlp;
    cfg.ranks = 2;
    cfg.rankTable = table.toStdString();
    cfg.out = m_dir.filePath("never.h5").toStdString();
    Trainer trainer(cfg);
    try {
        trainer.run();
        QFAIL("a 4-device rank table must not start a 2-rank run");
    } catch (const TrainError& e) {
        QVERIFY2(QString(e.what()).contains("valid_4p.json"), e.what());
    }
    QVERIFY(!QFile::exists(m_dir.filePath("never.h5")));
}

void TestTraining::flightRecorderDumpsOnRequest() {
    TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 3, 8, 40, "flight.h5");
    cfg.lossScale = parseLossScale("dynamic:256"); // no overflow-skipped steps: weights move every step
    cfg.flightSteps = 3;
    cfg.evalSamples = 0;
    Recorder rec;
    Trainer trainer(cfg);
    trainer.setObserver(&rec);
    RunSummary summary;
    std::thread t([&] { summary = trainer.run(); });
    QTRY_VERIFY_WITH_TIMEOUT(rec.stepCount() >= 6, 60000);
    trainer.requestFlightDump();
    t.join();
    QVERIFY2(summary.completed, summary.stopReason.c_str());

    const auto reader = openRunFile(cfg.out);
    const auto dumps = reader->readFlightDumps();
    QCOMPARE(dumps.size(), size_t(1));
    const auto& dump = dumps[0];
    QCOMPARE(dump.reason, std::string("requested"));
    QCOMPARE(dump.entries.size(), size_t(3 * 3 * 3)); // ranks x depth x (local, synced, weights)
    const int64_t n = [&] {
        int64_t total = 0;
        for (const auto& p : reader->meta().params)
            total += p.numel;
        return total;
    }();
    std::map<std::tuple<int64_t, int, int>, const FlightEntry*> byKey;
    for (const auto& e : dump.entries) {
        QCOMPARE(int64_t(e.data.size()), n);
        QVERIFY(e.step <= dump.triggerStep && e.step > dump.triggerStep - 3);
        byKey[{e.step, e.rank, e.kind}] = &e;
    }
    const int64_t s = dump.triggerStep;
    auto at = [&](int64_t step, int rank, int kind) -> const std::vector<float>& {
        static const std::vector<float> none;
        const auto it = byKey.find({step, rank, kind});
        return it == byKey.end() ? none : it->second->data;
    };
    QVERIFY(!at(s, 0, 0).empty());
    QVERIFY(at(s, 0, 0) != at(s, 1, 0));     // local gradients differ: different batches
    QCOMPARE(at(s, 0, 1), at(s, 2, 1));      // synced gradients are bitwise equal
    QCOMPARE(at(s, 0, 2), at(s, 1, 2));      // and so are the weights
    QVERIFY(at(s - 1, 0, 2) != at(s, 0, 2)); // the ring holds distinct steps
    bool logged = false;
    for (const auto& e : reader->readEvents())
        logged = logged || e.code == "FLIGHT_RECORDER";
    QVERIFY(logged);
}

// At depth 1 the ring keeps only the synced gradient; a dump takes the local gradient and the weights live.
// Deeper, the backward writes into the slots and the optimizer streams the weights into them. Both give the
// same bits: the dump on a bit flipped after the all-reduce (a fixed step) equals, entry for entry, the same
// run's dump at depth 3, at O0 (fp32 payload) and O2 (the local gradient rounded to what the card sent).
void TestTraining::flightDepthOneDumpsTheLiveTensors_data() {
    QTest::addColumn<int>("precision");
    QTest::newRow("O0") << int(Precision::O0);
    QTest::newRow("O2") << int(Precision::O2);
}

void TestTraining::flightDepthOneDumpsTheLiveTensors() {
    QFETCH(int, precision);
    auto dumpAt = [&](int depth) {
        TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 3, 8, 12,
                                     QString("depth%1-%2.h5").arg(depth).arg(QTest::currentDataTag()));
        cfg.precision = Precision(precision);
        cfg.flightSteps = depth;
        cfg.evalSamples = 0;
        cfg.faults = {"sdc-after@6:1"};
        Trainer trainer(cfg);
        trainer.run();
        const auto dumps = openRunFile(cfg.out)->readFlightDumps();
        return dumps.empty() ? FlightDump{} : dumps.front();
    };
    const FlightDump one = dumpAt(1), three = dumpAt(3);
    QCOMPARE(one.triggerStep, int64_t(6));
    QCOMPARE(three.triggerStep, int64_t(6));
    QCOMPARE(one.entries.size(), size_t(3 * 3)); // ranks x (local, synced, weights) of step 6
    int matched = 0;
    for (const FlightEntry& e : one.entries) {
        QCOMPARE(e.step, int64_t(6));
        for (const FlightEntry& f : three.entries)
            if (f.step == e.step && f.rank == e.rank && f.kind == e.kind) {
                QVERIFY2(e.data.size() == f.data.size() &&
                             std::memcmp(e.data.data(), f.data.data(), e.data.size() * 4) == 0,
                         qPrintable(QString("rank %1 kind %2 differs").arg(e.rank).arg(e.kind)));
                ++matched;
            }
    }
    QCOMPARE(matched, 9);
}

// At O0 the local statistics are taken in the all-reduce's reduce-scatter, a piece of every rank's gradient
// by each rank (ReducedLocalStats). What a run records is what a pass of their own over the local gradient
// the flight recorder kept gives: the fingerprint, maxima and counts exactly, norms and sums to float
// rounding, on 3 ranks (uneven chunks), flat and as 3 servers of 1 (the hierarchical reduction).
void TestTraining::localStatisticsInTheAllReduceAreTheGradients_data() {
    QTest::addColumn<int>("servers");
    QTest::newRow("flat ring") << 1;
    QTest::newRow("3 servers") << 3;
}

void TestTraining::localStatisticsInTheAllReduceAreTheGradients() {
    QFETCH(int, servers);
    TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 3, 8, 8, QString("local-%1.h5").arg(servers));
    cfg.precision = Precision::O0;
    cfg.lossScale = parseLossScale("none");
    cfg.devicesPerServer = 3 / servers;
    cfg.flightSteps = 1;
    cfg.evalSamples = 0;
    cfg.faults = {"sdc-after@6:1"}; // after the all-reduce: the local gradients are the clean ones, dumped
    Trainer trainer(cfg);
    trainer.run();
    const auto reader = openRunFile(cfg.out);
    const auto dumps = reader->readFlightDumps();
    QCOMPARE(dumps.size(), size_t(1));
    QCOMPARE(dumps[0].triggerStep, int64_t(6));
    const RunMeta& meta = reader->meta();
    QCOMPARE(meta.localFpVersion, 2);
    const auto steps = reader->readSteps(6, 7, true);
    QCOMPARE(steps.size(), size_t(1));
    int checked = 0;
    for (const FlightEntry& e : dumps[0].entries) {
        if (e.kind != 0)
            continue;
        RankStep own;
        localStatsInOwnPass(e.data.data(), meta.params, 1.f, cfg.seed, meta.sketchDim, nullptr, own);
        const RankStep& rec = steps[0].ranks[size_t(e.rank)];
        QCOMPARE(rec.localFp, own.localFp);
        QCOMPARE(rec.localMax, own.localMax);
        QCOMPARE(rec.nonfinite, own.nonfinite);
        QCOMPARE(rec.underflowCount, own.underflowCount);
        for (size_t p = 0; p < meta.params.size(); ++p) {
            QVERIFY(std::fabs(rec.localNorm[p] - own.localNorm[p]) <= 1e-5f * own.localNorm[p]);
            QVERIFY(std::fabs(rec.localSum[p] - own.localSum[p]) <=
                    1e-5 * double(own.localNorm[p]) * std::sqrt(double(meta.params[p].numel)));
        }
        for (size_t j = 0; j < own.sketch.size(); ++j)
            QVERIFY(std::fabs(rec.sketch[j] - own.sketch[j]) <= 1e-4f * (1.f + std::fabs(own.sketch[j])));
        ++checked;
    }
    QCOMPARE(checked, 3);
}

// A skipped update leaves the weights as they were, and the ring hands the previous step's buffer on instead
// of copying it. The default dynamic loss scale starts high, so the first steps of an O2 run skip: a dump
// whose window holds skipped and updated steps has, for every rank, the previous step's weights bit for bit
// on each skipped step and new weights on each updated one, the same bits as the trigger step's live weights.
void TestTraining::flightRingCarriesWeightsOverSkippedSteps_data() {
    QTest::addColumn<int>("trigger");
    QTest::newRow("a run of skips, then an update") << 7;
    QTest::newRow("updates around one skip") << 11;
}

void TestTraining::flightRingCarriesWeightsOverSkippedSteps() {
    QFETCH(int, trigger);
    constexpr int kDepth = 4;
    auto run = [&](int depth) {
        TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 3, 8, trigger + 2,
                                     QString("carry-%1-%2.h5").arg(trigger).arg(depth));
        cfg.flightSteps = depth;
        cfg.evalSamples = 0;
        cfg.faults = {"sdc-after@" + std::to_string(trigger) + ":1"};
        Trainer trainer(cfg);
        trainer.run();
        return openRunFile(cfg.out);
    };
    const auto reader = run(kDepth);
    const auto dumps = reader->readFlightDumps();
    QCOMPARE(dumps.size(), size_t(1));
    QCOMPARE(dumps[0].triggerStep, int64_t(trigger));
    std::map<std::pair<int64_t, int>, const std::vector<float>*> weights;
    for (const FlightEntry& e : dumps[0].entries)
        if (e.kind == 2)
            weights[{e.step, e.rank}] = &e.data;
    QCOMPARE(weights.size(), size_t(kDepth * 3));
    auto at = [&](int64_t step, int rank) -> const std::vector<float>& {
        static const std::vector<float> none;
        const auto it = weights.find({step, rank});
        return it == weights.end() ? none : *it->second;
    };
    const auto steps = reader->readSteps(0, reader->stepCount(), false);
    int skipped = 0, updated = 0;
    for (int64_t s = trigger - kDepth + 2; s <= trigger; ++s) {
        const bool skip = steps[size_t(s)].ranks[0].skipped != 0;
        (skip ? skipped : updated) += 1;
        for (int r = 0; r < 3; ++r) {
            const auto& now = at(s, r);
            const auto& before = at(s - 1, r);
            QVERIFY(!now.empty());
            QCOMPARE(now.size(), before.size());
            const bool same = std::memcmp(now.data(), before.data(), now.size() * 4) == 0;
            QVERIFY2(same == skip, qPrintable(QString("step %1 rank %2: skipped %3, weights %4")
                                                  .arg(s)
                                                  .arg(r)
                                                  .arg(skip)
                                                  .arg(same ? "unchanged" : "changed")));
        }
    }
    // The premise: the window holds both kinds (the default loss scale's first skips, then updates).
    QVERIFY2(skipped > 0 && updated > 0,
             qPrintable(QString("%1 skipped, %2 updated").arg(skipped).arg(updated)));
    // The trigger step's weights are the live ones a depth-1 ring dumps.
    const auto live = run(1)->readFlightDumps();
    QCOMPARE(live.size(), size_t(1));
    for (const FlightEntry& e : live[0].entries)
        if (e.kind == 2)
            QVERIFY(e.data == at(e.step, e.rank));
}

void TestTraining::flightRecorderDumpsOnNonFiniteLoss() {
    // A learning rate far too large, no loss scale: the loss explodes to inf/nan, as in a real divergence.
    TrainConfig cfg = tinyConfig(ModelKind::Mlp, 2, 8, 30, "diverge.h5");
    cfg.precision = Precision::O0;
    cfg.lossScale = parseLossScale("none");
    cfg.lr = 100.f;
    cfg.warmupSteps = 0;
    cfg.lrSchedule = "constant";
    cfg.evalSamples = 0;
    Trainer trainer(cfg);
    trainer.run();
    const auto reader = openRunFile(cfg.out);
    const auto dumps = reader->readFlightDumps();
    QVERIFY(!dumps.empty());
    QCOMPARE(dumps[0].reason, std::string("non-finite loss"));
    int64_t firstNonFinite = -1;
    for (const auto& st : reader->readSteps(0, reader->stepCount(), false))
        if (firstNonFinite < 0 && !std::isfinite(st.ranks[0].loss))
            firstNonFinite = st.step;
    QCOMPARE(dumps[0].triggerStep, firstNonFinite);
    bool event = false;
    for (const auto& e : reader->readEvents())
        event = event || e.code == "NONFINITE_LOSS";
    QVERIFY(event);
}

// The all-reduce writes into the flight ring when there is one and works in place when there is not; the
// weights and losses must not care. param-not-synced keeps one parameter's local gradient through both paths.
void TestTraining::telemetryDoesNotChangeWhatIsTrained_data() {
    QTest::addColumn<int>("precision");
    QTest::newRow("O0") << int(Precision::O0);
    QTest::newRow("O2") << int(Precision::O2);
}

void TestTraining::telemetryDoesNotChangeWhatIsTrained() {
    QFETCH(int, precision);
    struct Outcome {
        std::vector<float> losses;
        std::vector<std::vector<uint64_t>> finalWeights;
    };
    auto train = [&](bool telemetry, int flightSteps) {
        TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 3, 8, 12, {});
        cfg.precision = Precision(precision);
        cfg.telemetry = telemetry;
        cfg.flightSteps = flightSteps;
        cfg.writeFile = false;
        cfg.evalSamples = 0;
        cfg.faults = {"param-not-synced"};
        Recorder rec;
        Trainer trainer(cfg);
        trainer.setObserver(&rec);
        const auto summary = trainer.run();
        Outcome o;
        for (const auto& st : rec.steps)
            for (const auto& r : st.ranks)
                o.losses.push_back(r.loss);
        if (summary.completed && !rec.weights.empty())
            o.finalWeights = rec.weights.back().fp;
        return o;
    };
    const Outcome ring = train(true, 3), live = train(true, 1), off = train(false, 3),
                  noRing = train(true, 0);
    QCOMPARE(ring.losses.size(), size_t(3 * 12));
    QCOMPARE(ring.finalWeights.size(), size_t(3));
    QVERIFY(ring.finalWeights[0] != ring.finalWeights[1]); // the fault made the replicas drift apart
    for (const Outcome* o : {&live, &off, &noRing}) {
        QCOMPARE(o->losses.size(), ring.losses.size());
        QVERIFY(std::memcmp(o->losses.data(), ring.losses.data(), ring.losses.size() * 4) == 0);
        QCOMPARE(o->finalWeights, ring.finalWeights);
    }
}

// The cost model's bytes per phase follow the passes the precisions take: at O0 the local statistics ride
// the reduce-scatter and the synced statistics the all-gather (no traffic of their own); under O2 the local
// pass reads the gradient and writes the fp16 payload, the all-reduce carries half the bytes and the synced
// pass converts back; without telemetry the payload is written in the all-reduce; a run reports the model it
// ran.
void TestTraining::stepTrafficFollowsThePasses() {
    TrafficShape s;
    s.numParams = 1000;
    s.ranks = 4;
    s.telemetry = true;
    s.flightDepth = 4;
    const StepTraffic o0 = cardStepTraffic(s);
    QCOMPARE(o0[2].readBytes + o0[2].writtenBytes, 0.0);
    // Ring of 4: the reduce-scatter reads one payload and writes a quarter, the all-gather copies three.
    QCOMPARE(o0[3].readBytes, 4000.0 + 3000.0);
    QCOMPARE(o0[3].writtenBytes, 1000.0 + 3000.0);
    QCOMPARE(o0[4].readBytes + o0[4].writtenBytes, 0.0);
    QCOMPARE(o0[6].readBytes, 12000.0);    // weights, momentum, gradient
    QCOMPARE(o0[6].writtenBytes, 12000.0); // weights, momentum, the flight ring's copy
    QVERIFY(o0[1].compute);
    s.halfPayload = true;
    const StepTraffic o2 = cardStepTraffic(s);
    QCOMPARE(o2[2].readBytes, 4000.0);
    QCOMPARE(o2[2].writtenBytes, 2000.0);
    QCOMPARE(o2[3].readBytes, o0[3].readBytes / 2);
    QCOMPARE(o2[4].readBytes, 2000.0);
    QCOMPARE(o2[4].writtenBytes, 4000.0);
    s.telemetry = false;
    const StepTraffic off = cardStepTraffic(s);
    QCOMPARE(off[2].readBytes, 0.0);
    QCOMPARE(off[3].readBytes, o2[3].readBytes + 4000.0);
    QCOMPARE(off[6].writtenBytes, 8000.0); // no flight ring without telemetry
    // A skipped update runs no optimizer: its bytes follow the steps that updated.
    s.updateShare = 0.25;
    QCOMPARE(cardStepTraffic(s)[6].readBytes, off[6].readBytes / 4);
    // Weight steps: every 10th and the last of 12 is 2 of 12.
    QCOMPARE(weightStepShare(12, 12, 10), 2.0 / 12);

    TrainConfig cfg = tinyConfig(ModelKind::Mlp, 2, 4, 3, {});
    cfg.precision = Precision::O0;
    cfg.lossScale = parseLossScale("none");
    cfg.writeFile = false;
    cfg.evalSamples = 0;
    Trainer trainer(cfg);
    const RunSummary summary = trainer.run();
    QVERIFY(summary.completed);
    QCOMPARE(summary.phaseTraffic[2].readBytes, 0.0);                // in the reduce-scatter's read
    const double gradient = summary.phaseTraffic[3].readBytes / 1.5; // ring of 2: 1.5 reads of the gradient
    QVERIFY(gradient > 0);
    QCOMPARE(summary.phaseTraffic[9].readBytes, gradient * 2 * weightStepShare(3, 3, cfg.weightEvery));
}

// optimizer_shard: each rank updates its chunk of the weights and the ranks all-gather them. The update is
// the same elementwise arithmetic on the same synced gradient, so every loss, every weight row and the final
// weights are the replicated update's bit for bit, at every precision (O3 rounds the gathered weights
// through fp16), with 3 ranks whose chunks are uneven, and with the flight ring keeping the weights.
void TestTraining::shardedUpdateEqualsReplicated_data() {
    QTest::addColumn<int>("precision");
    QTest::newRow("O0") << int(Precision::O0);
    QTest::newRow("O2") << int(Precision::O2);
    QTest::newRow("O3") << int(Precision::O3);
}

void TestTraining::shardedUpdateEqualsReplicated() {
    QFETCH(int, precision);
    auto train = [&](bool shard, std::vector<StepRecord>& steps, std::vector<WeightRecord>& weights) {
        TrainConfig cfg = tinyConfig(ModelKind::SmallCnn, 3, 8, 12, {});
        cfg.precision = Precision(precision);
        cfg.lossScale = parseLossScale(precision == int(Precision::O0) ? "none" : "dynamic");
        cfg.weightEvery = 4;
        cfg.optimizerShard = shard;
        cfg.writeFile = false;
        cfg.evalSamples = 0;
        Recorder rec;
        Trainer trainer(cfg);
        trainer.setObserver(&rec);
        QVERIFY(trainer.run().completed);
        steps = rec.steps;
        weights = rec.weights;
    };
    std::vector<StepRecord> replSteps, shardSteps;
    std::vector<WeightRecord> replWeights, shardWeights;
    train(false, replSteps, replWeights);
    train(true, shardSteps, shardWeights);
    QCOMPARE(shardSteps.size(), size_t(12));
    QCOMPARE(shardSteps.size(), replSteps.size());
    for (size_t s = 0; s < replSteps.size(); ++s)
        for (size_t r = 0; r < 3; ++r) {
            const RankStep &a = replSteps[s].ranks[r], &b = shardSteps[s].ranks[r];
            QVERIFY2(std::memcmp(&a.loss, &b.loss, 4) == 0,
                     qPrintable(QString("step %1 rank %2").arg(s).arg(r)));
            QCOMPARE(a.syncedFp, b.syncedFp);
            QCOMPARE(a.skipped, b.skipped);
        }
    QVERIFY(replWeights.size() >= 3); // step 0, weight steps, the last
    QCOMPARE(shardWeights.size(), replWeights.size());
    for (size_t k = 0; k < replWeights.size(); ++k) {
        QCOMPARE(shardWeights[k].step, replWeights[k].step);
        QCOMPARE(shardWeights[k].fp, replWeights[k].fp);
    }
    QVERIFY(replWeights.back().fp != replWeights.front().fp); // the weights did move
}

// Under the sharded update one rank's optimizer (optimizer-mismatch: its learning rate 1.5x from step 5)
// still acts: its chunk of the weights moves further, for every rank alike, since each takes that chunk from
// it; the weight checks then find the ranks agreeing (they check the all-gather), and what names the rank is
// the learning rate each rank applied (/steps/optimizer_lr), which diagnosis reads.
void TestTraining::shardedUpdateStillShowsOneRanksOptimizer() {
    auto train = [&](const std::vector<std::string>& faults, const QString& file) {
        TrainConfig cfg = tinyConfig(ModelKind::Mlp, 4, 8, 12, file);
        cfg.optimizerShard = true;
        cfg.faults = faults;
        cfg.evalSamples = 0;
        Trainer trainer(cfg);
        QVERIFY(trainer.run().completed);
    };
    train({}, "shard-clean.h5");
    train({"optimizer-mismatch@5:1"}, "shard-optimizer.h5");
    const auto clean = openRunFile(m_dir.filePath("shard-clean.h5").toStdString());
    const auto faulty = openRunFile(m_dir.filePath("shard-optimizer.h5").toStdString());
    const auto cleanWeights = clean->readWeights();
    const auto weights = faulty->readWeights();
    QCOMPARE(weights.size(), cleanWeights.size());
    for (const WeightRecord& w : weights)
        for (int r = 1; r < 4; ++r)
            QCOMPARE(w.fp[size_t(r)], w.fp[0]); // the all-gather: every rank holds the same weights
    QVERIFY(weights.back().fp[0] != cleanWeights.back().fp[0]); // the fault took effect
    for (const StepRecord& st : faulty->readSteps(0, faulty->stepCount(), false)) {
        const float others = st.ranks[0].optimizerLr;
        QVERIFY(others > 0);
        QCOMPARE(st.ranks[2].optimizerLr, others);
        if (st.step >= 5)
            QCOMPARE(st.ranks[1].optimizerLr, others * 1.5f);
        else
            QCOMPARE(st.ranks[1].optimizerLr, others);
    }
    const auto findings = diagnoseRun(*faulty);
    QVERIFY2(!findings.empty(), "the sharded run's optimizer fault went unnamed");
    QCOMPARE(findings.front().key(), std::string("optimizer-mismatch"));
    QCOMPARE(findings.front().ranks, std::vector<int>{1});
    QCOMPARE(findings.front().firstStep, int64_t(5));
    QVERIFY2(findings.front().evidence.find("optimizer_shard") != std::string::npos,
             findings.front().evidence.c_str());
    // Of the clean run's findings only a straggler may stand (a card's thread slowed by a busy machine); no
    // rank's optimizer, gradient or weights may be named.
    for (const Finding& f : diagnoseRun(*clean))
        QVERIFY2(f.key() == "straggler", (f.key() + ": " + f.evidence).c_str());
}

QTEST_GUILESS_MAIN(TestTraining)
#include "tst_training.moc"
