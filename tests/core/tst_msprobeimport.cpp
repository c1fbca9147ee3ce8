// importMsprobe in this process, on monitor_output/ trees that tests/msprobe/make_msprobe_tree.py writes in
// msprobe's layout: every tree the CLI test (py_msprobe) uses, so that the asan-input preset runs the csv
// and folder parsing under AddressSanitizer and UBSan. A good tree becomes a run file that opens with the
// tree's ranks, steps and parameters; a broken one throws ImportError naming the file and line, and leaves
// nothing behind.
#include "import/MsprobeImport.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

class TestMsprobeImport : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void goodTrees_data() {
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<QString>("note"); // a note the import must make; "" for none
        QTest::newRow("clean") << QStringList{} << QString();
        for (const char* mistake : {"param-not-synced", "grad-sum", "shard-overlap", "init-mismatch"})
            QTest::addRow("%s", mistake) << QStringList{"--mistake", mistake} << QString();
        QTest::newRow("dp-group") << QStringList{"--dp-group"} << QStringLiteral("only rank 0 wrote reduced");
        QTest::newRow("older header") << QStringList{"--legacy-header"} << QString();
        QTest::newRow("micro steps") << QStringList{"--micro-steps", "2"}
                                     << QStringLiteral("last micro step");
    }
    void goodTrees() {
        QFETCH(QStringList, options);
        QFETCH(QString, note);
        const QString src = tree(QTest::currentDataTag(), options);
        const std::string out = (src + QLatin1String(".h5")).toStdString();
        int lastPercent = -1;
        const rs::MsprobeImportResult r =
            rs::importMsprobe(src.toStdString(), out, false, [&](int p) { lastPercent = p; });
        QCOMPARE(r.ranks, 4);
        QCOMPARE(r.steps, int64_t(12));
        QCOMPARE(r.params, 6);
        QCOMPARE(lastPercent, 100);
        QString notes;
        for (const std::string& n : r.notes)
            notes += QString::fromStdString(n) + '\n';
        if (!note.isEmpty())
            QVERIFY2(notes.contains(note), qPrintable(notes));

        const auto run = rs::openRunFile(out); // through the reader process, which the preset also checks
        QCOMPARE(run->meta().worldSize, 4);
        QCOMPARE(run->meta().source, std::string("msprobe"));
        QCOMPARE(run->stepCount(), int64_t(12));
        QCOMPARE(int(run->meta().params.size()), 6);
        // What msprobe never records is listed as absent, never written as zeros.
        for (const std::string& never : rs::msprobeNeverRecorded())
            QVERIFY2(std::find(r.absent.begin(), r.absent.end(), never) != r.absent.end(), never.c_str());
    }

    void brokenTrees_data() {
        QTest::addColumn<QString>("broken");
        QTest::addColumn<QString>("expected");
        QTest::newRow("bad number") << "bad-number"
                                    << "rank2-1a2b3c02/grad_unreduced_5-9.csv:4: column 'norm': '1.2.3' is "
                                       "not a number";
        QTest::newRow("missing column") << "missing-column"
                                        << "rank2-1a2b3c02/grad_unreduced_5-9.csv:1: no 'step' column";
        QTest::newRow("mixed steps") << "mixed-steps"
                                     << "rank2-1a2b3c02/grad_unreduced_5-9.csv:32: step 11 is outside the "
                                        "file's range 5-9";
        QTest::newRow("ragged row")
            << "ragged-row"
            << "rank2-1a2b3c02/grad_unreduced_5-9.csv:32: 4 fields, the header has 11";
        QTest::newRow("two folders") << "two-folders"
                                     << "two folders for rank 1: Dec01_12-00-01-rank1-1a2b3c01 and "
                                        "Dec01_13-00-00-rank1-deadbeef";
    }
    void brokenTrees() {
        QFETCH(QString, broken);
        QFETCH(QString, expected);
        const QString src = tree("broken-" + broken, {"--broken", broken});
        const QString out = src + QLatin1String(".h5");
        QString error;
        try {
            rs::importMsprobe(src.toStdString(), out.toStdString());
        } catch (const rs::ImportError& e) {
            error = QString::fromUtf8(e.what());
        }
        QVERIFY2(error.contains(expected), qPrintable(error));
        QVERIFY2(!error.contains('\n'), qPrintable(error));
        const QStringList left = QDir(m_dir.path()).entryList({QFileInfo(out).fileName() + '*'});
        QVERIFY2(left.isEmpty(), qPrintable(left.join(' ')));
    }

    void notAMonitorFolder() {
        QString error;
        try {
            rs::importMsprobe(m_dir.path().toStdString(), m_dir.filePath("x.h5").toStdString());
        } catch (const rs::ImportError& e) {
            error = QString::fromUtf8(e.what());
        }
        QVERIFY2(error.contains("no msprobe monitor rank folders"), qPrintable(error));
    }

private:
    // A tree written by make_msprobe_tree.py under the test's folder.
    QString tree(const QString& name, const QStringList& options) {
        const QString out = m_dir.filePath(QString(name).replace(' ', '-'));
        QProcess p;
        p.start(QStringLiteral("/usr/bin/python3"),
                QStringList{QStringLiteral(RANKSIGHT_SOURCE_DIR "/tests/msprobe/make_msprobe_tree.py"), out} +
                    options);
        if (!p.waitForFinished(120000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
            qFatal("make_msprobe_tree.py %s: %s", qPrintable(options.join(' ')),
                   p.readAllStandardError().constData());
        return out;
    }

    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestMsprobeImport)
#include "tst_msprobeimport.moc"
