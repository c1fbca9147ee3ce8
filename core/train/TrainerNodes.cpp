// Trainer: a run spread over node processes (issue 12). Joining the nodes and agreeing on the configuration,
// the per-step exchange of every card's records (node 0 writes the one run file; the records travel in
// RecordWire.h's encoding, which the run file's schema table defines), and, after the run, what each node's
// cards reported that the others cannot know.
#include "store/RecordWire.h"
#include "train/TrainerImpl.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs {

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
    // What must be equal on every node: the whole configuration but what is this host's own business.
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
    try {
        group = NodeGroup::join(o);
        group->agreeOnConfig(compared);
    } catch (const NodeError& e) {
        throw TrainError(e.what());
    }
    comm->setNodes(
        cfg.nodes, cfg.nodeRank,
        [g = group.get()](const void* send, size_t bytes, void* recv) { g->allGather(send, bytes, recv); },
        [g = group.get()](const void* send, size_t block, void* recv) { g->allToAll(send, block, recv); },
        [g = group.get()] { return g->lostNodes(); });
}

template <class Record> std::vector<Record> Trainer::Impl::exchange(const Card& card, const Record& mine) {
    recordwire::Writer w;
    recordwire::put(w, std::vector<Record>{mine});
    std::string& bytes = w.bytes();
    const uint64_t size = bytes.size();
    std::vector<uint64_t> sizes(size_t(cfg.ranks));
    comm->allGather(card.local, &size, sizeof size, sizes.data());
    const uint64_t width = *std::max_element(sizes.begin(), sizes.end());
    bytes.resize(size_t(width));
    std::vector<char> all(size_t(width) * size_t(cfg.ranks));
    comm->allGather(card.local, bytes.data(), size_t(width), all.data());
    std::vector<Record> out;
    if (card.local != 0)
        return out;
    // What this node sent for the exchange: its block of the two all-gathers to each other node.
    recordBytesSent += uint64_t(cfg.nodes - 1) * uint64_t(localCards) * (sizeof size + width);
    for (int r = 0; r < cfg.ranks; ++r) {
        recordwire::Reader in(std::string_view(all.data() + size_t(r) * width, size_t(sizes[size_t(r)])));
        std::vector<Record> one = recordwire::get<Record>(in);
        if (one.size() != 1)
            throw std::runtime_error(fmt::format("a record from rank {} did not decode", r));
        out.push_back(std::move(one.front()));
    }
    return out;
}

void Trainer::Impl::reportToNode0() {
    recordwire::Writer w;
    {
        std::lock_guard lock(nodeEventsMutex);
        recordwire::put(w, nodeEvents);
    }
    group->postReport(w.bytes());
}

void Trainer::Impl::collectNodeReports() {
    for (int k = 1; k < cfg.nodes; ++k) {
        const auto bytes = group->takeReport(k);
        if (!bytes)
            continue; // the node is gone: node 0's own cards have named its ranks in their timeouts
        try {
            recordwire::Reader in(*bytes);
            for (Event& e : recordwire::get<Event>(in))
                push(std::move(e));
        } catch (const std::exception& e) {
            event(0, -1, Severity::Warning, eventcode::kTimeout,
                  fmt::format("node {}'s report of its cards did not decode: {}", k, e.what()));
        }
    }
}

template std::vector<StepRecord> Trainer::Impl::exchange(const Card&, const StepRecord&);
template std::vector<WeightRecord> Trainer::Impl::exchange(const Card&, const WeightRecord&);
template std::vector<EvalRecord> Trainer::Impl::exchange(const Card&, const EvalRecord&);
template std::vector<FlightDump> Trainer::Impl::exchange(const Card&, const FlightDump&);

} // namespace rs
