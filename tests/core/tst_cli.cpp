// ranksight-cli end to end, as a user runs it: train, inspect, export-csv, lint-ranktable, Ctrl-C, kill -9,
// and the exit codes (0 success, 1 check failed, 2 bad usage or unreadable input).
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"
#include "util/BlasSetup.h"
#include "util/Versions.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>

using namespace rs;

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void trainInspectExport();
    void configFileAndOverrides();
    void trainsOnRealCifarFiles();
    void exitCodes_data();
    void exitCodes();
    void refusesToOverwrite();
    void benchReportsAllThreeFigures();
    void benchAtO2TimesStepsThatUpdate();
    void benchNodesReportsThroughputAndTraffic();
    void lintRankTable();
    void overviewListsEveryCommand();
    void commandHelp_data();
    void commandHelp();
    void versionNamesLibrariesAndBlasKernels();
    void ctrlCLeavesACompleteFile();
    void killLeavesAReadableFile();

private:
    struct Result {
        int code = -1;
        QString out, err;
    };
    Result cli(const QStringList& args, int timeoutMs = 120000);
    int64_t waitForSteps(const QString& path, int64_t atLeast, QProcess& proc);
    QTemporaryDir m_dir;
};

void TestCli::initTestCase() {
    QVERIFY(m_dir.isValid());
    QVERIFY(QFile::exists(RANKSIGHT_CLI));
}

TestCli::Result TestCli::cli(const QStringList& args, int timeoutMs) {
    QProcess p;
    p.start(RANKSIGHT_CLI, args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

void TestCli::trainInspectExport() {
    const QString run = m_dir.filePath("mlp.h5");
    const auto train = cli({"train", "--model", "mlp", "--ranks", "2", "--batch", "16", "--steps", "10",
                            "--precision", "O0", "--loss-scale", "none", "--out", run});
    QVERIFY2(train.code == 0, qPrintable(train.err));
    QVERIFY(train.err.contains("step 10/10"));

    const auto inspect = cli({"inspect", run, "--json"});
    QCOMPARE(inspect.code, 0);
    const auto j = QJsonDocument::fromJson(inspect.out.toUtf8()).object();
    QCOMPARE(j["format"].toString(), QString("ranksight-run"));
    QCOMPARE(j["format_version"].toInt(), runschema::kFormatVersion);
    QCOMPARE(j["source"].toString(), QString("ranksight-engine"));
    QCOMPARE(j["model"].toString(), QString("mlp"));
    QCOMPARE(j["world_size"].toInt(), 2);
    QCOMPARE(j["steps_recorded"].toInt(), 10);
    QCOMPARE(j["parameter_tensors"].toInt(), 6);
    QCOMPARE(j["parameters"].toInt(), 3072 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
    QCOMPARE(j["precision"].toString(), QString("O0"));
    QVERIFY(j["loss_last"].toDouble() < j["loss_first"].toDouble());
    QCOMPARE(j["weights_identical"].toBool(), true);
    QVERIFY(j["first_grad_mismatch_step"].isNull());
    QVERIFY(j["first_weight_mismatch_step"].isNull());
    QCOMPARE(j["overflow_steps"].toInt(), 0);
    QCOMPARE(j["complete"].toBool(), true);

    const QString dir = m_dir.filePath("csv");
    const auto csv = cli({"export-csv", run, "--out", dir});
    QVERIFY2(csv.code == 0, qPrintable(csv.err));
    auto lines = [](const QString& path) {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts)
                                           : QStringList();
    };
    const auto steps = lines(dir + "/steps.csv");
    QCOMPARE(steps.size(), 1 + 10 * 2);
    QCOMPARE(steps[0], QString("step,rank,loss,accuracy,loss_scale,overflow,skipped,step_ms,comm_ms"));
    QVERIFY(steps[1].startsWith("0,0,"));
    const auto grads = lines(dir + "/gradients.csv");
    QCOMPARE(grads.size(), 1 + 10 * 2 * 6);
    QCOMPARE(grads[0], QString("step,rank,parameter,local_norm,synced_norm,nonfinite"));
    QVERIFY(grads[1].startsWith("0,0,fc1.weight,"));
    QVERIFY(QFile::exists(dir + "/events.csv"));
    // A second export into the same folder must not silently replace the first.
    QCOMPARE(cli({"export-csv", run, "--out", dir}).code, 2);
}

void TestCli::configFileAndOverrides() {
    const QString cfg = m_dir.filePath("cfg.json");
    QFile f(cfg);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        R"({"model": "mlp", "ranks": 3, "batch": 4, "steps": 5, "precision": "O2", "loss_scale": "fixed:64",
                "seed": 9, "weight_every": 2})");
    f.close();
    const QString run = m_dir.filePath("cfg.h5");
    const auto train = cli({"train", "--config", cfg, "--steps", "4", "--out", run, "--quiet"});
    QVERIFY2(train.code == 0, qPrintable(train.err));
    const auto reader = openRunFile(run.toStdString());
    QCOMPARE(reader->meta().worldSize, 3);
    QCOMPARE(reader->meta().batchPerRank, 4);
    QCOMPARE(reader->meta().precision, std::string("O2"));
    QCOMPARE(reader->meta().lossScale, std::string("fixed:64"));
    QCOMPARE(reader->stepCount(), int64_t(4));         // the command line wins over the file
    QCOMPARE(reader->readWeights().size(), size_t(3)); // steps 0, 2, 4
}

