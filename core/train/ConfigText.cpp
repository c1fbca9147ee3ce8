// See ConfigText.h; parseLossScale and lossScaleName (TrainConfig.h) read and write the loss_scale key.
#include "train/ConfigText.h"

#include "train/TrainConfig.h"

#include <cstdlib>
#include <fmt/format.h>

namespace rs {

int64_t parseInteger(const std::string& key, const std::string& v, int64_t lo, int64_t hi) {
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

double parseNumber(const std::string& key, const std::string& v, double lo, double hi) {
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

bool parseBoolean(const std::string& key, const std::string& v) {
    if (v == "true" || v == "1" || v == "on")
        return true;
    if (v == "false" || v == "0" || v == "off")
        return false;
    throw ConfigError(fmt::format("{}: '{}' is not a boolean (true/false)", key, v));
}

int parseCount(const std::string& flag, const std::string& v) {
    char* end = nullptr;
    const long x = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end || x < 0 || x > 4096)
        throw ConfigError(fmt::format("--{} '{}' is not a number", flag, v));
    return int(x);
}

LossScaleSpec parseLossScale(const std::string& text) {
    LossScaleSpec s;
    if (text == "none") {
        s.mode = LossScaleMode::None;
        s.value = 1;
    } else if (text == "dynamic") {
        s.mode = LossScaleMode::Dynamic;
    } else if (text.rfind("dynamic:", 0) == 0) {
        s.mode = LossScaleMode::Dynamic;
        s.value = static_cast<float>(parseNumber("loss_scale", text.substr(8), 1, 1e30));
    } else if (text.rfind("fixed:", 0) == 0) {
        s.mode = LossScaleMode::Fixed;
        s.value = static_cast<float>(parseNumber("loss_scale", text.substr(6), 1e-30, 1e30));
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
        return "fixed:" + fmt::format("{}", spec.value);
    case LossScaleMode::Dynamic:
        return spec.value == 16777216.0f ? "dynamic" : "dynamic:" + fmt::format("{}", spec.value);
    }
    return "?";
}

} // namespace rs
