// The config-key table (core/train/ConfigKeys.h) and what it drives: every key round-trips through text, the
// run file's JSON and back; set, fromJson and toJson say and write what they did before the table; the flags
// of `ranksight-cli train` and its --help-config table; the user guide's table of settings is that table.
#include "train/ConfigKeys.h"
#include "train/TrainConfig.h"

#include <QFile>
#include <QProcess>
#include <QtTest>
#include <fmt/format.h>
#include <map>

using namespace rs;

class TestConfigKeys : public QObject {
    Q_OBJECT
private slots:
    void namesAndFlagsAreUnique();
    void everyRowRoundTrips();
    void unwrittenKeysStayOutOfTheRunFile();
    void cliOnlyKeysAreNotFileKeys();
    void errorTexts_data();
    void errorTexts();
    void fileErrorTexts_data();
    void fileErrorTexts();
    void epochsWinOverStepsInAnyOrder();
    void toJsonAsBefore_data();
    void toJsonAsBefore();
    void userGuideHoldsTheTable();
};

namespace {

// Values to try for a key of free text; the other types are tried across their range or choices.
const std::map<std::string, std::vector<std::string>> kTextSamples = {
    {"loss_scale", {"none", "fixed:64", "dynamic", "dynamic:1024", "fixed:0.5"}},
    {"data", {"synthetic", "cifar10:/data/cifar", "fashion-mnist", "fashion-mnist:/data/fm"}},
    {"rank_table", {"/tmp/hccl.json"}},
    {"out", {"/tmp/run.h5"}},
    {"faults", {"grad-sum", "grad-sum,sdc-after@30:2"}},
    {"master", {"10.0.0.1:29500"}},
};

std::vector<std::string> samples(const ConfigKey& key) {
    switch (key.type) {
    case KeyType::Integer:
        return {std::to_string(key.lo), std::to_string(key.hi),
                std::to_string(key.lo + (key.hi - key.lo) / 3)};
    case KeyType::Number:
        return {"0.25", "0.001", "1"};
    case KeyType::Boolean:
        return {"true", "false"};
    case KeyType::Choice: {
        std::vector<std::string> values;
        for (const KeyChoice& c : key.choices)
            values.push_back(c.value);
        return values;
    }
    default: {
        const auto it = kTextSamples.find(key.name);
        return it == kTextSamples.end() ? std::vector<std::string>{} : it->second;
    }
    }
}

QString error(const std::function<void()>& f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return QString::fromUtf8(e.what());
    }
    return QStringLiteral("(no error)");
}

QString readFile(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

} // namespace

void TestConfigKeys::namesAndFlagsAreUnique() {
    QSet<QString> names, flags;
    for (const ConfigKey& k : configKeys()) {
        QVERIFY2(!names.contains(QString::fromStdString(k.name)), k.name.c_str());
        names.insert(QString::fromStdString(k.name));
        QVERIFY2(k.set && k.get, k.name.c_str());
        QVERIFY2(!k.help.empty(), k.name.c_str());
        QVERIFY2(k.type != KeyType::List || k.add, k.name.c_str());
        if (k.flag.empty())
            continue;
        QVERIFY2(!flags.contains(QString::fromStdString(k.flag)), k.flag.c_str());
        flags.insert(QString::fromStdString(k.flag));
        QCOMPARE(findFlag(k.flag), &k);
    }
    QVERIFY(names.size() >= 33);
}

// Set from text, written by toJson, read back by fromJson: the same value, and the same JSON.
void TestConfigKeys::everyRowRoundTrips() {
    int tried = 0;
    for (const ConfigKey& k : configKeys()) {
        if (k.scope != KeyScope::Written)
            continue;
        const std::vector<std::string> values = samples(k);
        QVERIFY2(!values.empty(),
                 qPrintable(QStringLiteral("no sample values for %1: add some to kTextSamples")
                                .arg(QString::fromStdString(k.name))));
        for (const std::string& text : values) {
            TrainConfig c;
            c.set(k.name, text);
            const std::string json = c.toJson();
            const TrainConfig back = TrainConfig::fromJson(json, "round trip");
            const QString what = QString::fromStdString(k.name + "=" + text);
            QVERIFY2(k.get(c).has_value(), qPrintable(what));
            QVERIFY2(k.get(back) == k.get(c), qPrintable(what));
            QVERIFY2(back.toJson() == json, qPrintable(what));
            QVERIFY2(json.find("\"" + k.name + "\"") != std::string::npos, qPrintable(what));
            ++tried;
        }
    }
    QVERIFY(tried > 60);
}

