// Rank table generation, serialisation and validation. Validation walks the whole document and
// collects every problem; a table is returned only when there are none.
#include "cluster/RankTable.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace rs {

namespace {

using nlohmann::json;

// Up to 245 ranks in the documentation ranges (192.0.2.10 .. 192.0.2.254 for devices, 198.51.100.x for
// servers); a larger run in private ones (10.1.x.y devices, 10.0.x.y servers), as large clusters use.
constexpr int kMaxDocumentationRanks = 245;
constexpr int kMaxGeneratedRanks = 62500; // 250 x 250 device addresses

// How a JSON value looks, for messages: the JSON number 0, boolean true, an array, ...
std::string describe(const json& value) {
    switch (value.type()) {
    case json::value_t::null:
        return "null";
    case json::value_t::boolean:
        return fmt::format("boolean {}", value.get<bool>() ? "true" : "false");
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
        return fmt::format("the JSON number {}", value.dump());
    case json::value_t::string:
        return fmt::format("the string {}", value.dump());
    case json::value_t::array:
        return "an array";
    case json::value_t::object:
        return "an object";
    default:
        return value.type_name();
    }
}

std::string field(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
}

// Dotted quad, each part 0..255 without leading zeros (inet_aton reads "010" as octal).
bool isIpv4(const std::string& text) {
    int parts = 0;
    size_t pos = 0;
    while (true) {
        const size_t dot = text.find('.', pos);
        const std::string part = text.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
        if (part.empty() || part.size() > 3 || (part.size() > 1 && part[0] == '0'))
            return false;
        if (!std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return false;
        if (std::stoi(part) > 255)
            return false;
        ++parts;
        if (dot == std::string::npos)
            break;
        pos = dot + 1;
    }
    return parts == 4;
}

// nlohmann reports the 1-based byte index of the last character it read; turn it into line/column.
std::string lineColumn(const std::string& text, size_t byte) {
    const size_t index = std::min(byte == 0 ? 0 : byte - 1, text.size());
    size_t line = 1;
    size_t lineStart = 0;
    for (size_t i = 0; i < index; ++i) {
        if (text[i] == '\n') {
            ++line;
            lineStart = i + 1;
        }
    }
    return fmt::format("line {}, column {}", line, index - lineStart + 1);
}

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line 3, column 5: detail".
std::string parseErrorDetail(const std::string& what) {
    const size_t start = what.find("parse error");
    const size_t colon = what.find(": ", start == std::string::npos ? 0 : start);
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

std::string joinInts(const std::vector<int>& values) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i)
        out += (i ? ", " : "") + std::to_string(values[i]);
    return out;
}

// One device entry as read, with whatever fields could be read.
struct DeviceEntry {
    std::string where; // server_list[i].device[j]
    size_t server = 0;
    std::string serverId;
    std::optional<int> rankId;
    std::optional<int> deviceId;
    std::optional<std::string> deviceIp;
    std::string rankText; // as written, for messages
    std::string deviceIdText;
};

class Validator {
public:
    Validator(const json& doc, int expectedRanks)
        : m_doc(doc)
        , m_expectedRanks(expectedRanks) {}

    RankTableCheck run() {
        if (!m_doc.is_object()) {
            problem("top level", fmt::format("expected a JSON object, found {}", describe(m_doc)));
            return finish();
        }
        m_version = readString(m_doc, "version", "");
        const std::optional<int> serverCount = readNumber(m_doc, "server_count", "", nullptr);
        if (m_doc.contains("status") && !m_doc["status"].is_string())
            problem("status", fmt::format("expected a string such as \"completed\", found {}",
                                          describe(m_doc["status"])));
        readServers(serverCount);
        checkRankIds();
        return finish();
    }

private:
    void problem(std::string where, std::string message) {
        m_problems.push_back({std::move(where), std::move(message)});
    }

    std::optional<std::string> readString(const json& object, const std::string& key,
                                          const std::string& parent) {
        const std::string where = field(parent, key);
        if (!object.contains(key)) {
            problem(where, fmt::format("missing field \"{}\"", key));
            return std::nullopt;
        }
        const json& value = object[key];
        if (!value.is_string()) {
            problem(where, fmt::format("expected a string, found {}", describe(value)));
            return std::nullopt;
        }
        return value.get<std::string>();
    }

