// The rows of the config-key table (ConfigKeys.h). A row's builder (integer, number, ...) binds a member and
// says how its text is read; the chained calls add the flag, the help line and the run panel's row.
#include "train/ConfigKeys.h"

#include "train/ConfigText.h"
#include "train/TrainConfig.h"

#include <algorithm>
#include <fmt/format.h>
#include <type_traits>

namespace rs {
namespace {

// A row under construction: the builders below fill the binding, these calls the rest.
struct Row : ConfigKey {
    Row& cli(const char* f, const char* meta) {
        // Built, then moved in: GCC 12's -Wrestrict misreads an inlined assign of a literal here (a known
        // false positive of its string code).
        flag = std::string(f);
        metavar = std::string(meta);
        return *this;
    }
    Row& only(KeyScope s) {
        scope = s;
        return *this;
    }
    Row& inForm(FormKind kind, const char* label, const char* tip, int64_t formLo = 0, int64_t formHi = 0) {
        form = {kind, label, tip, formLo, formHi};
        return *this;
    }
    Row& range(const char* words) { // the range in words, when the numbers alone would mislead
        values = words;
        return *this;
    }
};

Row row(const char* name, KeyType type, const char* help) {
    Row r;
    r.name = name;
    r.type = type;
    r.help = help;
    return r;
}

template <class T>
Row integer(const char* name, T TrainConfig::*member, int64_t lo, int64_t hi, const char* help) {
    Row r = row(name, KeyType::Integer, help);
    r.lo = lo;
    r.hi = hi;
    r.values = fmt::format("{}..{}", lo, hi);
    r.set = [name, member, lo, hi](TrainConfig& c, const std::string& v) {
        c.*member = static_cast<T>(parseInteger(name, v, lo, hi));
    };
    r.get = [member](const TrainConfig& c) -> std::optional<ConfigValue> {
        if constexpr (std::is_unsigned_v<T>)
            return ConfigValue(uint64_t(c.*member));
        else
            return ConfigValue(int64_t(c.*member));
    };
    return r;
}

Row number(const char* name, float TrainConfig::*member, double lo, double hi, const char* help) {
    Row r = row(name, KeyType::Number, help);
    r.values = fmt::format("{}..{}", lo, hi);
    r.set = [name, member, lo, hi](TrainConfig& c, const std::string& v) {
        c.*member = static_cast<float>(parseNumber(name, v, lo, hi));
    };
    r.get = [member](const TrainConfig& c) -> std::optional<ConfigValue> { return c.*member; };
    return r;
}

Row boolean(const char* name, bool TrainConfig::*member, const char* help) {
    Row r = row(name, KeyType::Boolean, help);
    r.values = "true or false";
    r.set = [name, member](TrainConfig& c, const std::string& v) { c.*member = parseBoolean(name, v); };
    r.get = [member](const TrainConfig& c) -> std::optional<ConfigValue> { return c.*member; };
    return r;
}

// Free text (a path); written only when not empty.
Row text(const char* name, std::string TrainConfig::*member, const char* help) {
    Row r = row(name, KeyType::Text, help);
    r.values = "a path";
    r.set = [member](TrainConfig& c, const std::string& v) { c.*member = v; };
    r.get = [member](const TrainConfig& c) -> std::optional<ConfigValue> {
        if ((c.*member).empty())
            return std::nullopt;
        return c.*member;
    };
    return r;
}

// "a, b or c": the choices as the errors and the user guide say them.
std::string inWords(const std::vector<KeyChoice>& choices) {
    std::string s;
    for (size_t i = 0; i < choices.size(); ++i)
        s += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i].value;
    return s;
}

// A key whose text names one of `choices`: parse turns the text into the member's value (nullopt: not one of
// them), name the value back into text.
template <class T, class Parse, class Name>
Row choice(const char* name, T TrainConfig::*member, std::vector<KeyChoice> choices, Parse parse, Name nameOf,
           const char* help) {
    Row r = row(name, KeyType::Choice, help);
    r.choices = std::move(choices);
    r.values = inWords(r.choices);
    r.set = [name, member, parse, values = r.values](TrainConfig& c, const std::string& v) {
        const std::optional<T> x = parse(v);
        if (!x)
            throw ConfigError(fmt::format("{}: '{}' is not {}", name, v, values));
        c.*member = *x;
    };
    r.get = [member, nameOf](const TrainConfig& c) -> std::optional<ConfigValue> {
        return nameOf(c.*member);
    };
    return r;
}

Row textChoice(const char* name, std::string TrainConfig::*member, std::vector<KeyChoice> choices,
               const char* help) {
    auto parse = [choices](const std::string& v) -> std::optional<std::string> {
        const bool known =
            std::any_of(choices.begin(), choices.end(), [&](const KeyChoice& k) { return k.value == v; });
        return known ? std::optional<std::string>(v) : std::nullopt;
    };
    return choice(
        name, member, std::move(choices), parse, [](const std::string& s) { return s; }, help);
}

void addNodeKeys(std::vector<ConfigKey>& keys);
void addLengthKeys(std::vector<ConfigKey>& keys);

// What a run trains and on how many cards; in the run panel's order.
void addSetupKeys(std::vector<ConfigKey>& keys) {
    keys.push_back(
        choice(
            "model", &TrainConfig::model,
            {{"mlp", "MLP"}, {"smallcnn", "SmallCNN"}, {"resnet18", "ResNet-18"}, {"resnet50", "ResNet-50"}},
            parseModelKind, modelKindName, "mlp, smallcnn, resnet18 or resnet50")
            .cli("model", "M")
            .inForm(FormKind::Choice, "&Model",
                    "The network every card trains a replica of, like the network given to "
                    "mindspore.Model. CIFAR variants: 3×3 stem, no max-pool."));
    // Past kMaxCardsPerProcess per node, validate() says to add nodes.
    keys.push_back(
        integer("ranks", &TrainConfig::ranks, 1, kMaxRanks, "emulated Ascend 910 cards (ranks)")
            .cli("ranks", "N")
            .inForm(FormKind::Spin, "&Cards (ranks)",
                    "How many emulated Ascend 910 cards train data-parallel (RANK_SIZE, device_num "
                    "of set_auto_parallel_context). Each card is one rank with its own replica and "
                    "data shard; gradients are all-reduced every step."));
    addNodeKeys(keys);
    keys.push_back(integer("batch", &TrainConfig::batchPerRank, 1, 4096, "samples per card and step")
                       .cli("batch", "PER_RANK")
                       .inForm(FormKind::Spin, "&Batch per card",
                               "Samples each card trains on per step: the batch_size of each rank's shard "
                               "(DistributedSampler; num_shards and shard_id of a MindSpore dataset). The "
                               "global batch is cards × this."));
    addLengthKeys(keys);
}

// How this process joins a run of several node processes: flags only, never in a file (TrainConfig.h).
// --master is checked (and written host:port) where it is used, by parseMaster (cluster/NodeGroup.h).
void addNodeKeys(std::vector<ConfigKey>& keys) {
    Row nodes = integer("nodes", &TrainConfig::nodes, 0, 4096,
                        "this process is one of N node processes (also NNODES)");
    nodes.set = [](TrainConfig& c, const std::string& v) { c.nodes = parseCount("nodes", v); };
    keys.push_back(
        nodes.only(KeyScope::CliOnly)
            .cli("nodes", "N")
            .inForm(FormKind::Spin, "&Nodes",
                    "Servers of the rank table, each a process on this host with cards / nodes "
                    "cards: node 0 trains in this window and writes the run file, nodes 1.. are "
                    "ranksight-cli processes. They join through PyTorch's gloo over 127.0.0.1; the "
                    "all-reduce sums inside each node, then across nodes, like HCCL across "
                    "servers. Same results as one node, bit for bit. On real hosts, start "
                    "ranksight-cli train --nodes N --node-rank K --master HOST:PORT on each.",
                    1, 8));
    Row rank = integer("node_rank", &TrainConfig::nodeRank, 0, 4096,
                       "which node this process is, 0..N-1 (also NODE_RANK)");
    rank.set = [](TrainConfig& c, const std::string& v) { c.nodeRank = parseCount("node-rank", v); };
    keys.push_back(rank.only(KeyScope::CliOnly).cli("node-rank", "K"));
    keys.push_back(
        text("master", &TrainConfig::master, "where node 0 listens (also MASTER_ADDR, MASTER_PORT)")
            .only(KeyScope::CliOnly)
            .cli("master", "HOST:PORT"));
}

// steps and epochs: one form row; a file applies them first (ConfigKey::early).
void addLengthKeys(std::vector<ConfigKey>& keys) {
    Row steps = integer("steps", &TrainConfig::steps, 1, int64_t(1) << 40, "steps to train (or --epochs)");
    steps.set = [](TrainConfig& c, const std::string& v) {
        c.steps = parseInteger("steps", v, 1, int64_t(1) << 40);
        c.epochs = 0;
    };
    steps.get = [](const TrainConfig& c) -> std::optional<ConfigValue> {
        if (c.epochs > 0)
            return std::nullopt;
        return c.steps;
    };
    steps.early = true;
    keys.push_back(
        steps.cli("steps", "N")
            .range("1..2^40")
            .inForm(
                FormKind::Length, "&Length",
                "How long to train: optimizer steps, or epochs over the training set (the epoch argument of "
                "Model.train)."));
    Row epochs =
        integer("epochs", &TrainConfig::epochs, 1, 100000, "passes over the data set (instead of --steps)");
    epochs.get = [](const TrainConfig& c) -> std::optional<ConfigValue> {
        if (c.epochs > 0)
            return c.epochs;
        return std::nullopt;
    };
    epochs.early = true;
    keys.push_back(epochs.cli("epochs", "N"));
}

// The arithmetic: precision and loss scale.
void addNumericsKeys(std::vector<ConfigKey>& keys) {
    keys.push_back(
        choice("precision", &TrainConfig::precision,
               {{"O0", "O0: fp32"}, {"O2", "O2: fp16 compute, fp32 master weights"}, {"O3", "O3: all fp16"}},
               parsePrecision, precisionName, "O0 (FP32), O2 or O3 (FP16)")
            .cli("precision", "P")
            .inForm(FormKind::Choice, "P&recision",
                    "amp_level, as in mindspore.Model(amp_level=...): O0 keeps everything fp32; O2 "
                    "computes in fp16 with fp32 master weights and fp32 BatchNorm; O3 is all fp16. "
                    "fp16 overflows to inf above 65504 and flushes tiny gradients to 0."));
    Row scale = row("loss_scale", KeyType::Text, "none, fixed:V or dynamic");
    scale.values = "none, fixed:V, dynamic or dynamic:INIT";
    scale.set = [](TrainConfig& c, const std::string& v) { c.lossScale = parseLossScale(v); };
    scale.get = [](const TrainConfig& c) -> std::optional<ConfigValue> { return lossScaleName(c.lossScale); };
    keys.push_back(
        scale.cli("loss-scale", "S")
            .inForm(
                FormKind::LossScale, "Loss &scale",
                "Scales the loss before backward so small fp16 gradients survive. none: no scaling. fixed: "
                "FixedLossScaleManager(loss_scale=value). dynamic: "
                "DynamicLossScaleManager(init_loss_scale=value, "
                "scale_factor=2, scale_window=2000): an overflow skips the step on every rank and halves the "
                "scale; "
                "2000 clean steps double it."));
}

// The data and the seed.
void addInputKeys(std::vector<ConfigKey>& keys) {
    Row data = row("data", KeyType::Text, "synthetic, cifar10:DIR or fashion-mnist[:DIR]");
    data.values = data.help;
    data.set = [](TrainConfig& c, const std::string& v) {
        if (v != "synthetic" && v.rfind("cifar10:", 0) != 0 && v != "fashion-mnist" &&
            v.rfind("fashion-mnist:", 0) != 0)
            throw ConfigError(
                fmt::format("data: '{}' is not synthetic, cifar10:DIR or fashion-mnist[:DIR]", v));
        c.data = v;
    };
    data.get = [](const TrainConfig& c) -> std::optional<ConfigValue> { return c.data; };
    keys.push_back(
        data.cli("data", "D")
            .inForm(FormKind::Data, "&Data",
                    "synthetic: a built-in, learnable, CIFAR-shaped data set that needs no "
                    "download.\nCIFAR-10 folder: the "
                    "binary version (data_batch_1.bin … data_batch_5.bin, test_batch.bin), like "
                    "mindspore.dataset.Cifar10Dataset(dataset_dir).\nFashion-MNIST: Zalando's 28x28 grey "
                    "images of "
                    "clothes, padded to 32x32 and repeated to 3 channels, from Debian's "
                    "dataset-fashion-mnist (an empty "
                    "folder means /usr/share/datasets/fashion-mnist). Each rank reads its own shard."));
    keys.push_back(
        integer("seed", &TrainConfig::seed, 0, INT64_MAX, "random seed of weights, data order and faults")
            .cli("seed", "S")
            .range("0..2^63-1")
            .inForm(FormKind::Digits, "S&eed",
                    "The seed every rank starts from, as mindspore.set_seed(seed): it fixes weight "
                    "init, data shuffling and Dropout. With the same seed and the initial parameter "
                    "broadcast the replicas start identical."));
}

// The optimizer and its schedule.
void addOptimizerKeys(std::vector<ConfigKey>& keys) {
    Row lr = number("lr", &TrainConfig::lr, 0, 100, "learning rate");
    lr.get = [](const TrainConfig& c) -> std::optional<ConfigValue> { return c.effectiveLr(); }; // as trained
    keys.push_back(lr.cli("lr", "X").range("0..100 (0: 0.05 x global batch / 128)"));
    keys.push_back(
        number("momentum", &TrainConfig::momentum, 0, 1, "SGD momentum, as MindSpore's nn.Momentum"));
    keys.push_back(number("weight_decay", &TrainConfig::weightDecay, 0, 1, "the optimizer's weight decay"));
    keys.push_back(textChoice("lr_schedule", &TrainConfig::lrSchedule, {{"constant", ""}, {"cosine", ""}},
                              "the learning rate after the warm-up"));
    keys.push_back(integer("warmup_steps", &TrainConfig::warmupSteps, 0, int64_t(1) << 40,
                           "steps of linear learning-rate warm-up")
                       .range("0..2^40"));
}

// The fault lab's specs: a list, set whole by a file or --set faults=A,B, one more by each --fault.
Row faultsRow() {
    Row faults = row("faults", KeyType::List, "inject a known failure cause (repeatable)");
    faults.values = "fault specs";
    faults.scope = KeyScope::Unwritten;
    faults.set = [](TrainConfig& c, const std::string& v) { // --set faults=A,B: the list, replaced
        c.faults.clear();
        for (size_t begin = 0; begin < v.size();) {
            const size_t end = std::min(v.find(',', begin), v.size());
            c.addFault(v.substr(begin, end - begin));
            begin = end + 1;
        }
    };
    faults.add = [](TrainConfig& c, const std::string& spec) { c.addFault(spec); };
    faults.get = [](const TrainConfig& c) -> std::optional<ConfigValue> {
        std::string joined;
        for (const std::string& f : c.faults)
            joined += (joined.empty() ? "" : ",") + f;
        return joined;
    };
    // The tip's %1: the names the lab injects; %2..%4: causes that strike every rank alike (the panel fills
    // them in).
    return faults.cli("fault", "NAME[@STEP][:RANK]")
        .inForm(
            FormKind::Faults, "&Faults",
            "Fault lab: reproduce a known cause of cross-rank drift on purpose, then see RankSight name it. "
            "Specs NAME[@STEP][:RANK], separated by spaces or commas (default step: early; default rank: the "
            "last). Names: %1. %2, %3 and %4 strike every rank alike: the ranks agree, so only a comparison "
            "with a clean run of the same settings names them (File › Compare With Reference…).");
}

// Faults, the rank table and the run file: in a file, but faults and out not in the run file's config.
void addOutputKeys(std::vector<ConfigKey>& keys) {
    keys.push_back(faultsRow());
    Row table =
        text("rank_table", &TrainConfig::rankTable, "a MindSpore hccl.json, or a bundled one: hccl_4p");
    table.bundled = "ranktables";
    keys.push_back(
        table.cli("rank-table", "FILE|NAME")
            .inForm(FormKind::RankTable, "Rank &table",
                    "RANK_TABLE_FILE: an hccl.json listing server_list[].device[] with device_id, "
                    "device_ip and rank_id. Empty: one is generated for the emulated cards. A wrong "
                    "table (duplicate rank_id or device_id, a missing rank) is one of the causes "
                    "RankSight names."));
    keys.push_back(
        text("out", &TrainConfig::out, "the run file to write (node 0 writes it)")
            .only(KeyScope::Unwritten)
            .cli("out", "RUN.h5")
            .inForm(FormKind::RunFile, "R&un file",
                    "The HDF5 file the telemetry goes to, flushed every step so it can be watched "
                    "live (also when ranksight-cli writes it) and replayed later; Start writes "
                    "exactly this file. Generated names: <runs folder>/<preset>-<date>-<time>.h5, "
                    "made when the preset, the runs folder or the last run changes. Runs are never "
                    "overwritten."));
    keys.push_back(boolean("overwrite", &TrainConfig::overwrite, "replace RUN.h5 if it exists")
                       .only(KeyScope::CliOnly)
                       .cli("force", ""));
}

// How the cluster runs and what it records: only in files and --set.
void addRecordingKeys(std::vector<ConfigKey>& keys) {
    keys.push_back(boolean("broadcast", &TrainConfig::broadcastInit,
                           "rank 0's weights broadcast after init, like MindSpore's parameter_broadcast"));
    keys.push_back(boolean("gradients_mean", &TrainConfig::gradientsMean,
                           "average (true) or sum the all-reduced gradients"));
    keys.push_back(
        boolean("optimizer_shard", &TrainConfig::optimizerShard,
                "each rank updates its chunk of the weights, then they are all-gathered (MindSpore's "
                "enable_parallel_optimizer)")
            .cli("optimizer-shard", ""));
    keys.push_back(boolean("telemetry", &TrainConfig::telemetry,
                           "record per-parameter statistics, sketches and fingerprints"));
    keys.push_back(integer("weight_every", &TrainConfig::weightEvery, 1, 1000000,
                           "weight fingerprints every K steps (and at step 0)"));
    keys.push_back(
        integer("sketch_dim", &TrainConfig::sketchDim, 1, 256,
                "components of each local gradient's random-projection sketch (the cosine heatmap)"));
    keys.push_back(integer("eval_every", &TrainConfig::evalEvery, 0, int64_t(1) << 40,
                           "held-out evaluation every K steps (0: only at the end)")
                       .range("0..2^40"));
    keys.push_back(
        integer("eval_samples", &TrainConfig::evalSamples, 0, 100000, "held-out images each rank evaluates"));
    keys.push_back(integer("flight_steps", &TrainConfig::flightSteps, 0, 64,
                           "the flight recorder: how many recent steps of full tensors each card keeps"));
    keys.push_back(integer("flight_budget_mb", &TrainConfig::flightBudgetMb, 0, 1 << 20,
                           "the flight recorder's memory budget in MB (caps flight_steps)"));
    keys.push_back(integer("timeout_ms", &TrainConfig::timeoutMs, 10, 3600000, "every collective's timeout"));
    keys.push_back(integer("compute_threads", &TrainConfig::computeThreads, 0, 256,
                           "how many cards compute at once (0: one per core)"));
    keys.push_back(integer("devices_per_server", &TrainConfig::devicesPerServer, 1, 8,
                           "cards per server of the generated rank table"));
}

std::vector<ConfigKey> makeKeys() {
    std::vector<ConfigKey> keys;
    addSetupKeys(keys);
    addNumericsKeys(keys);
    addInputKeys(keys);
    addOptimizerKeys(keys);
    addOutputKeys(keys);
    addRecordingKeys(keys);
    return keys;
}

} // namespace

