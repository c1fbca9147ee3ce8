#include "train/TrainConfig.h"

#include "faults/FaultSpec.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rs {
namespace {

using Json = nlohmann::json;

int64_t toInt(const std::string& key, const std::string& v, int64_t lo, int64_t hi) {
    size_t used = 0;
    int64_t x = 0;
    try {
        x = std::stoll(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != v.size())
        throw ConfigError(fmt::format("{}: '{}' is not an integer", key, v));
    if (x < lo || x > hi)
        throw ConfigError(fmt::format("{}: {} is out of range [{}, {}]", key, x, lo, hi));
    return x;
}

double toDouble(const std::string& key, const std::string& v, double lo, double hi) {
    size_t used = 0;
    double x = 0;
    try {
        x = std::stod(v, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != v.size())
        throw ConfigError(fmt::format("{}: '{}' is not a number", key, v));
    if (!(x >= lo && x <= hi))
        throw ConfigError(fmt::format("{}: {} is out of range [{}, {}]", key, v, lo, hi));
    return x;
}

bool toBool(const std::string& key, const std::string& v) {
    if (v == "true" || v == "1" || v == "on")
        return true;
    if (v == "false" || v == "0" || v == "off")
        return false;
    throw ConfigError(fmt::format("{}: '{}' is not a boolean (true/false)", key, v));
}

std::string fmtFloat(float v) {
    return fmt::format("{}", v);
}

} // namespace

LossScaleSpec parseLossScale(const std::string& text) {
    LossScaleSpec s;
    if (text == "none") {
        s.mode = LossScaleMode::None;
        s.value = 1;
    } else if (text == "dynamic") {
        s.mode = LossScaleMode::Dynamic;
    } else if (text.rfind("dynamic:", 0) == 0) {
        s.mode = LossScaleMode::Dynamic;
        s.value = static_cast<float>(toDouble("loss_scale", text.substr(8), 1, 1e30));
    } else if (text.rfind("fixed:", 0) == 0) {
        s.mode = LossScaleMode::Fixed;
        s.value = static_cast<float>(toDouble("loss_scale", text.substr(6), 1e-30, 1e30));
    } else {
        throw ConfigError(
            fmt::format("loss_scale: '{}' is not none, fixed:V, dynamic or dynamic:INIT", text));
    }
    return s;
}

std::string lossScaleName(const LossScaleSpec& spec) {
    switch (spec.mode) {
    case LossScaleMode::None:
        return "none";
    case LossScaleMode::Fixed:
        return "fixed:" + fmtFloat(spec.value);
    case LossScaleMode::Dynamic:
        return spec.value == 16777216.0f ? "dynamic" : "dynamic:" + fmtFloat(spec.value);
    }
    return "?";
}

void TrainConfig::set(const std::string& key, const std::string& v) {
    if (key == "model") {
        auto m = parseModelKind(v);
        if (!m)
            throw ConfigError(fmt::format("model: '{}' is not mlp, smallcnn, resnet18 or resnet50", v));
        model = *m;
    } else if (key == "ranks") {
        ranks = static_cast<int>(toInt(key, v, 1, kMaxRanks));
    } else if (key == "batch") {
        batchPerRank = static_cast<int>(toInt(key, v, 1, 4096));
    } else if (key == "steps") {
        steps = toInt(key, v, 1, int64_t(1) << 40);
        epochs = 0;
    } else if (key == "epochs") {
        epochs = toInt(key, v, 1, 100000);
    } else if (key == "precision") {
        auto p = parsePrecision(v);
        if (!p)
            throw ConfigError(fmt::format("precision: '{}' is not O0, O2 or O3", v));
        precision = *p;
    } else if (key == "loss_scale") {
        lossScale = parseLossScale(v);
    } else if (key == "data") {
        if (v != "synthetic" && v.rfind("cifar10:", 0) != 0 && v != "fashion-mnist" &&
            v.rfind("fashion-mnist:", 0) != 0)
            throw ConfigError(
                fmt::format("data: '{}' is not synthetic, cifar10:DIR or fashion-mnist[:DIR]", v));
        data = v;
    } else if (key == "seed") {
        seed = static_cast<uint64_t>(toInt(key, v, 0, INT64_MAX));
    } else if (key == "lr") {
        lr = static_cast<float>(toDouble(key, v, 0, 100)); // 0 keeps the linear scaling rule
    } else if (key == "momentum") {
        momentum = static_cast<float>(toDouble(key, v, 0, 1));
    } else if (key == "weight_decay") {
        weightDecay = static_cast<float>(toDouble(key, v, 0, 1));
    } else if (key == "lr_schedule") {
        if (v != "constant" && v != "cosine")
            throw ConfigError(fmt::format("lr_schedule: '{}' is not constant or cosine", v));
        lrSchedule = v;
    } else if (key == "warmup_steps") {
        warmupSteps = toInt(key, v, 0, int64_t(1) << 40);
    } else if (key == "rank_table") {
        rankTable = v;
    } else if (key == "out") {
        out = v;
    } else if (key == "broadcast") {
        broadcastInit = toBool(key, v);
    } else if (key == "gradients_mean") {
        gradientsMean = toBool(key, v);
    } else if (key == "telemetry") {
        telemetry = toBool(key, v);
    } else if (key == "weight_every") {
        weightEvery = static_cast<int>(toInt(key, v, 1, 1000000));
    } else if (key == "sketch_dim") {
        sketchDim = static_cast<int>(toInt(key, v, 1, 256));
    } else if (key == "eval_every") {
        evalEvery = toInt(key, v, 0, int64_t(1) << 40);
    } else if (key == "eval_samples") {
        evalSamples = static_cast<int>(toInt(key, v, 0, 100000));
    } else if (key == "flight_steps") {
        flightSteps = static_cast<int>(toInt(key, v, 0, 64));
    } else if (key == "flight_budget_mb") {
        flightBudgetMb = static_cast<int>(toInt(key, v, 0, 1 << 20));
    } else if (key == "timeout_ms") {
        timeoutMs = static_cast<int>(toInt(key, v, 10, 3600000));
    } else if (key == "devices_per_server") {
        devicesPerServer = static_cast<int>(toInt(key, v, 1, 8));
    } else if (key == "compute_threads") {
        computeThreads = static_cast<int>(toInt(key, v, 0, 256));
    } else if (key == "faults") { // --set faults=A,B: a comma-separated list replaces the current one
        faults.clear();
        for (size_t begin = 0; begin < v.size();) {
            const size_t end = std::min(v.find(',', begin), v.size());
            addFault(v.substr(begin, end - begin));
            begin = end + 1;
        }
    } else {
        throw ConfigError(fmt::format("unknown key '{}'", key));
    }
}

void TrainConfig::addFault(const std::string& spec) {
    parseFault(spec);
    faults.push_back(spec);
}

TrainConfig TrainConfig::fromJson(const std::string& text, const std::string& where) {
    Json j;
    try {
        j = Json::parse(text);
    } catch (const Json::parse_error& e) {
        throw ConfigError(fmt::format("{}: malformed JSON at byte {}: {}", where, e.byte, e.what()));
    } catch (const Json::exception& e) {
        // Not a syntax error but still unparseable, e.g. out_of_range.406: a number too large for a double.
        throw ConfigError(fmt::format("{}: malformed JSON: {}", where, e.what()));
    }
    if (!j.is_object())
        throw ConfigError(fmt::format("{}: the top level must be a JSON object", where));
    TrainConfig c;
    // steps and epochs interact: apply epochs after steps whatever the key order.
    for (const char* key : {"steps", "epochs"}) {
        if (j.contains(key)) {
            if (!j[key].is_number_integer())
                throw ConfigError(fmt::format("{}: {} must be an integer", where, key));
            c.set(key, j[key].dump());
        }
    }
    for (const auto& [key, value] : j.items()) {
        if (key == "steps" || key == "epochs")
            continue;
        try {
            if (key == "faults") {
                if (!value.is_array())
                    throw ConfigError("faults: expected an array of fault specs");
                c.faults.clear();
                for (const auto& spec : value) {
                    if (!spec.is_string())
                        throw ConfigError(fmt::format("faults: {} is not a string", spec.dump()));
                    c.addFault(spec.get<std::string>());
                }
            } else if (value.is_string())
                c.set(key, value.get<std::string>());
            else if (value.is_number() || value.is_boolean())
                c.set(key, value.dump());
            else
                throw ConfigError(fmt::format("{}: expected a string, number or boolean", key));
        } catch (const ConfigError& e) {
            throw ConfigError(fmt::format("{}: {}", where, e.what()));
        }
    }
    return c;
}

TrainConfig TrainConfig::fromFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw ConfigError(fmt::format("{}: cannot open the config file", path));
    std::ostringstream ss;
    ss << in.rdbuf();
    return fromJson(ss.str(), path);
}

std::string TrainConfig::toJson() const {
    Json j;
    j["model"] = modelKindName(model);
    j["ranks"] = ranks;
    j["batch"] = batchPerRank;
    if (epochs > 0)
        j["epochs"] = epochs;
    else
        j["steps"] = steps;
    j["precision"] = precisionName(precision);
    j["loss_scale"] = lossScaleName(lossScale);
    j["data"] = data;
    j["seed"] = seed;
    j["lr"] = effectiveLr();
    j["momentum"] = momentum;
    j["weight_decay"] = weightDecay;
    j["lr_schedule"] = lrSchedule;
    j["warmup_steps"] = warmupSteps;
    if (!rankTable.empty())
        j["rank_table"] = rankTable;
    j["broadcast"] = broadcastInit;
    j["gradients_mean"] = gradientsMean;
    j["telemetry"] = telemetry;
    j["weight_every"] = weightEvery;
    j["sketch_dim"] = sketchDim;
    j["eval_every"] = evalEvery;
    j["eval_samples"] = evalSamples;
    j["flight_steps"] = flightSteps;
    j["flight_budget_mb"] = flightBudgetMb;
    j["timeout_ms"] = timeoutMs;
    j["compute_threads"] = computeThreads;
    j["devices_per_server"] = devicesPerServer;
    // data, rank_table and out are paths from the command line, not necessarily UTF-8: dump() would throw
    // type_error.316 on them; such bytes are written as U+FFFD instead.
    return j.dump(2, ' ', false, Json::error_handler_t::replace);
}

void TrainConfig::validate() const {
    if (writeFile && out.empty() && nodeRank == 0)
        throw ConfigError("out: no run file given (--out RUN.h5)");
    if (ranks < 1)
        throw ConfigError("ranks: must be at least 1");
    if (nodes < 1 || nodeRank < 0 || nodeRank >= nodes)
        throw ConfigError(
            fmt::format("--node-rank {} is out of range for --nodes {} (0..{})", nodeRank, nodes, nodes - 1));
    if (nodes > 1 && ranks % nodes != 0)
        throw ConfigError(fmt::format("ranks: {} ranks do not split evenly over {} nodes", ranks, nodes));
    if (ranks / nodes > kMaxCardsPerProcess)
        throw ConfigError(fmt::format(
            "ranks: {} ranks over {} node process{} is {} card threads in each; a process runs at most {} "
            "(use --nodes {} or more)",
            ranks, nodes, nodes == 1 ? "" : "es", ranks / nodes, kMaxCardsPerProcess,
            (ranks + kMaxCardsPerProcess - 1) / kMaxCardsPerProcess));
    checkFaults(parseFaults(faults), ranks);
}

} // namespace rs
