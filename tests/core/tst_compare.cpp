// Comparing a run with a reference (compare/RunComparison.h, `ranksight-cli compare`), on runs the trainer
// records: runs of the same configuration are equal bit for bit; a flip before the all-reduce, which the
// cross-rank checks cannot see, is found against a clean reference at its step; runs that differ only by
// the all-reduce's arithmetic (a flat ring against the hierarchical sum, 4 cards x 32 against 1 card x 128)
// compare within the derived tolerance; a spread reference (the reference's job with other arithmetic)
// measures the drift such runs accumulate over many steps, so that it is not taken for a fault while a
// fault still is; other configurations are named; the command's exit codes and JSON; and diagnosis against
// a reference names the causes every rank shares, which the cross-rank checks miss.
#include "CliTrain.h"
#include "compare/CompareRuns.h"
#include "diagnose/Diagnoser.h"
#include "reader/OpenRunFile.h"
#include "reader/ReferenceRuns.h"
#include "store/Hdf5Lock.h"

#include <H5Cpp.h>
#include <QFile>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <stdexcept>

using namespace rs;

class TestCompare : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void sameConfigurationIsBitwiseEqual();
    void flipBeforeTheAllReduceFoundAtItsStep_data();
    void flipBeforeTheAllReduceFoundAtItsStep();
    void flatRingAgainstHierarchicalWithinTolerance();
    void cardsAgainstOneCardOfTheSameGlobalBatch();
    void aSpreadTellsDriftFromAFault();
    void aSpreadFollowsOverflowSkipsUnderO2();
    void aSpreadMustRunTheReferencesJob();
    void anotherConfigurationIsNamed();
    void cliExitCodesAndJson();
    void diagnosisWithAReference_data();
    void diagnosisWithAReference();
    void referenceOfTheSameRunAddsNothing();
    void importsCompareOnWhatBothRecorded();
    void localFingerprintsOfAnotherDefinitionAreNotMatched();

private:
    QString trainRun(const QStringList& args, const QString& name);
    RunComparison compare(const QString& a, const QString& b, const QStringList& spreads = {});
    QTemporaryDir m_dir;
    QHash<QString, QStringList> m_trained; // file name -> the arguments it was trained with
    QString m_clean;                       // MLP, 4 cards, 20 steps, the defaults otherwise
};

// Trains once per name: a second call with the same name and arguments returns the file already trained.
QString TestCompare::trainRun(const QStringList& args, const QString& name) {
    const auto it = m_trained.constFind(name);
    if (it != m_trained.constEnd() && it.value() == args)
        return m_dir.filePath(name);
    const QString out = trainWithCli(m_dir.filePath(name), args);
    if (!out.isEmpty())
        m_trained.insert(name, args);
    return out;
}

RunComparison TestCompare::compare(const QString& a, const QString& b, const QStringList& spreads) {
    const auto ra = openRunFile(a.toStdString());
    std::vector<std::string> paths;
    for (const QString& s : spreads)
        paths.push_back(s.toStdString());
    const ReferenceRuns refs = openReferences(b.toStdString(), paths);
    return compareRuns(*ra, *refs.reference, {}, refs.spreads);
}

void TestCompare::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_clean = trainRun({"--model", "mlp", "--ranks", "4", "--steps", "20"}, "clean.h5");
    QVERIFY(!m_clean.isEmpty());
}

