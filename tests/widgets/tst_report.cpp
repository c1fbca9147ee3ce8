// The bug-report folder end to end: ReportExporter on a RunModel (report.md, every chart as PNG and SVG,
// steps.csv, events.csv, slice.h5 around the first anomaly), its refusals, `ranksight-cli report` and a smoke
// run of `ranksight-cli bench-open`.
#include "core/RunFileFixtures.h"
#include "model/RunModel.h"
#include "reader/OpenRunFile.h"
#include "report/ReportExporter.h"
#include "store/RunReader.h"
#include "store/RunWriter.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace rs;

namespace {

constexpr int kSteps = 300, kRanks = 4, kMismatchStep = 120;

// A run whose rank 2 receives a different synced gradient from step 120 on, with the GRADIENT_SYNC event the
// trainer logs for it, a few overflow events before, weight rows and evaluations.
void writeFixture(const QString& path, int steps, bool mismatch, const std::string& lossScale = "dynamic") {
    RunMeta meta = runfile_fixtures::makeMeta(kRanks, 6, 4, 8);
    meta.lossScale = lossScale;
    auto w = RunWriter::create(path.toStdString(), meta);
    for (int s = 0; s < steps; ++s) {
        StepRecord rec = runfile_fixtures::makeStep(meta, s);
        runfile_fixtures::makeHealthy(rec);
        for (auto& r : rec.ranks)
            r.loss = 2.5f * std::exp(-float(s) / 80.f) + 0.1f + 0.01f * float(&r - rec.ranks.data());
        if (mismatch && s >= kMismatchStep)
            rec.ranks[2].syncedFp[0] ^= 1;
        w->appendStep(rec);
        if (s % 10 == 0) {
            WeightRecord weights = runfile_fixtures::makeWeights(meta, s);
            runfile_fixtures::makeHealthy(weights);
            w->appendWeights(weights);
        }
        if (s % 100 == 99)
            w->appendEval(runfile_fixtures::makeEval(meta, s));
        if (s == 5 || s == 60)
            w->appendEvent(
                {s, -1, Severity::Info, "OVERFLOW", "Gradient overflow at step " + std::to_string(s)});
        if (mismatch && s == kMismatchStep)
            w->appendEvent(
                {s, 2, Severity::Error, "GRADIENT_SYNC",
                 "GRADIENT_SYNC: Rank 0 and Rank 2 parameter gradient mismatch at step 120 (1 of 6 "
                 "parameters differ, first: layer0.weight)"});
    }
    w->close("completed");
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestReport : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void writesTheWholeFolder();
    void noAnomalySlicesTheWholeRun();
    void refusesAnExistingFolder();
    void refusesWithoutARun();
    void cliReport();
    void cliReportBadFile();
    void cliReportExistingOut();
    void benchOpenSmoke();

private:
    bool openModel(RunModel& model, const QString& path);
    struct Result {
        int code = -1;
        QString out, err;
    };
    Result cli(const QStringList& args, int timeoutMs = 120000);
    QTemporaryDir m_dir;
    QString m_run;
};

void TestReport::initTestCase() {
    QVERIFY(m_dir.isValid());
    if (qEnvironmentVariableIsSet("RANKSIGHT_KEEP_TEST_FILES")) { // to look at the reports by eye
        m_dir.setAutoRemove(false);
        qInfo("files kept in %s", qPrintable(m_dir.path()));
    }
    m_run = m_dir.filePath("fixture.h5");
    writeFixture(m_run, kSteps, true);
}

bool TestReport::openModel(RunModel& model, const QString& path) {
    model.open(path);
    return QTest::qWaitFor([&] { return model.hasRun() && !model.isLoading(); }, 30000) &&
           model.stepCount() > 0;
}

TestReport::Result TestReport::cli(const QStringList& args, int timeoutMs) {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("TMPDIR", m_dir.path()); // bench-open's own files land here (and are removed by it)
    p.setProcessEnvironment(env);
    p.start(RANKSIGHT_CLI, args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

void TestReport::writesTheWholeFolder() {
    RunModel model;
    QVERIFY(openModel(model, m_run));
    ReportExporter exporter(&model);
    QSignalSpy progress(&exporter, &ReportExporter::progress);
    const QString dir = m_dir.filePath("report");
    QString error;
    QVERIFY2(exporter.write(dir, &error), qPrintable(error));

    QVERIFY(progress.size() >= 3);
    int last = -1;
    for (const auto& args : progress) {
        QVERIFY(args.at(0).toInt() >= last);
        last = args.at(0).toInt();
    }
    QCOMPARE(last, 100);

    for (const char* id : {"loss", "overflow", "rank-heatmap", "param-heatmap"}) {
        const QByteArray png = readAll(QDir(dir).filePath(QString(id) + ".png"));
        QVERIFY2(png.size() > 1000, id);
        QVERIFY2(png.startsWith("\x89PNG\r\n\x1a\n"), id);
        const QByteArray svg = readAll(QDir(dir).filePath(QString(id) + ".svg"));
        QVERIFY2(svg.contains("<svg"), id);
    }

    const QList<QByteArray> csv = readAll(QDir(dir).filePath("steps.csv")).trimmed().split('\n');
    QCOMPARE(csv.front(), QByteArray("step,rank,loss,accuracy,loss_scale,overflow,skipped,step_ms,comm_ms"));
    QCOMPARE(csv.size(), 1 + kSteps * kRanks); // one row per step and rank
    QVERIFY(csv.at(1).startsWith("0,0,"));
    QVERIFY(
        csv.back().startsWith(QByteArray::number(kSteps - 1) + "," + QByteArray::number(kRanks - 1) + ","));
    QVERIFY(readAll(QDir(dir).filePath("events.csv")).contains("GRADIENT_SYNC"));

    const auto slice = openRunFile(QDir(dir).filePath("slice.h5").toStdString());
    QCOMPARE(slice->stepCount(), int64_t(101));
    QCOMPARE(slice->readStepNumbers(0, 1).front(), int64_t(kMismatchStep - 50));
    QCOMPARE(slice->readStepNumbers(100, 101).front(), int64_t(kMismatchStep + 50));
    QVERIFY(slice->complete());

    const QString md = QString::fromUtf8(readAll(QDir(dir).filePath("report.md")));
    QVERIFY(md.startsWith("# RankSight report: fixture"));
    QVERIFY2(md.contains("**GRADIENT_SYNC** at step **120**"), qPrintable(md));
    QVERIFY(md.contains("rank(s) **2**"));
    QVERIFY2(md.contains("Cursor and heatmaps at step 120 (the first finding, "), qPrintable(md));
    QVERIFY(md.contains("## Findings"));
    QVERIFY(md.contains("| steps | 300 recorded (steps 0 to 299) of 1000 planned |"));
    for (const char* image : {"(loss.png)", "(overflow.png)", "(rank-heatmap.png)", "(param-heatmap.png)",
                              "(rank-heatmap.svg)", "(slice.h5)", "(steps.csv)"})
        QVERIFY2(md.contains(image), image);
    QVERIFY(md.contains("the run file cut to steps 70 to 170"));
    QVERIFY(md.contains("3 events: 1 errors, 0 warnings, 2 info."));
    QVERIFY(!md.contains("Advice")); // O2 with a dynamic loss scale: nothing to advise
}

void TestReport::noAnomalySlicesTheWholeRun() {
    const QString run = m_dir.filePath("clean.h5");
    writeFixture(run, 40, false);
    RunModel model;
    QVERIFY(openModel(model, run));
    const QString dir = m_dir.filePath("clean-report");
    QString error;
    QVERIFY2(ReportExporter(&model).write(dir, &error), qPrintable(error));
    const auto slice = openRunFile(QDir(dir).filePath("slice.h5").toStdString());
    QCOMPARE(slice->stepCount(), int64_t(40));
    const QString md = QString::fromUtf8(readAll(QDir(dir).filePath("report.md")));
    QVERIFY(md.contains("Cursor and heatmaps at step 39 (the last step: no finding and no anomaly)."));
    QVERIFY(md.contains("## First mismatch\n\nNone:"));

    // The same run without a loss scale: the report carries the setting as advice, not as a finding.
    const QString noScale = m_dir.filePath("noscale.h5");
    writeFixture(noScale, 40, false, "none");
    RunModel noScaleModel;
    QVERIFY(openModel(noScaleModel, noScale));
    const QString dir2 = m_dir.filePath("noscale-report");
    QVERIFY2(ReportExporter(&noScaleModel).write(dir2, &error), qPrintable(error));
    const QString md2 = QString::fromUtf8(readAll(QDir(dir2).filePath("report.md")));
    QVERIFY2(md2.contains(
                 "*Advice (configuration, not a finding):* `loss_scale=none`: O2 computes gradients in fp16"),
             qPrintable(md2));
}

void TestReport::refusesAnExistingFolder() {
    RunModel model;
    QVERIFY(openModel(model, m_run));
    const QString dir = m_dir.filePath("existing");
    QVERIFY(QDir().mkpath(dir));
    {
        QFile keep(QDir(dir).filePath("keep.txt"));
        QVERIFY(keep.open(QIODevice::WriteOnly));
        keep.write("mine");
    }
    QString error;
    QVERIFY(!ReportExporter(&model).write(dir, &error));
    QVERIFY2(error.contains(dir) && error.contains("already exists"), qPrintable(error));
    QCOMPARE(QDir(dir).entryList(QDir::Files), QStringList{"keep.txt"});
    QCOMPARE(readAll(QDir(dir).filePath("keep.txt")), QByteArray("mine"));
}

void TestReport::refusesWithoutARun() {
    RunModel model;
    QString error;
    const QString dir = m_dir.filePath("no-run");
    QVERIFY(!ReportExporter(&model).write(dir, &error));
    QVERIFY2(error.contains("no run"), qPrintable(error));
    QVERIFY(!QFileInfo::exists(dir));
}

void TestReport::cliReport() {
    const QString dir = m_dir.filePath("cli-report");
    const auto r = cli({"report", m_run, "--out", dir});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(r.out.trimmed(), QFileInfo(dir).absoluteFilePath());
    for (const char* f : {"report.md", "loss.png", "param-heatmap.svg", "steps.csv", "slice.h5"})
        QVERIFY2(QFileInfo(QDir(dir).filePath(f)).size() > 0, f);
    QVERIFY2(!r.err.contains("propagateSizeHints"), qPrintable(r.err)); // no platform noise for users
}

void TestReport::cliReportBadFile() {
    const QString bogus = m_dir.filePath("bogus.h5");
    {
        QFile f(bogus);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not an HDF5 file\n");
    }
    const QString dir = m_dir.filePath("bogus-report");
    const auto r = cli({"report", bogus, "--out", dir});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("bogus.h5") && r.err.contains("not an HDF5 file"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(dir));
}

void TestReport::cliReportExistingOut() {
    const QString dir = m_dir.filePath("taken");
    QVERIFY(QDir().mkpath(dir));
    const auto r = cli({"report", m_run, "--out", dir});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("already exists"), qPrintable(r.err));
    QVERIFY(QDir(dir).isEmpty());
    QCOMPARE(cli({"report", m_run}).code, 2); // --out is required
}

void TestReport::benchOpenSmoke() {
    QElapsedTimer t;
    t.start();
    const auto r =
        cli({"bench-open", "--steps", "200", "--ranks", "2", "--live-steps", "400", "--json"}, 60000);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QJsonObject j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    for (const char* key :
         {"generate_s", "file_bytes", "steps", "ranks", "params", "first_rows_ms", "first_picture_ms",
          "full_load_ms", "detail_ms", "rss_before_mib", "rss_loaded_mib", "live_steps_written",
          "live_steps_shown", "max_stall_ms", "p99_stall_ms", "replot"})
        QVERIFY2(j.contains(key), key);
    QCOMPARE(j["steps"].toInt(), 200);
    QCOMPARE(j["ranks"].toInt(), 2);
    QCOMPARE(j["params"].toInt(), 161); // ResNet-50's trainable tensors
    QVERIFY(j["first_picture_ms"].toDouble() >= j["first_rows_ms"].toDouble());
    QCOMPARE(j["live_steps_written"].toInt(), 400);
    QCOMPARE(j["live_steps_shown"].toInt(), 400); // followed to the end of the live run
    const QJsonArray quarters = j["live_quarters"].toArray();
    QCOMPARE(quarters.size(), 4);
    QCOMPARE(quarters[3].toObject()["to_step"].toInt(), 400);
    QVERIFY(!j["live_timed_out"].toBool());
    QVERIFY(j["max_stall_ms"].toDouble() > 0);
    QVERIFY(QDir(m_dir.path()).entryList({"ranksight-bench-*"}).isEmpty()); // its files are gone
    qInfo("bench-open smoke took %lld ms", qint64(t.elapsed()));
}

QTEST_MAIN(TestReport)
#include "tst_report.moc"