    // A non-negative decimal integer written as a JSON string, e.g. "0".
    std::optional<int> readNumber(const json& object, const std::string& key, const std::string& parent,
                                  std::string* text) {
        const std::string where = field(parent, key);
        if (!object.contains(key)) {
            problem(where, fmt::format("missing field \"{}\"", key));
            return std::nullopt;
        }
        const json& value = object[key];
        if (value.is_number_integer() && value.get<int64_t>() >= 0) {
            problem(where, fmt::format("is the JSON number {0}, but MindSpore writes every number as a "
                                       "string: use \"{0}\"",
                                       value.dump()));
            return std::nullopt;
        }
        if (!value.is_string()) {
            problem(where, fmt::format("expected a string holding a non-negative decimal integer such as "
                                       "\"0\", found {}",
                                       describe(value)));
            return std::nullopt;
        }
        const std::string s = value.get<std::string>();
        if (text)
            *text = s;
        const bool digits =
            !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits) {
            problem(where, fmt::format("{} is not a non-negative decimal integer", value.dump()));
            return std::nullopt;
        }
        const size_t firstNonZero = s.find_first_not_of('0');
        if (firstNonZero != std::string::npos && s.size() - firstNonZero > 9) {
            problem(where, fmt::format("{} is too large", value.dump()));
            return std::nullopt;
        }
        return std::stoi(s);
    }

    void readServers(std::optional<int> serverCount) {
        if (!m_doc.contains("server_list")) {
            problem("server_list", "missing field \"server_list\"");
            return;
        }
        const json& servers = m_doc["server_list"];
        if (!servers.is_array()) {
            problem("server_list", fmt::format("expected an array of servers, found {}", describe(servers)));
            return;
        }
        if (servers.empty())
            problem("server_list", "is empty; a rank table needs at least one server with devices");
        if (serverCount && *serverCount != static_cast<int>(servers.size()))
            problem("server_count", fmt::format("says \"{}\" but server_list has {} entr{}", *serverCount,
                                                servers.size(), servers.size() == 1 ? "y" : "ies"));
        std::map<std::string, std::string> serverIds; // id -> where first seen
        for (size_t s = 0; s < servers.size(); ++s)
            readServer(servers[s], s, serverIds);
    }

    void readServer(const json& server, size_t s, std::map<std::string, std::string>& serverIds) {
        const std::string where = fmt::format("server_list[{}]", s);
        if (!server.is_object()) {
            problem(where, fmt::format("expected a server object, found {}", describe(server)));
            return;
        }
        const std::optional<std::string> serverId = readString(server, "server_id", where);
        if (serverId) {
            const auto [it, inserted] = serverIds.emplace(*serverId, where);
            if (!inserted)
                problem(field(where, "server_id"),
                        fmt::format("duplicate server_id \"{}\" (also at {})", *serverId, it->second));
        }
        if (!server.contains("device")) {
            problem(field(where, "device"), "missing field \"device\"");
            return;
        }
        const json& devices = server["device"];
        if (!devices.is_array()) {
            problem(field(where, "device"),
                    fmt::format("expected an array of devices, found {}", describe(devices)));
            return;
        }
        if (devices.empty())
            problem(field(where, "device"), "is empty; a server needs at least one device");
        std::map<int, std::string> deviceIds; // within this server
        for (size_t d = 0; d < devices.size(); ++d) {
            DeviceEntry entry;
            entry.where = fmt::format("{}.device[{}]", where, d);
            entry.server = s;
            entry.serverId = serverId.value_or("");
            readDevice(devices[d], entry, deviceIds);
            m_devices.push_back(std::move(entry));
        }
    }

    void readDevice(const json& device, DeviceEntry& entry, std::map<int, std::string>& deviceIds) {
        if (!device.is_object()) {
            problem(entry.where, fmt::format("expected a device object, found {}", describe(device)));
            return;
        }
        entry.deviceId = readNumber(device, "device_id", entry.where, &entry.deviceIdText);
        entry.deviceIp = readString(device, "device_ip", entry.where);
        entry.rankId = readNumber(device, "rank_id", entry.where, &entry.rankText);

        if (entry.deviceId) {
            const std::string where = field(entry.where, "device_id");
            if (*entry.deviceId >= kDevicesPerAscendServer) {
                problem(where, fmt::format("device_id \"{}\" is out of range: an Ascend server has {} "
                                           "devices, device_id 0..{}",
                                           entry.deviceIdText, kDevicesPerAscendServer,
                                           kDevicesPerAscendServer - 1));
            }
            const auto [it, inserted] = deviceIds.emplace(*entry.deviceId, entry.where);
            if (!inserted)
                problem(where, fmt::format("duplicate device_id \"{}\" in the same server (also at {})",
                                           entry.deviceIdText, it->second));
        }
        if (entry.deviceIp) {
            const std::string where = field(entry.where, "device_ip");
            if (!isIpv4(*entry.deviceIp)) {
                problem(where, fmt::format("\"{}\" is not a valid IPv4 address (four dot-separated numbers "
                                           "0..255, e.g. \"192.0.2.10\")",
                                           *entry.deviceIp));
            } else {
                const auto [it, inserted] = m_deviceIps.emplace(*entry.deviceIp, entry.where);
                if (!inserted)
                    problem(where, fmt::format("duplicate device_ip \"{}\" (also at {})", *entry.deviceIp,
                                               it->second));
            }
        }
        if (entry.rankId) {
            const auto [it, inserted] = m_rankIds.emplace(*entry.rankId, entry.where);
            if (!inserted)
                problem(field(entry.where, "rank_id"),
                        fmt::format("duplicate rank_id \"{}\" (also at {})", entry.rankText, it->second));
        }
    }

