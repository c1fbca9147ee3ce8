// `diagnose`: the likely causes of cross-rank disagreement in a run file (also one still being written),
// as text blocks or JSON. Exit 0 with no findings, 3 with findings, 2 when the file cannot be read.
// Advice on the configuration (diagnose/Advice.h) follows the findings ("advice" in --json).
// --verbose adds the rules' figures and the checks that could not run on this file (also in --json's
// "not_run", always): a file from a source that records less is not silently "all clear".
// --reference REF compares the run with a reference run first (compare/RunComparison.h), so that the causes
// every rank shares, which no cross-rank check can see, are named too (the comparison's line in the header,
// "reference" in --json). Without it nothing changes.
#include "CliArgs.h"
#include "Commands.h"
#include "compare/CompareRuns.h"
#include "compare/ComparisonText.h"
#include "diagnose/Advice.h"
#include "diagnose/Diagnoser.h"
#include "reader/OpenRunFile.h"
#include "reader/ReferenceRuns.h"
#include "store/RunReader.h"
#include "store/RunSource.h"

#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>

namespace rs::cli {
namespace {

// The findings' JSON with "reference": where the run parted from the reference (compare --json's summary).
std::string withReference(const std::string& findingsJson, const std::string& path, const RunComparison& c) {
    auto doc = nlohmann::json::parse(findingsJson);
    const auto full = nlohmann::json::parse(comparisonJson(c));
    nlohmann::json ref;
    ref["path"] = path;
    for (const char* key :
         {"expected", "differences", "aligned_steps", "bitwise_through", "first_divergence"})
        ref[key] = full[key];
    doc["reference"] = ref;
    return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace

int diagnoseCommand(const Args& argv) {
    const CliArgs args(argv, {"reference", "spread"}, {"json", "verbose"});
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one run file, got {}", args.positionals().size()));
    std::vector<Finding> findings;
    std::string figures;
    std::vector<CheckNotRun> notRun;
    std::vector<Advice> advice;
    std::string header;
    std::string unrecorded; // "ranks 0, 1": ranks the source holds no record of
    bool noRankRecorded = false;
    std::optional<RunComparison> comparison;
    const auto referencePath = args.value("reference");
    if (!referencePath && !args.values("spread").empty())
        throw UsageError("--spread needs --reference: it measures the drift of the reference's job");
    try {
        const auto reader = openRunFile(args.positionals().front());
        if (referencePath) {
            const ReferenceRuns refs = openReferences(*referencePath, args.values("spread"));
            comparison = compareRuns(*reader, *refs.reference, {}, refs.spreads);
        }
        findings = diagnoseRun(*reader, {}, &figures, &notRun, comparison ? &*comparison : nullptr);
        advice = configAdvice(reader->meta());
        const auto missing = ranksNotRecorded(reader->meta());
        unrecorded = ranksNotRecordedText(missing);
        noRankRecorded = !missing.empty() && int(missing.size()) == reader->meta().worldSize;
        header = fmt::format("{}: {}, {} steps\n", args.positionals().front(), describeRun(reader->meta()),
                             reader->stepCount());
        if (!reader->meta().unreadableWhy.empty()) // the checks on that table were not made: say why
            header += fmt::format("unreadable: {}\n", reader->meta().unreadableWhy);
        if (comparison)
            header +=
                fmt::format("against the reference {}: {}\n", *referencePath, comparisonLine(*comparison));
        header += "\n";
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
        std::string json = findingsToJson(findings, notRun, advice);
        if (comparison) // one more key: the comparison's summary (compare --json has it all)
            json = withReference(json, *referencePath, *comparison);
        std::fputs((json + "\n").c_str(), stdout);
    } else if (findings.empty()) {
        // Ranks with no record were compared with nothing: they are not said to agree.
        const std::string agree =
            unrecorded.empty() ? "the ranks agree"
            : noRankRecorded
                ? "no rank's statistics were recorded, so none were compared"
                : fmt::format("the recorded ranks agree ({} not recorded, not compared)", unrecorded);
        std::fputs(notRun.empty() && unrecorded.empty()
                       ? "no findings: the ranks agree\n"
                       : fmt::format("no findings in what was recorded: {}; {} check(s) could not run "
                                     "(--verbose lists them)\n",
                                     agree, notRun.size())
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
