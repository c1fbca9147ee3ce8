// `diagnose`: the likely causes of cross-rank disagreement in a run file (also one still being written),
// as text blocks or JSON. Exit 0 with no findings, 3 with findings, 2 when the file cannot be read.
#include "CliArgs.h"
#include "Commands.h"
#include "diagnose/Diagnoser.h"
#include "store/RunReader.h"

#include <cstdio>
#include <fmt/format.h>

namespace rs::cli {

int diagnoseCommand(const Args& argv) {
    const CliArgs args(argv, {}, {"json", "verbose"});
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one run file, got {}", args.positionals().size()));
    std::vector<Finding> findings;
    std::string figures;
    try {
        const auto reader = RunReader::open(args.positionals().front());
        findings = diagnoseRun(*reader, {}, &figures);
    } catch (const std::exception& e) {
        printError(fmt::format("diagnose: {}", e.what()));
        return 2;
    }
    if (args.flag("verbose"))
        std::fputs(figures.c_str(), stderr);
    if (args.flag("json")) {
        std::fputs((findingsToJson(findings) + "\n").c_str(), stdout);
    } else if (findings.empty()) {
        std::fputs("no findings: the ranks agree\n", stdout);
    } else {
        for (size_t i = 0; i < findings.size(); ++i) {
            if (i)
                std::fputs("\n", stdout);
            std::fputs(findingText(findings[i]).c_str(), stdout);
        }
    }
    // A distinct code for "the run has problems", so scripts can tell it from a failed read (2).
    return findings.empty() ? 0 : 3;
}

} // namespace rs::cli