void TestCompare::sameConfigurationIsBitwiseEqual() {
    const QString again = trainRun({"--model", "mlp", "--ranks", "4", "--steps", "20"}, "again.h5");
    QVERIFY(!again.isEmpty());
    const RunComparison c = compare(again, m_clean);
    QCOMPARE(c.expectation, Expectation::Bitwise);
    QVERIFY(c.differences.empty());
    QCOMPARE(c.alignedSteps, int64_t(20));
    QVERIFY2(!c.first, c.first ? c.first->statistic.c_str() : "");
    QCOMPARE(c.bitwiseThrough, int64_t(19));
    QCOMPARE(c.tolerance.norm(1.0, 1.0, 1.0), 0.0); // equality, not a tolerance
    for (const char* s : {"synced_fp", "weight_fp", "local_norm", "loss", "lr", "skipped"})
        QVERIFY2(std::find(c.compared.begin(), c.compared.end(), s) != c.compared.end(), s);
    QCOMPARE(c.perParameter.size(), size_t(6));
    for (const ParameterComparison& p : c.perParameter)
        QCOMPARE(p.worstExcess, 0.0);
    // Each rank against the same rank of the reference: nothing at all on runs equal bit for bit (against
    // the reference's mean loss, each rank's line swung by its own shard's loss).
    QVERIFY(c.lossDeviationPerRank);
    QCOMPARE(c.lossDeviation.size(), size_t(20 * 4));
    for (float d : c.lossDeviation)
        QCOMPARE(d, 0.0f);
}

// The README's bit-flip table: sdc-before@8:2:BIT on the MLP, 4 cards, 20 steps, the defaults otherwise. The
// cross-rank checks see only bit 30; against a clean reference every flip shows at step 8 on rank 2, in the
// parameter it struck, first in the local gradient's fingerprint: also the low mantissa bits, which the
// rounding to fp16 on the way to the all-reduce erases before any rank receives them.
void TestCompare::flipBeforeTheAllReduceFoundAtItsStep_data() {
    QTest::addColumn<int>("bit");
    for (int bit : {0, 8, 16, 20, 22, 23, 25, 27, 29, 30, 31})
        QTest::addRow("bit %d", bit) << bit;
}

void TestCompare::flipBeforeTheAllReduceFoundAtItsStep() {
    QFETCH(int, bit);
    const QString run = trainRun({"--model", "mlp", "--ranks", "4", "--steps", "20", "--fault",
                                  QStringLiteral("sdc-before@8:2:%1").arg(bit)},
                                 QStringLiteral("flip%1.h5").arg(bit));
    QVERIFY(!run.isEmpty());
    const RunComparison c = compare(run, m_clean);
    QCOMPARE(c.expectation, Expectation::Bitwise); // the fault is not in the configuration
    QVERIFY(c.first);
    QCOMPARE(c.first->step, int64_t(8));
    QCOMPARE(c.first->ranks, std::vector<int>{2});
    QCOMPARE(c.first->parameter, std::string("fc1.weight"));
    QCOMPARE(c.first->statistic, std::string("local_fp"));
    QCOMPARE(c.bitwiseThrough, int64_t(7));
    // Every parameter of the reference up to step 7 agreed to the bit.
    for (const ParameterComparison& p : c.perParameter)
        QVERIFY(!p.first || p.first->step >= 8);
}

// fp32 arithmetic (O0: the point of the test, the rounding tolerance of fp32 sums), the default 100 steps:
// the same cards reduced as one flat ring and as 2 servers x 2 cards.
void TestCompare::flatRingAgainstHierarchicalWithinTolerance() {
    const QStringList common{"--model", "mlp", "--ranks", "4", "--precision", "O0"};
    const QString flat = trainRun(common, "flat.h5");
    const QString hier = trainRun(common + QStringList{"--set", "devices_per_server=2"}, "hier.h5");
    QVERIFY(!flat.isEmpty() && !hier.isEmpty());
    const RunComparison c = compare(flat, hier);
    QCOMPARE(c.expectation, Expectation::Rounding);
    QCOMPARE(c.shapeA.name, std::string("flat ring over 4 cards"));
    QCOMPARE(c.shapeB.name, std::string("hierarchical: 2 servers x 2 cards"));
    QCOMPARE(c.alignedSteps, int64_t(100));
    QVERIFY2(!c.first, c.first ? (c.first->statistic + " at " + std::to_string(c.first->step)).c_str() : "");
    // They do differ, in the bits: the tolerance is what keeps them equal.
    QVERIFY(c.bitwiseThrough < 99);
    double worst = 0;
    for (const ParameterComparison& p : c.perParameter)
        worst = std::max(worst, p.worstExcess);
    QVERIFY(worst > 0 && worst <= 1);
}

