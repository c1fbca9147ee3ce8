// `diagnose`: the likely causes of cross-rank disagreement in a run file (also one still being written),
// as text blocks or JSON. Exit 0 with no findings, 3 with findings, 2 when the file cannot be read.
// Advice on the configuration (diagnose/Advice.h) follows the findings ("advice" in --json).
// --verbose adds the rules' figures and the checks that could not run on this file (also in --json's
// "not_run", always): a file from a source that records less is not silently "all clear".
#include "CliArgs.h"
#include "Commands.h"
#include "diagnose/Advice.h"
#include "diagnose/Diagnoser.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "store/RunSource.h"

#include <cstdio>
#include <fmt/format.h>

namespace rs::cli {

int diagnoseCommand(const Args& argv) {
    const CliArgs args(argv, {}, {"json", "verbose"});
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one run file, got {}", args.positionals().size()));
    std::vector<Finding> findings;
    std::string figures;
    std::vector<CheckNotRun> notRun;
    std::vector<Advice> advice;
    std::string header;
    try {
        const auto reader = openRunFile(args.positionals().front());
        findings = diagnoseRun(*reader, {}, &figures, &notRun);
        advice = configAdvice(reader->meta());
        header = fmt::format("{}: {}, {} steps\n\n", args.positionals().front(), describeRun(reader->meta()),
                             reader->stepCount());
    } catch (const std::exception& e) {
        printError(fmt::format("diagnose: {}", e.what()));
        return 2;
    }
    if (args.flag("verbose")) {
        std::fputs(figures.c_str(), stderr);
        if (!notRun.empty())
            std::fputs("checks that could not run:\n", stderr);
        for (const CheckNotRun& c : notRun)
            std::fputs(("  " + checkNotRunLine(c) + "\n").c_str(), stderr);
    }
    if (!args.flag("json"))
        std::fputs(header.c_str(), stdout);
    if (args.flag("json")) {
        std::fputs((findingsToJson(findings, notRun, advice) + "\n").c_str(), stdout);
    } else if (findings.empty()) {
        std::fputs(notRun.empty()
                       ? "no findings: the ranks agree\n"
                       : fmt::format("no findings in what was recorded: the ranks agree; {} check(s) "
                                     "could not run (--verbose lists them)\n",
                                     notRun.size())
                             .c_str(),
                   stdout);
    } else {
        for (size_t i = 0; i < findings.size(); ++i) {
            if (i)
                std::fputs("\n", stdout);
            std::fputs(findingText(findings[i]).c_str(), stdout);
        }
    }
    if (!args.flag("json") && !findings.empty() && !notRun.empty())
        std::fputs(
            fmt::format("\n{} check(s) could not run: what they read was not recorded (--verbose lists "
                        "them)\n",
                        notRun.size())
                .c_str(),
            stdout);
    if (!args.flag("json") && !advice.empty()) {
        std::fputs("\nadvice (the configuration, not findings):\n", stdout);
        for (const Advice& a : advice)
            std::fputs(("  " + adviceLine(a) + "\n").c_str(), stdout);
    }
    // Advice alone does not change the exit code: it is about the setup, not what the training did.
    // A distinct code for "the run has problems", so scripts can tell it from a failed read (2).
    return findings.empty() ? 0 : 3;
}

} // namespace rs::cli
