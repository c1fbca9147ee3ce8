// `ranksight-cli bench`: side-by-side throughput in one process (ratios, not absolute promises).
#include "CliArgs.h"
#include "Commands.h"
#include "ThroughputBench.h"
#include "telemetry/KernelIsa.h"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <thread>

namespace rs::cli {

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
    o.peer = args.flag("peer");
    BenchResult r;
    try {
        r = runThroughputBench(o, !args.flag("json"));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    const double peer = r.peerImgS;
    const std::string& peerNote = r.peerNote;
    const double overhead = r.telemetryOffImgS > 0 ? (r.telemetryOffImgS / r.telemetryOnImgS - 1.0) * 100 : 0;
    const double scaling = r.singleReplicaImgS > 0 ? r.telemetryOffImgS / r.singleReplicaImgS : 0;
    // Cards computing at once: one per core unless --threads says otherwise (ComputeSlots).
    const int cores = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
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
                            {"telemetry_on_shard_img_s", r.shardImgS},
                            {"cluster_vs_single", scaling},
                            {"telemetry_overhead_pct", overhead}};
        if (args.flag("peer")) {
            j["ddp_gloo_peer_img_s"] = peer > 0 ? nlohmann::json(peer) : nlohmann::json(nullptr);
            j["telemetry_on_vs_ddp_peer"] =
                peer > 0 ? nlohmann::json(r.telemetryOnImgS / peer) : nlohmann::json(nullptr);
            if (!peerNote.empty())
                j["ddp_gloo_peer_note"] = peerNote;
        }
        nlohmann::json phases = nlohmann::json::array();
        for (size_t k = 0; k < r.phasesOn.size(); ++k) {
            nlohmann::json ph = {
                {"phase", r.phasesOn[k].first},
                {"telemetry_off_ms", k < r.phasesOff.size() ? r.phasesOff[k].second : 0.0},
                {"telemetry_on_ms", r.phasesOn[k].second},
                {"telemetry_on_shard_ms", k < r.phasesShard.size() ? r.phasesShard[k].second : 0.0}};
            // The cost model: what the phase moves and what that takes at this machine's memory speed.
            if (k < r.trafficOn.size()) {
                const PhaseTraffic& a = r.trafficOff[k];
                const PhaseTraffic& b = r.trafficOn[k];
                ph["compute_bound"] = b.compute;
                ph["telemetry_off_bytes"] = a.readBytes + a.writtenBytes;
                ph["telemetry_on_bytes"] = b.readBytes + b.writtenBytes;
                ph["telemetry_on_read_bytes"] = b.readBytes;
                ph["telemetry_on_written_bytes"] = b.writtenBytes;
                ph["telemetry_off_floor_ms"] = phaseFloorMs(a, r.bandwidth, r.cardComputeMs);
                ph["telemetry_on_floor_ms"] = phaseFloorMs(b, r.bandwidth, r.cardComputeMs);
            }
            phases.push_back(ph);
        }
        j["card_step_phases_ms"] = phases;
        j["memory_bandwidth_gib_s"] = {{"copy", r.bandwidth.copyGiBs}, {"read", r.bandwidth.readGiBs}};
        j["writer_thread_ms_per_step"] = r.writerMsPerStepOn;
        j["loss_scale_settled"] =
            r.settledScale > 0 ? nlohmann::json(r.settledScale) : nlohmann::json(nullptr);
        j["skipped_to_settle"] = r.skippedToSettle;
        nlohmann::json rounds = nlohmann::json::array();
        for (const BenchResult::Round& x : r.rounds)
            rounds.push_back(
                {{"single_replica_img_s", x.single},
                 {"telemetry_off_img_s", x.off},
                 {"telemetry_on_img_s", x.on},
                 {"telemetry_on_shard_img_s", x.shard},
                 {"ddp_gloo_peer_img_s", x.peer > 0 ? nlohmann::json(x.peer) : nlohmann::json(nullptr)}});
        j["rounds"] = rounds;
        j["cores"] = cores;
        j["card_compute_ms"] = r.cardComputeMs;
        j["single_replica_step_ms"] = r.singleStepMs;
        j["statistics_alone_ms"] = {{"local", r.statsLocalMs}, {"synced", r.statsSyncedMs}};
        j["statistics_kernels"] = kernelIsaName(kernelIsa());
        j["cores_busy_pct"] = {{"telemetry_off", r.coresBusyOff * 100},
                               {"telemetry_on", r.coresBusyOn * 100}};
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%-34s %8.1f img/s\n", "single replica (LibTorch)", r.singleReplicaImgS);
        std::printf("%-34s %8.1f img/s  (%.0f%% of single replica)\n", "cluster, telemetry off",
                    r.telemetryOffImgS, scaling * 100);
        std::printf("%-34s %8.1f img/s  (telemetry + file overhead %.1f%% of step time)\n",
                    "cluster, telemetry + run file", r.telemetryOnImgS, overhead);
        std::printf("%-34s %8.1f img/s  (%.2fx the replicated update)\n", "  the same, sharded update",
                    r.shardImgS, r.telemetryOnImgS > 0 ? r.shardImgS / r.telemetryOnImgS : 0);
        if (peer > 0)
            std::printf("%-34s %8.1f img/s  (RankSight with telemetry: %.2fx)\n",
                        "PyTorch DDP gloo, process/rank", peer, r.telemetryOnImgS / peer);
        else if (!peerNote.empty())
            std::printf("PyTorch DDP peer: %s\n", peerNote.c_str());
        std::printf(
            "\nwhere a card's step goes, ms (mean per card and step, warm-up included; medians of rounds)\n");
        std::printf("  %-36s %9s %9s %9s %9s\n", "phase", "tele off", "tele on", "MiB on", "floor on");
        double totalOff = 0, totalOn = 0, floorOn = 0;
        for (size_t k = 0; k < r.phasesOn.size(); ++k) {
            const double a = k < r.phasesOff.size() ? r.phasesOff[k].second : 0, b = r.phasesOn[k].second;
            const PhaseTraffic& t = r.trafficOn[k];
            const double floor = phaseFloorMs(t, r.bandwidth, r.cardComputeMs);
            totalOff += a;
            totalOn += b;
            floorOn += floor;
            std::printf("  %-36s %9.1f %9.1f %9s %9.1f\n", r.phasesOn[k].first.c_str(), a, b,
                        t.compute ? "compute"
                                  : fmt::format("{:.1f}", (t.readBytes + t.writtenBytes) / (1 << 20)).c_str(),
                        floor);
        }
        std::printf("  %-36s %9.1f %9.1f %9s %9.1f\n", "card step", totalOff, totalOn, "", floorOn);
        std::printf("memory speed, one thread: copy %.1f GiB/s (read + written), read %.1f GiB/s; a phase's "
                    "floor is its bytes at that speed (forward and backward: one card's compute alone)\n",
                    r.bandwidth.copyGiBs, r.bandwidth.readGiBs);
        std::printf("  %-36s %9s %9.1f\n", "writer thread, per step (run file)", "-", r.writerMsPerStepOn);
        std::printf(
            "\none card's forward and backward (batch %d, one thread): %.1f ms; %d of them on %d cores: "
            "%.1f ms of wall at least, against the single replica's %.1f ms step (batch %d, every core)\n",
            o.batchPerRank, r.cardComputeMs, o.ranks, cores, r.cardComputeMs * o.ranks / cores,
            r.singleStepMs, o.ranks * o.batchPerRank);
        std::printf(
            "the statistics alone (one thread, every parameter, %s kernels): local %.1f ms, synced %.1f ms "
            "per card step\n",
            kernelIsaName(kernelIsa()), r.statsLocalMs, r.statsSyncedMs);
        if (r.settledScale > 0)
            std::printf("the timed rounds start at a dynamic loss scale of %g, the first step's that updated "
                        "(after %d skipped steps from the default), so they time steps that update\n",
                        r.settledScale, r.skippedToSettle);
        std::printf("the cluster kept its %d cores %.0f%% busy over the timed steps (telemetry off), %.0f%% "
                    "(on): the rest is all that overlapping communication with compute could fill\n",
                    cores, r.coresBusyOff * 100, r.coresBusyOn * 100);
    }
    return 0;
}

} // namespace rs::cli
