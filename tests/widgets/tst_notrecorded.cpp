// "Not recorded" through every view, for each source RunSight reads: a run file whose `absent` list is the
// engine's (nothing), a PyTorch DDP job's without a GradScaler, or an msprobe import's, opened in a RunModel
// and drawn by the overflow timeline and the loss chart, then exported as a bug report (report.md,
// steps.csv). Where the file says absent, each view says "not recorded" (grey cells, a note, an empty cell)
// and shows no value; where it recorded, the values are shown. Also: per-rank loss scales (the seed story's
// 2^24 against 2^14), and a report that follows the findings when the event log has no mismatch event.
#include "charts/LossChart.h"
#include "charts/OverflowTimeline.h"
#include "core/RunFileFixtures.h"
#include "import/MsprobeImport.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/CardsModel.h"
#include "panels/CardsPanel.h"
#include "panels/RunSummaryView.h"
#include "report/ReportExporter.h"
#include "store/RunSource.h"
#include "store/RunWriter.h"

#include <QFile>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <fmt/format.h>
#include <qcustomplot.h>

using namespace rs;

namespace {

constexpr int kRanks = 4, kSteps = 40;

struct Source {
    const char* name;
    std::string source;
    std::vector<std::string> absent;
    std::string environment;
    std::string config = "{}";
};

constexpr const char* kImportNote = "ranks 1 and 3 have no folder: not monitored";

// The absent lists as the engine, ranksight.ddp.Recorder (no GradScaler) and import-msprobe write them.
Source sourceNamed(const QString& name) {
    if (name == "pytorch-ddp")
        return {"pytorch-ddp",
                "pytorch-ddp",
                {"data", "/steps/overflow", "/steps/loss_scale", "/steps/skipped", "/grads/overflow_count",
                 "/grads/underflow_count"},
                R"({"source":"pytorch-ddp","host":"box","backend":"gloo"})"};
    if (name == "msprobe")
        return {"msprobe", "msprobe", msprobeNeverRecorded(), R"({"source":"msprobe"})",
                fmt::format(R"({{"layout":"Monitor V1","notes":["{}"]}})", kImportNote)};
    return {"engine", "ranksight-engine", {}, R"({"nodes":1})"};
}

// A healthy run of the given source; what the source does not record is written as the file's fill (0, 1,
// NaN), exactly what a view must not show as data. lossScaleOf picks each rank's scale.
void writeRun(const QString& path, const Source& src,
              const std::function<float(int64_t step, int rank)>& lossScaleOf = {}) {
    RunMeta meta = runfile_fixtures::makeMeta(kRanks, 4, 4, 8);
    meta.source = src.source;
    meta.absent = src.absent;
    meta.environment = src.environment;
    meta.configJson = src.config;
    if (src.source != "ranksight-engine") // cards as the recorder and the importer describe them
        for (CardInfo& c : meta.cards)
            c = CardInfo{c.rank, -1, "", src.source == "pytorch-ddp" ? "box" : "", 0, 0};
    auto w = RunWriter::create(path.toStdString(), meta);
    for (int s = 0; s < kSteps; ++s) {
        StepRecord rec = runfile_fixtures::makeStep(meta, s);
        runfile_fixtures::makeHealthy(rec);
        for (int r = 0; r < kRanks; ++r) {
            RankStep& x = rec.ranks[size_t(r)];
            x.loss = meta.recorded("/steps/loss") ? 2.0f - 0.01f * float(s) : std::nanf("");
            x.lossScale = lossScaleOf ? lossScaleOf(s, r) : 65536.0f;
        }
        w->appendStep(rec);
    }
    w->close("completed");
}

bool openModel(RunModel& model, const QString& path) {
    model.open(path);
    return QTest::qWaitFor([&] { return model.hasRun() && !model.isLoading(); }, 30000) &&
           model.stepCount() == kSteps;
}

QString readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// The text of the markdown section that starts with `heading`, up to the next "## ".
QString section(const QString& md, const QString& heading) {
    const qsizetype at = md.indexOf(heading);
    if (at < 0)
        return {};
    const qsizetype end = md.indexOf("\n## ", at + heading.size());
    return md.mid(at, end < 0 ? -1 : end - at);
}

// Shows a chart at a fixed size, as a window would, and draws it now.
bool showChart(ChartBase& chart) {
    chart.resize(900, 500);
    chart.show();
    if (!QTest::qWaitForWindowExposed(&chart))
        return false;
    chart.refreshNow();
    return true;
}

bool legendHas(QCustomPlot* plot, const QString& name) {
    for (int i = 0; i < plot->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i)))
            if (item->plottable()->name() == name)
                return true;
    return false;
}

} // namespace

