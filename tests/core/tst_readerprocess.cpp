// The reader process (openRunFile, core/reader/ReaderProcess.h): it answers exactly what libhdf5 in this
// process answers (every record field, over the wire), keeps RunFileError messages, follows a file while it
// grows, and contains what it exists for: a file that crashes libhdf5, a reader killed mid-session, a hung
// reader, one that runs out of its memory limit. After each, no reader process is left and no core dump.
#include "RunFileFixtures.h"
#include "reader/OpenRunFile.h"
#include "reader/ReaderProcess.h"
#include "reader/ReaderProtocol.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <sys/wait.h>

using namespace rs;
using namespace rs::runfile_fixtures;

namespace {

// Every field of the records, through the protocol's encoder: equal bytes, equal records.
template <class T> std::string encoded(const T& v) {
    readerwire::Writer w;
    readerwire::put(w, v);
    return w.bytes();
}

// No child process of this test is left, running or zombie.
bool noChildrenLeft() {
    int status = 0;
    return ::waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD;
}

bool hasCoreFile(const QString& dir) {
    return !QDir(dir).entryList({QStringLiteral("core*")}, QDir::Files).isEmpty();
}

class EnvGuard {
public:
    EnvGuard(const char* name, const QByteArray& value)
        : m_name(name) {
        qputenv(name, value);
    }
    ~EnvGuard() { qunsetenv(m_name); }

private:
    const char* m_name;
};

} // namespace

class TestReaderProcess : public QObject {
    Q_OBJECT

private slots:
    void init() { QVERIFY(QDir::setCurrent(m_dir.path())); } // where a core dump would land

    void findsTheReaderProgram() {
        const std::string exe = ProcessRunReader::findExecutable();
        QVERIFY2(!exe.empty(), "ranksight-reader not found");
        QVERIFY(QFileInfo(QString::fromStdString(exe)).isExecutable());
    }

    void answersWhatLibhdf5InThisProcessAnswers() {
        const QString path = m_dir.filePath("full.h5");
        const RunMeta meta = makeMeta(3, 5, 4, 6);
        {
            auto w = RunWriter::create(path.toStdString(), meta, true);
            for (int s = 0; s < 25; ++s) {
                w->appendStep(makeStep(meta, s));
                if (s % 10 == 0)
                    w->appendWeights(makeWeights(meta, s));
                if (s % 5 == 0) {
                    w->appendEval(makeEval(meta, s));
                    w->appendEvent(makeEvent(s));
                }
            }
            w->appendFlightDump(makeDump(meta, 20, 4));
            w->close("completed");
        }
        const auto local = openRunFile(path.toStdString(), ReadIn::ThisProcess);
        const auto remote = openRunFile(path.toStdString());
        QVERIFY(dynamic_cast<ProcessRunReader*>(remote.get()));
        QCOMPARE(remote->path(), path.toStdString());
        QCOMPARE(encoded(remote->meta()), encoded(local->meta()));
        QCOMPARE(remote->meta().params[2].name, meta.params[2].name);
        QCOMPARE(remote->meta().cards[1].deviceIp, meta.cards[1].deviceIp);
        QCOMPARE(remote->formatVersion(), local->formatVersion());
        QVERIFY(remote->complete());
        QCOMPARE(remote->stopReason(), std::string("completed"));
        QCOMPARE(remote->totalElements(), local->totalElements());
        QCOMPARE(remote->stepCount(), int64_t(25));
        QCOMPARE(remote->weightCount(), int64_t(3));
        QCOMPARE(remote->evalCount(), int64_t(5));
        QCOMPARE(remote->eventCount(), int64_t(5));
        QCOMPARE(remote->flightDumpCount(), int64_t(1));

        for (bool perParam : {false, true}) {
            const auto a = remote->readSteps(3, 17, perParam), b = local->readSteps(3, 17, perParam);
            QCOMPARE(a.size(), size_t(14));
            QCOMPARE(encoded(a), encoded(b));
        }
        const auto steps = remote->readSteps(7, 8);
        const StepRecord want = makeStep(meta, 7);
        QCOMPARE(steps[0].ranks[2].syncedFp, want.ranks[2].syncedFp);
        QCOMPARE(steps[0].ranks[1].sketch, want.ranks[1].sketch);
        QCOMPARE(encoded(remote->readWeights(1, 3)), encoded(local->readWeights(1, 3)));
        QCOMPARE(encoded(remote->readEvals()), encoded(local->readEvals()));
        QCOMPARE(encoded(remote->readEvents(2, 5)), encoded(local->readEvents(2, 5)));
        QCOMPARE(encoded(remote->readFlightDumps()), encoded(local->readFlightDumps()));
        QCOMPARE(remote->readFlightDumps()[0].entries[3].data.size(), size_t(remote->totalElements()));
        QCOMPARE(remote->readStepNumbers(0, 25), local->readStepNumbers(0, 25));
        QCOMPARE(remote->readWeightSteps(), (std::vector<int64_t>{0, 10, 20}));
        QCOMPARE(remote->readWeightSteps(1, 3), (std::vector<int64_t>{10, 20}));
        QCOMPARE(encoded(remote->readEvals(1, 2)), encoded(local->readEvals(1, 2)));
        QCOMPARE(remote->readEvals(1, 2).size(), size_t(1));
        QVERIFY_THROWS_EXCEPTION(RunFileError, remote->readEvals(0, remote->evalCount() + 1));
        QCOMPARE(remote->readStepScalar(runschema::kLoss, 5, 9),
                 local->readStepScalar(runschema::kLoss, 5, 9));
        QCOMPARE(encoded(remote->readAll().steps), encoded(local->readAll().steps));
    }

