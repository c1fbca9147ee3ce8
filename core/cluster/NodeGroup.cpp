// NodeGroup: see NodeGroup.h. The only translation unit that includes c10d (each LibTorch TU costs ~14 s and
// 1 GB to compile).
#include "cluster/NodeGroup.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/socket.h>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>
#include <unistd.h>

namespace rs {

std::string NodeOptions::problem() const {
    if (nodes < 1)
        return fmt::format("--nodes {} must be at least 1", nodes);
    if (nodeRank < 0 || nodeRank >= nodes)
        return fmt::format("--node-rank {} is out of range for --nodes {} (0..{})", nodeRank, nodes,
                           nodes - 1);
    if (masterPort < 1 || masterPort > 65535)
        return fmt::format("the master port {} is not a TCP port (1..65535)", masterPort);
    if (masterHost.empty())
        return "the master address is empty";
    if (timeout.count() <= 0)
        return "the rendezvous timeout must be positive";
    return "";
}

namespace {

int envInt(const char* name, int fallback) {
    const char* v = std::getenv(name); // NOLINT(concurrency-mt-unsafe): read at startup, before any thread
    if (!v || !*v)
        return fallback;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 30)
        throw std::invalid_argument(fmt::format("the environment variable {}='{}' is not a number", name, v));
    return int(x);
}

std::string hostName() {
    char buf[256] = {};
    return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("?");
}

bool loopback(const std::string& host) {
    return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// c10d's messages carry a C++ stack trace after the first line.
std::string firstLine(const std::string& text) {
    return text.substr(0, std::min<size_t>(text.find('\n'), 300));
}

std::string secondsText(std::chrono::milliseconds t) {
    return fmt::format("{:g} s", double(t.count()) / 1000.0);
}

} // namespace

int freeLoopbackPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

NodeOptions nodeOptionsFromEnvironment(NodeOptions o) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): read at startup, before any thread
    if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr)
        o.masterHost = addr;
    o.masterPort = envInt("MASTER_PORT", o.masterPort);
    o.nodes = envInt("NNODES", o.nodes);
    o.nodeRank = envInt("NODE_RANK", o.nodeRank);
    return o;
}

void parseMaster(const std::string& text, NodeOptions& o) {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
        throw std::invalid_argument(fmt::format("--master '{}': expected HOST:PORT", text));
    const std::string port = text.substr(colon + 1);
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end || p < 1 || p > 65535)
        throw std::invalid_argument(fmt::format("--master '{}': the port '{}' is not 1..65535", text, port));
    o.masterHost = text.substr(0, colon);
    o.masterPort = int(p);
}

struct NodeGroup::Impl {
    NodeOptions options;
    c10::intrusive_ptr<c10d::Store> store;
    c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
    std::set<int> lost; // found gone by lostNodes()
    std::atomic<uint64_t> bytesSent{0};
    std::atomic<int64_t> collectives{0}, micros{0};

    std::string where() const { return fmt::format("{}:{}", options.masterHost, options.masterPort); }

    void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what, uint64_t sent) {
        const auto t0 = std::chrono::steady_clock::now();
        bytesSent += sent;
        ++collectives;
        try {
            work->wait(options.timeout);
            micros +=
                std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
                    .count();
        } catch (const std::exception& e) {
            throw NodeError(fmt::format("node {}: {} across the nodes failed or timed out after {}: {}",
                                        options.nodeRank, what, secondsText(options.timeout),
                                        firstLine(e.what())));
        }
    }
};

NodeGroup::NodeGroup(std::unique_ptr<Impl> impl)
    : m_d(std::move(impl)) {}

NodeGroup::~NodeGroup() = default;

int NodeGroup::nodes() const {
    return m_d->options.nodes;
}

int NodeGroup::nodeRank() const {
    return m_d->options.nodeRank;
}