class TestNotRecorded : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }
    void timeline_data();
    void timeline();
    void lossChartSaysWhyItIsEmpty();
    void report_data() { timeline_data(); }
    void report();
    void tableTornByAKilledWriterIsNamed();
    void cardsOfAnImportedRun();
    void lossScalePerRank();
    void lossScaleAgreeingRanksOneLine();

private:
    QTemporaryDir m_dir;
};

void TestNotRecorded::timeline_data() {
    QTest::addColumn<QString>("source");
    QTest::addRow("engine") << "engine";
    QTest::addRow("pytorch-ddp") << "pytorch-ddp";
    QTest::addRow("msprobe") << "msprobe";
}

void TestNotRecorded::timeline() {
    QFETCH(QString, source);
    const Source src = sourceNamed(source);
    const QString path = m_dir.filePath("timeline-" + source + ".h5");
    writeRun(path, src);
    RunModel model;
    QVERIFY(openModel(model, path));
    StepCursor cursor;
    OverflowTimeline chart(&model, &cursor);
    QVERIFY(showChart(chart));

    const bool flags = src.absent.empty(); // only the engine records overflow flags and skipped updates here
    const OverflowRaster& raster = chart.raster();
    QCOMPARE(raster.ranks, kRanks);
    QVERIFY(raster.columns > 0);
    for (int c = 0; c < raster.columns; ++c)
        for (int r = 0; r < kRanks; ++r)
            QCOMPARE(OverflowCell(raster.at(c, r)), flags ? OverflowCell::Clean : OverflowCell::NotRecorded);
    // Grey cells with a legend entry and a note; a clean run of the engine has neither.
    QCOMPARE(legendHas(chart.plot(), "not recorded"), !flags);
    QCOMPARE(chart.rasterNote().contains("not recorded"), !flags);
    QCOMPARE(chart.rasterNote().contains("not clean"), !flags);
    QCOMPARE(chart.rasterMap()->data()->cell(0, 0) != chart.rasterMap()->data()->cell(0, 0), !flags); // NaN
    // The loss scale: a line only where it was recorded; else no invented 2^0 line and a note saying so.
    const bool scale = src.source == "ranksight-engine";
    QCOMPARE(chart.scaleGraph()->data()->isEmpty(), !scale);
    QCOMPARE(chart.scaleNote().contains("loss scale not recorded"), !scale);
    if (scale)
        QCOMPARE(chart.scaleGraph()->data()->at(0)->value, 65536.0);
    // The run is named by its source in the notes.
    if (!flags)
        QVERIFY2(chart.rasterNote().contains(QString::fromStdString(describeRun(model.meta()))),
                 qPrintable(chart.rasterNote()));
    // Legend entries only for what the run can show: one "skipped update" (the raster's, none for the scale
    // marks) where skipped updates were recorded; no "clean" and no loss-scale line where they were not.
    int skippedEntries = 0;
    for (int i = 0; i < chart.plot()->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(chart.plot()->legend->item(i)))
            skippedEntries += item->plottable()->name().startsWith("skipped");
    QCOMPARE(skippedEntries, flags ? 1 : 0);
    QCOMPARE(legendHas(chart.plot(), "clean"), flags);
    QCOMPARE(legendHas(chart.plot(), "loss scale (all ranks)"), scale);
    QCOMPARE(legendHas(chart.plot(), "non-finite loss"), source != "msprobe");
}

void TestNotRecorded::lossChartSaysWhyItIsEmpty() {
    for (const QString& name : {QString("engine"), QString("msprobe")}) {
        const QString path = m_dir.filePath("loss-" + name + ".h5");
        writeRun(path, sourceNamed(name));
        RunModel model;
        QVERIFY(openModel(model, path));
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        QVERIFY(showChart(chart));
        if (name == "engine") {
            QVERIFY(chart.note().isEmpty());
            QVERIFY(!chart.meanGraph()->data()->isEmpty());
        } else {
            QVERIFY2(chart.note().startsWith("loss and accuracy not recorded"), qPrintable(chart.note()));
            QVERIFY(chart.note().contains("an msprobe Monitor tree: 4 ranks"));
            bool found = false;
            chart.meanGraph()->getValueRange(found);
            QVERIFY(!found); // no line drawn from the NaN fill
            // No legend entry for a line the run cannot have, and the empty plot keeps its size for the note.
            QCOMPARE(chart.plot()->legend->itemCount(), 0);
            chart.plot()->replot();
            QVERIFY2(chart.plot()->axisRect()->width() > chart.width() / 2,
                     qPrintable(QString::number(chart.plot()->axisRect()->width())));
        }
    }
}