// N cards x b against 1 card x N*b: the same global batch (the union of the cards' samples is the one card's
// batch, checked), every card's synced gradient against the one card's, within tolerance over 300 steps.
void TestCompare::cardsAgainstOneCardOfTheSameGlobalBatch() {
    const QStringList common{"--model", "mlp", "--precision", "O0", "--steps", "300"};
    const QString cards = trainRun(
        common + QStringList{"--ranks", "4", "--batch", "32", "--set", "devices_per_server=2"}, "c4.h5");
    const QString one = trainRun(common + QStringList{"--ranks", "1", "--batch", "128"}, "c1.h5");
    QVERIFY(!cards.isEmpty() && !one.isEmpty());
    const RunComparison c = compare(cards, one);
    QCOMPARE(c.expectation, Expectation::Rounding);
    QCOMPARE(c.alignedSteps, int64_t(300));
    QVERIFY(std::find(c.compared.begin(), c.compared.end(), "global_batch") != c.compared.end());
    QVERIFY(std::find(c.compared.begin(), c.compared.end(), "synced_norm") != c.compared.end());
    QVERIFY2(!c.first, c.first ? (c.first->statistic + " at " + std::to_string(c.first->step)).c_str() : "");
    // No rank of the cards has a counterpart in the one card: one line, the cards' mean loss against the
    // card's, which is the same global batch's loss up to rounding.
    QVERIFY(!c.lossDeviationPerRank);
    QCOMPARE(c.lossDeviation.size(), size_t(300));
    for (size_t i = 0; i < 5; ++i)
        QVERIFY2(std::abs(c.lossDeviation[i]) < 1e-4f,
                 qPrintable(QString::number(double(c.lossDeviation[i]))));

    // The same pair with a learning rate 10% higher on the cards: named, and parted from the first update.
    const QString faster =
        trainRun(common + QStringList{"--ranks", "4", "--batch", "32", "--set", "devices_per_server=2",
                                      "--lr", QString::number(0.05 * 1.1)},
                 "c4-lr.h5");
    QVERIFY(!faster.isEmpty());
    const RunComparison d = compare(faster, one);
    QCOMPARE(d.expectation, Expectation::Different);
    QVERIFY(d.first);
    QCOMPARE(d.first->statistic, std::string("lr"));
}

// 4 cards x 32 as one flat ring against 1 card x 128 (O0, 300 steps): their weights carry slightly different
// rounding from the first update on, and over the run that drift outgrows the one-step bound. 2 cards x 64
// of the same job, the spread, drifts from the reference as far: against it the pair agrees. A flip before
// the all-reduce at step 100 is still found at its step. How fast rounding differences grow depends on the
// BLAS kernels of the machine: at the default learning rate the pair parted at step 152 on one host and not
// within 300 steps on another, so the job runs at twice it (parted at step 77 on the second).
void TestCompare::aSpreadTellsDriftFromAFault() {
    const QStringList common{"--model", "mlp", "--precision", "O0", "--steps", "300", "--lr", "0.1"};
    const QString one = trainRun(common + QStringList{"--ranks", "1", "--batch", "128"}, "s1.h5");
    const QString flat = trainRun(common + QStringList{"--ranks", "4", "--batch", "32"}, "s4-flat.h5");
    const QString two = trainRun(common + QStringList{"--ranks", "2", "--batch", "64"}, "s2.h5");
    QVERIFY(!one.isEmpty() && !flat.isEmpty() && !two.isEmpty());

    const RunComparison bound = compare(flat, one);
    QVERIFY2(
        bound.first && bound.first->step > bound.firstStep && bound.first->tolerance > 0,
        "the one-step bound was expected to miss this drift: the test no longer shows what a spread does");
    QVERIFY(bound.spreads.empty() && !bound.spreadUsed);

    const RunComparison c = compare(flat, one, {two});
    QVERIFY(c.spreadUsed);
    QCOMPARE(c.spreads.size(), size_t(1));
    QVERIFY(c.spreads[0].parted); // the spread drifted beyond the bound too: that is what it measured
    QVERIFY2(!c.first, c.first ? (c.first->statistic + " at " + std::to_string(c.first->step)).c_str() : "");

    const QString flip =
        trainRun(common + QStringList{"--ranks", "4", "--batch", "32", "--fault", "sdc-before@100:2:30"},
                 "s4-flip.h5");
    QVERIFY(!flip.isEmpty());
    const RunComparison f = compare(flip, one, {two});
    QVERIFY(f.first);
    QCOMPARE(f.first->step, int64_t(100));
    QCOMPARE(f.updatesDifferFrom, int64_t(-1)); // a skip after a divergence is its consequence, not drift
}

