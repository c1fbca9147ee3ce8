// RunModel and its loader thread: a file's scalars, events and weight rows arrive in the GUI thread; the
// per-parameter detail of a step is read on demand; a file still being written grows; a replaced file's late
// results are dropped; bad files fail with the reader's message; direct fills (applyDelta) work without
// files.
#include "core/RunFileFixtures.h"
#include "model/RunDelta.h"
#include "model/RunModel.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"

#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

using namespace rs;
using namespace rs::runfile_fixtures;

namespace {

void writeRunWithWeights(const QString& path, const RunMeta& meta, int steps) {
    auto w = RunWriter::create(path.toStdString(), meta, true);
    for (int s = 0; s < steps; ++s) {
        w->appendStep(makeStep(meta, s));
        if (s % meta.weightEvery == 0)
            w->appendWeights(makeWeights(meta, s));
    }
    for (int i = 0; i < 3; ++i)
        w->appendEvent(makeEvent(i));
    w->close("completed");
}

bool sameFloat(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

} // namespace

class TestRunModel : public QObject {
    Q_OBJECT
private slots:
    void opensAFileIntoColumns() {
        QTemporaryDir dir;
        const QString path = dir.filePath("a.h5");
        const RunMeta meta = makeMeta(3, 4, 4, 8);
        writeRunWithWeights(path, meta, 57);
        RunModel model;
        QSignalSpy opened(&model, &RunModel::opened);
        QSignalSpy reset(&model, &RunModel::runReset);
        model.open(path);
        QCOMPARE(reset.count(), 1);
        QVERIFY(model.isLoading());
        QTRY_VERIFY_WITH_TIMEOUT(!model.isLoading(), 10000);
        QCOMPARE(opened.count(), 1);
        QCOMPARE(model.stepCount(), int64_t(57));
        QCOMPARE(model.worldSize(), 3);
        QCOMPARE(model.runName(), QString("a"));
        QVERIFY(model.isComplete());
        QCOMPARE(model.stopReason(), QString("completed"));
        QCOMPARE(model.events().size(), size_t(3));
        QCOMPARE(model.weightSteps(), (std::vector<int64_t>{0, 10, 20, 30, 40, 50}));

        auto reader = openRunFile(path.toStdString());
        for (int c = 0; c < kStepColumnCount; ++c) {
            const auto expected = reader->readStepScalar(schemaColumn(stepColumnAt(c)), 0, 57);
            const auto& got = model.column(stepColumnAt(c));
            QCOMPARE(got.size(), expected.size());
            for (size_t i = 0; i < got.size(); ++i)
                QVERIFY2(sameFloat(got[i], expected[i]),
                         runschema::kStepColumns[schemaColumn(stepColumnAt(c))].path);
        }
        QCOMPARE(model.rowOf(30), int64_t(30));
        QCOMPARE(model.rowOf(1000), int64_t(56));
    }

    void readsTheDetailOfAStepOnDemand() {
        QTemporaryDir dir;
        const QString path = dir.filePath("d.h5");
        const RunMeta meta = makeMeta(2, 3, 4, 4);
        writeRunWithWeights(path, meta, 25);
        RunModel model;
        model.open(path);
        QTRY_VERIFY_WITH_TIMEOUT(!model.isLoading() && model.hasRun(), 10000);
        QSignalSpy ready(&model, &RunModel::detailReady);
        QVERIFY(model.detail(17) == nullptr);
        QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 10000);
        QCOMPARE(ready.front().front().value<int64_t>(), int64_t(17));
        const auto d = model.detail(17);
        QVERIFY(d);
        const StepRecord expected = makeStep(meta, 17);
        QCOMPARE(d->record.step, int64_t(17));
        QCOMPARE(d->record.ranks[1].syncedFp, expected.ranks[1].syncedFp);
        QCOMPARE(d->record.ranks[0].sampleIds, expected.ranks[0].sampleIds);
        QVERIFY(d->weights);
        QCOMPARE(d->weights->step, int64_t(10)); // the last weight row at or before step 17
        QCOMPARE(d->weights->fp, makeWeights(meta, 10).fp);
        QCOMPARE(ready.count(), 1); // cached: no second read
    }

    void followsAFileThatIsStillBeingWritten() {
        QTemporaryDir dir;
        const QString path = dir.filePath("live.h5");
        const RunMeta meta = makeMeta(2, 3, 4, 4);
        auto w = RunWriter::create(path.toStdString(), meta);
        w->appendStep(makeStep(meta, 0));
        RunModel model;
        model.setPollInterval(20);
        model.open(path);
        QTRY_COMPARE_WITH_TIMEOUT(model.stepCount(), int64_t(1), 10000);
        QVERIFY(model.isLive());
        QCOMPARE(model.stopReason(), QString("running"));
        QSignalSpy appended(&model, &RunModel::stepsAppended);
        for (int s = 1; s < 40; ++s)
            w->appendStep(makeStep(meta, s));
        w->appendEvent(makeEvent(7));
        QTRY_COMPARE_WITH_TIMEOUT(model.stepCount(), int64_t(40), 10000);
        QTRY_COMPARE_WITH_TIMEOUT(model.events().size(), size_t(1), 10000);
        QVERIFY(appended.count() >= 1);
        w->close("stopped");
        QTRY_VERIFY_WITH_TIMEOUT(model.isComplete(), 10000);
        QCOMPARE(model.stopReason(), QString("stopped"));
    }

