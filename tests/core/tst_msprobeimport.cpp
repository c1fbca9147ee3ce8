// importMsprobe in this process, on monitor_output/ trees that tests/msprobe/make_msprobe_tree.py writes in
// msprobe's layout: every tree the CLI test (py_msprobe) uses, so that the asan-input preset runs the csv
// and folder parsing under AddressSanitizer and UBSan. A good tree becomes a run file that opens with the
// tree's ranks, steps and parameters; a broken one throws ImportError naming the file and line, and leaves
// nothing behind.
#include "import/MsprobeImport.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "store/RunSource.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <nlohmann/json.hpp>

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
        QTest::newRow("part file without its header") << "part-without-header"
                                                      << "v1"
                                                      << "grad_unreduced_5-9_part_1.csv: a part file without "
                                                         "grad_unreduced_5-9.csv";
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
            tree("broken-" + QString(QTest::currentDataTag()),
                 QStringList{"--broken", broken, "--layout", layout} +
                     (broken == "part-without-header" ? QStringList{"--part-rows", "4"} : QStringList{}));
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

    // Each msprobe version's layout, as tests/msprobe/make_msprobe_tree.py writes it from msprobe's source.
    void variants_data() {
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<int>("ranks");
        QTest::addColumn<int>("steps");
        QTest::addColumn<int>("params");
        QTest::addColumn<QString>("note");
        QTest::newRow("1.2.0 single process") << QStringList{"--version", "1.2.0", "--single-process"} << 1
                                              << 12 << 6 << QStringLiteral("imported as rank 0");
        QTest::newRow("1.2.0 nan and ops order")
            << QStringList{"--version", "1.2.0", "--nan-grad", "--ops", "nans,max,norm,min"} << 4 << 12 << 6
            << QStringLiteral("actv (module activations)");
        QTest::newRow("1.2.2") << QStringList{"--version", "1.2.2", "--tiny-grad"} << 4 << 12 << 6
                               << QStringLiteral("a parameter's shape is not printed");
        QTest::newRow("8.1 parts and L2 hooks")
            << QStringList{"--part-rows", "4", "--l2-hooks", "--nan-grad"} << 4 << 12 << 6
            << QStringLiteral("linear_hook (stable rank and kernel norm of linear layers)");
        QTest::newRow("v2 vpp list, a nan column")
            << QStringList{"--layout", "v2", "--vpp-list", "--nan-column", "nans"} << 4 << 12 << 6
            << QStringLiteral("every 'nans' of the local (unreduced) gradients is nan");
        QTest::newRow("v2 rank 3 alone") << QStringList{"--layout", "v2", "--only-ranks", "3"} << 4 << 12 << 6
                                         << QStringLiteral("ranks 0, 1, 2 of 4 have no folder");
        QTest::newRow("v1 ranks 0 and 1")
            << QStringList{"--only-ranks", "0,1"} << 2 << 12 << 6 << QStringLiteral("no fingerprints");
        // An alert from a rank without a folder: that rank is in the run, its statistics not recorded.
        QTest::newRow("v1 ranks 0 and 1, alerts from 3")
            << QStringList{"--only-ranks", "0,1", "--anomalies"} << 4 << 12 << 6
            << QStringLiteral("ranks 2, 3 of 4 have no folder");
        QTest::newRow("alerts alone") << QStringList{"--alerts-only", "--call-id-unknown", "--analyse"} << 4
                                      << 0 << 0 << QStringLiteral("only the monitor's alerts");
    }
    void variants() {
        QFETCH(QStringList, options);
        QFETCH(int, ranks);
        QFETCH(int, steps);
        QFETCH(int, params);
        QFETCH(QString, note);
        const QString src = tree("variant " + QString(QTest::currentDataTag()), options);
        const std::string out = (src + QLatin1String(".h5")).toStdString();
        const rs::MsprobeImportResult r = rs::importMsprobe(src.toStdString(), out);
        QCOMPARE(r.ranks, ranks);
        QCOMPARE(r.steps, int64_t(steps));
        QCOMPARE(r.params, params);
        QString notes;
        for (const std::string& n : r.notes) {
            notes += QString::fromStdString(n) + '\n';
            // Notes are read by people: words, never a dataset path.
            QVERIFY2(n.find("/grads/") == std::string::npos && n.find("/steps/") == std::string::npos &&
                         n.find("/weights/") == std::string::npos,
                     n.c_str());
        }
        QVERIFY2(notes.contains(note), qPrintable(notes));
        const auto run = rs::openRunFile(out);
        QCOMPARE(run->meta().worldSize, ranks);
        QCOMPARE(run->stepCount(), int64_t(steps));
        QCOMPARE(int(run->meta().params.size()), params);
        if (options.contains("--alerts-only")) // counted once, though anomaly_analyse.json repeats them
            QCOMPARE(int(run->readEvents().size()), 2);
    }

    // A NaN in a gradient is read as nan (an empty field before msprobe 1.2.2) with its non-finite count; a
    // value in scientific notation as printed; the rows of part files as the first file's header names them.
    void valuesAsWritten_data() {
        QTest::addColumn<QStringList>("options");
        QTest::newRow("1.2.0") << QStringList{"--version", "1.2.0", "--nan-grad", "--tiny-grad"};
        QTest::newRow("8.1 parts") << QStringList{"--part-rows", "4", "--nan-grad", "--tiny-grad"};
    }
    void valuesAsWritten() {
        QFETCH(QStringList, options);
        const QString src = tree("values " + QString(QTest::currentDataTag()), options);
        const std::string out = (src + QLatin1String(".h5")).toStdString();
        rs::importMsprobe(src.toStdString(), out);
        const auto run = rs::openRunFile(out);
        const size_t bias = paramIndex(*run, "layers.0.attention.dense.bias");
        const size_t tiny = paramIndex(*run, "final_layernorm.weight");
        const auto steps = run->readSteps(0, run->stepCount(), true);
        QCOMPARE(steps[6].step, int64_t(6));
        const rs::RankStep& nan = steps[6].ranks[2];
        QVERIFY(std::isnan(nan.localNorm[bias]));
        QCOMPARE(nan.nonfinite[bias], uint32_t(1));
        QVERIFY(std::isnan(nan.syncedNorm[bias])); // every rank's synced gradient holds the NaN
        QCOMPARE(steps[6].ranks[1].nonfinite[bias], uint32_t(0));
        QVERIFY(std::isfinite(steps[6].ranks[1].localNorm[bias]));
        for (const rs::StepRecord& st : steps)
            for (const rs::RankStep& x : st.ranks) // rounded to 6 decimals: a few 1e-06
                QVERIFY2(x.localNorm[tiny] > 0 && x.localNorm[tiny] < 1e-4,
                         qPrintable(QString::number(x.localNorm[tiny])));
    }

    // The monitor told to watch ranks 0, 2 and 3: rank 1 is in the run, not recorded (nan), and says so.
    void rankSubsetIsNotRecorded() {
        const QString src = tree("subset", {"--layout", "v2", "--only-ranks", "0,2,3"});
        const std::string out = (src + QLatin1String(".h5")).toStdString();
        rs::importMsprobe(src.toStdString(), out);
        const auto run = rs::openRunFile(out);
        QCOMPARE(run->meta().worldSize, 4);
        QCOMPARE(rs::ranksNotRecorded(run->meta()), std::vector<int>{1});
        QVERIFY(rs::describeRun(run->meta()).find("(rank 1 not recorded)") != std::string::npos);
        const auto config = nlohmann::json::parse(run->meta().configJson);
        QCOMPARE(config["rank_folders"][1].get<std::string>(), std::string());
        QCOMPARE(config["rank_folders"][3].get<std::string>(), std::string("rank_3"));
        for (const rs::StepRecord& st : run->readSteps(0, run->stepCount(), true))
            for (size_t p = 0; p < run->meta().params.size(); ++p) {
                QVERIFY(std::isnan(st.ranks[1].localNorm[p]) && std::isnan(st.ranks[1].syncedNorm[p]));
                QVERIFY(std::isfinite(st.ranks[0].localNorm[p]) && std::isfinite(st.ranks[3].syncedNorm[p]));
            }
    }

    // A long tag name: the message is cut before msprobe's ending, which says what was seen.
    void longAlertKeepsItsEnding() {
        const QString root = m_dir.filePath("long-alert/monitor_output/anomaly_detected/rank0");
        QVERIFY(QDir().mkpath(root));
        const std::string tag = "0:" + std::string(300, 'x') + ".weight/rank0/post_grad";
        const nlohmann::json doc = {
            {tag + "_step_3_call_-1",
             {{"rank", 0},
              {"step", 3},
              {"micro_step", 0},
              {"pp_stage", 0},
              {"vpp_stage", 0},
              {"call_id", -1},
              {"tag_name", tag},
              {"message", "Rule AnomalyTurbulence reports anomaly signal in ('" + tag +
                              "', 'norm') at step 3, current value 3.52, history mean 0.4312."},
              {"group_mates", {0}}}}};
        QFile f(root + "/anomaly.json");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(doc.dump(1)));
        f.close();
        const std::string out = m_dir.filePath("long-alert.h5").toStdString();
        QCOMPARE(rs::importMsprobe(m_dir.filePath("long-alert").toStdString(), out).events, int64_t(1));
        const auto events = rs::openRunFile(out)->readEvents();
        QCOMPARE(int(events.size()), 1);
        const QString message = QString::fromStdString(events[0].message);
        QVERIFY2(message.size() <= 255 && message.endsWith("..., current value 3.52, history mean 0.4312."),
                 qPrintable(message));
        QVERIFY(message.startsWith("Rule AnomalyTurbulence reports anomaly signal in ('0:xxx"));
    }

    // CSVWriterV2 leaves a field empty when a row lacks the key its file's header came from: a row without
    // a micro step (or a cc row without a vpp_stage) is read, not refused.
    void v2EmptyFields() {
        const QString rank = m_dir.filePath("v2-empty/rank_0");
        QVERIFY(QDir().mkpath(rank));
        QFile f(rank + "/weight_grad_step0-0.csv");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("vpp_stage,step,module_name,scope,micro_step,min,max,mean,norm,nans\r\n"
                "-1,0,fc.weight,unreduced,,-0.5,0.25,0.0,1.2345678806304932,0.0\r\n"
                "-1,0,fc.weight,reduced,1,-0.5,0.25,0.0,0.75,0.0\r\n");
        f.close();
        QFile cc(rank + "/cc_step0-0.csv");
        QVERIFY(cc.open(QIODevice::WriteOnly));
        cc.write(
            "vpp_stage,step,module_name,scope,min,max,mean,norm,nans\r\n,0,all_reduce,comm,0,1,0.5,1,0\r\n");
        cc.close();
        const std::string out = m_dir.filePath("v2-empty.h5").toStdString();
        const auto r = rs::importMsprobe(m_dir.filePath("v2-empty").toStdString(), out);
        QCOMPARE(r.params, 1);
        const auto run = rs::openRunFile(out);
        QCOMPARE(run->meta().params[0].name, std::string("fc.weight")); // vpp_stage -1: no stage prefix
        const auto steps = run->readSteps(0, 1, true);
        QCOMPARE(steps[0].ranks[0].localNorm[0], 1.2345678806304932f);
        QCOMPARE(steps[0].ranks[0].syncedNorm[0], 0.75f);
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
    static size_t paramIndex(const rs::RunReader& run, const std::string& name) {
        const auto& params = run.meta().params;
        const auto it =
            std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.name == name; });
        if (it == params.end())
            qFatal("no parameter %s", name.c_str());
        return size_t(it - params.begin());
    }

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
