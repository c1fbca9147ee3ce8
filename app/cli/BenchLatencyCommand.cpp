// `bench-latency RUN.h5... [--step-ms MS] [--json]`: how long after a run writes a cause's evidence the
// window's Findings panel names it, and a `ranksight-cli watch --fail-on CAUSE` alerts on it
// (bench/LatencyBench.h;
// --window-only: not watch). Needs the GUI build.
#include "CliArgs.h"
#include "Commands.h"
#include "HeadlessApp.h"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

#ifdef RANKSIGHT_HAVE_WIDGETS
#include "LatencyBench.h"
#endif

namespace rs::cli {

#ifdef RANKSIGHT_HAVE_WIDGETS

int benchLatencyCommand(const Args& argv) {
    const CliArgs args(argv, {"step-ms"}, {"json", "window-only"});
    if (args.positionals().empty())
        throw UsageError("name at least one run file to replay");
    bench::LatencyOptions o;
    if (const auto v = args.value("step-ms")) {
        try {
            size_t used = 0;
            o.stepMs = std::stod(*v, &used);
            if (used != v->size() || !(o.stepMs > 0 && o.stepMs <= 60000))
                throw std::invalid_argument(*v);
        } catch (const std::exception&) {
            throw UsageError(fmt::format("--step-ms '{}' is not a time in (0, 60000] ms", *v));
        }
    }
    // watch runs as this program: the ranksight-cli being measured.
    if (!args.flag("window-only"))
        o.watchCli = std::filesystem::read_symlink("/proc/self/exe").string();
    const auto app = makeHeadlessApp();
    std::vector<bench::LatencyResult> results;
    for (const std::string& file : args.positionals()) {
        try {
            results.push_back(bench::runLatencyBench(
                file, o, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }));
        } catch (const std::exception& e) {
            printError(fmt::format("bench-latency: {}", e.what()));
            return 2;
        }
    }
    std::fputs((args.flag("json") ? bench::toJson(results) + "\n" : bench::toTable(results)).c_str(), stdout);
    return 0;
}

#else

int benchLatencyCommand(const Args&) {
    printError("bench-latency: this ranksight-cli was built without the GUI (RANKSIGHT_BUILD_GUI=OFF); the "
               "bench measures the window's diagnosis, so it needs the GUI build");
    return 2;
}

#endif

} // namespace rs::cli