    void keepsTheReadersErrorMessages() {
        const QString good = m_dir.filePath("good.h5");
        writeRun(good, makeMeta(2, 3, 4, 4), 10);
        auto r = openRunFile(good.toStdString());
        const QString outOfRange = errorOf([&] { r->readSteps(5, 11); });
        QVERIFY2(outOfRange.contains("readSteps(5, 11): outside the 10 rows"), qPrintable(outOfRange));
        // A column id the reader process must check before it indexes anything with it.
        const auto bogus = runschema::StepCol(999);
        const QString notAColumn = errorOf([&] { r->readStepScalar(bogus, 0, 1); });
        QVERIFY2(notAColumn.contains("column 999 is not a per-rank scalar step column"),
                 qPrintable(notAColumn));
        QCOMPARE(notAColumn, errorOf([&] {
                     openRunFile(good.toStdString(), ReadIn::ThisProcess)->readStepScalar(bogus, 0, 1);
                 }));
        QCOMPARE(r->readSteps(0, 10).size(), size_t(10)); // an error is an answer: the reader goes on
        r.reset();

        const QString text = m_dir.filePath("text.h5");
        QFile f(text);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a run file\n");
        f.close();
        for (const QString& p : {text, m_dir.filePath("missing.h5"), m_dir.path()}) {
            const QString remote = errorOf([&] { openRunFile(p.toStdString()); });
            QVERIFY(!remote.isEmpty());
            QCOMPARE(remote, errorOf([&] { openRunFile(p.toStdString(), ReadIn::ThisProcess); }));
        }
        QVERIFY(noChildrenLeft());
    }

    void followsAFileWhileItIsWritten() {
        const QString path = m_dir.filePath("live.h5");
        const RunMeta meta = makeMeta(2, 3, 4, 4);
        auto w = RunWriter::create(path.toStdString(), meta, true);
        for (int s = 0; s < 5; ++s)
            w->appendStep(makeStep(meta, s));
        const auto r = openRunFile(path.toStdString());
        QCOMPARE(r->stepCount(), int64_t(5));
        QVERIFY(!r->complete());
        for (int s = 5; s < 12; ++s)
            w->appendStep(makeStep(meta, s));
        QVERIFY(r->refresh());
        QCOMPARE(r->stepCount(), int64_t(12));
        QCOMPARE(r->readStepNumbers(11, 12), std::vector<int64_t>{11});
        w->close("completed");
        QVERIFY(r->refresh());
        QVERIFY(r->complete());
        QVERIFY(!r->refresh());
    }