// faults and out are file keys the run file never shows: they come back from a file, not from toJson.
void TestConfigKeys::unwrittenKeysStayOutOfTheRunFile() {
    for (const ConfigKey& k : configKeys()) {
        if (k.scope != KeyScope::Unwritten)
            continue;
        for (const std::string& text : samples(k)) {
            TrainConfig c;
            c.set(k.name, text);
            QVERIFY2(c.toJson() == TrainConfig().toJson(), k.name.c_str());
            const std::string file = k.type == KeyType::List ? fmt::format(R"({{"{}": ["{}"]}})", k.name,
                                                                           text.substr(0, text.find(',')))
                                                             : fmt::format(R"({{"{}": "{}"}})", k.name, text);
            TrainConfig expected;
            expected.set(k.name, text.substr(0, text.find(',')));
            QVERIFY2(k.get(TrainConfig::fromJson(file, "file")) == k.get(expected),
                     qPrintable(QString::fromStdString(file)));
        }
    }
}

// --nodes, --node-rank, --master and --force: flags only; a file or --set naming them is refused as before.
void TestConfigKeys::cliOnlyKeysAreNotFileKeys() {
    int seen = 0;
    for (const ConfigKey& k : configKeys()) {
        if (k.scope != KeyScope::CliOnly)
            continue;
        ++seen;
        QVERIFY2(!k.flag.empty(), k.name.c_str());
        QVERIFY(findConfigKey(k.name) == nullptr);
        TrainConfig c;
        QCOMPARE(error([&] { c.set(k.name, "1"); }), QStringLiteral("unknown key '%1'").arg(k.name.c_str()));
        QCOMPARE(error([&] { TrainConfig::fromJson(fmt::format(R"({{"{}": 1}})", k.name), "c.json"); }),
                 QStringLiteral("c.json: unknown key '%1'").arg(k.name.c_str()));
        QVERIFY(!QString::fromStdString(TrainConfig().toJson()).contains(QString::fromStdString(k.name)));
    }
    QCOMPARE(seen, 4);
    TrainConfig c;
    findFlag("nodes")->set(c, "3");
    findFlag("node-rank")->set(c, "2");
    findFlag("force")->set(c, "true");
    QCOMPARE(c.nodes, 3);
    QCOMPARE(c.nodeRank, 2);
    QVERIFY(c.overwrite);
    QCOMPARE(error([&] { findFlag("nodes")->set(c, "x"); }), QStringLiteral("--nodes 'x' is not a number"));
}

