#include "train/TrainConfig.h"

#include "faults/FaultSpec.h"
#include "train/ConfigKeys.h"

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rs {

using Json = nlohmann::json;

void TrainConfig::set(const std::string& key, const std::string& v) {
    const ConfigKey* k = findConfigKey(key);
    if (!k)
        throw ConfigError(fmt::format("unknown key '{}'", key));
    k->set(*this, v);
}

void TrainConfig::addFault(const std::string& spec) {
    parseFault(spec);
    faults.push_back(spec);
}

namespace {

Json parseJsonObject(const std::string& text, const std::string& where) {
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
    return j;
}

// A list key's array: it replaces the list, item by item.
void setList(TrainConfig& c, const ConfigKey& key, const Json& value) {
    if (!value.is_array())
        throw ConfigError(fmt::format("{}: expected an array of {}", key.name, key.values));
    key.set(c, "");
    for (const auto& item : value) {
        if (!item.is_string())
            throw ConfigError(fmt::format("{}: {} is not a string", key.name, item.dump()));
        key.add(c, item.get<std::string>());
    }
}

// One key of a file; numbers and booleans are read as the command line would give them.
void setFromJson(TrainConfig& c, const std::string& key, const Json& value) {
    const ConfigKey* k = findConfigKey(key);
    if (k && k->type == KeyType::List)
        setList(c, *k, value);
    else if (value.is_string())
        c.set(key, value.get<std::string>());
    else if (value.is_number() || value.is_boolean())
        c.set(key, value.dump());
    else
        throw ConfigError(fmt::format("{}: expected a string, number or boolean", key));
}

} // namespace

TrainConfig TrainConfig::fromJson(const std::string& text, const std::string& where) {
    const Json j = parseJsonObject(text, where);
    TrainConfig c;
    for (const ConfigKey& k : configKeys()) { // steps, then epochs: see ConfigKey::early
        if (!k.early || !j.contains(k.name))
            continue;
        if (!j[k.name].is_number_integer())
            throw ConfigError(fmt::format("{}: {} must be an integer", where, k.name));
        c.set(k.name, j[k.name].dump());
    }
    for (const auto& [key, value] : j.items()) {
        if (const ConfigKey* k = findConfigKey(key); k && k->early)
            continue;
        try {
            setFromJson(c, key, value);
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
    for (const ConfigKey& k : configKeys())
        if (k.scope == KeyScope::Written)
            if (const std::optional<ConfigValue> v = k.get(*this))
                std::visit([&](const auto& x) { j[k.name] = x; }, *v);
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
