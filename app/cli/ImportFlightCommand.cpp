// `import-flight-recorder`: the flight-recorder dumps of a PyTorch (or torch_npu) job that hung or timed out,
// turned into a run file (core/import/FlightRecorderImport.h), alone or joined with the job's recorded run;
// then which collective each rank reached and the first one where ranks disagree (view/CollectiveProgress.h).
// A broken or hostile dump exits 2 with one line naming the file and the key or byte; so does a join with a
// run the dumps cannot belong to (the line says whether ranks or times rule it out). Nothing is written then.
#include "CliArgs.h"
#include "Commands.h"
#include "import/FlightRecorderImport.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "view/CollectiveProgress.h"

#include <cstdio>
#include <fmt/format.h>
#include <map>

namespace rs::cli {
namespace {

// Per group, one line per rank (at most 16; past that the ranks that are not where most are).
void printProgress(const view::CollectiveReport& report) {
    for (const view::GroupProgress& g : report.groups) {
        std::printf("group %s: %lld collectives, %zu ranks\n", g.group.label().c_str(),
                    static_cast<long long>(g.collectives), g.ranks.size());
        int64_t common = -1;
        std::map<int64_t, int> count;
        for (const view::RankPosition& p : g.ranks)
            ++count[p.lastSeq];
        for (const auto& [seq, n] : count)
            if (common < 0 || n > count[common])
                common = seq;
        int shown = 0;
        for (const view::RankPosition& p : g.ranks) {
            if (g.ranks.size() > 16 && p.lastSeq == common)
                continue;
            if (++shown > 64)
                break;
            if (!p.dumped)
                std::printf("  rank %d: no dump\n", p.rank);
            else if (p.lastSeq < 0)
                std::printf("  rank %d: no collective in this group\n", p.rank);
            else
                std::printf("  rank %d: last #%lld %s (%s)%s\n", p.rank, static_cast<long long>(p.lastSeq),
                            p.lastOp.c_str(), view::collectiveStateName(p.lastState),
                            view::stepText(p.lastStep).empty() ? ""
                                                               : (", " + view::stepText(p.lastStep)).c_str());
        }
        if (g.ranks.size() > 16)
            std::printf("  the other ranks: last #%lld\n", static_cast<long long>(common));
    }
}

// torch_npu's Python tracebacks, one line per rank: where its main thread was when it dumped. The whole text
// is in the run file (config flight_recorder.py_tracebacks), and the window shows it with the rank.
void printTracebacks(const view::CollectiveSetup& setup) {
    for (const auto& [rank, text] : setup.tracebacks) {
        const std::string frame = view::innermostPythonFrame(text);
        fmt::print("rank {} Python traceback: {}\n", rank,
                   frame.empty() ? "no frame in it" : "main thread at " + frame);
    }
}

} // namespace

int importFlightRecorderCommand(const Args& argv) {
    const CliArgs args(argv, {"out", "prefix", "run"}, {"force", "quiet"});
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one folder of dumps (or one dump file), got {}",
                                     args.positionals().size()));
    const auto out = args.value("out");
    if (!out)
        throw UsageError("--out RUN.h5 is required");
    FlightImportResult r;
    std::unique_ptr<RunReader> run, written;
    try {
        FlightImportOptions o;
        o.prefix = args.value("prefix").value_or("");
        o.overwrite = args.flag("force");
        if (const auto path = args.value("run")) {
            run = openRunFile(*path);
            o.run = run.get();
        }
        r = importFlightRecorder(args.positionals().front(), *out, o);
        written = openRunFile(*out);
    } catch (const std::exception& e) {
        printError(fmt::format("import-flight-recorder: {}", e.what()));
        return 2;
    }
    if (args.flag("quiet"))
        return 0;
    const std::string joined =
        r.joinedSteps >= 0 ? fmt::format(", joined with {} steps of {}", r.joinedSteps, run->path()) : "";
    fmt::print("{}: {} ranks, {} collectives of {} process group{} from {} dumps ({}, version {}) in {}{}\n",
               *out, r.worldSize, r.collectives, r.groups, r.groups == 1 ? "" : "s", r.dumped.size(),
               r.backend.empty() ? "backend not named" : r.backend, r.version, r.dir, joined);
    for (const std::string& n : r.notes)
        std::printf("note: %s\n", n.c_str());
    const view::CollectiveSetup setup = view::collectiveSetup(written->meta());
    const view::CollectiveReport report = view::analyseCollectives(written->readCollectives(), setup);
    printProgress(report);
    printTracebacks(setup);
    if (report.first)
        std::printf("first disagreement: %s\n", report.first->text().c_str());
    else if (!report.allWaiting.empty())
        std::printf("%s\n", report.allWaiting.c_str());
    else
        std::printf("the ranks agree on every collective they dumped\n");
    return 0;
}

} // namespace rs::cli