// A file whose killed writer tore its weight table (tests/data, see tst_runfile_swmr): the run panel and the
// report name the table as unreadable, and say "not recorded" where its values would be, never a zero.
void TestNotRecorded::tableTornByAKilledWriterIsNamed() {
    const QString path = m_dir.filePath("torn-weights.h5");
    QVERIFY(QFile::copy(QStringLiteral(RANKSIGHT_TEST_DATA "/killed-writer-torn-weights.h5"), path));
    RunModel model;
    model.open(path);
    QVERIFY(QTest::qWaitFor([&] { return model.hasRun() && !model.isLoading(); }, 30000));
    QVERIFY(model.stepCount() >= 20);
    RunSummaryView panel;
    panel.showRun(model.meta(), path);
    QVERIFY2(panel.fieldText("Unreadable").startsWith("/weights cannot be read ("),
             qPrintable(panel.fieldText("Unreadable")));
    QVERIFY(panel.fieldText("Not recorded").isEmpty()); // recorded, then torn: not the source's gap
    ReportExporter exporter(&model);
    const QString dir = m_dir.filePath("report-torn");
    QString error;
    QVERIFY2(exporter.write(dir, &error), qPrintable(error));
    const QString run = section(readAll(dir + "/report.md"), "## Run");
    QVERIFY2(run.contains("| weight fingerprints | not recorded |"), qPrintable(run));
    QVERIFY2(run.contains("| recorded, left unreadable by the killed writer | weight fingerprints"),
             qPrintable(run));
}

void TestNotRecorded::report() {
    QFETCH(QString, source);
    const Source src = sourceNamed(source);
    const QString path = m_dir.filePath("report-" + source + ".h5");
    writeRun(path, src);
    RunModel model;
    QVERIFY(openModel(model, path));
    ReportExporter exporter(&model);
    const QString dir = m_dir.filePath("report-" + source);
    QString error;
    QVERIFY2(exporter.write(dir, &error), qPrintable(error));
    const QString md = readAll(dir + "/report.md");
    const QString run = section(md, "## Run"), summary = section(md, "## Summary");
    QVERIFY2(md.contains(QString::fromStdString(describeRun(model.meta()))), qPrintable(md.left(400)));
    QVERIFY(!md.contains("emulated Ascend 910 cards") || source == "engine");
    const bool msprobe = source == "msprobe", ddp = source == "pytorch-ddp";
    // Attributes the source did not know.
    QCOMPARE(run.contains("| seed | not recorded |"), msprobe);
    QCOMPARE(run.contains("| ranks | 4 x batch not recorded per rank |"), msprobe);
    QCOMPARE(run.contains("| data | not recorded |"), ddp);
    QCOMPARE(run.contains("| weight fingerprints | not recorded"), msprobe);
    QCOMPARE(run.contains("| not recorded by the source |"), !src.absent.empty());
    // In words, never as dataset paths; and what the import noted, below the table.
    QVERIFY2(!md.contains("/steps/") && !md.contains("/grads/") && !md.contains("/weights/"),
             qPrintable(run));
    QCOMPARE(run.contains("overflow flags"), msprobe || ddp);
    QCOMPARE(run.contains(QString("Import notes:\n\n- ") + kImportNote), msprobe);
    RunSummaryView panel;
    panel.showRun(model.meta(), path);
    const QString notRecorded = panel.fieldText("Not recorded");
    QCOMPARE(notRecorded.isEmpty(), src.absent.empty());
    QVERIFY2(!notRecorded.contains('/'), qPrintable(notRecorded));
    QCOMPARE(notRecorded.contains("fp16 overflow counts"), msprobe || ddp);
    QCOMPARE(panel.fieldText("Import notes"), msprobe ? QString("• ") + kImportNote : QString());
    // Figures: never a 0 count or a NaN for what was not recorded.
    QCOMPARE(summary.contains("Overflow flags: not recorded by the source"), msprobe || ddp);
    QCOMPARE(summary.contains("Overflow on at least one rank in 0 of 40 steps"), !msprobe && !ddp);
    QCOMPARE(summary.contains("Loss: not recorded by the source."), msprobe);
    QCOMPARE(summary.contains("Loss scale: not recorded by the source."), msprobe || ddp);
    QVERIFY2(!summary.contains("nan"), qPrintable(summary));
    const qsizetype row0 = summary.indexOf("\n| 0 |") + 1;
    const QString rank0Row = summary.mid(row0, summary.indexOf('\n', row0) - row0);
    QCOMPARE(rank0Row.count("not recorded"), msprobe ? 7 : ddp ? 3 : 0);
    // First mismatch: without fingerprints there is nothing to call "None".
    const QString mismatch = section(md, "## First mismatch");
    QVERIFY2(mismatch.contains("None:") == !msprobe, qPrintable(mismatch + section(md, "## Findings")));
    QVERIFY2(mismatch.contains(
                 "Not recorded: the source recorded no synced gradient or weight fingerprints") == msprobe,
             qPrintable(mismatch));

    // steps.csv: an empty cell where nothing was recorded, the value where it was.
    const QStringList rows = readAll(dir + "/steps.csv").split('\n', Qt::SkipEmptyParts);
    QCOMPARE(rows.size(), 1 + kSteps * kRanks);
    QCOMPARE(rows[0], QString("step,rank,loss,accuracy,loss_scale,overflow,skipped,step_ms,comm_ms"));
    const QStringList cells = rows[1].split(',');
    QCOMPARE(cells.size(), 9);
    QCOMPARE(cells[2].isEmpty(), msprobe);        // loss
    QCOMPARE(cells[4].isEmpty(), msprobe || ddp); // loss_scale
    QCOMPARE(cells[5].isEmpty(), msprobe || ddp); // overflow
    QCOMPARE(cells[6].isEmpty(), msprobe || ddp); // skipped
    QCOMPARE(cells[7].isEmpty(), msprobe);        // step_ms
    if (!msprobe)
        QCOMPARE(cells[2].toDouble(), 2.0);
    if (!msprobe && !ddp)
        QCOMPARE(cells[4], QString("65536"));
}

