// The panels of imported records over a run model filled directly (RunModel::applyDelta): the Collectives
// panel names where a hung job's ranks part and marks the odd rank, says "before the run" for what a joined
// run had not begun, and shows torch_npu's Python tracebacks per rank; the Tensors panel shows an msprobe
// dump's tensors rank against rank and names the first non-finite one; a run without them says "not
// recorded". Set RANKSIGHT_GRAB_DIR to save screenshots of the panels.
#include "model/RunDelta.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/CollectivesPanel.h"
#include "panels/TensorsPanel.h"

#include <QTableWidget>
#include <QtTest>
#include <cmath>

using namespace rs;

namespace {

constexpr int kRanks = 4;

// An engine run of `steps` steps with every per-rank column filled (what the panels read besides imports).
RunDelta engineDelta(int64_t steps = 5) {
    RunDelta d;
    d.first = true;
    d.complete = true;
    d.path = QStringLiteral("engine.h5");
    d.meta.model = "smallcnn";
    d.meta.worldSize = kRanks;
    for (int64_t s = 0; s < steps; ++s) {
        d.stepNumbers.push_back(s);
        for (auto& c : d.columns)
            for (int r = 0; r < kRanks; ++r)
                c.push_back(1.0f);
    }
    return d;
}

void maybeGrab(QWidget* w, const char* name) {
    const QByteArray dir = qgetenv("RANKSIGHT_GRAB_DIR");
    if (dir.isEmpty())
        return;
    if (!w->isVisible()) {
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w));
    }
    QVERIFY(w->grab().save(QString::fromUtf8(dir) + QLatin1Char('/') + QLatin1String(name) + ".png"));
}

} // namespace

class TestImportPanels : public QObject {
    Q_OBJECT

private slots:
    void collectivesNameWhereRanksPart();
    void collectivesBeforeTheRunAndTracebacks();
    void collectivesNotRecorded();
    void tensorsShowRanksAndTheFirstNonFinite();
};

namespace {

// A 4-rank flight-recorder import: every rank completed collectives 1-3; ranks 0, 2, 3 wait in 4, rank 1
// never enqueued it.
RunDelta flightDelta() {
    RunDelta d;
    d.first = true;
    d.complete = true;
    d.path = QStringLiteral("hang.h5");
    d.meta.source = "flight-recorder";
    d.meta.worldSize = kRanks;
    d.meta.absent = {"/steps/state"};
    d.meta.configJson = R"({"flight_recorder": {"process_groups": [{"name": "0", "desc": "default_pg",
        "ranks": [0, 1, 2, 3]}], "dumped_ranks": [0, 1, 2, 3]}})";
    for (int r = 0; r < kRanks; ++r)
        for (int64_t seq = 1; seq <= (r == 1 ? 3 : 4); ++seq) {
            Collective c;
            c.rank = r;
            c.seq = seq;
            c.group = "0 (default_pg)";
            c.op = "all_reduce";
            c.sizes = "in [[8]] out [[8]]";
            c.dtypes = "Float";
            c.state = uint8_t(seq == 4 ? CollectiveState::Started : CollectiveState::Completed);
            c.createdNs = 1000 * seq + r;
            c.frame = "train.py:88 step";
            d.collectives.push_back(c);
        }
    return d;
}

} // namespace

// The Collectives panel names the first disagreement above the table and marks the rank that is elsewhere.
void TestImportPanels::collectivesNameWhereRanksPart() {
    RunModel model;
    CollectivesPanel panel(&model);
    model.applyDelta(flightDelta());
    QVERIFY2(panel.headline().contains(
                 QStringLiteral("rank 1 never reached collective #4 of group 0 (default_pg)")),
             qPrintable(panel.headline()));
    QTableWidget* t = panel.table();
    QCOMPARE(t->rowCount(), kRanks);
    QCOMPARE(t->item(1, 2)->text(), QStringLiteral("#3 all_reduce"));
    QCOMPARE(t->item(1, 3)->text(), QStringLiteral("completed"));
    QCOMPARE(t->item(0, 2)->text(), QStringLiteral("#4 all_reduce"));
    QCOMPARE(t->item(0, 3)->text(), QStringLiteral("started"));
    QCOMPARE(t->item(0, 6)->text(), QStringLiteral("train.py:88 step"));
    QVERIFY(t->item(1, 0)->background() != t->item(0, 0)->background()); // rank 1 is marked, rank 0 is not
    maybeGrab(&panel, "collectives");
}

