// The Findings panel: the table model (QAbstractItemModelTester), the detail text, clicking a finding moves
// the cursor, and the background diagnosis of real run files (a clean run: no findings; a saved run with a
// finding opens on it); what the panel shows is readable in a dock's size (columns, evidence, notes).
#include "core/RunFileFixtures.h"
#include "diagnose/Cause.h"
#include "diagnose/Finding.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/FindingsModel.h"
#include "panels/FindingsPanel.h"
#include "store/RunWriter.h"

#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QLabel>
#include <QProcess>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>

using namespace rs;

namespace {

std::vector<Finding> twoFindings() {
    Finding a;
    a.cause = findCause("grad-sum")->id;
    a.confidence = 0.95;
    a.firstStep = 12;
    a.ranks = {0, 1, 2, 3};
    a.parameters = {"fc.weight"};
    a.evidence = "synced sum / mean of local sums = 4.00 on every parameter";
    a.fix = "gradients_mean=True";
    Finding b;
    b.cause = findCause("straggler")->id;
    b.confidence = 0.5;
    b.ranks = {3};
    b.evidence = "rank 3 computes 4.1x longer";
    b.fix = "read rank 3's log";
    return {a, b};
}

// A file whose source recorded less (msprobe: no weights, no timing): the panel lists the checks that could
// not run.
void writePartialRun(const std::string& path) {
    RunMeta meta = runfile_fixtures::makeMeta(2, 3, 2, 4);
    meta.source = "msprobe";
    meta.absent = {"/weights/fp", "/weights/norm", "/steps/compute_ms"};
    auto w = RunWriter::create(path, meta);
    for (int s = 0; s < 3; ++s)
        w->appendStep(runfile_fixtures::makeStep(meta, s));
    w->close();
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
        // The cause table's title says what the id means.
        QVERIFY(model.data(model.index(0, 0), Qt::ToolTipRole)
                    .toString()
                    .contains(QString::fromLatin1(causeInfo(Cause::GradSum).title)));
        model.setFindings({});
        QCOMPARE(model.rowCount(), 0);
    }

    void clickingAFindingMovesTheCursor() {
        RunModel model;
        StepCursor cursor;
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
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
        // The evidence and the fix; no empty "Parameters:" (nor a repeat of the row above).
        QVERIFY2(!panel.detailText().contains("Parameters"), qPrintable(panel.detailText()));
        QVERIFY(panel.detailText().contains("Fix: read rank 3's log"));
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
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
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
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
        QSignalSpy activated(&panel, &FindingsPanel::findingActivated);
        QVERIFY(cursor.following());
        model.open(path);
        QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult(), 30000);
        QVERIFY(panel.findingsModel()->rowCount() > 0);
        const Finding* first = panel.findingsModel()->findingAt(0);
        QCOMPARE(first->key(), std::string("sdc-after"));
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
    // A live run: once a GRADIENT_SYNC event (and the synced fingerprints that split) is in the window, the
    // panel never says the ranks agree, and the evidence starts a diagnosis at once rather than at the live
    // interval (set past the test's length here: that the interval is skipped is the point).
    void evidenceOnALiveRunIsDiagnosedAtOnce() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("live.h5").toStdString();
        RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
        auto w = RunWriter::create(path, meta);
        for (int s = 0; s < 10; ++s) {
            StepRecord rec = runfile_fixtures::makeStep(meta, s);
            runfile_fixtures::makeHealthy(rec);
            w->appendStep(rec);
        }
        RunModel model;
        StepCursor cursor;
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
        panel.runner()->setLiveInterval(10 * 60 * 1000);
        model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(model.hasRun() && model.isLive() && panel.runner()->hasResult() &&
                                     !panel.runner()->isRunning(),
                                 30000);
        QCOMPARE(panel.statusText(), QString("No findings so far: the ranks agree."));
        QCOMPARE(panel.runner()->diagnosedThrough(), int64_t(9));

