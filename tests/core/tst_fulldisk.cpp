// A full disk stops the run with a clear error and loses nothing: `ranksight-cli train` writes into a small
// tmpfs the test mounts until the disk is full. The process ends by itself with an error that says the disk
// is full, the file is closed (the writer's space reserve gives it room to close) and holds every step up to
// the last complete one, whole. A disk that is full before the run starts is refused, leaving no file.
// Mounting needs root (CAP_SYS_ADMIN); elsewhere the test is skipped and says why.
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

using namespace rs;

namespace {

// A tmpfs of `megabytes` mounted on a fresh directory for the test's lifetime.
class SmallDisk {
public:
    explicit SmallDisk(int megabytes) {
        const QByteArray opts = QStringLiteral("size=%1m").arg(megabytes).toUtf8();
        m_mounted = ::mount("tmpfs", m_dir.path().toUtf8().constData(), "tmpfs", 0, opts.constData()) == 0;
    }
    ~SmallDisk() {
        if (m_mounted)
            ::umount2(m_dir.path().toUtf8().constData(), MNT_DETACH);
    }
    bool mounted() const { return m_mounted; }
    QString filePath(const QString& name) const { return m_dir.filePath(name); }
    QStringList entries() const { return QDir(m_dir.path()).entryList(QDir::Files | QDir::Hidden); }
    qint64 freeBytes() const {
        struct statvfs st {};
        return ::statvfs(m_dir.path().toUtf8().constData(), &st) == 0
                   ? qint64(st.f_bavail) * qint64(st.f_frsize)
                   : -1;
    }

private:
    QTemporaryDir m_dir;
    bool m_mounted = false;
};

struct CliResult {
    int exitCode = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    QString err;
};

CliResult train(const QString& out) {
    QProcess cli;
    cli.start(RANKSIGHT_CLI, {"train", "--model", "mlp", "--ranks", "2", "--batch", "8", "--steps", "1000000",
                              "--quiet", "--out", out});
    CliResult r;
    if (!cli.waitForFinished(180000)) {
        cli.kill();
        cli.waitForFinished();
        r.err = "did not end within 180 s";
        return r;
    }
    r.exitCode = cli.exitCode();
    r.status = cli.exitStatus();
    r.err = QString::fromUtf8(cli.readAllStandardError());
    return r;
}

} // namespace

class TestFullDisk : public QObject {
    Q_OBJECT
private slots:
    void aDiskFillingUpStopsTheRunAndKeepsEveryStep() {
        SmallDisk disk(12); // 8 MiB go to the writer's close reserve, ~4 MiB to the steps
        if (!disk.mounted())
            QSKIP("mounting a tmpfs needs root (CAP_SYS_ADMIN)");
        const QString path = disk.filePath("run.h5");
        const CliResult r = train(path);
        qInfo("train said: %s", qPrintable(r.err.trimmed()));
        QCOMPARE(r.status, QProcess::NormalExit);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("the disk is full"), qPrintable(r.err));
        QVERIFY2(r.err.contains(path), qPrintable(r.err));
        QVERIFY2(!r.err.contains("infinite loop"), qPrintable(r.err)); // HDF5 could not close its ids

        const auto reader = openRunFile(path.toStdString());
        QVERIFY2(reader->complete(), "the writer could not close the file");
        QVERIFY2(QString::fromStdString(reader->stopReason()).contains("the disk is full"),
                 reader->stopReason().c_str());
        QVERIFY(reader->stepCount() > 10);
        const auto steps = reader->readSteps(0, reader->stepCount(), true);
        QCOMPARE(int64_t(steps.size()), reader->stepCount());
        for (int64_t s = 0; s < int64_t(steps.size()); ++s) {
            QCOMPARE(steps[size_t(s)].step, s);
            QCOMPARE(steps[size_t(s)].ranks.back().localNorm.size(), reader->meta().params.size());
            QVERIFY(std::isfinite(steps[size_t(s)].ranks.front().loss));
        }
        QVERIFY2(r.err.contains(QStringLiteral("holds the %1 steps").arg(reader->stepCount())),
                 qPrintable(r.err));
        // The reserve was an unnamed file: nothing is left beside the run file.
        QCOMPARE(disk.entries(), QStringList{"run.h5"});
    }

    void aDiskAlreadyFullRefusesTheRunAndLeavesNoFile() {
        SmallDisk disk(2);
        if (!disk.mounted())
            QSKIP("mounting a tmpfs needs root (CAP_SYS_ADMIN)");
        QFile filler(disk.filePath("filler"));
        QVERIFY(filler.open(QIODevice::WriteOnly));
        const QByteArray block(64 * 1024, 'x');
        while (filler.write(block) == block.size() && filler.flush()) {
        }
        filler.close();
        QVERIFY(disk.freeBytes() < 64 * 1024);
        const QString path = disk.filePath("run.h5");
        const CliResult r = train(path);
        qInfo("train said: %s", qPrintable(r.err.trimmed()));
        QCOMPARE(r.status, QProcess::NormalExit);
        QVERIFY(r.exitCode != 0);
        QVERIFY2(r.err.contains(path), qPrintable(r.err));
        QVERIFY2(r.err.contains("the disk is full"), qPrintable(r.err));
        QVERIFY(!QFile::exists(path));
    }
};

QTEST_GUILESS_MAIN(TestFullDisk)
#include "tst_fulldisk.moc"
