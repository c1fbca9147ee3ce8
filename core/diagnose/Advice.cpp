// See Advice.h.
#include "diagnose/Advice.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs {

namespace {

// The config JSON's value of key as text, or "" when the source did not record the key.
std::string valueOf(const nlohmann::json& config, const char* key) {
    if (!config.is_object() || !config.contains(key))
        return "";
    const auto& v = config.at(key);
    return v.is_string() ? v.get<std::string>() : v.dump();
}

} // namespace

std::vector<Advice> configAdvice(const RunMeta& meta) {
    nlohmann::json config;
    try {
        config = nlohmann::json::parse(meta.configJson);
    } catch (const nlohmann::json::exception&) {
        config = nlohmann::json::object(); // a source without a config still gets the precision advice
    }
    std::vector<Advice> out;
    const bool fp16 = meta.precision == "O2" || meta.precision == "O3";
    if (fp16 && (meta.lossScale == "none" || meta.lossScale == "fixed:1"))
        out.push_back(
            {"loss_scale", meta.lossScale,
             fmt::format("{} computes gradients in fp16 without a loss scale: gradient elements below "
                         "2^-24 flush to zero. Use a dynamic loss scale (MindSpore "
                         "DynamicLossScaleManager, PyTorch GradScaler) or train in O0.",
                         meta.precision)});
    if (valueOf(config, "gradients_mean") == "false")
        out.push_back({"gradients_mean", "false",
                       "the all-reduce sums the ranks' gradients: the update grows with the number of ranks "
                       "unless the learning rate was divided by it. MindSpore gradients_mean=True; PyTorch "
                       "DDP averages by default."});
    if (valueOf(config, "broadcast") == "false")
        out.push_back(
            {"broadcast", "false",
             "rank 0's initial weights are not broadcast: the replicas start equal only if every "
             "rank seeds its initialisation identically. MindSpore parameter_broadcast=True; PyTorch "
             "DDP broadcasts at construction."});
    if (valueOf(config, "telemetry") == "false")
        out.push_back(
            {"telemetry", "false",
             "no per-parameter gradient statistics, sketches or fingerprints were recorded: diagnosis "
             "sees losses and timings only."});
    const std::string every = valueOf(config, "weight_every");
    if (!every.empty() && std::atoll(every.c_str()) > 50)
        out.push_back(
            {"weight_every", every,
             fmt::format("weight fingerprints every {} steps: replicas that drift apart are dated up "
                         "to {} steps late. 10 costs little.",
                         every, every)});
    if (valueOf(config, "flight_steps") == "0")
        out.push_back({"flight_steps", "0",
                       "the flight recorder is off: an anomaly leaves no gradients and weights to compare."});
    return out;
}

std::string adviceLine(const Advice& a) {
    return a.key + "=" + a.value + ": " + a.text;
}

} // namespace rs