// The messages of set(), word for word as before the table (the CLI and the run panel show them).
void TestConfigKeys::errorTexts_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("message");
    QTest::addRow("unknown") << "frob"
                             << "1"
                             << "unknown key 'frob'";
    QTest::addRow("ranks low") << "ranks"
                               << "0"
                               << "ranks: 0 is out of range [1, 1024]";
    QTest::addRow("ranks text") << "ranks"
                                << "four"
                                << "ranks: 'four' is not an integer";
    QTest::addRow("ranks tail") << "ranks"
                                << "4x"
                                << "ranks: '4x' is not an integer";
    QTest::addRow("steps high") << "steps"
                                << "2000000000000"
                                << "steps: 2000000000000 is out of range [1, 1099511627776]";
    QTest::addRow("seed negative") << "seed"
                                   << "-1"
                                   << "seed: -1 is out of range [0, 9223372036854775807]";
    QTest::addRow("lr high") << "lr"
                             << "200"
                             << "lr: 200 is out of range [0, 100]";
    QTest::addRow("lr text") << "lr"
                             << "fast"
                             << "lr: 'fast' is not a number";
    QTest::addRow("momentum") << "momentum"
                              << "1.5"
                              << "momentum: 1.5 is out of range [0, 1]";
    QTest::addRow("bool") << "broadcast"
                          << "maybe"
                          << "broadcast: 'maybe' is not a boolean (true/false)";
    QTest::addRow("model") << "model"
                           << "vgg"
                           << "model: 'vgg' is not mlp, smallcnn, resnet18 or resnet50";
    QTest::addRow("precision") << "precision"
                               << "O1"
                               << "precision: 'O1' is not O0, O2 or O3";
    QTest::addRow("schedule") << "lr_schedule"
                              << "step"
                              << "lr_schedule: 'step' is not constant or cosine";
    QTest::addRow("data") << "data"
                          << "imagenet"
                          << "data: 'imagenet' is not synthetic, cifar10:DIR or fashion-mnist[:DIR]";
    QTest::addRow("loss scale") << "loss_scale"
                                << "auto"
                                << "loss_scale: 'auto' is not none, fixed:V, dynamic or dynamic:INIT";
    QTest::addRow("loss scale value") << "loss_scale"
                                      << "fixed:0"
                                      << "loss_scale: 0 is out of range [1e-30, 1e+30]";
    QTest::addRow("timeout") << "timeout_ms"
                             << "5"
                             << "timeout_ms: 5 is out of range [10, 3600000]";
    QTest::addRow("devices") << "devices_per_server"
                             << "9"
                             << "devices_per_server: 9 is out of range [1, 8]";
    QTest::addRow("sketch") << "sketch_dim"
                            << "0"
                            << "sketch_dim: 0 is out of range [1, 256]";
}

void TestConfigKeys::errorTexts() {
    QFETCH(QString, key);
    QFETCH(QString, value);
    QFETCH(QString, message);
    TrainConfig c;
    QCOMPARE(error([&] { c.set(key.toStdString(), value.toStdString()); }), message);
}

void TestConfigKeys::fileErrorTexts_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::addRow("unknown") << R"({"frob": 1})"
                             << "c.json: unknown key 'frob'";
    QTest::addRow("unknown array") << R"({"frob": [1]})"
                                   << "c.json: frob: expected a string, number or boolean";
    QTest::addRow("object") << R"({"ranks": {}})"
                            << "c.json: ranks: expected a string, number or boolean";
    QTest::addRow("steps text") << R"({"steps": "5"})"
                                << "c.json: steps must be an integer";
    QTest::addRow("epochs real") << R"({"epochs": 1.5})"
                                 << "c.json: epochs must be an integer";
    QTest::addRow("steps range") << R"({"steps": 0})"
                                 << "steps: 0 is out of range [1, 1099511627776]";
    QTest::addRow("ranks real") << R"({"ranks": 4.0})"
                                << "c.json: ranks: '4.0' is not an integer";
    QTest::addRow("faults scalar") << R"({"faults": "grad-sum"})"
                                   << "c.json: faults: expected an array of fault specs";
    QTest::addRow("faults number") << R"({"faults": [1]})"
                                   << "c.json: faults: 1 is not a string";
    QTest::addRow("not object") << "[1]"
                                << "c.json: the top level must be a JSON object";
}

void TestConfigKeys::fileErrorTexts() {
    QFETCH(QString, json);
    QFETCH(QString, message);
    QCOMPARE(error([&] { TrainConfig::fromJson(json.toStdString(), "c.json"); }), message);
}

// steps clears epochs, so a file applies epochs after steps whatever its key order.
void TestConfigKeys::epochsWinOverStepsInAnyOrder() {
    for (const char* json : {R"({"epochs": 3, "steps": 5})", R"({"steps": 5, "epochs": 3})"}) {
        const TrainConfig c = TrainConfig::fromJson(json, "c.json");
        QCOMPARE(c.epochs, int64_t(3));
        QCOMPARE(c.steps, int64_t(5));
    }
}

