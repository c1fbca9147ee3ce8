// `import-msprobe`: an Ascend (or PyTorch) run recorded by msprobe's training-state monitor (V1 or V2) or by
// its dump tool (step<N>/rank<R>/dump.json), turned into a run file (core/import/MsprobeImport.h). A broken
// tree exits 2 with one line naming the file and line; nothing is written then.
#include "CliArgs.h"
#include "Commands.h"
#include "import/MsprobeImport.h"

#include <cstdio>
#include <fmt/format.h>

namespace rs::cli {

int importMsprobeCommand(const Args& argv) {
    const CliArgs args(argv, {"out"}, {"force", "quiet"});
    if (args.positionals().size() != 1)
        throw UsageError(
            fmt::format("expected one msprobe monitor folder, got {}", args.positionals().size()));
    const auto out = args.value("out");
    if (!out)
        throw UsageError("--out RUN.h5 is required");
    MsprobeImportResult r;
    try {
        r = importMsprobe(args.positionals().front(), *out, args.flag("force"));
    } catch (const std::exception& e) {
        printError(fmt::format("import-msprobe: {}", e.what()));
        return 2;
    }
    if (!args.flag("quiet")) {
        // A dump tree is read from dump.json files, a Monitor tree from csv files; a run whose files named no
        // parameter says so rather than "0 parameters".
        const bool dump = r.layout.rfind("dump", 0) == 0;
        const std::string params =
            r.params > 0 ? fmt::format("{} parameters", r.params) : std::string("parameters not recorded");
        // A folder of the monitor's alerts alone has no statistics files: say what it was read from.
        const std::string from = r.files > 0
                                     ? fmt::format("{} {}", r.files, dump ? "dump.json files" : "csv files")
                                     : fmt::format("{} alert(s) and no statistics files", r.events);
        std::printf("%s: %d ranks, %lld steps, %s from %s of msprobe %s in %s\n", out->c_str(), r.ranks,
                    static_cast<long long>(r.steps), params.c_str(), from.c_str(), r.layout.c_str(),
                    r.monitorDir.c_str());
        for (const std::string& n : r.notes)
            std::printf("note: %s\n", n.c_str());
    }
    return 0;
}

} // namespace rs::cli
