// `ranksight-cli bench`: side-by-side throughput in one process (ratios, not absolute promises).
#include "CliArgs.h"
#include "Commands.h"
#include "ThroughputBench.h"

#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

namespace rs::cli {
namespace {

// The peer a user would pick instead (PyTorch DDP, gloo, one process per rank), run by bench/ddp_peer.py with
// Debian's python3-torch, so the comparison is side by side on this machine. Returns 0 when unavailable.
double ddpPeerImgS(const BenchOptions& o, std::string& note) {
    const std::string script = RANKSIGHT_SOURCE_DIR "/bench/ddp_peer.py";
    if (!std::ifstream(script)) {
        note = "bench/ddp_peer.py not found";
        return 0;
    }
    const std::string cmd =
        fmt::format("OPENBLAS_NUM_THREADS=1 /usr/bin/python3 '{}' --model {} --ranks {} --batch {} "
                    "--steps {} --warmup {} 2>&1",
                    script, o.model, o.ranks, o.batchPerRank, o.steps, o.warmup);
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) {
        note = "could not start /usr/bin/python3";
        return 0;
    }
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, pipe))
        out.append(buf, n);
    const int status = pclose(pipe);
    const auto brace = out.rfind('{');
    if (status != 0 || brace == std::string::npos) {
        note = "the DDP peer failed: " + out.substr(0, 200);
        return 0;
    }
    try {
        return nlohmann::json::parse(out.substr(brace)).at("img_s").get<double>();
    } catch (const std::exception& e) {
        note = std::string("unreadable DDP peer output: ") + e.what();
        return 0;
    }
}

} // namespace

int benchCommand(const Args& argv) {
    const CliArgs args(argv, {"model", "ranks", "batch", "steps", "warmup", "precision", "threads", "repeat"},
                       {"json", "peer"});
    BenchOptions o;
    o.model = args.value("model").value_or(o.model);
    o.precision = args.value("precision").value_or(o.precision);
    args.number("ranks", o.ranks, 1, 64);
    args.number("batch", o.batchPerRank, 1, 4096);
    args.number("steps", o.steps, 1, 100000);
    args.number("warmup", o.warmup, 1, 1000);
    args.number("threads", o.threads, 0, 256);
    args.number("repeat", o.repeat, 1, 100);
    BenchResult r;
    try {
        r = runThroughputBench(o, !args.flag("json"));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    std::string peerNote;
    double peer = 0;
    if (args.flag("peer")) {
        if (!args.flag("json"))
            std::fprintf(stderr, "bench: PyTorch DDP (gloo), one process per rank...\n");
        peer = ddpPeerImgS(o, peerNote);
    }
    const double overhead = r.telemetryOffImgS > 0 ? (r.telemetryOffImgS / r.telemetryOnImgS - 1.0) * 100 : 0;
    const double scaling = r.singleReplicaImgS > 0 ? r.telemetryOffImgS / r.singleReplicaImgS : 0;
    if (args.flag("json")) {
        nlohmann::json j = {{"model", o.model},
                            {"ranks", o.ranks},
                            {"batch_per_rank", o.batchPerRank},
                            {"steps", o.steps},
                            {"repeat", o.repeat},
                            {"precision", o.precision},
                            {"single_replica_img_s", r.singleReplicaImgS},
                            {"telemetry_off_img_s", r.telemetryOffImgS},
                            {"telemetry_on_img_s", r.telemetryOnImgS},
                            {"cluster_vs_single", scaling},
                            {"telemetry_overhead_pct", overhead}};
        if (args.flag("peer")) {
            j["ddp_gloo_peer_img_s"] = peer > 0 ? nlohmann::json(peer) : nlohmann::json(nullptr);
            j["telemetry_on_vs_ddp_peer"] =
                peer > 0 ? nlohmann::json(r.telemetryOnImgS / peer) : nlohmann::json(nullptr);
            if (!peerNote.empty())
                j["ddp_gloo_peer_note"] = peerNote;
        }
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%-34s %8.1f img/s\n", "single replica (LibTorch)", r.singleReplicaImgS);
        std::printf("%-34s %8.1f img/s  (%.0f%% of single replica)\n", "cluster, telemetry off",
                    r.telemetryOffImgS, scaling * 100);
        std::printf("%-34s %8.1f img/s  (telemetry + file overhead %.1f%% of step time)\n",
                    "cluster, telemetry + run file", r.telemetryOnImgS, overhead);
        if (peer > 0)
            std::printf("%-34s %8.1f img/s  (RankSight with telemetry: %.2fx)\n",
                        "PyTorch DDP gloo, process/rank", peer, r.telemetryOnImgS / peer);
        else if (!peerNote.empty())
            std::printf("PyTorch DDP peer: %s\n", peerNote.c_str());
    }
    return 0;
}

} // namespace rs::cli