const std::vector<ConfigKey>& configKeys() {
    static const std::vector<ConfigKey> keys = makeKeys();
    return keys;
}

const ConfigKey* findConfigKey(const std::string& name) {
    for (const ConfigKey& k : configKeys())
        if (k.name == name && k.isFileKey())
            return &k;
    return nullptr;
}

const ConfigKey* findFlag(const std::string& flag) {
    for (const ConfigKey& k : configKeys())
        if (!k.flag.empty() && k.flag == flag)
            return &k;
    return nullptr;
}

std::string configValueText(const ConfigValue& value) {
    return std::visit(
        [](const auto& x) -> std::string {
            if constexpr (std::is_same_v<std::decay_t<decltype(x)>, bool>)
                return x ? "true" : "false";
            else
                return fmt::format("{}", x);
        },
        value);
}

} // namespace rs

namespace rs {
namespace {

std::string markdownCell(const std::string& text) {
    std::string out;
    for (char ch : text)
        out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return out;
}

// The value a default run has: "–" for none (no rank table, a run measured in steps).
std::string defaultCell(const ConfigKey& key) {
    const std::optional<ConfigValue> v = key.get(TrainConfig{});
    const std::string text = v ? configValueText(*v) : std::string();
    return text.empty() ? "–" : "`" + markdownCell(text) + "`";
}

} // namespace

std::string configKeysMarkdown() {
    std::string out = "| key | flag | default | values | meaning |\n|---|---|---|---|---|\n";
    for (const ConfigKey& k : configKeys())
        if (k.isFileKey())
            out += fmt::format("| `{}` | {} | {} | {} | {} |\n", k.name,
                               k.flag.empty() ? "" : "`--" + k.flag + "`", defaultCell(k),
                               markdownCell(k.values), markdownCell(k.help));
    return out;
}

} // namespace rs
