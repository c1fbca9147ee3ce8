// The subcommands of ranksight-cli. Each returns the process exit code:
// 0 success, 1 a check failed, 2 bad usage or unreadable input (one line on stderr saying what and where).
#pragma once

#include <string>
#include <vector>

namespace rs::cli {

using Args = std::vector<std::string>;

int trainCommand(const Args& args);
int inspectCommand(const Args& args);
int exportCsvCommand(const Args& args);
int schemaCommand(const Args& args);
int lintRankTableCommand(const Args& args);
int benchCommand(const Args& args);
int benchNodesCommand(const Args& args);
int reportCommand(const Args& args);       // needs the GUI build (RANKSIGHT_HAVE_WIDGETS)
int benchOpenCommand(const Args& args);    // needs the GUI build (RANKSIGHT_HAVE_WIDGETS)
int benchLatencyCommand(const Args& args); // needs the GUI build (RANKSIGHT_HAVE_WIDGETS)
int diagnoseCommand(const Args& args);     // 0 no findings, 3 findings, 2 unreadable
int compareCommand(const Args& args);      // 0 the runs agree, 3 they part, 2 unreadable
int watchCommand(const Args& args);        // 3 an alert, 4 a stall, 0 completed, 2 unreadable
int importMsprobeCommand(const Args& args);
int importFlightRecorderCommand(const Args& args);

void printError(const std::string& message); // "ranksight-cli: message" on stderr

} // namespace rs::cli
