// The nodes of a multi-node run (issue 12): one process per server of the rank table, joined through
// PyTorch's distributed runtime (c10d::TCPStore rendezvous hosted by node 0, c10d::ProcessGroupGloo for the
// collectives), not a home-made socket protocol. This header has no LibTorch types: NodeGroup.cpp is the one
// translation unit that includes c10d.
//
// Every wait is bounded by the options' timeout, and every failure says what and where: a node rank out of
// range, a port node 0 cannot listen on, a master no node can reach, a world that never fills (naming the
// node ranks that never joined), and nodes whose configurations differ (naming the key and every node's
// value).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rs {

struct NodeOptions {
    int nodes = 1;
    int nodeRank = 0;
    std::string masterHost = "127.0.0.1";
    int masterPort = 29500;
    std::chrono::milliseconds timeout{30000};
    // When set and raised while join() waits for the other nodes, join gives up at once (NodeError).
    const std::atomic<bool>* cancel = nullptr;

    // "--node-rank 2 is out of range for --nodes 2 (0..1)"; "" when the options are usable.
    std::string problem() const;
};

// torchrun-style variables, so existing launchers start nodes unchanged: MASTER_ADDR, MASTER_PORT, NNODES,
// NODE_RANK (unset ones keep `defaults`). Throws std::invalid_argument naming a variable that is not a
// number.
NodeOptions nodeOptionsFromEnvironment(NodeOptions defaults = {});

// "HOST:PORT" -> host and port; throws std::invalid_argument naming the text.
void parseMaster(const std::string& text, NodeOptions& options);

// A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's pick), for node 0 of a run whose
// nodes all run on this host; 0 if the kernel gives none.
int freeLoopbackPort();

class NodeError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class NodeGroup {
public:
    // Rendezvous: node 0 listens on masterPort, every node registers, the gloo group forms over the store.
    // Throws NodeError (see the header comment) within about options.timeout.
    static std::unique_ptr<NodeGroup> join(const NodeOptions& options);
    ~NodeGroup();
    NodeGroup(const NodeGroup&) = delete;
    NodeGroup& operator=(const NodeGroup&) = delete;

    int nodes() const;
    int nodeRank() const;

    // Every node passes its configuration (flat key -> value); throws NodeError on every node if any two
    // differ: "the nodes' configurations differ: model is resnet18 on node 0 and mlp on node 1".
    void agreeOnConfig(const std::map<std::string, std::string>& config);

    // Collectives over the nodes (gloo), bounded by the timeout. recv holds nodes() * bytes: node i's send
    // at offset i * bytes.
    void allGather(const void* send, size_t bytes, void* recv);
    void broadcast(void* data, size_t bytes, int rootNode);
    // send holds nodes() blocks of `block` bytes, block k for node k; recv gets nodes() blocks, block k
    // from node k.
    void allToAll(const void* send, size_t block, void* recv);
    void barrier();

    // After a failed collective: the nodes that are gone. Every surviving node checks in under a fresh key of
    // the rendezvous store and waits up to the timeout for the others; those that never do are lost. When
    // the store itself is gone, so is node 0, its host.
    std::vector<int> lostNodes();

    // After the run, what a node's cards reported that only it knows (their failures and timeouts), as one
    // opaque buffer through the rendezvous store: node k > 0 leaves it, node 0 takes it. takeReport waits up
    // to the timeout, but not for a node lostNodes() found gone. Neither throws: a store that is gone (node 0
    // dead) or a node that never reports yields nothing.
    void postReport(const std::string& bytes);
    std::optional<std::string> takeReport(int node);

    // Traffic of this node's collectives since join: the bytes it handed to gloo for the other nodes (an
    // all-gather of B bytes sends B to each of the nodes() - 1 others, whatever gloo's algorithm) and the
    // wall time spent waiting in them.
    struct Traffic {
        uint64_t bytesSent = 0;
        double ms = 0;
        int64_t collectives = 0;
    };
    Traffic traffic() const;

private:
    struct Impl;
    explicit NodeGroup(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_d;
};

} // namespace rs
