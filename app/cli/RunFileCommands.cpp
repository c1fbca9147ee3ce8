// `inspect` and `export-csv`: read a run file (also one still being written, or left by a killed writer).
// `schema`: the layout of every run file (RunSchema.h) as JSON.
#include "CliArgs.h"
#include "Commands.h"
#include "reader/OpenRunFile.h"
#include "store/CsvExport.h"
#include "store/RunInspection.h"
#include "store/RunReader.h"
#include "store/RunSchemaJson.h"

#include <cstdio>
#include <fmt/format.h>

namespace rs::cli {
namespace {

std::unique_ptr<RunReader> openRun(const CliArgs& args, const char* cmd) {
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one run file, got {}", args.positionals().size()));
    try {
        return openRunFile(args.positionals().front());
    } catch (const std::exception& e) {
        printError(fmt::format("{}: {}", cmd, e.what()));
        return nullptr;
    }
}

} // namespace

int inspectCommand(const Args& argv) {
    const CliArgs args(argv, {}, {"json"});
    auto reader = openRun(args, "inspect");
    if (!reader)
        return 2;
    try {
        const auto in = inspectRun(*reader);
        std::fputs((args.flag("json") ? in.toJson() + "\n" : in.toText()).c_str(), stdout);
    } catch (const std::exception& e) {
        printError(fmt::format("inspect: {}", e.what()));
        return 2;
    }
    return 0;
}

int exportCsvCommand(const Args& argv) {
    const CliArgs args(argv, {"out"}, {"force"});
    const auto out = args.value("out");
    if (!out)
        throw UsageError("--out DIR is required");
    auto reader = openRun(args, "export-csv");
    if (!reader)
        return 2;
    try {
        for (const auto& path : exportCsv(*reader, *out, args.flag("force")))
            std::printf("%s\n", path.c_str());
    } catch (const std::exception& e) {
        printError(fmt::format("export-csv: {}", e.what()));
        return 2;
    }
    return 0;
}

int schemaCommand(const Args& argv) {
    const CliArgs args(argv, {}, {});
    if (!args.positionals().empty())
        throw UsageError("takes no arguments");
    std::printf("%s\n", runSchemaJson().c_str());
    return 0;
}

} // namespace rs::cli
