// What `ranksight-cli --help` and `ranksight-cli COMMAND --help` print: one table of every command, its
// operands and its options with a line each. main.cpp answers --help / -h from it for every command before
// running one (so train, which runs in ranksight-engine, needs no help of its own), and tst_cli checks that
// each command's help names exactly the options its parser accepts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rs::cli {

struct OptionHelp {
    std::string spelling; // "--out RUN.h5": the option, then what its value is
    std::string text;     // one line: what it does
};

struct CommandHelp {
    std::string name;     // "import-msprobe"
    std::string operands; // "MONITOR_OUTPUT_DIR" (empty: none)
    std::string summary;  // a sentence or two, wrapped by the printer
    std::vector<OptionHelp> options;
    std::string notes; // after the options: exit codes peculiar to the command, environment, ...
};

const std::vector<CommandHelp>& commandHelps();
const CommandHelp* findCommandHelp(std::string_view name);

// True when the arguments after the command ask for help (--help or -h anywhere among them).
bool asksForHelp(const std::vector<std::string>& args);

std::string commandUsage(const CommandHelp& command); // `ranksight-cli COMMAND --help`
std::string overviewUsage();                          // `ranksight-cli --help`: the commands, a line each

} // namespace rs::cli
