// The rank table: MindSpore's hccl.json. Generated for emulated runs, loaded from a user's file, and
// validated so that every problem (not only the first) is reported with the field and entry it is in,
// because a wrong rank table (duplicate rank_id or device_id, a missing rank) is a cause RankSight names.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace rs {

// An Ascend 910 server holds 8 devices, device_id 0..7.
constexpr int kDevicesPerAscendServer = 8;

struct RankTableDevice {
    int rankId = 0;
    int deviceId = 0;     // index of the card within its server, 0..7
    std::string deviceIp; // dotted IPv4
    std::string serverId; // server_id of the server_list entry holding this device
};

struct RankTable {
    std::string version = "1.0";
    std::vector<RankTableDevice> devices; // sorted by rankId; rank ids run 0..N-1

    int worldSize() const { return static_cast<int>(devices.size()); }
    int serverCount() const; // distinct server ids
    // Pretty-printed, in MindSpore's shape: servers in order of their first rank, every number a string.
    std::string toJson() const;
};

struct RankTableProblem {
    std::string where;   // "server_list[0].device[2].rank_id", "server_count", or "line 3, column 5"
    std::string message; // what is wrong, concretely, e.g. duplicate rank_id "1" (also at ...)
};

struct RankTableCheck {
    std::optional<RankTable> table; // set only when there are no problems
    std::vector<RankTableProblem> problems;

    bool ok() const { return problems.empty() && table.has_value(); }
    // One line per problem, "where: message", joined by '\n'; empty when ok().
    std::string summary() const;
};

// worldSize ranks on ceil(worldSize / devicesPerServer) servers: server ids 198.51.100.(1+s), device ips
// 192.0.2.(10+rank) up to 245 ranks; past that 10.0.(s/250).(1+s%250) and 10.1.(rank/250).(1+rank%250).
// device_id = index within the server, rank_id = global index. Throws std::invalid_argument for worldSize
// outside 1..62500 or devicesPerServer outside 1..8.
RankTable generateRankTable(int worldSize, int devicesPerServer = kDevicesPerAscendServer);

// A table for a run of `nodes` node processes (issue 12): every node process holds the same whole number of
// servers, every server the same number of devices c, and server s holds ranks s*c .. s*c+c-1 (so a node
// hosts a contiguous block of whole servers). The same check, with nodes = the server count, tells whether
// one process can reduce server by server. Every problem, each naming the server; empty when the table fits.
std::vector<RankTableProblem> checkNodes(const RankTable& table, int nodes);

// expectedRanks: the job's rank count, checked against the number of devices; -1 skips that check.
RankTableCheck parseRankTable(const std::string& jsonText, int expectedRanks = -1);
// An unreadable file yields one problem whose where is the path.
RankTableCheck loadRankTable(const std::string& path, int expectedRanks = -1);

} // namespace rs