void TestNotRecorded::cardsOfAnImportedRun() {
    const QString path = m_dir.filePath("cards-msprobe.h5");
    writeRun(path, sourceNamed("msprobe"));
    RunModel model;
    QVERIFY(openModel(model, path));
    StepCursor cursor;
    cursor.setStep(kSteps - 1);
    CardsModel cards(&model, &cursor);
    cards.refreshNow();
    QCOMPARE(cards.rowCount(), kRanks);
    for (int r = 0; r < kRanks; ++r) {
        QCOMPARE(cards.activity(r), CardActivity::Imported);
        QCOMPARE(cards.data(cards.index(r, CardsModel::State)).toString(), QString("imported"));
        QCOMPARE(cards.data(cards.index(r, CardsModel::StepTime)).toString(), QString("not recorded"));
        QCOMPARE(cards.data(cards.index(r, CardsModel::CommWait)).toString(), QString("not recorded"));
        QCOMPARE(cards.data(cards.index(r, CardsModel::Health)).toString(), QString("not recorded"));
    }
    QVERIFY(!cards.hasNodes());
    // In the panel, the columns no card recorded are named in the caption instead of filling the table.
    CardsPanel panel(&model, &cursor);
    panel.cardsModel()->refreshNow();
    QVERIFY2(panel.caption().contains(
                 "not recorded: NPU, Device IP, Health, HBM Usage, Step (ms), Comm wait (ms)"),
             qPrintable(panel.caption()));
    QVERIFY(panel.caption().contains("4 ranks"));
    QVERIFY(panel.view()->isColumnHidden(CardsModel::StepTime));
    QVERIFY(!panel.view()->isColumnHidden(CardsModel::State));

    // An engine run over 2 node processes: node and server per card.
    const QString engine = m_dir.filePath("cards-nodes.h5");
    Source two = sourceNamed("engine");
    two.environment = R"({"nodes":2})";
    {
        RunMeta meta = runfile_fixtures::makeMeta(kRanks, 4, 4, 8);
        meta.environment = two.environment;
        for (auto& c : meta.cards)
            c.serverId = c.rank < 2 ? "10.0.0.1" : "10.0.0.2";
        auto w = RunWriter::create(engine.toStdString(), meta);
        StepRecord rec = runfile_fixtures::makeStep(meta, 0);
        for (auto& r : rec.ranks)
            r.state = 0;
        w->appendStep(rec);
        w->close("completed");
    }
    RunModel engineModel;
    engineModel.open(engine);
    QVERIFY(QTest::qWaitFor([&] { return engineModel.hasRun() && !engineModel.isLoading(); }, 30000));
    QCOMPARE(QString::fromStdString(describeRun(engineModel.meta())),
             QString("4 emulated Ascend 910 cards on 2 servers (2 node processes)"));
    StepCursor c2;
    CardsModel nodes(&engineModel, &c2);
    nodes.refreshNow();
    QVERIFY(nodes.hasNodes());
    QVERIFY(nodes.hasServers());
    QCOMPARE(nodes.data(nodes.index(1, CardsModel::Node)).toString(), QString("0"));
    QCOMPARE(nodes.data(nodes.index(3, CardsModel::Node)).toString(), QString("1"));
    QCOMPARE(nodes.data(nodes.index(3, CardsModel::Server)).toString(), QString("10.0.0.2"));

    // Node processes holding two servers each: the node is the server's block, not the server.
    RunMeta four = engineModel.meta();
    for (auto& c : four.cards)
        c.serverId = "10.0.0." + std::to_string(1 + c.rank);
    QCOMPARE(nodeOfRank(four), std::vector<int>({0, 0, 1, 1}));
    QCOMPARE(QString::fromStdString(describeRun(four)),
             QString("4 emulated Ascend 910 cards on 4 servers (2 node processes)"));
    four.cards.pop_back(); // 3 servers cannot be 2 nodes of whole servers: not recorded, not a guess
    QVERIFY(nodeOfRank(four).empty());
}