// Under O2 every update carries fp16's rounding, so a flat ring and the hierarchical sum part within tens of
// steps, and from then on an overflow may fall on other steps in each. A spread of the same job on 4 servers
// of 1 card drifts from the reference the same way: the pair agrees against it, and where the two skipped
// other updates the steps after are compared only on what no arithmetic changes (grey on the map).
void TestCompare::aSpreadFollowsOverflowSkipsUnderO2() {
    const QStringList common{"--model", "mlp", "--ranks", "4"};
    const QString flat = trainRun(common, "o2-flat.h5");
    const QString hier = trainRun(common + QStringList{"--set", "devices_per_server=2"}, "o2-hier.h5");
    const QString single = trainRun(common + QStringList{"--set", "devices_per_server=1"}, "o2-4x1.h5");
    QVERIFY(!flat.isEmpty() && !hier.isEmpty() && !single.isEmpty());
    QVERIFY(compare(hier, flat).first); // the one-step bound alone cannot follow O2's drift

    const RunComparison c = compare(hier, flat, {single});
    QVERIFY2(!c.first, c.first ? (c.first->statistic + " at " + std::to_string(c.first->step)).c_str() : "");
    QCOMPARE(c.spreads.size(), size_t(1));
    QVERIFY(c.spreads[0].discreteFrom >= 0);
    // The map's rows after it are not judged; those up to it are, but for the steps a run skipped once the
    // spread had shown that overflows move.
    const auto ra = openRunFile(hier.toStdString());
    const auto rb = openRunFile(flat.toStdString());
    const auto stepsA = ra->readSteps(0, ra->stepCount(), false);
    const auto stepsB = rb->readSteps(0, rb->stepCount(), false);
    const auto skipped = [](const StepRecord& s) {
        return std::any_of(s.ranks.begin(), s.ranks.end(), [](const RankStep& r) { return r.skipped != 0; });
    };
    const int64_t through = c.updatesDifferFrom >= 0 ? c.updatesDifferFrom : c.lastStep;
    QVERIFY(c.updatesDifferFrom < 0 || c.updatesDifferFrom >= c.spreads[0].discreteFrom);
    const size_t P = c.perParameter.size();
    for (size_t row = 0; row < c.mapSteps.size(); ++row) {
        const int64_t step = c.mapSteps[row];
        const bool drifted = step >= c.spreads[0].discreteFrom &&
                             (skipped(stepsA[size_t(step)]) || skipped(stepsB[size_t(step)]));
        QVERIFY2(std::isnan(c.mapExcess[row * P]) == (step > through || drifted),
                 qPrintable(QString("step %1").arg(step)));
    }
}

