// `ranksight-cli bench-nodes`: one node against the same run spread over node processes on this host, and
// what the traffic between nodes would be for a real cluster on paper.
#include "CliArgs.h"
#include "Commands.h"
#include "InstalledData.h"
#include "NodesBench.h"
#include "train/ModelKind.h"

#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs::cli {

int benchNodesCommand(const Args& argv) {
    const CliArgs args(argv,
                       {"model", "ranks", "batch", "steps", "warmup", "precision", "repeat", "nodes",
                        "paper-servers", "paper-cards", "paper-model"},
                       {"json"});
    BenchOptions o;
    int nodes = 2, paperServers = 8, paperCards = 8;
    o.model = args.value("model").value_or(o.model);
    o.precision = args.value("precision").value_or(o.precision);
    const std::string paperModel = args.value("paper-model").value_or("resnet50");
    args.number("ranks", o.ranks, 2, 64);
    args.number("batch", o.batchPerRank, 1, 4096);
    args.number("steps", o.steps, 1, 100000);
    args.number("warmup", o.warmup, 1, 1000);
    args.number("repeat", o.repeat, 1, 100);
    args.number("nodes", nodes, 2, 64);
    args.number("paper-servers", paperServers, 2, 4096);
    args.number("paper-cards", paperCards, 1, 64);
    if (!parseModelKind(paperModel))
        throw UsageError(fmt::format("--paper-model '{}' is not a model", paperModel));
    NodesBenchResult r;
    try {
        r = runNodesBench(o, nodes, selfPath(), !args.flag("json"));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    // On paper: the cross-node stage sends 2 (S - 1) / S of the gradient from each server per step (reduce-
    // scatter by all-to-all, then all-gather); the records for node 0's file grow with cards and tensors, so
    // they are scaled from what this run measured per card and other node.
    const int64_t paperParams = paperModel == o.model ? r.params : modelParams(paperModel);
    const double S = paperServers;
    const double gradientBytes = 2.0 * (S - 1) / S * double(paperParams) * r.payloadBytes;
    const int localCards = o.ranks / nodes;
    const double recordPerCardPeer = r.recordBytesPerStep / double(localCards * (nodes - 1));
    const double recordBytes = paperModel == o.model ? recordPerCardPeer * paperCards * (S - 1) : -1;
    const double ratio = r.oneNodeImgS > 0 ? r.nodesImgS / r.oneNodeImgS : 0;
    const double measuredGradient = 2.0 * (nodes - 1) / nodes * double(r.params) * r.payloadBytes;
    if (args.flag("json")) {
        nlohmann::json j = {{"model", o.model},
                            {"ranks", o.ranks},
                            {"nodes", nodes},
                            {"batch_per_rank", o.batchPerRank},
                            {"steps", o.steps},
                            {"repeat", o.repeat},
                            {"precision", o.precision},
                            {"one_node_img_s", r.oneNodeImgS},
                            {"nodes_img_s", r.nodesImgS},
                            {"nodes_vs_one_node", ratio},
                            {"node0_bytes_sent_per_step", r.bytesPerStep},
                            {"node0_record_bytes_sent_per_step", r.recordBytesPerStep},
                            {"gradient_bytes_per_allreduce_per_node", measuredGradient},
                            {"node0_cross_node_ms_per_step", r.nodeMsPerStep},
                            {"paper_model", paperModel},
                            {"paper_servers", paperServers},
                            {"paper_cards_per_server", paperCards},
                            {"paper_gradient_bytes_per_server_per_step", gradientBytes}};
        if (recordBytes >= 0)
            j["paper_record_bytes_per_server_per_step"] = recordBytes;
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%-38s %8.1f img/s\n", fmt::format("1 node x {} cards", o.ranks).c_str(), r.oneNodeImgS);
    std::printf("%-38s %8.1f img/s  (%.2f of one node)\n",
                fmt::format("{} nodes x {} cards (gloo, 127.0.0.1)", nodes, localCards).c_str(), r.nodesImgS,
                ratio);
    std::printf("node 0 sent per step: %.2f MB (gradient all-reduce %.2f MB: 2(N-1)/N x %lld params x %d B; "
                "records for its file %.3f MB)\n",
                r.bytesPerStep / 1e6, measuredGradient / 1e6, static_cast<long long>(r.params),
                r.payloadBytes, r.recordBytesPerStep / 1e6);
    std::printf("node 0 in cross-node collectives: %.1f ms per step (waits for the other nodes included)\n",
                r.nodeMsPerStep);
    std::printf("on paper, %d servers x %d cards of %s (%s): %.1f MB of gradient per server per step",
                paperServers, paperCards, paperModel.c_str(), o.precision.c_str(), gradientBytes / 1e6);
    if (recordBytes >= 0)
        std::printf(", %.2f MB of records from each server to node 0's file", recordBytes / 1e6);
    std::printf("\n");
    return 0;
}

} // namespace rs::cli
