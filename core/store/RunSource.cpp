// RunSource: see RunSource.h.
#include "store/RunSource.h"

#include "store/RunSchema.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <set>

namespace rs {
namespace {

// A string field of the environment JSON; empty when the JSON or the field is missing.
// A string field of one of the meta's JSON records; "" if it has none.
std::string jsonField(const std::string& json, const char* key) {
    const auto doc = nlohmann::json::parse(json, nullptr, false);
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_string())
        return {};
    return doc[key].get<std::string>();
}
std::string environmentField(const RunMeta& meta, const char* key) {
    return jsonField(meta.environment, key);
}
std::string configField(const RunMeta& meta, const char* key) {
    return jsonField(meta.configJson, key);
}

std::string plural(int n, const char* one, const char* many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

void addAbsent(RunMeta& meta, const std::string& name) {
    if (meta.recorded(name))
        meta.absent.push_back(name);
}

} // namespace

SourceKind sourceKind(const RunMeta& meta) {
    if (meta.source.empty() || meta.source == runschema::kDefaultSource)
        return SourceKind::Engine;
    if (meta.source == "pytorch-ddp")
        return SourceKind::PytorchDdp;
    if (meta.source == "msprobe")
        return SourceKind::Msprobe;
    if (meta.source == "flight-recorder")
        return SourceKind::FlightRecorder;
    return SourceKind::Other;
}

int serverCount(const RunMeta& meta) {
    std::set<std::string> servers;
    for (const CardInfo& c : meta.cards)
        servers.insert(c.serverId);
    return int(servers.size());
}

std::vector<int> nodeOfRank(const RunMeta& meta) {
    std::vector<int> nodes;
    if (sourceKind(meta) != SourceKind::Engine || serverCount(meta) < 2)
        return nodes;
    const auto env = nlohmann::json::parse(meta.environment, nullptr, false);
    if (!env.is_object() || !env.contains("nodes") || !env["nodes"].is_number_integer() ||
        env["nodes"].get<int64_t>() < 2)
        return nodes;
    // Each node process holds the same whole number of servers, in server order (checkNodes).
    const int nodeCount = int(env["nodes"].get<int64_t>()), servers = serverCount(meta);
    if (servers % nodeCount != 0)
        return nodes;
    const int perNode = servers / nodeCount;
    std::vector<std::string> order;
    for (const CardInfo& c : meta.cards) {
        auto it = std::find(order.begin(), order.end(), c.serverId);
        if (it == order.end())
            it = order.insert(order.end(), c.serverId);
        nodes.push_back(int(it - order.begin()) / perNode);
    }
    return nodes;
}

std::string describeRun(const RunMeta& meta) {
    const int R = meta.worldSize;
    switch (sourceKind(meta)) {
    case SourceKind::Engine: {
        std::string text = plural(R, "emulated Ascend 910 card", "emulated Ascend 910 cards");
        if (const int servers = serverCount(meta); servers > 0)
            text += " on " + plural(servers, "server", "servers");
        if (const auto nodes = nodeOfRank(meta); !nodes.empty())
            text += fmt::format(" ({} node processes)", *std::max_element(nodes.begin(), nodes.end()) + 1);
        return text;
    }
    case SourceKind::PytorchDdp: {
        std::string text = "a PyTorch DDP job: " + plural(R, "process", "processes");
        if (const std::string backend = environmentField(meta, "backend"); !backend.empty())
            text += " (" + backend + ")";
        if (const std::string host = environmentField(meta, "host"); !host.empty())
            text += " on host " + host;
        return text;
    }
    case SourceKind::Msprobe: {
        std::string text =
            (configField(meta, "layout") == "dump" ? "an msprobe dump: " : "an msprobe Monitor tree: ") +
            plural(R, "rank", "ranks");
        if (const auto missing = ranksNotRecorded(meta); int(missing.size()) == R && R > 0) {
            text += " (no rank's statistics recorded)";
        } else if (!missing.empty()) {
            text += " (" + ranksNotRecordedText(missing) + " not recorded)";
        }
        return text;
    }
    case SourceKind::FlightRecorder: {
        std::string text = "flight-recorder dumps of a PyTorch job: " + plural(R, "rank", "ranks");
        if (const std::string backend = environmentField(meta, "backend"); !backend.empty())
            text += " (" + backend + ")";
        return text;
    }
    case SourceKind::Other:
        break;
    }
    return fmt::format("{} written by '{}'", plural(R, "rank", "ranks"), meta.source);
}

std::optional<int64_t> parameterCount(const RunMeta& meta) {
    int64_t n = 0;
    for (const ParamInfo& p : meta.params) {
        if (p.numel <= 0)
            return std::nullopt;
        n += p.numel;
    }
    return meta.params.empty() ? std::nullopt : std::optional<int64_t>(n);
}

std::vector<std::string> importNotes(const RunMeta& meta) {
    std::vector<std::string> notes;
    const auto config = nlohmann::json::parse(meta.configJson, nullptr, false);
    if (!config.is_object() || !config.contains("notes") || !config["notes"].is_array())
        return notes;
    for (const auto& n : config["notes"])
        if (n.is_string() && !n.get<std::string>().empty())
            notes.push_back(n.get<std::string>());
    return notes;
}

std::vector<int> ranksNotRecorded(const RunMeta& meta) {
    std::vector<int> ranks;
    const auto config = nlohmann::json::parse(meta.configJson, nullptr, false);
    if (!config.is_object() || !config.contains("ranks_not_recorded") ||
        !config["ranks_not_recorded"].is_array())
        return ranks;
    for (const auto& r : config["ranks_not_recorded"])
        if (r.is_number_integer() && r.get<int64_t>() >= 0 && r.get<int64_t>() < meta.worldSize)
            ranks.push_back(int(r.get<int64_t>()));
    return ranks;
}

std::string ranksNotRecordedText(const std::vector<int>& ranks) {
    if (ranks.empty())
        return {};
    return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

std::string rankNoun(const RunMeta& meta) {
    switch (sourceKind(meta)) {
    case SourceKind::Engine:
        return "card";
    case SourceKind::PytorchDdp:
        return "process";
    default:
        return "rank";
    }
}

bool stepColumnRecorded(const RunMeta& meta, int stepCol) {
    return stepCol < 0 || stepCol >= runschema::kStepColCount ||
           meta.recorded(runschema::kStepColumns[stepCol].path);
}

bool attributeRecorded(const RunMeta& meta, const char* attribute) {
    return meta.recorded(attribute);
}

void addImpliedAbsences(RunMeta& meta) {
    namespace rsc = runschema;
    switch (sourceKind(meta)) {
    case SourceKind::Msprobe:
        for (const char* a : {rsc::kAttrModel, rsc::kAttrBatchPerRank, rsc::kAttrPrecision,
                              rsc::kAttrLossScale, rsc::kAttrSeed})
            addAbsent(meta, a);
        break;
    case SourceKind::PytorchDdp:
        if (meta.data.empty())
            addAbsent(meta, rsc::kAttrData);
        if (meta.lossScale == "none") {
            addAbsent(meta, rsc::kStepColumns[rsc::kLossScale].path);
            addAbsent(meta, rsc::kStepColumns[rsc::kSkipped].path);
        }
        break;
    default:
        break;
    }
}

} // namespace rs
