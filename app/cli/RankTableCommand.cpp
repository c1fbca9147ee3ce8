// `lint-ranktable`: validate a MindSpore hccl.json and list every problem with its field and entry.
#include "CliArgs.h"
#include "Commands.h"
#include "cluster/RankTable.h"

#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

namespace rs::cli {

int lintRankTableCommand(const Args& argv) {
    const CliArgs args(argv, {"ranks", "nodes"}, {"json"});
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one rank table file, got {}", args.positionals().size()));
    const std::string path = args.positionals().front();
    int expected = -1;
    if (auto r = args.value("ranks")) {
        try {
            expected = std::stoi(*r);
        } catch (const std::exception&) {
            throw UsageError(fmt::format("--ranks '{}' is not a number", *r));
        }
    }
    if (!std::ifstream(path)) {
        printError(fmt::format("lint-ranktable: {}: cannot open the file", path));
        return 2;
    }
    int nodes = 0;
    if (auto n = args.value("nodes")) {
        try {
            nodes = std::stoi(*n);
        } catch (const std::exception&) {
            throw UsageError(fmt::format("--nodes '{}' is not a number", *n));
        }
        if (nodes < 1)
            throw UsageError(fmt::format("--nodes {} must be at least 1", nodes));
    }
    auto check = loadRankTable(path, expected);
    if (check.ok() && nodes > 0) {
        check.problems = checkNodes(*check.table, nodes);
        if (!check.problems.empty())
            check.table.reset();
    }
    if (args.flag("json")) {
        nlohmann::json j;
        j["file"] = path;
        j["valid"] = check.ok();
        j["ranks"] = check.table ? static_cast<int>(check.table->devices.size()) : 0;
        j["problems"] = nlohmann::json::array();
        for (const auto& p : check.problems)
            j["problems"].push_back({{"where", p.where}, {"message", p.message}});
        std::printf("%s\n", j.dump(2).c_str());
    } else if (check.ok()) {
        std::printf("%s: valid rank table, %zu ranks%s\n", path.c_str(), check.table->devices.size(),
                    nodes > 0 ? fmt::format(" on {} node(s)", nodes).c_str() : "");
    } else {
        for (const auto& p : check.problems)
            std::printf("%s: %s: %s\n", path.c_str(), p.where.c_str(), p.message.c_str());
        std::fprintf(stderr, "ranksight-cli: lint-ranktable: %s: %zu problem(s)\n", path.c_str(),
                     check.problems.size());
    }
    return check.ok() ? 0 : 1;
}

} // namespace rs::cli
