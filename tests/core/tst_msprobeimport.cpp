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
        // Monitor V2: rank_<N>/<monitor>_step<a>-<b>.csv, the scope column telling unreduced from reduced.
        QTest::newRow("v2") << QStringList{"--layout", "v2"}
                            << QStringLiteral(
                                   "not imported (no run-file column holds them): cc (communication "
                                   "operators), module (forward and backward activations), optimizer "
                                   "(exp_avg, exp_avg_sq)");
        QTest::newRow("monitor alerts")
            << QStringList{"--anomalies"}
            << QStringLiteral(
                   "2 alerts of the monitor (anomaly_detected/) imported as MONITOR_ANOMALY events");
        QTest::newRow("v2 micro steps")
            << QStringList{"--layout", "v2", "--micro-steps", "3"} << QStringLiteral("last micro step");
        for (const char* mistake : {"param-not-synced", "grad-sum"})
            QTest::addRow("v2 %s", mistake) << QStringList{"--layout", "v2", "--mistake", mistake}
                                            << QStringLiteral("Monitor V2 prints no tensor shapes");
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
        QCOMPARE(QString::fromStdString(r.layout),
                 options.contains("v2") ? QStringLiteral("Monitor V2") : QStringLiteral("Monitor V1"));
        // The files a run-file column holds: 3 step ranges x 4 ranks x (V2) weight_grad and param, or (V1)
        // the four gradient and weight prefixes, grad_reduced on rank 0 only under dp_group.
        const int64_t files = options.contains("v2")           ? 3 * 4 * 2
                              : options.contains("--dp-group") ? 3 * 4 * 3 + 3
                                                               : 3 * 4 * 4;
        QCOMPARE(r.files, files);
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
        QTest::addColumn<QString>("layout");
        QTest::addColumn<QString>("expected");
        QTest::newRow("bad number") << "bad-number"
                                    << "v1"
                                    << "rank2-1a2b3c02/grad_unreduced_5-9.csv:4: column 'norm': '1.2.3' is "
                                       "not a number";
        QTest::newRow("missing column") << "missing-column"
                                        << "v1"
                                        << "rank2-1a2b3c02/grad_unreduced_5-9.csv:1: no 'step' column";
        QTest::newRow("mixed steps") << "mixed-steps"
                                     << "v1"
                                     << "rank2-1a2b3c02/grad_unreduced_5-9.csv:32: step 11 is outside the "
                                        "file's range 5-9";
        QTest::newRow("ragged row")
            << "ragged-row"
            << "v1"
            << "rank2-1a2b3c02/grad_unreduced_5-9.csv:32: 4 fields, the header has 11";
        QTest::newRow("two folders") << "two-folders"
                                     << "v1"
                                     << "two folders for rank 1: Dec01_12-00-01-rank1-1a2b3c01 and "
                                        "Dec01_13-00-00-rank1-deadbeef";
        QTest::newRow("v2 bad number")
            << "bad-number"
            << "v2"
            << "rank_2/weight_grad_step5-9.csv:4: column 'min': '1.2.3' is not a number";
        QTest::newRow("v2 missing column") << "missing-column"
                                           << "v2"
                                           << "rank_2/weight_grad_step5-9.csv:1: no 'step' column";
        QTest::newRow("v2 mixed steps") << "mixed-steps"
                                        << "v2"
                                        << "rank_2/weight_grad_step5-9.csv:62: step 11 is outside the file's "
                                           "range 5-9";
        QTest::newRow("v2 ragged row") << "ragged-row"
                                       << "v2"
                                       << "rank_2/weight_grad_step5-9.csv:62: 4 fields, the header has 10";
        QTest::newRow("v2 missing rank")
            << "missing-rank"
            << "v2"
            << "no folder for rank 1 (rank folders found: 0, 2, 3); the monitor's "
               "`rank` setting limits which ranks write";
        QTest::newRow("both layouts") << "both-layouts"
                                      << "v2"
                                      << "holds both Monitor V1 rank folders";
        QTest::newRow("bad alert file") << "bad-anomaly"
                                        << "v1"
                                        << "anomaly_detected/rank2/anomaly.json: not JSON (byte 2:";
    }

    void brokenTrees() {
        QFETCH(QString, broken);
        QFETCH(QString, layout);
        QFETCH(QString, expected);
        const QString src =
            tree("broken-" + QString(QTest::currentDataTag()), {"--broken", broken, "--layout", layout});
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

    // Monitor V1's alerts become events at their step and rank, with the monitor's own message.
    void monitorAlertsBecomeEvents() {
        const QString src = tree("alerts", {"--anomalies"});
        const std::string out = (src + QLatin1String(".h5")).toStdString();
        QCOMPARE(rs::importMsprobe(src.toStdString(), out).events, int64_t(2));
        const auto run = rs::openRunFile(out);
        std::vector<rs::Event> alerts;
        for (const rs::Event& e : run->readEvents())
            if (e.code == rs::eventcode::kMonitorAnomaly)
                alerts.push_back(e);
        QCOMPARE(int(alerts.size()), 2);
        QCOMPARE(alerts[0].step, int64_t(7));
        QCOMPARE(alerts[0].rank, 1);
        QVERIFY(alerts[0].severity == rs::Severity::Warning);
        QVERIFY2(QString::fromStdString(alerts[0].message)
                     .startsWith("Rule AnomalyNan reports anomaly signal in "
                                 "('0:layers.0.attention.dense.bias/rank1/post_grad', 'norm') at step 7"),
                 alerts[0].message.c_str());
        QCOMPARE(alerts[1].rank, 3);
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
