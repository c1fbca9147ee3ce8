// `bench-open [--steps N] [--ranks R] [--file PATH] [--live-steps N] [--live-seconds S] [--cold] [--json]`:
// how fast the GUI layer opens a large run and how responsive it stays while following a live one
// (bench/OpenBench.h). Needs the GUI build.
#include "CliArgs.h"
#include "Commands.h"
#include "HeadlessApp.h"

#include <cstdio>
#include <fmt/format.h>
#include <optional>

#ifdef RANKSIGHT_HAVE_WIDGETS
#include "OpenBench.h"

#endif

namespace rs::cli {

#ifdef RANKSIGHT_HAVE_WIDGETS

int benchOpenCommand(const Args& argv) {
    const CliArgs args(argv, {"steps", "ranks", "file", "live-steps", "live-seconds", "sketch"},
                       {"json", "cold"});
    if (!args.positionals().empty())
        throw UsageError(fmt::format("unexpected argument '{}'", args.positionals().front()));
    bench::OpenBenchOptions o;
    auto number = [&](const char* name, double lo, double hi) -> std::optional<double> {
        const auto v = args.value(name);
        if (!v)
            return std::nullopt;
        double x = 0;
        try {
            size_t used = 0;
            x = std::stod(*v, &used);
            if (used != v->size())
                throw std::invalid_argument(*v);
        } catch (const std::exception&) {
            throw UsageError(fmt::format("--{} '{}' is not a number", name, *v));
        }
        if (x < lo || x > hi)
            throw UsageError(fmt::format("--{} {} is out of range [{}, {}]", name, *v, lo, hi));
        return x;
    };
    o.steps = int64_t(number("steps", 1, 10000000).value_or(double(o.steps)));
    o.ranks = int(number("ranks", 1, 1024).value_or(o.ranks));
    o.sketchDim = int(number("sketch", 0, 256).value_or(o.sketchDim));
    o.liveSteps = int64_t(number("live-steps", 0, 10000000).value_or(double(o.liveSteps)));
    o.liveSeconds = number("live-seconds", 1, 36000).value_or(o.liveSeconds);
    o.file = args.value("file").value_or("");
    o.cold = args.flag("cold");

    const auto app = makeHeadlessApp();
    bench::OpenBenchResult r;
    try {
        r = bench::runOpenBench(o,
                                [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
    } catch (const std::exception& e) {
        printError(fmt::format("bench-open: {}", e.what()));
        return 2;
    }
    std::fputs((args.flag("json") ? bench::toJson(r) + "\n" : bench::toTable(r)).c_str(), stdout);
    return 0;
}

#else

int benchOpenCommand(const Args&) {
    printError(
        "bench-open: this ranksight-cli was built without the GUI (RANKSIGHT_BUILD_GUI=OFF); the bench "
        "measures the GUI's run model and charts, so it needs the GUI build");
    return 2;
}

#endif

} // namespace rs::cli