// Joined with a run that began after collectives 1-3 (step kCollectiveBeforeRun, -2) and with torch_npu's
// Python tracebacks of ranks 0 and 1: the Step column says "before the run", never a step; the odd rank's
// traceback shows first, and selecting a rank shows its own (or says it has none).
void TestImportPanels::collectivesBeforeTheRunAndTracebacks() {
    RunModel model;
    CollectivesPanel panel(&model);
    RunDelta d = flightDelta();
    d.meta.configJson = R"({"flight_recorder": {"process_groups": [{"name": "0", "desc": "default_pg",
        "ranks": [0, 1, 2, 3]}], "dumped_ranks": [0, 1, 2, 3], "py_tracebacks": {
        "0": "pid: 4100\nthread <_MainThread(MainThread, started 1)>:\n  File \"/job/train.py\", line 91, in step\n",
        "1": "pid: 4101\nthread <_MainThread(MainThread, started 2)>:\n  File \"/job/data.py\", line 40, in load\n    time.sleep(30)\n"}}})";
    for (Collective& c : d.collectives)
        c.step = c.seq <= 3 ? -2 : 0;
    model.applyDelta(d);
    QVERIFY2(
        panel.headline().contains(QStringLiteral("rank 1 never reached collective #4 of group 0 (default_pg) "
                                                 "(step 0)")),
        qPrintable(panel.headline()));
    QVERIFY2(panel.headline().contains(QStringLiteral("Python tracebacks of ranks 0, 1")),
             qPrintable(panel.headline()));
    QTableWidget* t = panel.table();
    QCOMPARE(t->item(1, 5)->text(), QStringLiteral("before the run"));
    QCOMPARE(t->item(0, 5)->text(), QStringLiteral("step 0"));
    QVERIFY2(panel.tracebackText().startsWith(QStringLiteral("Rank 1, Python traceback")),
             qPrintable(panel.tracebackText()));
    QVERIFY(panel.tracebackText().contains(QStringLiteral("time.sleep(30)")));
    t->selectRow(0);
    QVERIFY2(panel.tracebackText().contains(QStringLiteral("/job/train.py\", line 91")),
             qPrintable(panel.tracebackText()));
    t->selectRow(2);
    QCOMPARE(
        panel.tracebackText(),
        QStringLiteral("Rank 2: Python traceback not recorded (no _py_traceback file beside its dump)."));
    maybeGrab(&panel, "collectives-tracebacks");
}

// A run without dumps: "not recorded", never an empty table that reads as agreement.
void TestImportPanels::collectivesNotRecorded() {
    RunModel model;
    StepCursor cursor;
    CollectivesPanel panel(&model);
    TensorsPanel tensors(&model, &cursor); // made before the run opens, as the window's are
    QCOMPARE(tensors.caption(), QStringLiteral("No run open."));
    model.applyDelta(engineDelta());
    QVERIFY(panel.headline().startsWith(QStringLiteral("Collectives: not recorded")));
    QCOMPARE(panel.table()->rowCount(), 0);
    QVERIFY(panel.tracebackText().isEmpty());
    QVERIFY2(tensors.caption().startsWith(QStringLiteral("Tensor statistics: not recorded")),
             qPrintable(tensors.caption()));
}

// The Tensors panel: the cursor's step, rank against rank, the first non-finite tensor named.
void TestImportPanels::tensorsShowRanksAndTheFirstNonFinite() {
    RunModel model;
    StepCursor cursor;
    TensorsPanel panel(&model, &cursor);
    RunDelta d = engineDelta(3);
    auto stat = [](int64_t step, int rank, int64_t order, const char* name, float norm) {
        TensorStat t;
        t.step = step;
        t.rank = rank;
        t.order = order;
        t.name = name;
        t.dtype = "torch.float32";
        t.norm = norm;
        t.max = t.min = t.mean = 0;
        t.recorded = 15;
        return t;
    };
    for (int64_t s = 0; s < 3; ++s)
        for (int r = 0; r < kRanks; ++r) {
            const bool nan = s >= 1 && r == 2;
            d.tensorStats.push_back(
                stat(s, r, 0, "Functional.conv2d.0.forward.input_args.0", 1.f + float(r)));
            d.tensorStats.push_back(
                stat(s, r, 1, "Module.conv1.Conv2d.forward.0.output.0", nan ? std::nanf("") : 2.f));
        }
    model.applyDelta(d);
    cursor.setStep(1);
    QVERIFY2(panel.caption().contains(QStringLiteral(
                 "first non-finite: Module.conv1.Conv2d.forward.0.output.0 on rank 2 at step 1")),
             qPrintable(panel.caption()));
    QTableWidget* t = panel.table();
    QCOMPARE(t->rowCount(), 2);
    QCOMPARE(t->columnCount(), 1 + kRanks);
    QCOMPARE(t->item(0, 0)->text(), QStringLiteral("Functional.conv2d.0.forward.input_args.0"));
    QCOMPARE(t->item(0, 3)->text(), QStringLiteral("3"));
    QCOMPARE(t->item(1, 3)->text(), QStringLiteral("nan"));
    QVERIFY(t->item(1, 3)->background() != t->item(1, 1)->background());
    cursor.setStep(0);
    QCOMPARE(t->item(1, 3)->text(), QStringLiteral("2"));
    panel.setStatistic(1); // Max
    QCOMPARE(t->item(0, 1)->text(), QStringLiteral("0"));
}

QTEST_MAIN(TestImportPanels)
#include "tst_importpanels.moc"
