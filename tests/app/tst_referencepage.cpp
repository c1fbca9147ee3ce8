// The window's "Against the Reference" page as a user drives it (offscreen): File > Compare With Reference…
// on a run with a flip the all-reduce averaged into every rank, the page's lines per rank, the link from the
// Findings panel, Close Run; and a comparison of other arithmetic that asks for a spread reference.
#include "DialogDriving.h"
#include "MainWindow.h"
#include "charts/ChartWidget.h"
#include "charts/ReferenceChart.h"
#include "compare/RunComparison.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/ComparisonPanel.h"
#include "panels/FindingsModel.h"
#include "panels/FindingsPanel.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <qcustomplot.h>

using namespace rs;
using namespace rs::dialog_driving;

namespace {

// The chart's graph of that legend name, or null.
QCPGraph* plotGraphNamed(const ChartWidget* chart, const QString& name) {
    for (int i = 0; i < chart->plot()->graphCount(); ++i)
        if (chart->plot()->graph(i)->name() == name)
            return chart->plot()->graph(i);
    return nullptr;
}

} // namespace

class TestReferencePage : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    // File > Compare With Reference… on a run whose flip the all-reduce averaged into every rank: the
    // Reference page shows both losses, the divergence map and a marker at step 8; the Findings panel names
    // sdc-before on rank 2 (which the cross-rank checks alone do not) and says where the run parts; the bug
    // report carries the comparison. A reference that cannot be read is an error in front, and the window
    // stays usable.
    void comparesWithAReferenceRun() {
        QTemporaryDir dir;
        auto train = [&](const QString& name, const QStringList& extra) {
            QProcess p;
            p.start(RANKSIGHT_CLI, QStringList{"train", "--model", "mlp", "--ranks", "4", "--steps", "20",
                                               "--quiet", "--out", dir.filePath(name)} +
                                       extra);
            return p.waitForFinished(120000) && p.exitCode() == 0 ? dir.filePath(name) : QString();
        };
        const QString clean = train("clean.h5", {});
        const QString flip = train("flip.h5", {"--fault", "sdc-before@8:2:25"});
        QVERIFY(!clean.isEmpty() && !flip.isEmpty());
        MainWindow w;
        w.show();
        w.openRun(flip);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->isLoading(), 10000);
        FindingsPanel* findings = w.findingsPanel();
        QTRY_VERIFY_WITH_TIMEOUT(findings->runner()->hasResult() && !findings->runner()->isRunning(), 30000);
        auto named = [&](const char* cause) {
            for (const Finding& f : findings->findingsModel()->findings())
                if (f.key() == cause)
                    return true;
            return false;
        };
        QVERIFY(!named("sdc-before")); // the ranks agree: the cross-rank checks cannot see it

        QVERIFY2(w.compareWithReference(clean), qPrintable(w.lastError()));
        ComparisonPanel* panel = w.comparisonPanel();
        QVERIFY(panel->comparison() && panel->comparison()->first);
        QCOMPARE(panel->comparison()->first->step, int64_t(8));
        QVERIFY2(panel->summaryText().contains("First divergence: step 8, fc1.weight, local_fp on rank(s) 2"),
                 qPrintable(panel->summaryText()));
        ReferenceChart* chart = panel->chart();
        chart->refreshNow();
        QVERIFY(chart->note().isEmpty());
        QVERIFY(chart->firstDivergenceShown());
        QCOMPARE(chart->deviationGraphCount(), 4);
        // Each rank against the same rank of the clean run: equal bit for bit before the flip at step 8.
        for (int r = 0; r < 4; ++r) {
            QCPGraph* g = plotGraphNamed(chart, QStringLiteral("rank %1 − reference's rank %1").arg(r));
            QVERIFY(g && g->dataCount() > 0);
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd() && it->key < 8; ++it)
                QCOMPARE(it->value, 0.0);
        }
        QVERIFY(chart->runLossGraph()->dataCount() > 0 && chart->referenceLossGraph()->dataCount() > 0);
        QVERIFY(chart->divergenceMap()->data()->keySize() > 0);
        QCOMPARE(chart->divergenceMap()->data()->valueSize(), 6); // one row per parameter
        QTRY_VERIFY_WITH_TIMEOUT(named("sdc-before") && !findings->runner()->isRunning(), 30000);
        QVERIFY2(findings->statusText().contains("differs from the reference from step 8 in fc1.weight"),
                 qPrintable(findings->statusText()));
        // That line takes the user to the reference page, at the step where the runs part.
        w.cursor()->setStep(15);
        QLabel* status = nullptr;
        for (QLabel* l : findings->findChildren<QLabel*>())
            if (l->text().contains("href=\"reference:\""))
                status = l;
        QVERIFY(status);
        emit status->linkActivated(QStringLiteral("reference:"));
        QCOMPARE(w.cursor()->step(), int64_t(8));
        QTRY_VERIFY(panel->isVisible());

        QString error;
        const QString out = dir.filePath("report");
        QVERIFY2(w.exportReport(out, &error), qPrintable(error));
        QFile md(QDir(out).filePath("report.md"));
        QVERIFY(md.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(md.readAll());
        QVERIFY(QFileInfo(QDir(out).filePath("reference.png")).size() > 0); // the page's chart
        QVERIFY2(text.contains("## Compared with a reference") &&
                     text.contains("first divergence: step 8, fc1.weight local_fp on rank(s) 2") &&
                     text.contains("**sdc-before**"),
                 qPrintable(text));

        QVERIFY(!w.compareWithReference(dir.filePath("nothing.h5")));
        QVERIFY2(w.lastError().contains("nothing.h5"), qPrintable(w.lastError()));
        QVERIFY(panel->comparison()); // the last good comparison stays
        w.openRun(clean);             // another run: the comparison was of the one before
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->isLoading(), 10000);
        QVERIFY(!panel->comparison());

        // Close Run leaves nothing of the comparison on its page: no lines, no map, no parameter names.
        QVERIFY2(w.compareWithReference(flip), qPrintable(w.lastError()));
        chart->refreshNow();
        QVERIFY(chart->divergenceMap()->data()->keySize() > 0);
        w.model()->close();
        QVERIFY(!panel->comparison());
        chart->refreshNow();
        QCOMPARE(chart->deviationGraphCount(), 0);
        QCOMPARE(chart->runLossGraph()->dataCount(), 0);
        QCOMPARE(chart->divergenceMap()->data()->keySize(), 0);
        QVERIFY(chart->divergenceMap()
                    ->valueAxis()
                    ->ticker()
                    .dynamicCast<QCPAxisTickerText>()
                    ->ticks()
                    .isEmpty());
    }

    // Under O2 a flat ring and the hierarchical sum drift apart beyond the one-step bound: the page says so
    // and offers to measure that drift. Its link asks for a spread reference (the same job on 4 servers of 1
    // card); compared again with it, the run agrees, the page says the tolerances follow the measured drift,
    // and File > Add Spread Reference… is there for another.
    void comparesAgainstAMeasuredSpread() {
        QTemporaryDir dir;
        auto train = [&](const QString& name, const QStringList& extra) {
            QProcess p;
            p.start(RANKSIGHT_CLI, QStringList{"train", "--model", "mlp", "--ranks", "4", "--quiet", "--out",
                                               dir.filePath(name)} +
                                       extra);
            return p.waitForFinished(120000) && p.exitCode() == 0 ? dir.filePath(name) : QString();
        };
        const QString flat = train("flat.h5", {});
        const QString hier = train("hier.h5", {"--set", "devices_per_server=2"});
        const QString single = train("single.h5", {"--set", "devices_per_server=1"});
        QVERIFY(!flat.isEmpty() && !hier.isEmpty() && !single.isEmpty());
        MainWindow w;
        w.show();
        w.openRun(hier);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->hasRun() && !w.model()->isLoading(), 10000);
        QAction* addSpread = actionNamed(w, "Add &Spread Reference…");
        QVERIFY(addSpread && !addSpread->isEnabled()); // nothing compared yet

        QVERIFY2(w.compareWithReference(flat), qPrintable(w.lastError()));
        ComparisonPanel* panel = w.comparisonPanel();
        QVERIFY(panel->comparison() && panel->comparison()->first);
        QVERIFY2(panel->summaryText().contains("measure that drift"), qPrintable(panel->summaryText()));
        QVERIFY(addSpread->isEnabled());

        QLabel* summary = nullptr;
        for (QLabel* l : panel->findChildren<QLabel*>())
            if (l->text().contains(QLatin1String("href=\"spread:\"")))
                summary = l;
        QVERIFY(summary);
        QString title;
        answerReportDialog([&](QFileDialog* d) {
            title = d->windowTitle();
            type(d, single);
            static_cast<QDialog*>(d)->accept();
        });
        emit summary->linkActivated(QStringLiteral("spread:"));
        QVERIFY2(title.contains("Spread Reference"), qPrintable(title));
        QTRY_VERIFY_WITH_TIMEOUT(panel->comparison() && panel->comparison()->spreadUsed, 30000);
        const RunComparison& c = *panel->comparison();
        QVERIFY2(!c.first, qPrintable(panel->summaryText()));
        QCOMPARE(c.spreads.size(), size_t(1));
        QCOMPARE(QString::fromStdString(c.spreads[0].name), single);
        QVERIFY2(panel->summaryText().contains("No divergence") &&
                     panel->summaryText().contains("Tolerances widened to 4× the drift measured against "
                                                   "single.h5"),
                 qPrintable(panel->summaryText()));
        panel->chart()->refreshNow();
        QVERIFY(panel->chart()->divergenceMap()->data()->keySize() > 0);
    }
};

QTEST_MAIN(TestReferencePage)
#include "tst_referencepage.moc"