std::unique_ptr<NodeGroup> NodeGroup::join(const NodeOptions& options) {
    if (const std::string p = options.problem(); !p.empty())
        throw NodeError(p);
    auto d = std::make_unique<Impl>();
    d->options = options;
    const auto deadline = std::chrono::steady_clock::now() + options.timeout;

    c10d::TCPStoreOptions so;
    so.port = uint16_t(options.masterPort);
    so.isServer = options.nodeRank == 0;
    so.waitWorkers = false; // the registration below waits, and can say who is missing
    so.timeout = options.timeout;
    try {
        d->store = c10::make_intrusive<c10d::TCPStore>(options.masterHost, so);
    } catch (const std::exception& e) {
        const std::string why = firstLine(e.what());
        if (so.isServer)
            throw NodeError(fmt::format("node 0 cannot listen on {} (is another run using the port?): {}",
                                        d->where(), why));
        throw NodeError(fmt::format("node {} cannot reach node 0 at {} within {} (is node 0 started, and "
                                    "--master the same on every node?): {}",
                                    options.nodeRank, d->where(), secondsText(options.timeout), why));
    }

    // Registration: each node says it is here; everyone waits for the full world, naming who is missing.
    const std::string me = fmt::format("ranksight/node/{}", options.nodeRank);
    if (d->store->check({me}))
        throw NodeError(fmt::format("node rank {} joined {} twice (two nodes started with --node-rank {}?)",
                                    options.nodeRank, d->where(), options.nodeRank));
    const std::string host = hostName();
    d->store->set(me, std::vector<uint8_t>(host.begin(), host.end()));
    for (;;) {
        std::vector<int> missing;
        for (int k = 0; k < options.nodes; ++k)
            if (!d->store->check({fmt::format("ranksight/node/{}", k)}))
                missing.push_back(k);
        if (missing.empty())
            break;
        if (options.cancel && options.cancel->load())
            throw NodeError(fmt::format("node {} stopped while waiting for the other nodes to join {}",
                                        options.nodeRank, d->where()));
        if (std::chrono::steady_clock::now() >= deadline) {
            std::string list;
            for (int k : missing)
                list += (list.empty() ? "" : ", ") + std::to_string(k);
            throw NodeError(
                fmt::format("the world never filled: node rank(s) {} of {} did not join {} within {}", list,
                            options.nodes, d->where(), secondsText(options.timeout)));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }

    auto gopts = c10d::ProcessGroupGloo::Options::create(options.timeout);
    // Loopback runs (tests, several nodes on one host) stay on 127.0.0.1; elsewhere gloo takes this host's
    // own address, or RANKSIGHT_IFNAME's interface when given.
    if (loopback(options.masterHost))
        gopts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    // NOLINTNEXTLINE(concurrency-mt-unsafe): the node group is made before the card threads start
    else if (const char* ifname = std::getenv("RANKSIGHT_IFNAME"); ifname && *ifname)
        gopts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else
        gopts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    gopts->threads = 1;
    try {
        auto prefixed = c10::make_intrusive<c10d::PrefixStore>("ranksight/gloo", d->store);
        d->group =
            c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, options.nodeRank, options.nodes, gopts);
    } catch (const std::exception& e) {
        throw NodeError(fmt::format("node {}: the gloo group over {} did not form within {}: {}",
                                    options.nodeRank, d->where(), secondsText(options.timeout),
                                    firstLine(e.what())));
    }
    return std::unique_ptr<NodeGroup>(new NodeGroup(std::move(d)));
}

void NodeGroup::agreeOnConfig(const std::map<std::string, std::string>& config) {
    Impl& d = *m_d;
    const std::string mine = nlohmann::json(config).dump();
    d.store->set(fmt::format("ranksight/config/{}", d.options.nodeRank),
                 std::vector<uint8_t>(mine.begin(), mine.end()));
    std::vector<std::map<std::string, std::string>> all(size_t(d.options.nodes));
    for (int k = 0; k < d.options.nodes; ++k) {
        std::vector<uint8_t> raw;
        try {
            raw = d.store->get(fmt::format("ranksight/config/{}", k));
        } catch (const std::exception& e) {
            throw NodeError(fmt::format("node {} sent no configuration within {}: {}", k,
                                        secondsText(d.options.timeout), firstLine(e.what())));
        }
        all[size_t(k)] =
            nlohmann::json::parse(raw.begin(), raw.end()).get<std::map<std::string, std::string>>();
    }
    std::set<std::string> keys;
    for (const auto& c : all)
        for (const auto& [k, v] : c)
            keys.insert(k);
    std::vector<std::string> differences;
    for (const std::string& key : keys) {
        std::vector<std::string> values;
        bool differ = false;
        for (const auto& c : all) {
            const auto it = c.find(key);
            values.push_back(it == c.end() ? std::string("(not set)") : it->second);
            differ = differ || values.back() != values.front();
        }
        if (!differ)
            continue;
        std::string text = key + " is";
        for (size_t k = 0; k < values.size(); ++k)
            text += fmt::format("{} {} on node {}", k ? "," : "", values[k], k);
        differences.push_back(text);
    }
    if (!differences.empty()) {
        std::string text;
        for (const auto& d2 : differences)
            text += (text.empty() ? "" : "; ") + d2;
        throw NodeError("the nodes' configurations differ: " + text);
    }
    barrier(); // nobody starts while another node may still be reading the keys
}