void TestCli::trainsOnRealCifarFiles() {
    // The CIFAR-10 binary format: per record one label byte and 3072 pixel bytes (R, G, B planes).
    const QString dir = m_dir.filePath("cifar");
    QVERIFY(QDir().mkpath(dir));
    const QStringList files = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                               "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    int record = 0;
    for (const auto& name : files) {
        QFile f(dir + "/" + name);
        QVERIFY(f.open(QIODevice::WriteOnly));
        for (int i = 0; i < 40; ++i, ++record) {
            QByteArray rec(3073, 0);
            const int label = record % 10;
            rec[0] = static_cast<char>(label);
            for (int p = 0; p < 3072; ++p) // a class-dependent gradient with some texture
                rec[1 + p] =
                    static_cast<char>((label * 25 + (p % 32) * (label % 3 + 1) + p / 1024 * 40) % 256);
            f.write(rec);
        }
    }
    const QString run = m_dir.filePath("cifar.h5");
    const auto train = cli({"train", "--model", "mlp", "--ranks", "2", "--batch", "8", "--epochs", "2",
                            "--data", "cifar10:" + dir, "--precision", "O0", "--out", run, "--quiet"});
    QVERIFY2(train.code == 0, qPrintable(train.err));
    const auto reader = openRunFile(run.toStdString());
    QCOMPARE(reader->stepCount(), int64_t(2 * (200 / 2 / 8))); // 2 epochs of 12 steps: drop_last
    QVERIFY(QString::fromStdString(reader->meta().environment).contains("CIFAR-10"));
    const auto steps = reader->readSteps(0, reader->stepCount(), false);
    QCOMPARE(steps.back().epoch, int64_t(1));
    for (const auto& s : steps)
        for (const auto& r : s.ranks)
            for (int id : r.sampleIds)
                QVERIFY(id >= 0 && id < 200);

    // A broken file is named in the error.
    QFile cut(dir + "/data_batch_3.bin");
    QVERIFY(cut.resize(3073 * 10 + 100));
    const auto bad =
        cli({"train", "--model", "mlp", "--data", "cifar10:" + dir, "--out", m_dir.filePath("bad.h5")});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("data_batch_3.bin"), qPrintable(bad.err));
}

void TestCli::exitCodes_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("mentions");
    const QString out = m_dir.filePath("x.h5");
    QTest::addRow("no command") << QStringList{} << 2 << "usage";
    QTest::addRow("unknown command") << QStringList{"frobnicate"} << 2 << "frobnicate";
    QTest::addRow("bad model") << QStringList{"train", "--model", "vgg", "--out", out} << 2 << "model";
    QTest::addRow("bad ranks") << QStringList{"train", "--ranks", "zero", "--out", out} << 2 << "ranks";
    QTest::addRow("missing out") << QStringList{"train", "--model", "mlp"} << 2 << "out";
    QTest::addRow("unknown option") << QStringList{"train", "--frob", "1"} << 2 << "--frob";
    QTest::addRow("bad cifar dir") << QStringList{"train", "--model", "mlp", "--data", "cifar10:/nonexistent",
                                                  "--out", out}
                                   << 2 << "/nonexistent";
    QTest::addRow("missing config") << QStringList{"train", "--config", "/nonexistent.json", "--out", out}
                                    << 2 << "nonexistent.json";
    QTest::addRow("inspect missing file")
        << QStringList{"inspect", "/nonexistent.h5"} << 2 << "nonexistent.h5";
    QTest::addRow("inspect text file")
        << QStringList{"inspect", QString(RANKSIGHT_TEST_DATA) + "/ranktables/valid_4p.json"} << 2
        << "valid_4p.json";
    QTest::addRow("help") << QStringList{"--help"} << 0 << "lint-ranktable";
}

