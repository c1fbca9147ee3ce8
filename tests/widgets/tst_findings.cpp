// The Findings panel: the table model (QAbstractItemModelTester), the detail text, clicking a finding moves
// the cursor, and the background diagnosis of real run files (a clean run: no findings; a saved run with a
// finding opens on it).
#include "core/RunFileFixtures.h"
#include "diagnose/Finding.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/FindingsModel.h"
#include "panels/FindingsPanel.h"
#include "store/RunWriter.h"

#include <QAbstractItemModelTester>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

using namespace rs;

namespace {

std::vector<Finding> twoFindings() {
    Finding a;
    a.cause = "grad-sum";
    a.dimension = "parallel";
    a.confidence = 0.95;
    a.firstStep = 12;
    a.ranks = {0, 1, 2, 3};
    a.parameters = {"fc.weight"};
    a.evidence = "synced sum / mean of local sums = 4.00 on every parameter";
    a.fix = "gradients_mean=True";
    Finding b;
    b.cause = "straggler";
    b.dimension = "parallel";
    b.confidence = 0.5;
    b.ranks = {3};
    b.evidence = "rank 3 computes 4.1x longer";
    b.fix = "read rank 3's log";
    return {a, b};
}

} // namespace

class TestFindings : public QObject {
    Q_OBJECT
private slots:
    void modelShowsFindings() {
        FindingsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        model.setFindings(twoFindings());
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.columnCount(), int(FindingsModel::ColumnCount));
        QCOMPARE(model.data(model.index(0, FindingsModel::ConfidenceCol)).toString(), QString("95 %"));
        QCOMPARE(model.data(model.index(0, FindingsModel::CauseCol)).toString(), QString("grad-sum"));
        QCOMPARE(model.data(model.index(0, FindingsModel::StepCol)).toLongLong(), 12LL);
        QCOMPARE(model.data(model.index(0, FindingsModel::RanksCol)).toString(), QString("0, 1, 2, 3"));
        QCOMPARE(model.data(model.index(1, FindingsModel::StepCol)).toString(), QString("—"));
        QVERIFY(model.data(model.index(0, 0), Qt::ToolTipRole).toString().contains("gradients_mean=True"));
        model.setFindings({});
        QCOMPARE(model.rowCount(), 0);
    }

    void clickingAFindingMovesTheCursor() {
        RunModel model;
        StepCursor cursor;
        FindingsPanel panel(&model, &cursor);
        panel.findingsModel()->setFindings(twoFindings());
        QSignalSpy activated(&panel, &FindingsPanel::findingActivated);
        panel.resize(600, 400);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const QRect cell = panel.view()->visualRect(panel.findingsModel()->index(0, 1));
        QTest::mouseClick(panel.view()->viewport(), Qt::LeftButton, {}, cell.center());
        QCOMPARE(activated.count(), 1);
        QCOMPARE(cursor.step(), int64_t(12));
        QVERIFY(panel.detailText().contains("synced sum / mean of local sums"));
        QVERIFY(panel.detailText().contains("gradients_mean=True"));
        panel.activate(1); // no first step: the cursor stays
        QCOMPARE(cursor.step(), int64_t(12));
        QCOMPARE(activated.count(), 2);
    }

    void aCleanRunHasNoFindings() {
        QTemporaryDir dir;
        const QString path = dir.filePath("clean.h5");
        QProcess cli;
        cli.start(RANKSIGHT_CLI, {"train", "--model", "mlp", "--ranks", "2", "--batch", "8", "--steps", "30",
                                  "--precision", "O2", "--loss-scale", "none", "--quiet", "--out", path});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        RunModel model;
        StepCursor cursor;
        FindingsPanel panel(&model, &cursor);
        model.open(path);
        QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult(), 30000);
        QVERIFY2(panel.runner()->error().isEmpty(), qPrintable(panel.runner()->error()));
        QCOMPARE(panel.findingsModel()->rowCount(), 0);
        QVERIFY2(panel.statusText().startsWith("No findings"), qPrintable(panel.statusText()));
        // The engine records everything; the MLP has no BatchNorm, which is all the panel lists.
        QCOMPARE(panel.notRunText(),
                 QString("Could not run on this file:\n• BatchNorm statistics (eval-mode): "
                         "the model has no BatchNorm running statistics"));
        // O2 without a loss scale: the MLP's gradients lose almost nothing to fp16 (no finding), but the
        // setting is advice.
        QVERIFY2(
            panel.adviceText().startsWith("Advice (the configuration, not findings):\n• loss_scale=none: "),
            qPrintable(panel.adviceText()));
        model.close(); // a new run clears the findings and their status
        QCOMPARE(panel.runner()->hasResult(), false);
        QCOMPARE(panel.adviceText(), QString());
    }

    // A saved run opened with findings: the first finding's evidence at once (the cursor on its first step,
    // findingActivated for the window), as a click would. A user who moved the cursor first keeps it there.
    void openingASavedRunGoesToTheFirstFinding() {
        QTemporaryDir dir;
        const QString path = dir.filePath("sdc.h5");
        QProcess cli;
        cli.start(RANKSIGHT_CLI, {"train", "--model", "mlp", "--ranks", "4", "--batch", "8", "--steps", "30",
                                  "--fault", "sdc-after@12:1", "--quiet", "--out", path});
        QVERIFY(cli.waitForFinished(120000));
        QCOMPARE(cli.exitCode(), 0);
        RunModel model;
        StepCursor cursor;
        FindingsPanel panel(&model, &cursor);
        QSignalSpy activated(&panel, &FindingsPanel::findingActivated);
        QVERIFY(cursor.following());
        model.open(path);
        QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult(), 30000);
        QVERIFY(panel.findingsModel()->rowCount() > 0);
        const Finding* first = panel.findingsModel()->findingAt(0);
        QCOMPARE(first->cause, std::string("sdc-after"));
        QCOMPARE(first->firstStep, int64_t(12));
        QCOMPARE(cursor.step(), int64_t(12));
        QVERIFY(!cursor.following());
        QCOMPARE(activated.count(), 1);
        QCOMPARE(panel.view()->selectionModel()->selectedRows().value(0).row(), 0);

        model.close();
        cursor.reset();
        model.open(path);
        cursor.setStep(3); // before diagnosis ends
        QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult(), 30000);
        QVERIFY(panel.findingsModel()->rowCount() > 0);
        QCOMPARE(cursor.step(), int64_t(3));
        QCOMPARE(activated.count(), 1);
    }

    // A file from a source that records less: the panel says which checks could not run and why, and the
    // status does not claim more than was looked at.
    void checksThatCouldNotRunAreListed() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("partial.h5").toStdString();
        RunMeta meta = runfile_fixtures::makeMeta(2, 3, 2, 4);
        meta.source = "msprobe";
        meta.absent = {"/weights/fp", "/weights/norm", "/steps/compute_ms"};
        {
            auto w = RunWriter::create(path, meta);
            for (int s = 0; s < 3; ++s)
                w->appendStep(runfile_fixtures::makeStep(meta, s));
            w->close();
        }
        RunModel model;
        StepCursor cursor;
        FindingsPanel panel(&model, &cursor);
        model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult(), 30000);
        QVERIFY2(panel.runner()->error().isEmpty(), qPrintable(panel.runner()->error()));
        const QString text = panel.notRunText();
        QVERIFY2(text.startsWith("Could not run on this file:"), qPrintable(text));
        QVERIFY2(text.contains("weight consistency (init-mismatch): the source (msprobe) recorded no weight "
                               "fingerprints (/weights/fp) or weight norms (/weights/norm)"),
                 qPrintable(text));
        QVERIFY2(text.contains("step timing (straggler)"), qPrintable(text));
        if (panel.findingsModel()->rowCount() == 0)
            QVERIFY2(panel.statusText().contains("in what this file records"),
                     qPrintable(panel.statusText()));
        model.close();
        QCOMPARE(panel.notRunText(), QString());
    }
};

QTEST_MAIN(TestFindings)
#include "tst_findings.moc"