// A spread that is not the reference's job, or that does its arithmetic, measures nothing: refused, named.
// Where the runs themselves do the same arithmetic, the spread is not used: they must agree bit for bit.
void TestCompare::aSpreadMustRunTheReferencesJob() {
    const QString hier =
        trainRun({"--model", "mlp", "--ranks", "4", "--steps", "20", "--set", "devices_per_server=2"},
                 "spread-hier.h5");
    const QString seed2 =
        trainRun({"--model", "mlp", "--ranks", "4", "--steps", "20", "--seed", "2"}, "seed2.h5");
    QVERIFY(!hier.isEmpty() && !seed2.isEmpty());
    auto refused = [&](const QString& spread) -> std::string {
        try {
            compare(hier, m_clean, {spread});
        } catch (const std::invalid_argument& e) {
            return e.what();
        }
        return {};
    };
    const std::string other = refused(seed2);
    QVERIFY2(other.find("spread reference " + seed2.toStdString()) != std::string::npos &&
                 other.find("seed: 1 vs 2") != std::string::npos,
             other.c_str());
    const std::string same = refused(m_clean);
    QVERIFY2(same.find("measures no drift") != std::string::npos, same.c_str());

    const RunComparison bitwise = compare(m_clean, m_clean, {hier});
    QCOMPARE(bitwise.expectation, Expectation::Bitwise);
    QVERIFY(!bitwise.spreadUsed && !bitwise.first);
}

void TestCompare::anotherConfigurationIsNamed() {
    const QString seed2 =
        trainRun({"--model", "mlp", "--ranks", "4", "--steps", "20", "--seed", "2"}, "seed2.h5");
    QVERIFY(!seed2.isEmpty());
    const RunComparison c = compare(seed2, m_clean);
    QCOMPARE(c.expectation, Expectation::Different);
    QVERIFY(std::find(c.differences.begin(), c.differences.end(), "seed: 2 vs 1") != c.differences.end());
    QVERIFY(c.first);
    QCOMPARE(c.first->step, int64_t(0));
    QCOMPARE(c.first->statistic, std::string("sample_fp")); // other data first: the order data flows
}

