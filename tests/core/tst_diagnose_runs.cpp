// Diagnosis of real run files: clean runs of the trainer have no findings, a growing file diagnosed pass by
// pass ends as one pass over the whole, configuration advice is not a finding, and `ranksight-cli diagnose`'s
// exit codes and JSON.
#include "CliTrain.h"
#include "DiagnoseSim.h"
#include "compare/CompareRuns.h"
#include "diagnose/Advice.h"
#include "reader/OpenRunFile.h"
#include "store/RunWriter.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>

using namespace rs;
using namespace diagnose_sim;

class TestDiagnoseRuns : public QObject {
    Q_OBJECT

private slots:
    void wholeRunReadsFitTheReadersMemory();
    void followingAGrowingFileEqualsReadingItWhole();
    void cleanRealRuns();
    void cleanRunAt64RanksNamesNoStraggler();
    void cliExitCodes();
    void configAdviceIsNotAFinding();
    void anUnsyncedSkipIsNotAlsoCorruption();

private:
    QString trainRun(const QStringList& args, const QString& name);
    QTemporaryDir m_dir;
    QString m_cleanFile;
};

// A live run diagnosed pass by pass, each reading only the rows added since the last, ends with the same
// findings as one pass over the finished file (what the window's diagnosis runner relies on).
void TestDiagnoseRuns::followingAGrowingFileEqualsReadingItWhole() {
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
    const auto live = openRunFile(path.toStdString());
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
    const auto whole = diagnoseRun(*openRunFile(path.toStdString()));
    const auto followed = d.findings();
    QVERIFY2(!whole.empty(), "the fixture's data should give findings to compare");
    QCOMPARE(followed.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) {
        QCOMPARE(followed[i].key(), whole[i].key());
        QCOMPARE(followed[i].ranks, whole[i].ranks);
        QCOMPARE(followed[i].firstStep, whole[i].firstStep);
        QCOMPARE(followed[i].evidence, whole[i].evidence);
    }
}

void TestDiagnoseRuns::cleanRealRuns() {
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
        const auto reader = openRunFile(path.toStdString());
        int last = -1;
        bool monotonic = true;
        const auto f = diagnoseRun(*reader, [&](int p) {
            monotonic = monotonic && p >= last;
            last = p;
        });
        QVERIFY2(f.empty(), qPrintable(args.join(' ') + "\n" + describe(f)));
        QVERIFY(monotonic);
        // The wait for a free core is part of the compute time, measured on every card and step.
        for (const auto& st : reader->readSteps(0, reader->stepCount(), true))
            for (const auto& x : st.ranks)
                QVERIFY2(x.cpuWaitMs >= 0 && x.cpuWaitMs <= x.computeMs + 0.5f,
                         qPrintable(QStringLiteral("step %1: wait %2 ms of compute %3 ms")
                                        .arg(st.step)
                                        .arg(double(x.cpuWaitMs))
                                        .arg(double(x.computeMs))));
        QCOMPARE(last, 100);
        m_cleanFile = path;
    }
}

// 64 emulated cards on the suite's 2 cores: scheduling makes random cards 2x to 20x slow on random steps
// (measured: in a clean 30-step run some card is 2x slow on 8 to 10 of 28 steps), and no card is named a
// straggler; the check did run and count them.
void TestDiagnoseRuns::cleanRunAt64RanksNamesNoStraggler() {
    const QStringList args{"--model", "smallcnn", "--ranks", "64",     "--batch",
                           "8",       "--steps",  "20",      "--seed", "5"};
    const QString path = trainRun(args, QStringLiteral("clean64.h5"));
    QVERIFY2(!path.isEmpty(), qPrintable(args.join(' ')));
    std::string figures;
    const auto f = diagnoseRun(*openRunFile(path.toStdString()), {}, &figures);
    for (const auto& x : f)
        QVERIFY2(x.key() != "straggler", qPrintable(describe(f)));
    QVERIFY2(QString::fromStdString(figures).contains(
                 QRegularExpression("slowest-by-2x steps per rank \\[[^]]*\\] of 18")),
             figures.c_str());
}

void TestDiagnoseRuns::cliExitCodes() {
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

// Advice comes from the configuration; findings from what training did. An O2 MLP without a loss scale
// flushes almost no gradient element (its gradients are large): advice, no finding, exit 0.
void TestDiagnoseRuns::configAdviceIsNotAFinding() {
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

// A rank that skips an overflowed step alone halves its loss scale alone, and from then on its unscaled
// synced gradient differs from the others' (the same all-reduced bytes over another scale). That is
// overflow-not-synced's doing, not a corrupted copy: found by the fault sweep (real images, 6 cards), where
// sdc-after was named beside it.
void TestDiagnoseRuns::anUnsyncedSkipIsNotAlsoCorruption() {
    const QString path =
        trainRun({"--model", "smallcnn", "--ranks", "6", "--steps", "20", "--precision", "O2", "--data",
                  "fashion-mnist", "--seed", "249", "--fault", "overflow-not-synced"},
                 "unsynced-skip.h5");
    QVERIFY(!path.isEmpty());
    const auto reader = openRunFile(path.toStdString());
    const auto f = diagnoseRun(*reader);
    QStringList keys;
    for (const Finding& x : f)
        keys << QString::fromStdString(x.key() + ": " + x.evidence);
    QVERIFY2(!f.empty(), "the unsynced skip went unnamed");
    QCOMPARE(QString::fromStdString(f.front().key()), QString("overflow-not-synced"));
    // Six cards on a busy machine may also show a straggler (timing); no finding may call the gradients
    // corrupted.
    for (size_t k = 1; k < f.size(); ++k)
        QVERIFY2(f[k].key() == "straggler", qPrintable(keys.join("\n")));
}

QString TestDiagnoseRuns::trainRun(const QStringList& args, const QString& name) {
    return trainWithCli(m_dir.filePath(name), args);
}

// A run whose per-parameter rows of 250 steps need more memory than the reader process may use (as a
// 1,024-rank ResNet-50 run's 256-step chunks needed 5 GB): diagnosis and comparison read it in chunks sized
// to the run (stepsPerRead), so they finish where one read of every step is refused.
void TestDiagnoseRuns::wholeRunReadsFitTheReadersMemory() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    QSKIP("sanitizer builds do not limit the reader's address space");
#endif
    QTemporaryDir dir;
    const QString path = dir.filePath("wide.h5");
    const RunMeta meta = runfile_fixtures::makeMeta(32, 300, 16, 4);
    {
        auto w = RunWriter::create(path.toStdString(), meta, true);
        for (int s = 0; s < 250; ++s)
            w->appendStep(runfile_fixtures::makeStep(meta, s));
        w->close("completed");
    }
    qputenv("RANKSIGHT_READER_MEMORY_MB", "400");
    const auto unset = qScopeGuard([] { qunsetenv("RANKSIGHT_READER_MEMORY_MB"); });
    const auto r = openRunFile(path.toStdString());
    QVERIFY(stepsPerRead(meta, 256) < 250);
    bool refused = false;
    try {
        r->readSteps(0, 250, true);
    } catch (const std::exception& e) {
        refused = std::string(e.what()).find("out of memory") != std::string::npos;
    }
    QVERIFY(refused); // the file is too wide to read whole under this limit
    try {
        const auto findings = diagnoseRun(*r);
        const RunComparison c = compareRuns(*r, *openRunFile(path.toStdString()));
        QCOMPARE(c.alignedSteps, int64_t(250));
        QVERIFY(!c.first);
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
}

QTEST_GUILESS_MAIN(TestDiagnoseRuns)
#include "tst_diagnose_runs.moc"
