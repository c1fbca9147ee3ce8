// Fuzz regressions: every input that once crashed a fuzz target (tests/data/fuzz-regressions/<target>/) and
// every seed of the fuzz corpora (fuzz/corpus/<target>/) goes through the same entry logic as the libFuzzer
// targets (fuzz/FuzzEntries.h), built here by the normal compiler. Each must end cleanly: accepted, or
// rejected with an exception of the type the API promises and a message; a bug (a crash is one too) fails.
// A regression FILE may come with FILE.expect, text the outcome ("accepted: ..." or "rejected: ...") must
// contain: it pins what the input tests (and that gcc runs the same program as the clang fuzzer).
// In-process only (label outside-input: the asan-input preset runs it); the inputs that crash libhdf5 itself
// are tst_containedcrashes.
#include "FuzzEntries.h"
#include "FuzzInputs.h"

#include <QDir>
#include <QFile>
#include <QtTest>
#include <span>
#include <vector>

namespace {

using Entry = rs::fuzz::FuzzOutcome (*)(std::span<const uint8_t>);

struct Target {
    const char* name;
    Entry entry;
};

const Target kTargets[] = {{"ranktable", rs::fuzz::runRankTable},
                           {"config", rs::fuzz::runConfig},
                           {"cifar", rs::fuzz::runCifar},
                           {"runfile", rs::fuzz::runRunFile},
                           {"import", rs::fuzz::runImport}};

} // namespace

class TestFuzzRegressions : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { rs::fuzz::setFuzzBugThrows(true); }

    void regressions_data() { addRows(QStringLiteral(RANKSIGHT_TEST_DATA "/fuzz-regressions/"), true); }
    void regressions() { replay(); }

    void corpus_data() { addRows(QStringLiteral(RANKSIGHT_SOURCE_DIR "/fuzz/corpus/"), false); }
    void corpus() { replay(); }

private:
    void addRows(const QString& root, bool mayBeEmpty) {
        QTest::addColumn<int>("target");
        QTest::addColumn<QString>("file");
        int rows = 0;
        for (int t = 0; t < int(std::size(kTargets)); ++t)
            for (const QString& f : fuzzInputs(root + QLatin1String(kTargets[t].name))) {
                QTest::addRow("%s/%s", kTargets[t].name, qPrintable(QFileInfo(f).fileName())) << t << f;
                ++rows;
            }
        if (!mayBeEmpty)
            QVERIFY2(rows > 0, qPrintable("no inputs under " + root));
    }

    void replay() {
        QFETCH(int, target);
        QFETCH(QString, file);
        QFile f(file);
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(file));
        const QByteArray bytes = f.readAll();
        const std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(bytes.constData()),
                                            size_t(bytes.size()));
        rs::fuzz::FuzzOutcome outcome;
        try {
            outcome = kTargets[target].entry(data);
        } catch (const rs::fuzz::FuzzBug& bug) {
            QFAIL(qPrintable(QStringLiteral("fuzz bug: ") + QString::fromStdString(bug.what)));
        }
        if (outcome.rejected)
            QVERIFY2(!outcome.message.empty(), "rejected without a message");
        const QString got = QLatin1String(outcome.rejected ? "rejected: " : "accepted: ") +
                            QString::fromStdString(outcome.message);
        qDebug().noquote() << got.left(300);
        QFile expect(file + QLatin1String(".expect"));
        if (expect.open(QIODevice::ReadOnly)) {
            const QString want = QString::fromUtf8(expect.readAll()).trimmed();
            QVERIFY2(got.contains(want), qPrintable(QStringLiteral("expected '%1' in '%2'").arg(want, got)));
        }
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "tst_fuzzregressions.moc"