// The seed story: rank 1 keeps 2^24 while the others are at 2^14. The timeline draws rank 1 as its own line
// (a mean would hide it at ~2^22), and the report names it.
void TestNotRecorded::lossScalePerRank() {
    const QString path = m_dir.filePath("scales.h5");
    writeRun(path, sourceNamed("engine"),
             [](int64_t s, int r) { return std::ldexp(1.0f, r == 1 && s >= 10 ? 24 : 14); });
    RunModel model;
    QVERIFY(openModel(model, path));
    StepCursor cursor;
    OverflowTimeline chart(&model, &cursor);
    QVERIFY(showChart(chart));
    QCOMPARE(chart.standoutRanks(), std::vector<int>{1});
    QCOMPARE(chart.scaleGraph()->name(), QString("loss scale (most ranks)"));
    QCOMPARE(chart.scaleGraph()->data()->at(kSteps - 1)->value, std::ldexp(1.0, 14));
    QCPGraph* rank1 = chart.rankScaleGraph(0);
    QVERIFY(rank1->name().startsWith("rank 1 (differs from the others at 30 step(s))"));
    QVERIFY(legendHas(chart.plot(), rank1->name()));
    QCOMPARE(rank1->data()->at(kSteps - 1)->value, std::ldexp(1.0, 24));
    QVERIFY(std::isnan(
        rank1->data()->at(0)->value)); // drawn only where it differs; the common line shows the rest
    // Both levels fit the axis.
    const QCPRange y = chart.scaleRect()->axis(QCPAxis::atLeft)->range();
    QVERIFY(y.lower <= std::ldexp(1.0, 14) && y.upper >= std::ldexp(1.0, 24));

    ReportExporter exporter(&model);
    const QString dir = m_dir.filePath("scales-report");
    QString error;
    QVERIFY2(exporter.write(dir, &error), qPrintable(error));
    const QString summary = section(readAll(dir + "/report.md"), "## Summary");
    QVERIFY2(
        summary.contains("**Loss scales differ across ranks** on 1 rank(s): rank 1 differs from most ranks "
                         "at 30 step(s) from step 10 (last: 2^24)"),
        qPrintable(summary));
    QVERIFY(summary.contains("| **2^24** |"));
    QVERIFY(summary.contains("| 2^14 |"));
    QVERIFY(summary.contains("| **differ across ranks** |"));
}

void TestNotRecorded::lossScaleAgreeingRanksOneLine() {
    const QString path = m_dir.filePath("scales-agree.h5");
    writeRun(path, sourceNamed("engine"), [](int64_t s, int) { return std::ldexp(1.0f, s < 20 ? 16 : 15); });
    RunModel model;
    QVERIFY(openModel(model, path));
    StepCursor cursor;
    OverflowTimeline chart(&model, &cursor);
    QVERIFY(showChart(chart));
    QVERIFY(chart.standoutRanks().empty());
    QCOMPARE(chart.scaleGraph()->name(), QString("loss scale (all ranks)"));
    QVERIFY(chart.rankScaleGraph(0)->data()->isEmpty());
}

QTEST_MAIN(TestNotRecorded)
#include "tst_notrecorded.moc"
