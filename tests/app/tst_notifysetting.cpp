// The window's side of finding notices: Run › Notify on Findings During a Live Run (checkable, on by default,
// remembered, its tooltip naming this desktop's way to show notices), and a run this window trains with a
// fault announces its finding once (the status bar shows it too), while the setting off announces nothing.
#include "MainWindow.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "notify/FindingNotifier.h"
#include "panels/FindingsPanel.h"
#include "train/TrainConfig.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

using namespace rs;

namespace {
// Two ranks, one of which changes a synced gradient's copy at step 6 (sdc-after on rank 1).
TrainConfig faultyConfig(const QString& out) {
    TrainConfig c;
    c.model = ModelKind::Mlp;
    c.ranks = 2;
    c.batchPerRank = 4;
    c.steps = 40;
    c.precision = Precision::O0;
    c.lossScale = parseLossScale("none");
    c.evalSamples = 16;
    c.warmupSteps = 0;
    c.out = out.toStdString();
    c.addFault("sdc-after@6:1");
    return c;
}

QAction* notifyAction(MainWindow& w) {
    return w.findChild<QAction*>(QStringLiteral("notifyAction"));
}
} // namespace

class TestNotifySetting : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        qunsetenv("DBUS_SESSION_BUS_ADDRESS");
        QSettings().remove(FindingNotifier::settingsKey());
    }

    void theSettingIsInTheRunMenuAndRemembered() {
        {
            MainWindow w;
            QAction* a = notifyAction(w);
            QVERIFY(a);
            QVERIFY(a->isCheckable());
            QVERIFY(a->isChecked()); // on by default
            QVERIFY2(a->toolTip().contains(w.findingNotifier()->backendText()), qPrintable(a->toolTip()));
            bool inRunMenu = false;
            for (QAction* m : w.menuBar()->actions())
                if (m->menu() && m->text() == "&Run")
                    inRunMenu = m->menu()->actions().contains(a);
            QVERIFY(inRunMenu);
            a->setChecked(false);
            QVERIFY(!w.findingNotifier()->isEnabled());
        }
        MainWindow again;
        QVERIFY(!notifyAction(again)->isChecked());
        QVERIFY(!again.findingNotifier()->isEnabled());
        notifyAction(again)->setChecked(true);
        QCOMPARE(QSettings().value(FindingNotifier::settingsKey()).toBool(), true);
    }

    void aTrainedRunWithAFaultNotifiesOnce_data() {
        QTest::addColumn<bool>("enabled");
        QTest::addRow("on") << true;
        QTest::addRow("off") << false;
    }
    void aTrainedRunWithAFaultNotifiesOnce() {
        QFETCH(bool, enabled);
        QTemporaryDir dir;
        MainWindow w;
        notifyAction(w)->setChecked(enabled);
        QSignalSpy messages(w.statusBar(), &QStatusBar::messageChanged);
        QSignalSpy told(w.findingNotifier(), &FindingNotifier::noticed);
        w.findingsPanel()->runner()->setLiveInterval(100);
        QVERIFY(w.startRun(faultyConfig(dir.filePath("sdc.h5"))));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->isComplete() && w.findingsPanel()->runner()->hasResult() &&
                                     !w.findingsPanel()->runner()->isRunning(),
                                 120000);
        QTest::qWait(300);
        const auto& findings = w.findingsPanel()->runner()->findings();
        QVERIFY(!findings.empty());
        QCOMPARE(findings.front().key(), std::string("sdc-after"));
        FindingNotifier* n = w.findingNotifier();
        if (!enabled) {
            QCOMPARE(n->noticeCount(), 0);
            QCOMPARE(n->alertCount(), 0);
            return;
        }
        QStringList summaries;
        for (const QList<QVariant>& t : told)
            summaries << t.value(0).toString();
        // Diagnosed every 100 ms through the run: named again and again, told once.
        QVERIFY2(n->noticeCount() == 1, qPrintable(summaries.join(" / ")));
        QCOMPARE(n->lastNotice().summary,
                 QString("Silent data corruption after the all-reduce at step 6, rank 1"));
        QVERIFY(std::any_of(messages.begin(), messages.end(), [](const QList<QVariant>& m) {
            return m.value(0).toString() ==
                   "Finding: Silent data corruption after the all-reduce at step 6, rank 1";
        }));
        QVERIFY(n->alertCount() >= 1); // never shown, so never in front
    }
};

QTEST_MAIN(TestNotifySetting)
#include "tst_notifysetting.moc"
