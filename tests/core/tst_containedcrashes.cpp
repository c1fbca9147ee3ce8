// Inputs whose run file crashes libhdf5 itself (tests/data/fuzz-regressions/runfile-contained/): never read
// in this process. Every command-line read command goes through the reader process and must exit 2 with one
// line that names the file, says it is damaged and where (FILE.expect), and leave no core dump; so must
// openRunFile. (The in-process fuzz regressions are tst_fuzzregressions.)
#include "FuzzEntries.h"
#include "FuzzInputs.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
#include <vector>

class TestContainedCrashes : public QObject {
    Q_OBJECT

private slots:
    void containedThroughTheReaderProcess_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("everyCommand");
        const QString dir = QStringLiteral(RANKSIGHT_TEST_DATA "/fuzz-regressions/runfile-contained");
        const QStringList all = fuzzInputs(dir);
        QVERIFY2(!all.isEmpty(), qPrintable("no inputs under " + dir));
        // Every read command opens the file the same way (openRunFile, through the reader process): each
        // input goes through `inspect`, and the first crash and every hang through all of them.
        bool crashSeen = false;
        for (const QString& f : all) {
            const QString name = QFileInfo(f).fileName();
            const bool hang = name.contains(QLatin1String("hang"));
            QTest::addRow("%s", qPrintable(name)) << f << (hang || !crashSeen);
            crashSeen = crashSeen || !hang;
        }
    }
    void containedThroughTheReaderProcess() {
        QFETCH(QString, file);
        QFETCH(bool, everyCommand);
        QFile in(file), expectFile(file + QLatin1String(".expect"));
        QVERIFY(in.open(QIODevice::ReadOnly));
        QVERIFY2(expectFile.open(QIODevice::ReadOnly), "a contained input needs FILE.expect");
        const QByteArray bytes = in.readAll();
        const QString expect = QString::fromUtf8(expectFile.readAll()).trimmed();
        QTemporaryDir dir;
        const QString run = dir.filePath(QStringLiteral("damaged.h5"));
        rs::fuzz::writeFuzzedRunFile(
            {reinterpret_cast<const uint8_t*>(bytes.constData()), size_t(bytes.size())}, run.toStdString());

        // Some inputs make libhdf5 hang rather than crash; the reader's no-progress limit is what they test,
        // shortened from 30 s so that the suite does not wait it out six times per input.
        qputenv("RANKSIGHT_READER_TIMEOUT_MS", "3000");
        const auto restore = qScopeGuard([] { qunsetenv("RANKSIGHT_READER_TIMEOUT_MS"); });
        QString error;
        try {
            rs::openRunFile(run.toStdString());
        } catch (const rs::RunFileError& e) {
            error = QString::fromUtf8(e.what());
        }
        QVERIFY2(error.startsWith(run + ": ") && error.contains(expect), qPrintable(error));

        QList<QStringList> commands = {{"inspect", run}};
        if (everyCommand)
            commands += {
                {"inspect", run, "--json"},
                {"diagnose", run},
                {"export-csv", run, "--out", dir.filePath("csv")},
                {"report", run, "--out", dir.filePath("report")},
            };
        // All at once: each is mostly process start-up (and, for a hang, the reader's time limit).
        std::vector<std::unique_ptr<QProcess>> running;
        for (const QStringList& args : commands) {
            running.push_back(std::make_unique<QProcess>());
            running.back()->setWorkingDirectory(dir.path()); // where a core dump would land
            running.back()->start(QStringLiteral(RANKSIGHT_CLI), args);
        }
        for (size_t k = 0; k < running.size(); ++k) {
            QProcess& p = *running[k];
            QVERIFY(p.waitForFinished(120000));
            const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
            const QString what = commands[qsizetype(k)].join(' ') + ": " + err;
            QCOMPARE(p.exitStatus(), QProcess::NormalExit);
            QVERIFY2(p.exitCode() == 2, qPrintable(what));
            QVERIFY2(!err.contains('\n') && err.contains(run) && err.contains(expect), qPrintable(what));
        }
        QVERIFY(!QFileInfo::exists(dir.filePath("csv")) && !QFileInfo::exists(dir.filePath("report")));
        QVERIFY(QDir(dir.path()).entryList({QStringLiteral("core*")}, QDir::Files).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestContainedCrashes)
#include "tst_containedcrashes.moc"
