// Trainer: a run spread over node processes (issue 12): joining the nodes, agreeing on the configuration, and
// giving the communicator its cross-node stage. The per-step exchange of the cards' records is the
// recorder's (StepRecorderNodes.cpp).
#include "train/TrainerImpl.h"

#include <map>
#include <nlohmann/json.hpp>

namespace rs {
namespace {

// What must be equal on every node: the whole configuration but what is this host's own business.
std::map<std::string, std::string> configToCompare(const TrainConfig& cfg) {
    std::map<std::string, std::string> compared;
    const auto json = nlohmann::json::parse(cfg.toJson()); // items() of a temporary would dangle
    for (const auto& [key, value] : json.items())
        if (key != "compute_threads" && key != "rank_table")
            compared[key] = value.dump();
    std::string faultList;
    for (const auto& f : cfg.faults)
        faultList += (faultList.empty() ? "" : ",") + f;
    compared["faults"] = faultList.empty() ? "none" : faultList;
    compared["nodes"] = std::to_string(cfg.nodes);
    return compared;
}

} // namespace

void Trainer::Impl::joinNodes() {
    NodeOptions o;
    o.nodes = cfg.nodes;
    o.nodeRank = cfg.nodeRank;
    o.timeout = std::chrono::milliseconds(cfg.timeoutMs);
    o.cancel = &stopRequested; // a Stop while the nodes meet ends the wait
    try {
        parseMaster(cfg.master, o);
    } catch (const std::invalid_argument& e) {
        throw TrainError(e.what());
    }
    try {
        group = NodeGroup::join(o);
        group->agreeOnConfig(configToCompare(cfg));
    } catch (const NodeError& e) {
        throw TrainError(e.what());
    }
    comm->setNodes(
        cfg.nodes, cfg.nodeRank,
        [g = group.get()](const void* send, size_t bytes, void* recv) { g->allGather(send, bytes, recv); },
        [g = group.get()](const void* send, size_t block, void* recv) { g->allToAll(send, block, recv); },
        [g = group.get()] { return g->lostNodes(); });
}

} // namespace rs