// toJson's text, byte for byte as the binary before the table wrote it into run files.
void TestConfigKeys::toJsonAsBefore_data() {
    QTest::addColumn<QString>("settings");
    QTest::addColumn<QString>("json");
    // The `config` attribute of run files the binary before the table wrote (h5py), with these settings, and
    // the keys added since in their place (optimizer_shard).
    QTest::addRow("default") << ""
                             << R"({
  "batch": 32,
  "broadcast": true,
  "compute_threads": 0,
  "data": "synthetic",
  "devices_per_server": 8,
  "eval_every": 0,
  "eval_samples": 512,
  "flight_budget_mb": 1024,
  "flight_steps": 4,
  "gradients_mean": true,
  "loss_scale": "dynamic",
  "lr": 0.05000000074505806,
  "lr_schedule": "cosine",
  "model": "resnet50",
  "momentum": 0.8999999761581421,
  "optimizer_shard": false,
  "precision": "O2",
  "ranks": 4,
  "seed": 1,
  "sketch_dim": 16,
  "steps": 100,
  "telemetry": true,
  "timeout_ms": 30000,
  "warmup_steps": 10,
  "weight_decay": 9.999999747378752e-05,
  "weight_every": 10
})";
    QTest::addRow("changed")
        << "model=mlp ranks=2 batch=4 steps=3 precision=O3 loss_scale=fixed:64 seed=9 lr=0.1 momentum=0.8 "
           "weight_decay=0.001 lr_schedule=constant warmup_steps=5 broadcast=false gradients_mean=false "
           "telemetry=false weight_every=3 sketch_dim=32 eval_every=7 eval_samples=64 flight_steps=2 "
           "flight_budget_mb=16 timeout_ms=5000 compute_threads=2 devices_per_server=1 optimizer_shard=true"
        << R"({
  "batch": 4,
  "broadcast": false,
  "compute_threads": 2,
  "data": "synthetic",
  "devices_per_server": 1,
  "eval_every": 7,
  "eval_samples": 64,
  "flight_budget_mb": 16,
  "flight_steps": 2,
  "gradients_mean": false,
  "loss_scale": "fixed:64",
  "lr": 0.10000000149011612,
  "lr_schedule": "constant",
  "model": "mlp",
  "momentum": 0.800000011920929,
  "optimizer_shard": true,
  "precision": "O3",
  "ranks": 2,
  "seed": 9,
  "sketch_dim": 32,
  "steps": 3,
  "telemetry": false,
  "timeout_ms": 5000,
  "warmup_steps": 5,
  "weight_decay": 0.0010000000474974513,
  "weight_every": 3
})";
}

void TestConfigKeys::toJsonAsBefore() {
    QFETCH(QString, settings);
    QFETCH(QString, json);
    TrainConfig c;
    for (const QString& kv : settings.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const qsizetype eq = kv.indexOf(QLatin1Char('='));
        c.set(kv.left(eq).toStdString(), kv.mid(eq + 1).toStdString());
    }
    QCOMPARE(QString::fromStdString(c.toJson()), json);
}

// docs/user-guide.md holds exactly the table `ranksight-cli train --help-config` prints.
void TestConfigKeys::userGuideHoldsTheTable() {
    const QString table = QString::fromStdString(configKeysMarkdown());
    QVERIFY(table.startsWith(QLatin1String("| key |")));
    for (const ConfigKey& k : configKeys())
        QCOMPARE(table.contains(QStringLiteral("| `%1` |").arg(k.name.c_str())), k.isFileKey());
    const QString guide = readFile(QStringLiteral(RANKSIGHT_SOURCE_DIR "/docs/user-guide.md"));
    QVERIFY(!guide.isEmpty());
    QVERIFY2(guide.contains(QLatin1Char('\n') + table + QLatin1Char('\n')),
             "docs/user-guide.md: the table of config keys is not `ranksight-cli train --help-config`'s; "
             "paste it in");
    QProcess p;
    p.start(RANKSIGHT_CLI, {"train", "--help-config"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()), table);
}

QTEST_GUILESS_MAIN(TestConfigKeys)
#include "tst_configkeys.moc"