    void followsARunThatTheCliIsWritingInAnotherProcess() {
        QTemporaryDir dir;
        const QString path = dir.filePath("cli.h5");
        QProcess cli;
        cli.start(RANKSIGHT_CLI,
                  {"train", "--model", "mlp", "--ranks", "2", "--batch", "4", "--steps", "1000000",
                   "--precision", "O0", "--loss-scale", "none", "--quiet", "--out", path});
        QVERIFY(cli.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo(path).size() > 0, 60000);
        RunModel model;
        model.setPollInterval(20);
        QSignalSpy failed(&model, &RunModel::openFailed);
        // The file may exist a moment before its writer switched to SWMR mode: retry like a user would.
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                if (!model.hasRun() && !model.isLoading())
                    model.open(path);
                return model.hasRun();
            }(),
            30000);
        QVERIFY(model.isLive());
        QTRY_VERIFY_WITH_TIMEOUT(model.stepCount() >= 20, 60000); // it keeps growing
        ::kill(pid_t(cli.processId()), SIGINT);                   // Ctrl-C: the CLI stops cleanly
        QVERIFY(cli.waitForFinished(30000));
        QTRY_VERIFY_WITH_TIMEOUT(model.isComplete(), 10000);
        QCOMPARE(model.stopReason(), QString("stopped"));
        QCOMPARE(model.stepCount(), openRunFile(path.toStdString())->stepCount());
    }

    void aReplacedFileDropsItsLateResults() {
        QTemporaryDir dir;
        const QString a = dir.filePath("a.h5"), b = dir.filePath("b.h5");
        writeRunWithWeights(a, makeMeta(2, 3, 4, 4), 80);
        writeRunWithWeights(b, makeMeta(3, 2, 4, 4), 11);
        RunModel model;
        model.open(a);
        model.open(b); // before a's rows arrive
        QTRY_VERIFY_WITH_TIMEOUT(model.hasRun() && !model.isLoading(), 10000);
        QTest::qWait(100); // let anything queued for a arrive: it must be ignored
        QCOMPARE(model.path(), b);
        QCOMPARE(model.worldSize(), 3);
        QCOMPARE(model.stepCount(), int64_t(11));
    }

    void aBadFileFailsWithTheReadersMessage() {
        QTemporaryDir dir;
        const QString path = dir.filePath("junk.h5");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("definitely not HDF5");
        f.close();
        RunModel model;
        QSignalSpy failed(&model, &RunModel::openFailed);
        model.open(path);
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
        QCOMPARE(failed.front().at(0).toString(), path);
        QVERIFY(failed.front().at(1).toString().contains("junk.h5"));
        QVERIFY(!model.hasRun());
        QVERIFY(!model.isLoading());
        QVERIFY(model.path().isEmpty());
    }

    void directFillWithoutAFile() {
        RunModel model;
        QSignalSpy appended(&model, &RunModel::stepsAppended);
        RunDelta d;
        d.first = true;
        d.meta = makeMeta(2, 3, 4, 4);
        d.stepNumbers = {5, 6, 7};
        for (auto& c : d.columns)
            c.assign(6, 1.0f);
        d.columns[columnIndex(StepColumn::Loss)] = {1, 2, 3, 4, 5, 6};
        d.complete = true;
        d.stopReason = "completed";
        model.applyDelta(d);
        QCOMPARE(appended.count(), 1);
        QCOMPARE(model.stepCount(), int64_t(3));
        QCOMPARE(model.firstStep(), int64_t(5));
        QCOMPARE(model.value(StepColumn::Loss, 2, 1), 6.0f);
        QCOMPARE(model.rowOf(4), int64_t(0));
        QCOMPARE(model.rowOf(6), int64_t(1));

        RunDelta wrong; // rows that do not continue the run are refused, not appended out of order
        wrong.firstRow = 7;
        wrong.stepNumbers = {9};
        for (auto& c : wrong.columns)
            c.assign(2, 0.0f);
        wrong.complete = true;
        model.applyDelta(wrong);
        QCOMPARE(model.stepCount(), int64_t(3));

        auto detail = std::make_shared<StepDetail>();
        detail->step = 6;
        QSignalSpy ready(&model, &RunModel::detailReady);
        model.setDetail(detail);
        QCOMPARE(ready.count(), 1);
        QCOMPARE(model.detail(6).get(), detail.get());
    }
};

QTEST_MAIN(TestRunModel)
#include "tst_runmodel.moc"