    // The file of issue 10: a damaged global heap behind the variable-length root attribute 'format' makes
    // H5Aread in Debian's libhdf5 1.10.8 write out of bounds (SIGSEGV in a release build).
    void aFileThatCrashesLibhdf5IsContained() {
        const QString path = m_dir.filePath("evil.h5");
        QVERIFY(QFile::copy(QStringLiteral(RANKSIGHT_TEST_DATA "/damaged-vlen-heap.h5"), path));
        QString error;
        try {
            openRunFile(path.toStdString());
        } catch (const ReaderDiedError& e) {
            error = QString::fromUtf8(e.what());
        }
        QVERIFY2(error.startsWith(path + ": the file is damaged: reading root attribute 'format'"),
                 qPrintable(error));
        QVERIFY2(error.contains("crashed the HDF5 library") || error.contains("exit code"),
                 qPrintable(error));
        QVERIFY(noChildrenLeft());
        QVERIFY(!hasCoreFile(m_dir.path()));
    }

    void aReaderThatDiesMidSessionFailsEveryLaterCall() {
        const QString path = m_dir.filePath("good2.h5");
        writeRun(path, makeMeta(2, 3, 4, 4), 10);
        auto r = openRunFile(path.toStdString());
        auto* process = dynamic_cast<ProcessRunReader*>(r.get());
        QVERIFY(process && process->pid() > 0);
        QCOMPARE(::kill(process->pid(), SIGSEGV), 0);
        QString first;
        try {
            r->readSteps(0, 10);
        } catch (const ReaderDiedError& e) {
            first = QString::fromUtf8(e.what());
        }
        // (Under AddressSanitizer its handler catches the signal and exits with code 1.)
        QVERIFY2(first.contains("crashed the HDF5 library (SIGSEGV") || first.contains("with exit code 1"),
                 qPrintable(first));
        QCOMPARE(errorOf([&] { r->readEvents(); }), first); // never silently restarted on a damaged file
        QCOMPARE(r->stepCount(), int64_t(10));              // what it said before stays
        r.reset();
        QVERIFY(noChildrenLeft());
        QVERIFY(!hasCoreFile(m_dir.path()));
    }

    void aHungReaderIsStopped() {
        const QString fake = m_dir.filePath("hung-reader.sh");
        QFile f(fake);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("#!/bin/sh\nexec sleep 60\n"); // accepts the connection, never answers
        f.close();
        QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
        const QString path = m_dir.filePath("good3.h5");
        writeRun(path, makeMeta(2, 3, 4, 4), 3);
        const EnvGuard reader("RANKSIGHT_READER", fake.toUtf8());
        const EnvGuard timeout("RANKSIGHT_READER_TIMEOUT_MS", "500");
        QElapsedTimer t;
        t.start();
        const QString error = errorOf([&] { openRunFile(path.toStdString()); });
        QVERIFY2(error.contains("made no progress for 0.5 s while reading the file"), qPrintable(error));
        QVERIFY2(t.elapsed() < 20000, qPrintable(QString::number(t.elapsed()))); // not the 60 s of the hang
        QVERIFY(noChildrenLeft());
    }

    // A file whose per-parameter rows need more memory than the reader may use: a clear error, and the
    // scalar rows (what the window loads first) still read.
    void theReaderIsLimitedInMemory() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        QSKIP("sanitizer builds do not limit the reader's address space");
#endif
        const QString path = m_dir.filePath("wide.h5");
        const RunMeta meta = makeMeta(8, 300, 16, 4);
        {
            auto w = RunWriter::create(path.toStdString(), meta, true);
            for (int s = 0; s < 250; ++s)
                w->appendStep(makeStep(meta, s));
            w->close("completed");
        }
        const EnvGuard limit("RANKSIGHT_READER_MEMORY_MB", "100");
        const auto r = openRunFile(path.toStdString());
        QCOMPARE(r->readStepScalar(runschema::kLoss, 0, 250).size(), size_t(250 * 8));
        const QString error = errorOf([&] { r->readSteps(0, 250, true); });
        QVERIFY2(error.contains("out of memory: the reader process is limited to 100 MiB"),
                 qPrintable(error));
        QCOMPARE(r->readSteps(0, 2, true).size(), size_t(2)); // a failed allocation is not a crash
    }

private:
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestReaderProcess)
#include "tst_readerprocess.moc"