void TestCompare::cliExitCodesAndJson() {
    const QString flip = trainRun(
        {"--model", "mlp", "--ranks", "4", "--steps", "20", "--fault", "sdc-before@8:2:25"}, "cli-flip.h5");
    QVERIFY(!flip.isEmpty());
    QProcess p;
    p.start(RANKSIGHT_CLI, {"compare", m_clean, m_clean, "--json"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QJsonObject j = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QVERIFY(j.value("first_divergence").isNull());
    QCOMPARE(j.value("aligned_steps").toInt(), 20);
    QCOMPARE(j.value("expected").toString(), QString("bitwise"));
    QCOMPARE(j.value("per_parameter").toArray().size(), 6);
    QVERIFY(j.value("compared").toArray().contains(QString("synced_fp")));
    QVERIFY(j.value("not_compared").isArray());

    p.start(RANKSIGHT_CLI, {"compare", flip, m_clean, "--json"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 3);
    j = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    const QJsonObject d = j.value("first_divergence").toObject();
    QCOMPARE(d.value("step").toInt(), 8);
    QCOMPARE(d.value("parameter").toString(), QString("fc1.weight"));
    QCOMPARE(d.value("ranks").toArray(), QJsonArray{2});
    QVERIFY(d.contains("statistic") && d.contains("a") && d.contains("b") && d.contains("tolerance"));

    p.start(RANKSIGHT_CLI, {"compare", flip, m_clean});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 3);
    const QString text = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(text.contains("first divergence: step 8, fc1.weight") && text.contains("equal bit for bit"),
             qPrintable(text));

    const QString missing = m_dir.filePath("missing.h5");
    p.start(RANKSIGHT_CLI, {"compare", flip, missing});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
    QVERIFY2(err.contains("missing.h5") && !err.contains('\n'), qPrintable(err));

    p.start(RANKSIGHT_CLI, {"compare", flip});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
}

// Faults every rank shares (or that the all-reduce averages into every rank), against a clean reference of
// the same configuration: the cross-rank checks name nothing (sdc-before's flip of bit 25 does not make an
// element huge), diagnose --reference names the cause at its step.
void TestCompare::diagnosisWithAReference_data() {
    QTest::addColumn<QString>("fault");
    QTest::addColumn<QString>("cause");
    QTest::addColumn<int>("step");
    QTest::addColumn<std::vector<int>>("ranks");
    QTest::addColumn<bool>("crossRankSees");
    QTest::newRow("sdc-before bit 25") << "sdc-before@8:2:25"
                                       << "sdc-before" << 8 << std::vector<int>{2} << false;
    QTest::newRow("update-changed") << "update-changed@6"
                                    << "update-changed" << 6 << std::vector<int>{0, 1, 2, 3} << false;
    QTest::newRow("loss-scale-changed") << "loss-scale-changed@6"
                                        << "loss-scale-changed" << 6 << std::vector<int>{0, 1, 2, 3} << false;
    QTest::newRow("allreduce-wrong") << "allreduce-wrong@6"
                                     << "allreduce-wrong" << 6 << std::vector<int>{0, 1, 2, 3} << false;
    QTest::newRow("grad-sum") << "grad-sum"
                              << "grad-sum" << -1 << std::vector<int>{0, 1, 2, 3} << true;
}

void TestCompare::diagnosisWithAReference() {
    QFETCH(QString, fault);
    QFETCH(QString, cause);
    QFETCH(int, step);
    QFETCH(std::vector<int>, ranks);
    QFETCH(bool, crossRankSees);
    const QString run =
        trainRun({"--model", "mlp", "--ranks", "4", "--steps", "20", "--fault", fault},
                 QStringLiteral("ref-%1.h5").arg(QString(QTest::currentDataTag()).replace(' ', '-')));
    QVERIFY(!run.isEmpty());
    const auto reader = openRunFile(run.toStdString());
    const auto clean = openRunFile(m_clean.toStdString());
    const auto alone = diagnoseRun(*reader);
    const bool seenAlone = std::any_of(alone.begin(), alone.end(),
                                       [&](const Finding& f) { return f.key() == cause.toStdString(); });
    QCOMPARE(seenAlone, crossRankSees);
    const RunComparison c = compareRuns(*reader, *clean);
    const auto found = diagnoseRun(*reader, {}, nullptr, nullptr, &c);
    QVERIFY2(!found.empty(), "no finding against the reference");
    const Finding& top = found.front();
    QCOMPARE(QString::fromStdString(top.key()), cause);
    if (step >= 0)
        QCOMPARE(top.firstStep, int64_t(step));
    QCOMPARE(top.ranks, ranks);
    QVERIFY(!top.evidence.empty() && !top.fix.empty());

    QProcess p;
    p.start(RANKSIGHT_CLI, {"diagnose", run, "--reference", m_clean, "--json"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 3);
    const QJsonObject j = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(j.value("findings").toArray().at(0).toObject().value("cause").toString(), cause);
    QVERIFY(j.value("reference").toObject().value("first_divergence").isObject());
}

// A clean run against a reference of the same configuration: no finding, and the reference-only checks are
// not listed as "could not run" without a reference.
void TestCompare::referenceOfTheSameRunAddsNothing() {
    const auto reader = openRunFile(m_clean.toStdString());
    const RunComparison c = compareRuns(*reader, *reader);
    std::vector<CheckNotRun> withRef, without;
    QVERIFY(diagnoseRun(*reader, {}, nullptr, &withRef, &c).empty());
    QVERIFY(diagnoseRun(*reader, {}, nullptr, &without).empty());
    QCOMPARE(withRef.size(), without.size());
    QProcess p;
    p.start(RANKSIGHT_CLI, {"diagnose", m_clean, "--reference", m_dir.filePath("nothing.h5")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("reference"));
}

// Runs of other sources compare on what both recorded: two msprobe Monitor V2 trees of one job (the
// generator's, the same seed), one with the gradients summed instead of averaged. No configuration and no
// fingerprints: the expectation is "unknown", the synced norms compare with a ring's rounding, and the sum
// is found at the first step and named against the reference.
void TestCompare::importsCompareOnWhatBothRecorded() {
    auto tree = [&](const QString& mistake) {
        const QString dir = m_dir.filePath("tree-" + mistake),
                      out = m_dir.filePath("msprobe-" + mistake + ".h5");
        QProcess gen;
        gen.start("/usr/bin/python3", {RANKSIGHT_SOURCE_DIR "/tests/msprobe/make_msprobe_tree.py", dir,
                                       "--layout", "v2", "--mistake", mistake});
        if (!gen.waitForFinished(60000) || gen.exitCode() != 0)
            return QString();
        QProcess imp;
        imp.start(RANKSIGHT_CLI, {"import-msprobe", dir, "--out", out, "--quiet"});
        return imp.waitForFinished(60000) && imp.exitCode() == 0 ? out : QString();
    };
    const QString clean = tree("none"), summed = tree("grad-sum");
    QVERIFY(!clean.isEmpty() && !summed.isEmpty());
    const RunComparison same = compare(clean, clean);
    QCOMPARE(same.expectation, Expectation::Unknown);
    QVERIFY(same.shapeA.assumed);
    QVERIFY(!same.first);
    QVERIFY(!same.fingerprints);
    QCOMPARE(same.bitwiseThrough, int64_t(-1));
    QVERIFY(std::find(same.compared.begin(), same.compared.end(), "synced_norm") != same.compared.end());
    const auto fp = std::find_if(same.notCompared.begin(), same.notCompared.end(),
                                 [](const NotCompared& n) { return n.statistic == "synced_fp"; });
    QVERIFY(fp != same.notCompared.end() && fp->reason == "not recorded by either run");

    const RunComparison c = compare(summed, clean);
    QVERIFY(c.first);
    QCOMPARE(c.first->step, int64_t(0));
    QCOMPARE(c.first->statistic, std::string("synced_norm"));
    const auto reader = openRunFile(summed.toStdString());
    const auto found = diagnoseRun(*reader, {}, nullptr, nullptr, &c);
    QVERIFY(std::any_of(found.begin(), found.end(), [](const Finding& f) { return f.key() == "grad-sum"; }));
}

QTEST_GUILESS_MAIN(TestCompare)
// A file that defines its local fingerprints otherwise (written before local_fp_version 2: no attribute,
// format 2) against one of version 2, both of the same job, bit for bit the same arithmetic: the local
// fingerprints are listed as not compared, with the reason, and neither break the bit-for-bit stretch nor
// make a divergence; every other statistic still is compared.
void TestCompare::localFingerprintsOfAnotherDefinitionAreNotMatched() {
    const QString old = m_dir.filePath("old-local-fp.h5");
    QFile::remove(old);
    QVERIFY(QFile::copy(m_clean, old));
    {
        Hdf5Guard guard;
        H5::H5File f(old.toStdString(), H5F_ACC_RDWR);
        f.removeAttr("local_fp_version");
        const int two = 2;
        f.removeAttr("format_version");
        f.createAttribute("format_version", H5::PredType::STD_I32LE, H5::DataSpace(H5S_SCALAR))
            .write(H5::PredType::NATIVE_INT, &two);
    }
    QCOMPARE(openRunFile(old.toStdString())->meta().localFpVersion, 1);
    QCOMPARE(openRunFile(m_clean.toStdString())->meta().localFpVersion, 2);
    for (const auto& [a, b] : {std::pair{old, m_clean}, std::pair{m_clean, old}}) {
        const RunComparison c = compare(a, b);
        QCOMPARE(c.expectation, Expectation::Bitwise);
        QVERIFY2(!c.first, c.first ? c.first->statistic.c_str() : "");
        QCOMPARE(c.bitwiseThrough, int64_t(19));
        QVERIFY(std::find(c.compared.begin(), c.compared.end(), "local_fp") == c.compared.end());
        QVERIFY(std::find(c.compared.begin(), c.compared.end(), "synced_fp") != c.compared.end());
        QVERIFY(std::find(c.compared.begin(), c.compared.end(), "local_norm") != c.compared.end());
        const auto it = std::find_if(c.notCompared.begin(), c.notCompared.end(),
                                     [](const NotCompared& n) { return n.statistic == "local_fp"; });
        QVERIFY(it != c.notCompared.end());
        QVERIFY2(it->reason.find("local_fp_version") != std::string::npos, it->reason.c_str());
    }
}

#include "tst_compare.moc"
