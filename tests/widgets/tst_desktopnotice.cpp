// DesktopNotice on a real session bus: a private dbus-daemon with a stub org.freedesktop.Notifications
// service receives the Notify call (summary, body, the "default" action, the desktop entry), also from
// FindingNotifier when a live run's finding appears; a click (ActionInvoked) on our notice comes back as
// clicked(); without the service the backend is no longer freedesktop. Skipped where dbus-daemon is missing.
#include "core/RunFileFixtures.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "notify/DesktopNotice.h"
#include "notify/FindingNotifier.h"
#include "panels/FindingsPanel.h"
#include "store/RunWriter.h"

#include <QDBusConnection>
#include <QDBusMessage>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace rs;

// What a notification daemon sees: every Notify call, answered with a fresh id.
class NotificationStub : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.freedesktop.Notifications")
public:
    struct Call {
        QString app, summary, body;
        QStringList actions;
        QVariantMap hints;
    };
    QList<Call> calls;
public slots:
    uint Notify(const QString& app, uint, const QString&, const QString& summary, const QString& body,
                const QStringList& actions, const QVariantMap& hints, int) {
        calls.append({app, summary, body, actions, hints});
        return uint(100 + calls.size());
    }
};

class TestDesktopNotice : public QObject {
    Q_OBJECT
    QProcess m_daemon;
    QString m_address;
    NotificationStub m_stub;

    QDBusConnection stubBus() const { return QDBusConnection(QStringLiteral("stub")); }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        if (QStandardPaths::findExecutable(QStringLiteral("dbus-daemon")).isEmpty())
            QSKIP("dbus-daemon is not installed (Debian package dbus-daemon)");
        m_daemon.start(QStringLiteral("dbus-daemon"), {"--session", "--nofork", "--print-address"});
        QVERIFY(m_daemon.waitForStarted());
        QVERIFY(m_daemon.waitForReadyRead(10000));
        m_address = QString::fromUtf8(m_daemon.readLine()).trimmed();
        QVERIFY2(m_address.startsWith("unix:"), qPrintable(m_address));
        // Before anything asks for the session bus: this process's session bus is the private one.
        qputenv("DBUS_SESSION_BUS_ADDRESS", m_address.toUtf8());
        QDBusConnection stub = QDBusConnection::connectToBus(m_address, QStringLiteral("stub"));
        QVERIFY(stub.isConnected());
        QVERIFY(stub.registerObject(QStringLiteral("/org/freedesktop/Notifications"), &m_stub,
                                    QDBusConnection::ExportAllSlots));
        QVERIFY(stub.registerService(QStringLiteral("org.freedesktop.Notifications")));
    }
    void cleanupTestCase() {
        QDBusConnection::disconnectFromBus(QStringLiteral("stub"));
        m_daemon.kill();
        m_daemon.waitForFinished();
    }
    void init() { m_stub.calls.clear(); }

    void notifyReachesTheService() {
        DesktopNotice notice;
        QCOMPARE(notice.backend(), DesktopNotice::Backend::Freedesktop);
        QCOMPARE(notice.send("Summary line", "Body sentence."), DesktopNotice::Backend::Freedesktop);
        QTRY_COMPARE_WITH_TIMEOUT(m_stub.calls.size(), 1, 10000);
        const auto& c = m_stub.calls.front();
        QCOMPARE(c.summary, QString("Summary line"));
        QCOMPARE(c.body, QString("Body sentence."));
        QCOMPARE(c.actions.value(0), QString("default"));
        QCOMPARE(c.hints.value("desktop-entry").toString(), QString("org.ranksight.RankSight"));

        // A click on this notice (id 101) comes back; a click on another program's notice does not.
        QSignalSpy clicked(&notice, &DesktopNotice::clicked);
        QTest::qWait(100); // the reply with the id has arrived
        for (uint id : {uint(7), uint(101)}) {
            QDBusMessage signal = QDBusMessage::createSignal(QStringLiteral("/org/freedesktop/Notifications"),
                                                             QStringLiteral("org.freedesktop.Notifications"),
                                                             QStringLiteral("ActionInvoked"));
            signal << id << QStringLiteral("default");
            QVERIFY(stubBus().send(signal));
        }
        QTRY_COMPARE_WITH_TIMEOUT(clicked.count(), 1, 10000);
        QTest::qWait(100);
        QCOMPARE(clicked.count(), 1);
    }

    // The whole path: a finding appears on a live run, and the daemon is told.
    void liveFindingReachesTheService() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("live.h5").toStdString();
        const RunMeta meta = runfile_fixtures::makeMeta(4, 3, 2, 4);
        auto w = RunWriter::create(path, meta);
        for (int s = 0; s < 10; ++s) {
            StepRecord rec = runfile_fixtures::makeStep(meta, s);
            runfile_fixtures::makeHealthy(rec);
            if (s == 9) // rank 2's copy changed after the all-reduce
                rec.ranks[2].syncedFp[1] ^= 1;
            w->appendStep(rec);
        }
        Event e;
        e.step = 9;
        e.severity = Severity::Error;
        e.code = eventcode::kGradientSync;
        e.message = "Rank 0 and Rank 2 parameter gradient mismatch at step 9";
        w->appendEvent(e);
        w->flush();
        RunModel model;
        StepCursor cursor;
        DiagnosisRunner diagnosis(&model);
        FindingsPanel panel(&model, &diagnosis, &cursor);
        FindingNotifier notifier(&model, panel.runner(), nullptr);
        model.open(QString::fromStdString(path));
        QTRY_COMPARE_WITH_TIMEOUT(m_stub.calls.size(), 1, 30000);
        QCOMPARE(m_stub.calls.front().summary,
                 QString("Silent data corruption after the all-reduce at step 9, rank 2"));
        QCOMPARE(m_stub.calls.front().body, notifier.lastNotice().body);
        QCOMPARE(notifier.lastBackend(), DesktopNotice::Backend::Freedesktop);
        w->close();
    }

    // The daemon goes away: the next notice does not go to the bus.
    void withoutTheServiceTheBackendChanges() {
        QVERIFY(stubBus().unregisterService(QStringLiteral("org.freedesktop.Notifications")));
        DesktopNotice notice;
        QVERIFY(notice.backend() != DesktopNotice::Backend::Freedesktop);
        notice.send("s", "b");
        QTest::qWait(100);
        QCOMPARE(m_stub.calls.size(), 0);
        QVERIFY(stubBus().registerService(QStringLiteral("org.freedesktop.Notifications")));
    }
};

QTEST_MAIN(TestDesktopNotice)
#include "tst_desktopnotice.moc"