void NodeGroup::allGather(const void* send, size_t bytes, void* recv) {
    Impl& d = *m_d;
    const auto opts = torch::TensorOptions().dtype(torch::kUInt8);
    std::vector<at::Tensor> in{torch::from_blob(const_cast<void*>(send), {int64_t(bytes)}, opts).clone()};
    std::vector<std::vector<at::Tensor>> out(1);
    for (int k = 0; k < d.options.nodes; ++k)
        out[0].push_back(torch::empty({int64_t(bytes)}, opts));
    d.wait(d.group->allgather(out, in), "AllGather", uint64_t(bytes) * uint64_t(d.options.nodes - 1));
    for (int k = 0; k < d.options.nodes; ++k)
        std::memcpy(static_cast<char*>(recv) + size_t(k) * bytes, out[0][size_t(k)].data_ptr(), bytes);
}

void NodeGroup::allToAll(const void* send, size_t block, void* recv) {
    Impl& d = *m_d;
    const auto opts = torch::TensorOptions().dtype(torch::kUInt8);
    const int64_t total = int64_t(block) * d.options.nodes;
    at::Tensor in = torch::from_blob(const_cast<void*>(send), {total}, opts).clone();
    at::Tensor out = torch::empty({total}, opts);
    std::vector<int64_t> splits; // equal blocks
    d.wait(d.group->alltoall_base(out, in, splits, splits), "AllToAll",
           uint64_t(block) * uint64_t(d.options.nodes - 1));
    std::memcpy(recv, out.data_ptr(), size_t(total));
}

void NodeGroup::broadcast(void* data, size_t bytes, int rootNode) {
    Impl& d = *m_d;
    if (rootNode < 0 || rootNode >= d.options.nodes)
        throw std::invalid_argument(fmt::format("broadcast root node {} out of range", rootNode));
    std::vector<at::Tensor> t{
        torch::from_blob(data, {int64_t(bytes)}, torch::TensorOptions().dtype(torch::kUInt8))};
    c10d::BroadcastOptions bo;
    bo.rootRank = rootNode;
    d.wait(d.group->broadcast(t, bo), "Broadcast",
           d.options.nodeRank == rootNode ? uint64_t(bytes) * uint64_t(d.options.nodes - 1) : 0);
}

std::vector<int> NodeGroup::lostNodes() {
    Impl& d = *m_d;
    static std::atomic<int> failures{0};
    const int round = ++failures;
    auto key = [&](int k) { return fmt::format("ranksight/alive/{}/{}", round, k); };
    std::vector<int> lost;
    try {
        d.store->set(key(d.options.nodeRank), std::vector<uint8_t>{1});
        const auto deadline = std::chrono::steady_clock::now() + d.options.timeout;
        for (;;) {
            lost.clear();
            for (int k = 0; k < d.options.nodes; ++k)
                if (!d.store->check({key(k)}))
                    lost.push_back(k);
            if (lost.empty() || std::chrono::steady_clock::now() >= deadline) {
                d.lost.insert(lost.begin(), lost.end());
                return lost;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    } catch (const std::exception&) {
        return d.options.nodeRank == 0 ? std::vector<int>{} : std::vector<int>{0};
    }
}

void NodeGroup::barrier() {
    m_d->wait(m_d->group->barrier(), "Barrier", 0);
}

void NodeGroup::postReport(const std::string& bytes) {
    try {
        m_d->store->set(fmt::format("ranksight/report/{}", m_d->options.nodeRank),
                        std::vector<uint8_t>(bytes.begin(), bytes.end()));
    } catch (const std::exception&) {
        // node 0 is gone: nobody is left to read it
    }
}

std::optional<std::string> NodeGroup::takeReport(int node) {
    Impl& d = *m_d;
    const std::string key = fmt::format("ranksight/report/{}", node);
    // A lost node may still have reported before it ended (its cards failed, then it exited); one that did
    // not will not.
    const auto deadline = std::chrono::steady_clock::now() +
                          (d.lost.count(node) ? std::chrono::milliseconds(0) : d.options.timeout);
    try {
        while (!d.store->check({key})) {
            if (std::chrono::steady_clock::now() >= deadline)
                return std::nullopt;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        const auto raw = d.store->get(key);
        return std::string(raw.begin(), raw.end());
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

NodeGroup::Traffic NodeGroup::traffic() const {
    Traffic t;
    t.bytesSent = m_d->bytesSent;
    t.collectives = m_d->collectives;
    t.ms = double(m_d->micros) / 1000.0;
    return t;
}

} // namespace rs