    // Rank ids must be exactly 0..N-1 over all servers, N the number of device entries.
    void checkRankIds() {
        const int n = static_cast<int>(m_devices.size());
        bool allReadable = true;
        for (const DeviceEntry& entry : m_devices) {
            if (!entry.rankId) {
                allReadable = false;
                continue;
            }
            if (*entry.rankId >= n)
                problem(
                    field(entry.where, "rank_id"),
                    fmt::format("rank_id \"{}\" is out of range: with {} device{} rank ids must run 0..{}",
                                entry.rankText, n, n == 1 ? "" : "s", n - 1));
        }
        // An unreadable rank_id is already reported; calling its rank "missing" as well would be noise.
        if (allReadable && n > 0) {
            std::vector<int> missing;
            for (int r = 0; r < n; ++r)
                if (!m_rankIds.count(r))
                    missing.push_back(r);
            if (!missing.empty())
                problem("server_list",
                        fmt::format("rank ids must run 0..{} without gaps; missing rank_id{} {}", n - 1,
                                    missing.size() == 1 ? "" : "s", joinInts(missing)));
        }
        if (m_expectedRanks >= 0 && n != m_expectedRanks && m_doc.contains("server_list"))
            problem("server_list",
                    fmt::format("lists {} device{} but the job has {} rank{}", n, n == 1 ? "" : "s",
                                m_expectedRanks, m_expectedRanks == 1 ? "" : "s"));
    }

    RankTableCheck finish() {
        RankTableCheck check;
        check.problems = std::move(m_problems);
        if (!check.problems.empty())
            return check;
        RankTable table;
        table.version = m_version.value_or("1.0");
        for (const DeviceEntry& entry : m_devices)
            table.devices.push_back({*entry.rankId, *entry.deviceId, *entry.deviceIp, entry.serverId});
        std::sort(table.devices.begin(), table.devices.end(),
                  [](const RankTableDevice& a, const RankTableDevice& b) { return a.rankId < b.rankId; });
        check.table = std::move(table);
        return check;
    }

    const json& m_doc;
    const int m_expectedRanks;
    std::optional<std::string> m_version;
    std::vector<DeviceEntry> m_devices;
    std::map<int, std::string> m_rankIds;           // rank id -> where first seen
    std::map<std::string, std::string> m_deviceIps; // ip -> where first seen
    std::vector<RankTableProblem> m_problems;
};

} // namespace

std::vector<RankTableProblem> checkNodes(const RankTable& table, int nodes) {
    std::vector<RankTableProblem> out;
    // Servers in order of their first rank, as toJson writes them.
    std::vector<std::string> order;
    std::map<std::string, std::vector<int>> ranks;
    for (const RankTableDevice& d : table.devices) {
        if (!ranks.count(d.serverId))
            order.push_back(d.serverId);
        ranks[d.serverId].push_back(d.rankId);
    }
    const int servers = int(order.size());
    if (nodes <= 0 || servers % nodes != 0) {
        out.push_back({"server_list", fmt::format("{} server(s) for {} node(s): each node process holds a "
                                                  "whole number of servers",
                                                  servers, nodes)});
        return out;
    }
    const int world = table.worldSize();
    if (world % servers != 0) {
        out.push_back(
            {"server_list", fmt::format("{} ranks do not split evenly over {} servers", world, servers)});
        return out;
    }
    const int c = world / servers, perNode = servers / nodes;
    for (size_t s = 0; s < order.size(); ++s) {
        const auto& r = ranks[order[s]];
        const std::string where = fmt::format("server_list[{}] (server_id \"{}\")", s, order[s]);
        if (int(r.size()) != c) {
            out.push_back({where, fmt::format("{} device(s) where each server needs {} ({} ranks over {} "
                                              "servers): the hierarchical all-reduce needs servers of one "
                                              "size",
                                              r.size(), c, world, servers)});
            continue;
        }
        for (int k = 0; k < c; ++k)
            if (r[size_t(k)] != int(s) * c + k) {
                out.push_back(
                    {where, fmt::format("holds rank_id {} where server {} (on node {}) holds ranks "
                                        "{}..{}: list each server's ranks as one contiguous block, "
                                        "in server order",
                                        r[size_t(k)], s, int(s) / perNode, int(s) * c, int(s) * c + c - 1)});
                break;
            }
    }
    return out;
}