void TestCli::exitCodes() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, mentions);
    const auto r = cli(args);
    QCOMPARE(r.code, code);
    QVERIFY2((r.out + r.err).contains(mentions), qPrintable(r.out + r.err));
    if (code == 2 && !args.isEmpty()) {
        QCOMPARE(r.err.trimmed().count('\n'), 0); // one line saying what and where
        QVERIFY(r.err.startsWith("ranksight-cli: "));
    }
    QVERIFY(!QFile::exists(m_dir.filePath("x.h5")));
}

void TestCli::benchReportsAllThreeFigures() {
    const auto r = cli({"bench", "--model", "mlp", "--ranks", "2", "--batch", "8", "--steps", "3", "--warmup",
                        "1", "--repeat", "1", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    for (const char* key : {"single_replica_img_s", "telemetry_off_img_s", "telemetry_on_img_s"})
        QVERIFY2(j[key].toDouble() > 0, key);
    QCOMPARE(j["ranks"].toInt(), 2);
    QCOMPARE(j["repeat"].toInt(), 1);
    // Where the step goes: every phase of a card's step, forward and backward taking time in both runs, the
    // statistics only with telemetry on.
    const auto phases = j["card_step_phases_ms"].toArray();
    QCOMPARE(phases.size(), 10);
    QMap<QString, QJsonObject> byName;
    for (const auto& p : phases)
        byName[p.toObject()["phase"].toString()] = p.toObject();
    QVERIFY(byName["forward and backward"]["telemetry_off_ms"].toDouble() > 0);
    QVERIFY(byName["forward and backward"]["telemetry_on_ms"].toDouble() > 0);
    const auto local = byName["local statistics, sketch, flight copy"];
    QVERIFY2(local["telemetry_off_ms"].toDouble() < local["telemetry_on_ms"].toDouble(),
             qPrintable(QJsonDocument(local).toJson()));
    QVERIFY(j["writer_thread_ms_per_step"].toDouble() > 0);
    // The cost model: this machine's memory speed, each phase's bytes and floor; forward and backward are
    // compute, set against one card's compute alone; the ring of 2 reads 1.5 gradients' worth, and at O0 the
    // local statistics ride its reduce-scatter's read (no bytes of their own).
    const auto bw = j["memory_bandwidth_gib_s"].toObject();
    QVERIFY(bw["copy"].toDouble() > 0 && bw["read"].toDouble() > 0);
    QVERIFY(byName["forward and backward"]["compute_bound"].toBool());
    QCOMPARE(byName["forward and backward"]["telemetry_on_floor_ms"].toDouble(),
             j["card_compute_ms"].toDouble());
    const double gradient = byName["all-reduce"]["telemetry_on_read_bytes"].toDouble() / 1.5;
    QVERIFY(gradient > 0);
    QCOMPARE(local["telemetry_on_bytes"].toDouble(), 0.0);
    QCOMPARE(local["telemetry_off_bytes"].toDouble(), 0.0);
    QCOMPARE(byName["all-reduce"]["telemetry_off_bytes"].toDouble(),
             byName["all-reduce"]["telemetry_on_bytes"].toDouble());
    QVERIFY(byName["optimizer"]["telemetry_on_floor_ms"].toDouble() > 0);
    QCOMPARE(cli({"bench", "--model", "vgg"}).code, 2);
}

// At O2 the dynamic loss scale starts at 2^24, where the MLP's scaled gradient overflows fp16: the first
// steps skip their update. The bench finds the scale of the first step that updated, untimed, and its
// rounds start there, so the optimizer's bytes (counted over the steps that updated) are there to time.
void TestCli::benchAtO2TimesStepsThatUpdate() {
    const auto r = cli({"bench", "--model", "mlp", "--ranks", "2", "--batch", "8", "--steps", "3", "--warmup",
                        "1", "--repeat", "1", "--precision", "O2", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    const double settled = j["loss_scale_settled"].toDouble();
    QVERIFY2(settled >= 1 && settled < 16777216.0, qPrintable(r.out));
    QVERIFY(j["skipped_to_settle"].toInt() > 0);
    double optimizerBytes = -1;
    for (const auto& p : j["card_step_phases_ms"].toArray())
        if (p.toObject()["phase"].toString() == "optimizer")
            optimizerBytes = p.toObject()["telemetry_on_bytes"].toDouble();
    QVERIFY2(optimizerBytes > 0, qPrintable(r.out));
}

// bench-nodes: both configurations ran, and node 0's traffic per step covers the gradient all-reduce
// (2(N-1)/N x parameters x 4 bytes) and the records, which are a small part of it.
void TestCli::benchNodesReportsThroughputAndTraffic() {
    const auto r = cli({"bench-nodes", "--model", "mlp", "--ranks", "2", "--nodes", "2", "--steps", "3",
                        "--warmup", "1", "--repeat", "1", "--paper-model", "mlp", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QVERIFY(j["one_node_img_s"].toDouble() > 0 && j["nodes_img_s"].toDouble() > 0);
    const double gradient = j["gradient_bytes_per_allreduce_per_node"].toDouble();
    QCOMPARE(gradient, 2.0 * (2 - 1) / 2 * 820874 * 4); // the MLP's parameters, fp32
    const double sent = j["node0_bytes_sent_per_step"].toDouble(),
                 records = j["node0_record_bytes_sent_per_step"].toDouble();
    QVERIFY2(sent >= gradient && records > 0 && records < sent - gradient + 1,
             qPrintable(QString("sent %1 records %2 gradient %3").arg(sent).arg(records).arg(gradient)));
    QVERIFY(j["node0_cross_node_ms_per_step"].toDouble() > 0);
    QCOMPARE(j["paper_gradient_bytes_per_server_per_step"].toDouble(), 2.0 * 7 / 8 * 820874 * 4);
    QVERIFY(j["paper_record_bytes_per_server_per_step"].toDouble() > 0);
    QCOMPARE(cli({"bench-nodes", "--ranks", "3", "--nodes", "2"}).code, 2);
}

void TestCli::refusesToOverwrite() {
    const QString run = m_dir.filePath("keep.h5");
    QFile f(run);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("precious");
    f.close();
    const auto r = cli({"train", "--model", "mlp", "--steps", "1", "--out", run});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("--force"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("precious"));
}

// --version names what a bug ticket needs, and the BLAS kernels: where OpenBLAS does not know the CPU it
// falls back to generic kernels that made ResNet-50 cards 3x slower; the CLI names the right ones instead,
// unless the user set OPENBLAS_CORETYPE.
namespace {

// Every subcommand ranksight-cli runs (main.cpp and ranksight-engine's main.cpp).
const QStringList kCommands = {"train",       "inspect",        "export-csv",
                               "schema",      "lint-ranktable", "bench",
                               "bench-nodes", "import-msprobe", "import-flight-recorder",
                               "diagnose",    "watch",          "compare",
                               "report",      "bench-open",     "bench-latency"};

// The option names a --help text lists, one per line ("  --out RUN.h5   the run file to write").
QSet<QString> helpOptions(const QString& help) {
    QSet<QString> names;
    static const QRegularExpression line("^  (--[a-z0-9-]+)", QRegularExpression::MultilineOption);
    for (auto it = line.globalMatch(help); it.hasNext();)
        names.insert(it.next().captured(1));
    names.remove("--help");
    return names;
}

// The options a command's parser accepts, as its "unknown option" line names them.
QSet<QString> acceptedOptions(const QString& err) {
    QSet<QString> names;
    static const QRegularExpression option("--[a-z0-9-]+");
    const int from = err.indexOf("the options are ");
    if (from < 0)
        return names;
    const QString list = err.mid(from, err.indexOf(" (try", from) - from);
    for (auto it = option.globalMatch(list); it.hasNext();)
        names.insert(it.next().captured(0));
    return names;
}

} // namespace

void TestCli::overviewListsEveryCommand() {
    const auto r = cli({"--help"});
    QCOMPARE(r.code, 0);
    QSet<QString> listed;
    static const QRegularExpression line("^  ([a-z-]+)(  |\\n|$)", QRegularExpression::MultilineOption);
    for (auto it = line.globalMatch(r.out); it.hasNext();)
        listed.insert(it.next().captured(1));
    QCOMPARE(listed, QSet<QString>(kCommands.begin(), kCommands.end()));
    QVERIFY2(r.out.contains("COMMAND --help"), qPrintable(r.out));
    for (const QString& l : r.out.split('\n'))
        QVERIFY2(l.size() <= 100, qPrintable(l)); // fits a terminal and help2man's page
}

void TestCli::commandHelp_data() {
    QTest::addColumn<QString>("command");
    for (const QString& c : kCommands)
        QTest::addRow("%s", qPrintable(c)) << c;
}

// Every command answers --help and -h with its usage and options (exit 0, nothing run, nothing written), and
// names exactly the options its parser accepts.
void TestCli::commandHelp() {
    QFETCH(QString, command);
    const auto help = cli({command, "--help"});
    QVERIFY2(help.code == 0, qPrintable(help.err));
    QVERIFY2(help.out.startsWith("usage: ranksight-cli " + command), qPrintable(help.out));
    QVERIFY(help.err.isEmpty());
    QCOMPARE(cli({command, "-h"}).out, help.out);
    QCOMPARE(cli({"help", command}).out, help.out);
    const auto late = cli({command, "--out", m_dir.filePath("help.h5"), "--help"}); // anywhere on the line
    QCOMPARE(late.code, 0);
    QCOMPARE(late.out, help.out);
    QVERIFY(!QFile::exists(m_dir.filePath("help.h5")));

    const auto unknown = cli({command, "--no-such-option"});
    QCOMPARE(unknown.code, 2);
    if (unknown.err.contains("built without the GUI"))
        return; // report and bench-open read no options in a build without the widgets
    QVERIFY2(unknown.err.contains("unknown option '--no-such-option'"), qPrintable(unknown.err));
    QVERIFY2(unknown.err.contains("the options are ") || unknown.err.contains("it takes no options"),
             qPrintable(unknown.err));
    QCOMPARE(helpOptions(help.out), acceptedOptions(unknown.err));
}

void TestCli::versionNamesLibrariesAndBlasKernels() {
    QCOMPARE(blasCoreFallsShort("Prescott", "SkylakeX"), true);
    QCOMPARE(blasCoreFallsShort("haswell", "SkylakeX"), true);
    QCOMPARE(blasCoreFallsShort("SkylakeX", "SkylakeX"), false);
    QCOMPARE(blasCoreFallsShort("Zen", "Haswell"), false);
    QCOMPARE(blasCoreFallsShort("SomeFutureCore", "SkylakeX"), false); // unknown: no guessing
    QCOMPARE(blasCoreFallsShort("Prescott", ""), false);

    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("OPENBLAS_CORETYPE");
    env.remove("OPENBLAS_NUM_THREADS");
    p.setProcessEnvironment(env);
    p.start(RANKSIGHT_CLI, {"--version"});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(out.startsWith(QString("ranksight-cli %1 (run file format %2)\n")
                                .arg(QString::fromStdString(ranksightVersion()))
                                .arg(runschema::kFormatVersion)),
             qPrintable(out));
    QVERIFY2(out.contains("LibTorch 1.") && out.contains("HDF5 1."), qPrintable(out));
    QVERIFY2(out.contains("BLAS: OpenBLAS with "), qPrintable(out));
    QVERIFY2(!out.contains("this CPU supports"), qPrintable(out)); // the kernels the CPU supports are in use
    QVERIFY2(out.contains(" kernels, 1 thread\n"), qPrintable(out)); // one BLAS thread per card

    env.insert("OPENBLAS_CORETYPE", "Prescott"); // the user's choice stands, and the line says what it costs
    p.setProcessEnvironment(env);
    p.start(RANKSIGHT_CLI, {"--version"});
    QVERIFY(p.waitForFinished(30000));
    const QString forced = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY2(forced.contains("OpenBLAS with Prescott kernels, 1 thread"), qPrintable(forced));
    if (bestBlasCoreType() != "" && blasCoreFallsShort("Prescott", bestBlasCoreType()))
        QVERIFY2(forced.contains("set OPENBLAS_CORETYPE=" + QString::fromStdString(bestBlasCoreType())),
                 qPrintable(forced));
}

void TestCli::lintRankTable() {
    const QString data = RANKSIGHT_TEST_DATA;
    auto ok = cli({"lint-ranktable", data + "/ranktables/valid_4p.json"});
    QCOMPARE(ok.code, 0);
    QVERIFY(ok.out.contains("4 ranks"));
    const QString bad = m_dir.filePath("bad.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"version":"1.0","server_count":"2","server_list":[{"server_id":"s","device":[
        {"device_id":"0","device_ip":"192.0.2.1","rank_id":"0"},
        {"device_id":"0","device_ip":"192.0.2.1","rank_id":"0"}]}],"status":"completed"})");
    f.close();
    auto r = cli({"lint-ranktable", bad, "--json"});
    QCOMPARE(r.code, 1);
    const auto j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(j["valid"].toBool(), false);
    const auto problems = j["problems"].toArray();
    QVERIFY(problems.size() >= 4); // server_count, rank_id, device_id, device_ip duplicates
    QString all;
    for (const auto& p : problems)
        all += p.toObject()["where"].toString() + ": " + p.toObject()["message"].toString() + "\n";
    QVERIFY2(all.contains("server_count"), qPrintable(all));
    QVERIFY2(all.contains("server_list[0].device[1].rank_id"), qPrintable(all));
    QVERIFY2(all.contains("device_ip"), qPrintable(all));
    QCOMPARE(cli({"lint-ranktable", "/nonexistent.json"}).code, 2);

    // Against the nodes of a multi-node run: one node per server.
    auto nodes = cli({"lint-ranktable", data + "/ranktables/valid_16p_2servers.json", "--nodes", "2"});
    QCOMPARE(nodes.code, 0);
    QVERIFY2(nodes.out.contains("16 ranks on 2 node(s)"), qPrintable(nodes.out));
    auto wrong = cli({"lint-ranktable", data + "/ranktables/valid_16p_2servers.json", "--nodes", "4"});
    QCOMPARE(wrong.code, 1);
    QVERIFY2(wrong.out.contains("server_list: 2 server(s) for 4 node(s)"), qPrintable(wrong.out));
    QCOMPARE(cli({"lint-ranktable", data + "/ranktables/valid_4p.json", "--nodes", "0"}).code, 2);
}

int64_t TestCli::waitForSteps(const QString& path, int64_t atLeast, QProcess& proc) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 120000 && proc.state() == QProcess::Running) {
        try {
            if (QFile::exists(path)) {
                const auto reader = openRunFile(path.toStdString());
                if (reader->stepCount() >= atLeast)
                    return reader->stepCount();
            }
        } catch (const std::exception&) {
            // created but not yet in SWMR mode: try again
        }
        QTest::qWait(100);
    }
    return -1;
}

