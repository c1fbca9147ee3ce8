// ranksight-cli: train, inspect, export and lint from the command line; the headless half of RankSight.
// train, bench, bench-nodes and --version run in ranksight-engine (Engine.h), the only part that loads
// LibTorch.
#include "CliArgs.h"
#include "CommandHelp.h"
#include "Commands.h"
#include "Engine.h"

#include <cstdio>
#include <cstring>
#include <fmt/format.h>

namespace {

// `ranksight-cli --help`, `help [COMMAND]` and `COMMAND --help|-h`: answered here for every command, before
// it runs (or before train, bench and bench-nodes are handed to ranksight-engine). Returns -1 when the
// arguments ask for no help.
int answerHelp(int argc, char** argv) {
    const std::string first = argc > 1 ? argv[1] : "";
    if (argc < 2 || first == "--help" || first == "-h" || (first == "help" && argc == 2)) {
        std::fputs(rs::cli::overviewUsage().c_str(), argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const bool helpCommand = first == "help";
    const std::string name = helpCommand ? argv[2] : first;
    const auto* command = rs::cli::findCommandHelp(name);
    if (!helpCommand && !(command && rs::cli::asksForHelp(rs::cli::Args(argv + 2, argv + argc))))
        return -1;
    if (!command) {
        rs::cli::printError(fmt::format("help: unknown command '{}' (try --help)", name));
        return 2;
    }
    std::fputs(rs::cli::commandUsage(*command).c_str(), stdout);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (const int code = answerHelp(argc, argv); code >= 0)
        return code;
    if (rs::cli::isEngineCommand(argv[1]))
        return rs::cli::execEngine(argv);
    const std::string cmd = argv[1];
    const rs::cli::Args args(argv + 2, argv + argc);
    try {
        if (cmd == "inspect")
            return rs::cli::inspectCommand(args);
        if (cmd == "export-csv")
            return rs::cli::exportCsvCommand(args);
        if (cmd == "schema")
            return rs::cli::schemaCommand(args);
        if (cmd == "lint-ranktable")
            return rs::cli::lintRankTableCommand(args);
        if (cmd == "import-msprobe")
            return rs::cli::importMsprobeCommand(args);
        if (cmd == "import-flight-recorder")
            return rs::cli::importFlightRecorderCommand(args);
        if (cmd == "diagnose")
            return rs::cli::diagnoseCommand(args);
        if (cmd == "watch")
            return rs::cli::watchCommand(args);
        if (cmd == "compare")
            return rs::cli::compareCommand(args);
        if (cmd == "report")
            return rs::cli::reportCommand(args);
        if (cmd == "bench-open")
            return rs::cli::benchOpenCommand(args);
        if (cmd == "bench-latency")
            return rs::cli::benchLatencyCommand(args);
        rs::cli::printError(fmt::format("unknown command '{}' (try --help)", cmd));
        return 2;
    } catch (const rs::cli::UsageError& e) {
        rs::cli::printError(fmt::format("{}: {} (try ranksight-cli {} --help)", cmd, e.what(), cmd));
        return 2;
    } catch (const std::exception& e) {
        rs::cli::printError(fmt::format("{}: {}", cmd, e.what()));
        return 2;
    }
}