int RankTable::serverCount() const {
    std::set<std::string> ids;
    for (const RankTableDevice& d : devices)
        ids.insert(d.serverId);
    return static_cast<int>(ids.size());
}

std::string RankTable::toJson() const {
    using nlohmann::ordered_json;
    std::vector<std::string> serverOrder;
    std::map<std::string, ordered_json> serverDevices;
    for (const RankTableDevice& d : devices) {
        if (!serverDevices.count(d.serverId)) {
            serverOrder.push_back(d.serverId);
            serverDevices[d.serverId] = ordered_json::array();
        }
        ordered_json device;
        device["device_id"] = std::to_string(d.deviceId);
        device["device_ip"] = d.deviceIp;
        device["rank_id"] = std::to_string(d.rankId);
        serverDevices[d.serverId].push_back(std::move(device));
    }
    ordered_json doc;
    doc["version"] = version;
    doc["server_count"] = std::to_string(serverOrder.size());
    doc["server_list"] = ordered_json::array();
    for (const std::string& id : serverOrder) {
        ordered_json server;
        server["server_id"] = id;
        server["device"] = std::move(serverDevices[id]);
        server["host_nic_ip"] = "reserve";
        doc["server_list"].push_back(std::move(server));
    }
    doc["status"] = "completed";
    return doc.dump(4) + "\n";
}

std::string RankTableCheck::summary() const {
    std::string out;
    for (const RankTableProblem& p : problems)
        out += (out.empty() ? "" : "\n") + p.where + ": " + p.message;
    return out;
}

RankTable generateRankTable(int worldSize, int devicesPerServer) {
    if (worldSize < 1 || worldSize > kMaxGeneratedRanks)
        throw std::invalid_argument(
            fmt::format("generateRankTable: worldSize {} is outside 1..{}", worldSize, kMaxGeneratedRanks));
    if (devicesPerServer < 1 || devicesPerServer > kDevicesPerAscendServer)
        throw std::invalid_argument(fmt::format("generateRankTable: devicesPerServer {} is outside 1..{}",
                                                devicesPerServer, kDevicesPerAscendServer));
    RankTable table;
    const bool small = worldSize <= kMaxDocumentationRanks;
    for (int rank = 0; rank < worldSize; ++rank) {
        const int server = rank / devicesPerServer;
        if (small)
            table.devices.push_back({rank, rank % devicesPerServer, fmt::format("192.0.2.{}", 10 + rank),
                                     fmt::format("198.51.100.{}", 1 + server)});
        else
            table.devices.push_back({rank, rank % devicesPerServer,
                                     fmt::format("10.1.{}.{}", rank / 250, 1 + rank % 250),
                                     fmt::format("10.0.{}.{}", server / 250, 1 + server % 250)});
    }
    return table;
}

RankTableCheck parseRankTable(const std::string& jsonText, int expectedRanks) {
    json doc;
    try {
        doc = json::parse(jsonText);
    } catch (const json::parse_error& e) {
        RankTableCheck check;
        check.problems.push_back(
            {lineColumn(jsonText, e.byte), "malformed JSON: " + parseErrorDetail(e.what())});
        return check;
    } catch (const json::exception& e) {
        // Valid syntax the parser still refuses, e.g. out_of_range.406 "number overflow parsing '1e999'". It
        // carries no byte offset: point at the quoted text's first occurrence.
        const std::string what = e.what();
        const size_t open = what.find('\''), close = what.rfind('\'');
        const size_t at =
            open < close ? jsonText.find(what.substr(open + 1, close - open - 1)) : std::string::npos;
        RankTableCheck check;
        check.problems.push_back(
            {at == std::string::npos ? std::string("document") : lineColumn(jsonText, at + 1),
             "malformed JSON: " + what.substr(what.find(']') + 2)});
        return check;
    }
    return Validator(doc, expectedRanks).run();
}

RankTableCheck loadRankTable(const std::string& path, int expectedRanks) {
    RankTableCheck check;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        check.problems.push_back({path, "no such file"});
        return check;
    }
    if (std::filesystem::is_directory(path, ec)) {
        check.problems.push_back({path, "is a directory, not a rank table file"});
        return check;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        check.problems.push_back(
            {path, fmt::format("cannot open: {}", std::generic_category().message(errno))});
        return check;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        check.problems.push_back({path, "cannot read the file"});
        return check;
    }
    return parseRankTable(text.str(), expectedRanks);
}

} // namespace rs