        StepRecord bad = runfile_fixtures::makeStep(meta, 10);
        runfile_fixtures::makeHealthy(bad);
        bad.ranks[2].syncedFp[1] ^= 1; // a copy changed after the all-reduce
        w->appendStep(bad);
        Event e;
        e.step = 10;
        e.severity = Severity::Error;
        e.code = eventcode::kGradientSync;
        e.message = "Rank 0 and Rank 2 parameter gradient mismatch at step 10";
        w->appendEvent(e);
        w->flush();
        QElapsedTimer t;
        t.start();
        bool sawEvidence = false;
        while (panel.findingsModel()->rowCount() == 0 && t.elapsed() < 30000) {
            QTest::qWait(5);
            if (!model.events().empty())
                sawEvidence = true;
            if (sawEvidence)
                QVERIFY2(!panel.statusText().contains("agree"), qPrintable(panel.statusText()));
        }
        QVERIFY(sawEvidence);
        QCOMPARE(panel.findingsModel()->rowCount(), 1);
        const Finding* f = panel.findingsModel()->findingAt(0);
        QCOMPARE(f->key(), std::string("sdc-after"));
        QCOMPARE(f->firstStep, int64_t(10));
        QCOMPARE(f->ranks, std::vector<int>{2});
        QCOMPARE(panel.runner()->evidenceStep(), int64_t(-1));
        QVERIFY2(panel.statusText().startsWith("1 finding"), qPrintable(panel.statusText()));
        w->close();
    }

    // A monitor that watched ranks 3 and 1 only: no finding, and the panel says only those agree; with no
    // rank recorded at all it says nothing was compared.
    void ranksNotRecordedAreNotSaidToAgree() {
        QTemporaryDir dir;
        for (const auto& [missing, expected] : std::vector<std::pair<std::string, QString>>{
                 {"[0, 2]", "No findings: the recorded ranks agree (ranks 0, 2 not recorded, not compared)."},
                 {"[0, 1, 2, 3]",
                  "No findings: no rank's statistics were recorded, so none were compared."}}) {
            const std::string path = dir.filePath(QString::fromStdString(missing) + ".h5").toStdString();
            RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
            meta.source = "msprobe";
            meta.configJson = R"({"ranks_not_recorded": )" + missing + "}";
            auto w = RunWriter::create(path, meta);
            for (int s = 0; s < 5; ++s) {
                StepRecord rec = runfile_fixtures::makeStep(meta, s);
                runfile_fixtures::makeHealthy(rec);
                w->appendStep(rec);
            }
            w->close();
            RunModel model;
            StepCursor cursor;
            DiagnosisRunner diagnosis(&model);
            FindingsPanel panel(&model, &diagnosis, &cursor);
            model.open(QString::fromStdString(path));
            QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult() && !panel.runner()->isRunning(), 30000);
            QCOMPARE(panel.findingsModel()->rowCount(), 0);
            QCOMPARE(panel.statusText(), expected);
        }
    }

    void checksThatCouldNotRunAreListed() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("partial.h5").toStdString();
        writePartialRun(path);
        RunModel model;
        StepCursor cursor;
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
        model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult(), 30000);
        QVERIFY2(panel.runner()->error().isEmpty(), qPrintable(panel.runner()->error()));
        const QString text = panel.notRunText();
        QVERIFY2(text.startsWith("Could not run on this file:"), qPrintable(text));
        QVERIFY2(text.contains("weight consistency (init-mismatch, optimizer-mismatch): the source (msprobe) "
                               "recorded no weight fingerprints or weight norms"),
                 qPrintable(text));
        QVERIFY2(text.contains("step timing (straggler)"), qPrintable(text));
        if (panel.findingsModel()->rowCount() == 0)
            QVERIFY2(panel.statusText().contains("in what this file records"),
                     qPrintable(panel.statusText()));
        model.close();
        QCOMPARE(panel.notRunText(), QString());
    }

    // In a bottom dock's size: the short columns as wide as their longest text (a cause id is never cut),
    // Parameters the rest with every tensor in its tooltip; the evidence with room for five lines and more;
    // the checks that could not run wrapped whole, in a pane that scrolls rather than clipping them.
    void everythingIsReadableInADock() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("partial.h5").toStdString();
        writePartialRun(path);
        RunModel model;
        StepCursor cursor;
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
        panel.resize(640, 300);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        model.open(QString::fromStdString(path));
        QTRY_VERIFY_WITH_TIMEOUT(panel.runner()->hasResult(), 30000);
        QVERIFY(!panel.notRunText().isEmpty());

        std::vector<Finding> findings = twoFindings();
        findings[0].cause = findCause("loss-scale-not-restored")->id;
        findings[0].parameters = {"layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.conv2.weight",
                                  "fc.weight", "fc.bias"};
        findings[0].evidence =
            "rank 1's loss scale fell from 65536 to 1 at step 1200 while ranks 0, 2 and 3 "
            "kept theirs. The synced gradients of ranks 0 and 1 differ from step 1200 on, in "
            "every parameter. Rank 1 skipped no step; the others skipped 3. The loss climbs "
            "from 0.41 to 2.3 within 150 steps.";
        findings[1].cause = findCause("init-mismatch")->id;
        panel.findingsModel()->setFindings(findings);
        panel.activate(0);
        QTest::qWait(50); // the layout settles

        QTableView* view = panel.view();
        const QFontMetrics fm(view->font());
        for (int c : {FindingsModel::ConfidenceCol, FindingsModel::CauseCol, FindingsModel::DimensionCol,
                      FindingsModel::StepCol})
            for (int row = 0; row < 2; ++row) {
                const QString text = panel.findingsModel()->index(row, c).data().toString();
                QVERIFY2(view->columnWidth(c) >= fm.horizontalAdvance(text),
                         qPrintable(QString("column %1 is %2 px for '%3' (%4 px)")
                                        .arg(c)
                                        .arg(view->columnWidth(c))
                                        .arg(text)
                                        .arg(fm.horizontalAdvance(text))));
            }
        int total = 0;
        for (int c = 0; c < FindingsModel::ColumnCount; ++c)
            total += view->columnWidth(c);
        QVERIFY2(total <= view->viewport()->width(),
                 qPrintable(QString("%1 px of columns in %2 px").arg(total).arg(view->viewport()->width())));
        QVERIFY(view->columnWidth(FindingsModel::ParamsCol) > 0);
        const QModelIndex params = panel.findingsModel()->index(0, FindingsModel::ParamsCol);
        QVERIFY(!params.data().toString().contains("fc.bias")); // three names and a count
        QVERIFY2(params.data(Qt::ToolTipRole).toString().contains("fc.weight, fc.bias"),
                 qPrintable(params.data(Qt::ToolTipRole).toString()));

        auto* detail = panel.findChild<QTextBrowser*>("detail");
        QVERIFY(detail);
        QVERIFY(detail->toPlainText().contains("within 150 steps"));
        // Five parameters: the row shows three and a count, the pane names them all.
        QVERIFY2(detail->toPlainText().contains("Parameters (5): layer1.0.conv1.weight, layer1.0.bn1.weight, "
                                                "layer1.0.conv2.weight, fc.weight, fc.bias"),
                 qPrintable(detail->toPlainText()));
        const int line = detail->fontMetrics().lineSpacing();
        QVERIFY2(detail->viewport()->height() >= 5 * line,
                 qPrintable(QString("%1 px, lines of %2 px").arg(detail->viewport()->height()).arg(line)));
        // The evidence and the fix whole, without scrolling, and no line wider than the pane.
        QCOMPARE(detail->verticalScrollBar()->maximum(), 0);
        QCOMPARE(detail->horizontalScrollBar()->maximum(), 0);

        auto* notes = panel.findChild<QScrollArea*>("notes");
        auto* notRun = panel.findChild<QLabel*>("notRun");
        QVERIFY(notes && notRun);
        QVERIFY(notes->isVisible() && notRun->isVisible());
        QVERIFY(notes->height() >= 2 * notRun->fontMetrics().lineSpacing());
        QVERIFY2(notRun->width() <= notes->viewport()->width(),
                 qPrintable(QString("%1 px in %2 px").arg(notRun->width()).arg(notes->viewport()->width())));
        QVERIFY2(notRun->height() >= notRun->heightForWidth(notRun->width()),
                 qPrintable(QString("%1 px for %2 px of text")
                                .arg(notRun->height())
                                .arg(notRun->heightForWidth(notRun->width()))));
        // What does not fit the pane is a scroll away.
        if (notes->widget()->height() > notes->viewport()->height())
            QVERIFY(notes->verticalScrollBar()->isVisible());
        if (qEnvironmentVariableIsSet("RANKSIGHT_GRAB_DIR"))
            QVERIFY(panel.grab().save(qEnvironmentVariable("RANKSIGHT_GRAB_DIR") + "/findings.png"));
    }
};

QTEST_MAIN(TestFindings)
#include "tst_findings.moc"