void TestCli::ctrlCLeavesACompleteFile() {
    const QString run = m_dir.filePath("sigint.h5");
    QProcess p;
    p.start(RANKSIGHT_CLI, {"train", "--model", "smallcnn", "--ranks", "2", "--batch", "8", "--steps",
                            "100000", "--out", run});
    QVERIFY(p.waitForStarted());
    QVERIFY(waitForSteps(run, 3, p) >= 3);
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(10000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 0);
    const auto reader = openRunFile(run.toStdString());
    QVERIFY(reader->complete());
    QCOMPARE(reader->stopReason(), std::string("stopped"));
    QVERIFY(reader->stepCount() >= 3);
    const auto inspect = cli({"inspect", run, "--json"});
    QCOMPARE(QJsonDocument::fromJson(inspect.out.toUtf8()).object()["complete"].toBool(), true);
}

void TestCli::killLeavesAReadableFile() {
    const QString run = m_dir.filePath("sigkill.h5");
    QProcess p;
    p.start(RANKSIGHT_CLI,
            {"train", "--model", "mlp", "--ranks", "2", "--batch", "8", "--steps", "100000", "--out", run});
    QVERIFY(p.waitForStarted());
    const int64_t seen = waitForSteps(run, 5, p);
    QVERIFY(seen >= 5);
    p.kill();
    QVERIFY(p.waitForFinished(10000));
    const auto inspect = cli({"inspect", run, "--json"});
    QVERIFY2(inspect.code == 0, qPrintable(inspect.err));
    const auto j = QJsonDocument::fromJson(inspect.out.toUtf8()).object();
    QCOMPARE(j["complete"].toBool(), false);
    QVERIFY(j["steps_recorded"].toInt() >= seen);
    const auto csv = cli({"export-csv", run, "--out", m_dir.filePath("killed_csv")});
    QCOMPARE(csv.code, 0);
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
