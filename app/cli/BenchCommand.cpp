// `ranksight-cli bench`: side-by-side throughput in one process (ratios, not absolute promises).
#include "CliArgs.h"
#include "Commands.h"
#include "ThroughputBench.h"

#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs::cli {

int benchCommand(const Args& argv) {
    const CliArgs args(argv, {"model", "ranks", "batch", "steps", "warmup", "precision", "threads"},
                       {"json"});
    BenchOptions o;
    auto num = [&](const char* name, int& field, int lo, int hi) {
        if (auto v = args.value(name)) {
            try {
                field = std::stoi(*v);
            } catch (const std::exception&) {
                throw UsageError(fmt::format("--{} '{}' is not a number", name, *v));
            }
            if (field < lo || field > hi)
                throw UsageError(fmt::format("--{} {} is out of range [{}, {}]", name, field, lo, hi));
        }
    };
    o.model = args.value("model").value_or(o.model);
    o.precision = args.value("precision").value_or(o.precision);
    num("ranks", o.ranks, 1, 64);
    num("batch", o.batchPerRank, 1, 4096);
    num("steps", o.steps, 1, 100000);
    num("warmup", o.warmup, 1, 1000);
    num("threads", o.threads, 0, 256);
    BenchResult r;
    try {
        r = runThroughputBench(o, !args.flag("json"));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    const double overhead = r.telemetryOffImgS > 0 ? (r.telemetryOffImgS / r.telemetryOnImgS - 1.0) * 100 : 0;
    const double scaling = r.singleReplicaImgS > 0 ? r.telemetryOffImgS / r.singleReplicaImgS : 0;
    if (args.flag("json")) {
        nlohmann::json j = {{"model", o.model},
                            {"ranks", o.ranks},
                            {"batch_per_rank", o.batchPerRank},
                            {"steps", o.steps},
                            {"precision", o.precision},
                            {"single_replica_img_s", r.singleReplicaImgS},
                            {"telemetry_off_img_s", r.telemetryOffImgS},
                            {"telemetry_on_img_s", r.telemetryOnImgS},
                            {"cluster_vs_single", scaling},
                            {"telemetry_overhead_pct", overhead}};
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%-34s %8.1f img/s\n", "single replica (LibTorch)", r.singleReplicaImgS);
        std::printf("%-34s %8.1f img/s  (%.0f%% of single replica)\n", "cluster, telemetry off",
                    r.telemetryOffImgS, scaling * 100);
        std::printf("%-34s %8.1f img/s  (telemetry + file overhead %.1f%% of step time)\n",
                    "cluster, telemetry + run file", r.telemetryOnImgS, overhead);
    }
    return 0;
}

} // namespace rs::cli
