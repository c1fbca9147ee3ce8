// The emulated HCCL communicator. One mutex and condition variable with a generation counter: each
// synchronisation point is a cyclic barrier with a deadline. Data moves outside the lock; the
// synchronisation points order it (publish pointers -> reduce own chunk -> copy all chunks -> done).
#include "cluster/Communicator.h"

#include "util/Half.h"
#include "util/HalfConvert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace rs {

namespace {

constexpr size_t kBlock = 1024; // elements reduced per pass; the accumulator stays in L1

std::string joinRanks(const std::vector<int>& ranks) {
    std::string out;
    for (size_t i = 0; i < ranks.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    return out;
}

std::string timeoutMessage(const std::string& collective, const std::vector<int>& missing, int64_t sequence,
                           std::chrono::milliseconds timeout, const std::vector<int>& failed) {
    std::string message = fmt::format("HCCL {} timed out after {} ms waiting for rank(s) {} (call #{})",
                                      collective, timeout.count(), joinRanks(missing), sequence);
    if (!failed.empty())
        message += fmt::format("; rank(s) {} marked failed", joinRanks(failed));
    return message;
}

// NaN wins, so an all-reduced overflow check sees a NaN on any rank.
inline float maxPropagatingNan(float a, float b) {
    return (a < b || std::isnan(b)) ? b : a;
}

// Who is read, for a caller's Read: ranks[k] is the local rank ring[k] belongs to.
struct ReadHook {
    const Communicator::Read& read;
    const std::vector<int>& ranks;
};

// ring[k] points at the k-th rank in ring order; all are read at elements [begin, end), written to
// out[begin - outBase, end - outBase); each piece read is handed to hook, if any, while still in L1.
void reduceF32(const std::vector<const void*>& ring, float* out, size_t begin, size_t end, ReduceOp op,
               int worldSize, size_t outBase = 0, const ReadHook* hook = nullptr) {
    float acc[kBlock];
    const float divisor = static_cast<float>(worldSize);
    for (size_t b = begin; b < end; b += kBlock) {
        const size_t m = std::min(kBlock, end - b);
        const float* first = static_cast<const float*>(ring[0]) + b;
        std::copy(first, first + m, acc);
        if (hook)
            hook->read(hook->ranks[0], b, b + m, first);
        for (size_t k = 1; k < ring.size(); ++k) {
            const float* src = static_cast<const float*>(ring[k]) + b;
            if (hook)
                hook->read(hook->ranks[k], b, b + m, src);
            if (op == ReduceOp::Max) {
                for (size_t i = 0; i < m; ++i)
                    acc[i] = maxPropagatingNan(acc[i], src[i]);
            } else {
                for (size_t i = 0; i < m; ++i)
                    acc[i] += src[i];
            }
        }
        if (op == ReduceOp::Mean)
            for (size_t i = 0; i < m; ++i)
                acc[i] /= divisor;
        std::copy(acc, acc + m, out + (b - outBase));
    }
}

void loadHalves(const uint16_t* in, float* out, size_t m) {
    halvesToFloats(in, out, m);
}
void storeHalves(const float* in, uint16_t* out, size_t m) {
    floatsToHalves(in, out, m);
}

// Accumulates like fp16 hardware: every partial sum is rounded to half (float holds two halves' sum
// closely enough that rounding it once more to half is the correctly rounded fp16 sum).
void reduceF16(const std::vector<const void*>& ring, uint16_t* out, size_t begin, size_t end, ReduceOp op,
               int worldSize, size_t outBase = 0) {
    float acc[kBlock];
    float x[kBlock];
    const float divisor = static_cast<float>(worldSize);
    for (size_t b = begin; b < end; b += kBlock) {
        const size_t m = std::min(kBlock, end - b);
        loadHalves(static_cast<const uint16_t*>(ring[0]) + b, acc, m);
        for (size_t k = 1; k < ring.size(); ++k) {
            const uint16_t* src = static_cast<const uint16_t*>(ring[k]) + b;
            if (op == ReduceOp::Max) {
                loadHalves(src, x, m);
                for (size_t i = 0; i < m; ++i)
                    acc[i] = maxPropagatingNan(acc[i], x[i]);
            } else {
                accumulateHalves(acc, src, m);
            }
        }
        if (op == ReduceOp::Mean)
            for (size_t i = 0; i < m; ++i)
                acc[i] /= divisor;
        storeHalves(acc, out + (b - outBase), m);
    }
}

std::chrono::milliseconds clampTimeout(std::chrono::milliseconds timeout) {
    // A deadline of now + timeout must not overflow steady_clock.
    return std::clamp(timeout, std::chrono::milliseconds(0),
                      std::chrono::milliseconds(std::chrono::hours(24 * 365)));
}

} // namespace

const char* dtypeName(DType dtype) {
    return dtype == DType::F16 ? "fp16" : "fp32";
}

size_t dtypeSize(DType dtype) {
    return dtype == DType::F16 ? 2 : 4;
}

const char* reduceOpName(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum:
        return "sum";
    case ReduceOp::Mean:
        return "mean";
    case ReduceOp::Max:
        return "max";
    }
    return "?";
}

CollectiveTimeout::CollectiveTimeout(std::string collective_, std::vector<int> missingRanks_,
                                     int64_t sequence_, std::chrono::milliseconds timeout_,
                                     std::vector<int> failedRanks_, std::string detail_, bool nodeGone_)
    : std::runtime_error(timeoutMessage(collective_, missingRanks_, sequence_, timeout_, failedRanks_) +
                         (detail_.empty() ? std::string() : "; " + detail_))
    , collective(std::move(collective_))
    , missingRanks(std::move(missingRanks_))
    , sequence(sequence_)
    , timeout(timeout_)
    , failedRanks(std::move(failedRanks_))
    , detail(std::move(detail_))
    , nodeGone(nodeGone_) {}

CollectiveCancelled::CollectiveCancelled(std::string collective_, int64_t sequence_)
    : std::runtime_error(fmt::format("HCCL {} cancelled (call #{})", collective_, sequence_))
    , collective(std::move(collective_))
    , sequence(sequence_) {}

Communicator::Communicator(int worldSize, std::chrono::milliseconds timeout)
    : m_worldSize(worldSize)
    , m_timeout(clampTimeout(timeout)) {
    if (worldSize < 1)
        throw std::invalid_argument(
            fmt::format("Communicator: worldSize must be at least 1, got {}", worldSize));
    m_present.assign(static_cast<size_t>(worldSize), 0);
    m_failed.assign(static_cast<size_t>(worldSize), 0);
    m_computing.assign(static_cast<size_t>(worldSize), 0);
    m_computedAt.assign(static_cast<size_t>(worldSize), std::chrono::steady_clock::time_point::min());
    m_sources.assign(static_cast<size_t>(worldSize), nullptr);
    m_results.assign(static_cast<size_t>(worldSize), nullptr);
}

std::chrono::milliseconds Communicator::timeout() const {
    std::lock_guard lock(m_mutex);
    return m_timeout;
}

void Communicator::setTimeout(std::chrono::milliseconds timeout) {
    std::lock_guard lock(m_mutex);
    m_timeout = clampTimeout(timeout);
}

void Communicator::cancel() {
    std::lock_guard lock(m_mutex);
    m_cancelled = true;
    m_cv.notify_all();
}

void Communicator::markFailed(int rank) {
    checkRank(rank, "markFailed");
    std::lock_guard lock(m_mutex);
    m_failed[static_cast<size_t>(rank)] = 1;
}

bool Communicator::broken() const {
    std::lock_guard lock(m_mutex);
    return m_broken.has_value();
}

void Communicator::checkRank(int rank, const char* what) const {
    if (rank < 0 || rank >= m_worldSize)
        throw std::invalid_argument(
            fmt::format("HCCL {}: rank {} is outside 0..{}", what, rank, m_worldSize - 1));
}

void Communicator::setServers(int servers) {
    if (servers < 1 || m_worldSize % servers != 0)
        throw std::invalid_argument(
            fmt::format("Communicator: {} servers do not split {} ranks evenly", servers, m_worldSize));
    m_servers = servers;
}

void Communicator::setNodes(int nodes, int nodeRank, NodeAllGather allGather, NodeAllToAll allToAll,
                            NodeLost lost) {
    if (nodes < 1 || nodeRank < 0 || nodeRank >= nodes || (nodes > 1 && (!allGather || !allToAll)))
        throw std::invalid_argument(
            fmt::format("Communicator: node {} of {} (or no exchange)", nodeRank, nodes));
    m_nodes = nodes;
    m_nodeRank = nodeRank;
    m_nodeAllGather = std::move(allGather);
    m_nodeAllToAll = std::move(allToAll);
    m_nodeLost = std::move(lost);
}

namespace {

// Elements [b, e) of the result: copied from src into data (none when src is null: data already holds them)
// and, for a reader, handed over in 8 KiB pieces, each right after its copy while still in L1.
void copyDelivering(void* data, const void* src, size_t b, size_t e, size_t element,
                    const Communicator::Delivered* delivered) {
    const size_t piece = delivered ? 8192 / element : e - b;
    for (size_t at = b; at < e; at += piece) {
        const size_t upTo = std::min(e, at + piece);
        if (src)
            std::memcpy(static_cast<char*>(data) + at * element, static_cast<const char*>(src) + at * element,
                        (upTo - at) * element);
        if (delivered)
            (*delivered)(at, upTo);
    }
}

} // namespace

void Communicator::allReduce(int rank, void* data, size_t count, DType dtype, ReduceOp op) {
    allReduce(rank, data, data, count, dtype, op);
}

void Communicator::allReduce(int rank, const void* in, void* out, size_t count, DType dtype, ReduceOp op) {
    allReduce(rank, in, out, count, dtype, op, Delivered{});
}

void Communicator::allReduce(int rank, const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                             const Delivered& delivered) {
    allReduce(rank, in, out, count, dtype, op, delivered, Read{});
}

void Communicator::allReduce(int rank, const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                             const Delivered& delivered, const Read& read) {
    checkRank(rank, "AllReduce");
    if (count > 0 && (!in || !out))
        throw std::invalid_argument(fmt::format("HCCL AllReduce: rank {} passed a null buffer", rank));
    if (read && dtype != DType::F32)
        throw std::invalid_argument(fmt::format("HCCL AllReduce: rank {} asked to read a {} payload as it is "
                                                "reduced; only fp32 is read",
                                                rank, dtypeName(dtype)));
    const bool hierarchical = m_servers > 1 || m_nodes > 1;
    if (hierarchical && in != out && count > 0) { // its stages reduce in place
        std::memcpy(out, in, count * dtypeSize(dtype));
        in = out;
    }
    Call call{"AllReduce", rank, count, static_cast<int>(dtype), static_cast<int>(op), -1, 0};
    std::unique_lock lock(m_mutex);
    m_sources[static_cast<size_t>(rank)] = in;
    m_results[static_cast<size_t>(rank)] = out;
    sync(lock, call, true);
    if (hierarchical) {
        allReduceHierarchical(lock, call, out, count, dtype, op, delivered ? &delivered : nullptr,
                              read ? &read : nullptr);
        return;
    }
    lock.unlock();
    // reduce-scatter: this rank's chunk of every source, into out
    reduceChunk(rank, out, count, dtype, op, read ? &read : nullptr);
    lock.lock();
    sync(lock, call, false);
    lock.unlock();
    // all-gather: the other ranks' reduced chunks
    gatherChunks(rank, out, count, dtype, delivered ? &delivered : nullptr);
    lock.lock();
    sync(lock, call, false); // nobody reads this rank's buffers any more
    finish(call);
}

// Called with every rank arrived (the arrival sync done) and the lock held.
void Communicator::allReduceHierarchical(std::unique_lock<std::mutex>& lock, Call& call, void* data,
                                         size_t count, DType dtype, ReduceOp op, const Delivered* delivered,
                                         const Read* read) {
    const size_t c = size_t(m_worldSize / m_servers), element = dtypeSize(dtype);
    const size_t rank = size_t(call.rank), server = rank / c, j = rank % c;
    const int world = m_worldSize * m_nodes; // Mean divides by every rank of the run
    const ReduceOp partial = op == ReduceOp::Max ? ReduceOp::Max : ReduceOp::Sum;
    const size_t begin = j * count / c, end = (j + 1) * count / c;
    auto reduce = [&](const std::vector<const void*>& ring, void* out, size_t b, size_t e, ReduceOp o,
                      size_t outBase = 0) {
        if (b == e)
            return;
        if (dtype == DType::F32)
            reduceF32(ring, static_cast<float*>(out), b, e, o, world, outBase);
        else
            reduceF16(ring, static_cast<uint16_t*>(out), b, e, o, world, outBase);
    };
    lock.unlock();
    // 1. Inside the server: member j sums chunk j over the server's members in ring order from j+1.
    {
        std::vector<const void*> ring(c);
        std::vector<int> ranks(c);
        for (size_t k = 0; k < c; ++k) {
            ranks[k] = static_cast<int>(server * c + (j + 1 + k) % c);
            ring[k] = m_sources[size_t(ranks[k])];
        }
        if (read && begin < end) { // the members' inputs, read as they are summed (an F32 payload)
            const ReadHook hook{*read, ranks};
            reduceF32(ring, static_cast<float*>(data), begin, end, partial, world, 0, &hook);
        } else {
            reduce(ring, data, begin, end, partial);
        }
    }
    lock.lock();
    sync(lock, call, false);
    if (m_nodes > 1) {
        // 2a. Across nodes: rank 0 assembles each of this node's S server sums in N chunks (padded to one
        // size), sends chunk k of every server to node k, sums the chunk it owns over every server of the run
        // in server order (node 0's servers first, as one process adds its servers), all-gathers the summed
        // chunks and leaves the result for every local rank.
        nodeStage(lock, call, [&] {
            const size_t N = size_t(m_nodes), S = size_t(m_servers), chunk = (count + N - 1) / N;
            const size_t part = chunk * element, block = S * part;
            std::vector<char> mine(N * block, 0);
            for (size_t s = 0; s < S; ++s)
                for (size_t m = 0; m < c; ++m) {
                    const char* src = static_cast<const char*>(m_sources[s * c + m]);
                    // Elements [b, e) of server s's sum sit in member m's buffer; element i goes to node i /
                    // chunk, sub-block s, offset i % chunk.
                    const size_t b = m * count / c, e = (m + 1) * count / c;
                    for (size_t i = b; i < e;) {
                        const size_t k = i / chunk, upto = std::min(e, (k + 1) * chunk);
                        std::memcpy(mine.data() + k * block + s * part + (i - k * chunk) * element,
                                    src + i * element, (upto - i) * element);
                        i = upto;
                    }
                }
            std::vector<char> parts(N * block);
            m_nodeAllToAll(mine.data(), block, parts.data());
            std::vector<const void*> ring(N * S);
            for (size_t k = 0; k < N; ++k)
                for (size_t s = 0; s < S; ++s)
                    ring[k * S + s] = parts.data() + k * block + s * part;
            std::vector<char> owned(part);
            reduce(ring, owned.data(), 0, chunk, op);
            m_nodeResult.resize(N * part);
            m_nodeAllGather(owned.data(), part, m_nodeResult.data());
        });
        lock.unlock();
        copyDelivering(data, m_nodeResult.data(), 0, count, element, delivered);
        lock.lock();
        sync(lock, call, false); // nobody reads the node result any more
        finish(call);
        return;
    }
    lock.unlock();
    // 2b. Across the servers of this process: member j adds chunk j of every server in server order.
    std::vector<char> total((end - begin) * element);
    {
        std::vector<const void*> ring(static_cast<size_t>(m_servers));
        for (size_t s = 0; s < size_t(m_servers); ++s)
            ring[s] = m_sources[s * c + j]; // its chunk j holds server s's sum
        reduce(ring, total.data(), begin, end, op, begin);
    }
    lock.lock();
    sync(lock, call, false); // every member has read the others' server sums
    lock.unlock();
    if (!total.empty())
        std::memcpy(static_cast<char*>(data) + begin * element, total.data(), total.size());
    lock.lock();
    sync(lock, call, false);
    lock.unlock();
    // 3. Every member copies the other chunks of its server (its own in its turn, for a reader).
    for (size_t m = 0; m < c; ++m)
        copyDelivering(data, m == j ? nullptr : m_sources[server * c + m], m * count / c, (m + 1) * count / c,
                       element, delivered);
    lock.lock();
    sync(lock, call, false);
    finish(call);
}

void Communicator::nodeStage(std::unique_lock<std::mutex>& lock, Call& call,
                             const std::function<void()>& exchange) {
    // Rank 0 is busy for the others while it exchanges (bounded by the node group's own timeout and its
    // lost-node check): the local ranks waiting for it must not time out on it.
    if (call.rank == 0)
        m_computing[0] = 1;
    lock.unlock();
    bool failed = false;
    std::string what;
    std::vector<int> lost;
    if (call.rank == 0) {
        try {
            exchange();
        } catch (const std::exception& e) {
            failed = true;
            what = std::string(e.what()).substr(0, 200);
            if (m_nodeLost) {
                try {
                    lost = m_nodeLost();
                } catch (const std::exception&) {
                    // Nobody to ask: the exchange's own error is all there is.
                }
            }
        }
    }
    lock.lock();
    if (call.rank == 0) {
        m_computing[0] = 0;
        m_computedAt[0] = std::chrono::steady_clock::now();
    }
    if (failed && !m_broken) {
        // Lost nodes read like ranks that never arrived: every local rank throws the same CollectiveTimeout
        // naming the lost node's ranks (sync() below throws it, here and in the ranks waiting there).
        std::vector<int> missing;
        std::string nodes;
        for (int k : lost) {
            nodes += (nodes.empty() ? "" : ", ") + std::to_string(k);
            for (int r = 0; r < m_worldSize; ++r)
                missing.push_back(k * m_worldSize + r);
        }
        if (missing.empty())
            m_broken = Broken{
                false,
                fmt::format("HCCL {} across nodes (node {} of {}): {}", call.name, m_nodeRank, m_nodes, what),
                call.name,
                {},
                {},
                call.sequence,
                m_timeout,
                ""};
        else
            m_broken = Broken{true,      "",
                              call.name, missing,
                              {},        call.sequence,
                              m_timeout, fmt::format("node {} is gone ({})", nodes, what),
                              true};
        m_cv.notify_all();
    }
    sync(lock, call, false);
}

void Communicator::broadcast(int rank, void* data, size_t bytes, int root) {
    checkRank(rank, "Broadcast");
    if (root < 0 || root >= m_worldSize * m_nodes)
        throw std::invalid_argument(
            fmt::format("HCCL Broadcast root: rank {} is outside 0..{}", root, m_worldSize * m_nodes - 1));
    if (bytes > 0 && !data)
        throw std::invalid_argument(fmt::format("HCCL Broadcast: rank {} passed a null buffer", rank));
    Call call{"Broadcast", rank, bytes, -1, -1, root, 0};
    std::unique_lock lock(m_mutex);
    m_sources[static_cast<size_t>(rank)] = data;
    sync(lock, call, true);
    if (m_nodes > 1) {
        // The root's node sends its buffer to every node (an all-gather of one buffer each, the root's kept),
        // then every local rank copies it.
        const int rootNode = root / m_worldSize, localRoot = root % m_worldSize;
        nodeStage(lock, call, [&] {
            std::vector<char> all(size_t(m_nodes) * bytes);
            const void* mine = rootNode == m_nodeRank ? m_sources[size_t(localRoot)] : data;
            m_nodeAllGather(mine, bytes, all.data());
            m_nodeResult.assign(all.begin() + std::ptrdiff_t(size_t(rootNode) * bytes),
                                all.begin() + std::ptrdiff_t(size_t(rootNode + 1) * bytes));
        });
        lock.unlock();
        if (bytes > 0 && !(m_nodeRank == rootNode && rank == localRoot))
            std::memcpy(data, m_nodeResult.data(), bytes);
        lock.lock();
        sync(lock, call, false);
        finish(call);
        return;
    }
    lock.unlock();
    const void* source = m_sources[static_cast<size_t>(root)];
    if (rank != root && bytes > 0 && source != data)
        std::memcpy(data, source, bytes);
    lock.lock();
    sync(lock, call, false);
    finish(call);
}

void Communicator::allGather(int rank, const void* send, size_t bytes, void* recv) {
    checkRank(rank, "AllGather");
    if (bytes > 0 && (!send || !recv))
        throw std::invalid_argument(fmt::format("HCCL AllGather: rank {} passed a null buffer", rank));
    Call call{"AllGather", rank, bytes, -1, -1, -1, 0};
    std::unique_lock lock(m_mutex);
    m_sources[static_cast<size_t>(rank)] = send;
    sync(lock, call, true);
    if (m_nodes > 1) {
        // Rank 0 packs this node's ranks' blocks, all-gathers them across nodes (global rank order), and
        // every local rank copies the whole.
        const size_t block = size_t(m_worldSize) * bytes;
        nodeStage(lock, call, [&] {
            std::vector<char> mine(block);
            for (int i = 0; i < m_worldSize; ++i)
                if (bytes > 0)
                    std::memcpy(mine.data() + size_t(i) * bytes, m_sources[size_t(i)], bytes);
            m_nodeResult.resize(size_t(m_nodes) * block);
            m_nodeAllGather(mine.data(), block, m_nodeResult.data());
        });
        lock.unlock();
        if (!m_nodeResult.empty())
            std::memcpy(recv, m_nodeResult.data(), m_nodeResult.size());
        lock.lock();
        sync(lock, call, false);
        finish(call);
        return;
    }
    lock.unlock();
    if (bytes > 0) {
        for (int i = 0; i < m_worldSize; ++i) {
            const void* source = m_sources[static_cast<size_t>(i)];
            char* target = static_cast<char*>(recv) + static_cast<size_t>(i) * bytes;
            if (source != target) // in place: send already sits at this rank's slot
                std::memcpy(target, source, bytes);
        }
    }
    lock.lock();
    sync(lock, call, false);
    finish(call);
}

std::pair<size_t, size_t> Communicator::chunkOf(int rank, size_t count) const {
    const auto world = static_cast<size_t>(m_worldSize) * static_cast<size_t>(m_nodes);
    const auto g =
        static_cast<size_t>(m_nodeRank) * static_cast<size_t>(m_worldSize) + static_cast<size_t>(rank);
    return {g * count / world, (g + 1) * count / world};
}

void Communicator::allGatherChunks(int rank, void* data, size_t count, DType dtype) {
    checkRank(rank, "AllGather");
    if (count > 0 && !data)
        throw std::invalid_argument(fmt::format("HCCL AllGather: rank {} passed a null buffer", rank));
    const size_t element = dtypeSize(dtype);
    Call call{"AllGather", rank, count * element, -1, -1, -1, 0};
    std::unique_lock lock(m_mutex);
    m_results[static_cast<size_t>(rank)] = data;
    sync(lock, call, true);
    if (m_nodes > 1) {
        // Rank 0 packs this node's chunks (one contiguous span of the run's), all-gathers the spans across
        // nodes, padded to the longest, and every local rank copies every node's span into its data.
        const auto world = static_cast<size_t>(m_worldSize) * static_cast<size_t>(m_nodes);
        const auto w = static_cast<size_t>(m_worldSize);
        auto span = [&](size_t node) {
            return std::pair<size_t, size_t>{node * w * count / world, (node + 1) * w * count / world};
        };
        size_t longest = 0;
        for (size_t k = 0; k < static_cast<size_t>(m_nodes); ++k)
            longest = std::max(longest, span(k).second - span(k).first);
        const size_t block = longest * element;
        nodeStage(lock, call, [&] {
            std::vector<char> mine(block);
            const size_t base = span(static_cast<size_t>(m_nodeRank)).first;
            for (int i = 0; i < m_worldSize; ++i) {
                const auto [b, e] = chunkOf(i, count);
                if (e > b)
                    std::memcpy(mine.data() + (b - base) * element,
                                static_cast<const char*>(m_results[size_t(i)]) + b * element,
                                (e - b) * element);
            }
            m_nodeResult.resize(static_cast<size_t>(m_nodes) * block);
            m_nodeAllGather(mine.data(), block, m_nodeResult.data());
        });
        lock.unlock();
        for (size_t k = 0; k < static_cast<size_t>(m_nodes) && block > 0; ++k) {
            const auto [b, e] = span(k);
            std::memcpy(static_cast<char*>(data) + b * element, m_nodeResult.data() + k * block,
                        (e - b) * element);
        }
        lock.lock();
        sync(lock, call, false);
        finish(call);
        return;
    }
    lock.unlock();
    gatherChunks(rank, data, count, dtype, nullptr); // one process: the flat ring's chunks, any servers
    lock.lock();
    sync(lock, call, false); // nobody reads this rank's buffer any more
    finish(call);
}

void Communicator::barrier(int rank) {
    checkRank(rank, "Barrier");
    Call call{"Barrier", rank, 0, -1, -1, -1, 0};
    std::unique_lock lock(m_mutex);
    sync(lock, call, true);
    if (m_nodes > 1)
        nodeStage(lock, call, [&] {
            char one = 1;
            std::vector<char> all(static_cast<size_t>(m_nodes));
            m_nodeAllGather(&one, 1, all.data());
        });
    finish(call);
}

void Communicator::sync(std::unique_lock<std::mutex>& lock, Call& call, bool arrival) {
    if (m_broken)
        throwBroken();
    const size_t self = static_cast<size_t>(call.rank);
    if (arrival) {
        call.sequence = m_callsStarted + 1;
        if (m_cancelled)
            throw CollectiveCancelled(call.name, call.sequence);
        if (m_failed[self])
            throw std::logic_error(fmt::format("HCCL {}: rank {} was marked failed and can no longer take "
                                               "part in collectives",
                                               call.name, call.rank));
        std::optional<std::string> problem;
        if (m_present[self])
            problem =
                fmt::format("HCCL {} call #{}: rank {} arrived twice; two threads are using the same rank",
                            call.name, call.sequence, call.rank);
        else if (m_arrived == 0)
            m_current = call;
        else
            problem = mismatch(m_current, call);
        if (problem) {
            m_broken = Broken{false, *problem, call.name, {}, {}, call.sequence, m_timeout, {}};
            m_cv.notify_all();
            throw std::logic_error(*problem);
        }
    }
    m_present[self] = 1;
    if (++m_arrived == m_worldSize) {
        std::fill(m_present.begin(), m_present.end(), 0);
        m_arrived = 0;
        ++m_generation;
        if (arrival)
            ++m_callsStarted;
        m_cv.notify_all();
        return;
    }
    const uint64_t generation = m_generation;
    auto deadline = std::chrono::steady_clock::now() + m_timeout;
    for (;;) {
        bool timedOut = m_cv.wait_until(lock, deadline) == std::cv_status::timeout;
        if (timedOut && m_generation == generation && !m_broken) {
            // Missing ranks that are computing, or stopped computing recently, are slow, not gone.
            const auto now = std::chrono::steady_clock::now();
            auto lastSeen = std::chrono::steady_clock::time_point::min();
            for (size_t r = 0; r < m_present.size(); ++r)
                if (!m_present[r])
                    lastSeen = std::max(lastSeen, m_computing[r] ? now : m_computedAt[r]);
            if (lastSeen != std::chrono::steady_clock::time_point::min() && lastSeen + m_timeout > now) {
                deadline = lastSeen + m_timeout;
                continue;
            }
        }
        if (m_generation != generation)
            return;
        if (m_broken)
            throwBroken();
        // Once every rank has arrived, the remaining synchronisation points only wait for memcpy-sized
        // work, so they are not cancellable: a rank must not free a buffer another rank still reads.
        if (arrival && m_cancelled)
            throw CollectiveCancelled(call.name, call.sequence);
        if (timedOut) {
            // Ranks are named as in the whole run: on node k of a multi-node run, local rank r is k * size +
            // r.
            const int base = m_nodeRank * m_worldSize;
            Broken broken{true,      "",
                          call.name, {},
                          {},        call.sequence,
                          m_timeout, m_nodes > 1 ? fmt::format("all on node {}", m_nodeRank) : std::string()};
            for (int r = 0; r < m_worldSize; ++r) {
                if (m_present[static_cast<size_t>(r)])
                    continue;
                broken.missingRanks.push_back(base + r);
                if (m_failed[static_cast<size_t>(r)])
                    broken.failedRanks.push_back(base + r);
            }
            broken.message = timeoutMessage(broken.collective, broken.missingRanks, broken.sequence,
                                            broken.timeout, broken.failedRanks);
            m_broken = std::move(broken);
            m_cv.notify_all();
            throwBroken();
        }
    }
}

void Communicator::setComputing(int rank, bool computing) {
    checkRank(rank, "setComputing");
    std::lock_guard lock(m_mutex);
    m_computing[static_cast<size_t>(rank)] = computing ? 1 : 0;
    if (!computing)
        m_computedAt[static_cast<size_t>(rank)] = std::chrono::steady_clock::now();
}

void Communicator::finish(const Call& call) {
    if (m_cancelled)
        throw CollectiveCancelled(call.name, call.sequence);
}

std::optional<std::string> Communicator::mismatch(const Call& first, const Call& other) const {
    const std::string head =
        fmt::format("HCCL call #{}: rank {} called {}", other.sequence, other.rank, other.name);
    if (std::strcmp(first.name, other.name) != 0)
        return fmt::format("{} but rank {} called {}; every rank must call the same collectives in the same "
                           "order",
                           head, first.rank, first.name);
    const char* unit = std::strcmp(other.name, "AllReduce") == 0 ? "count" : "bytes";
    if (first.size != other.size)
        return fmt::format("{} with {} {} but rank {} passed {} {}; every rank must pass the same {}", head,
                           unit, other.size, first.rank, unit, first.size, unit);
    if (first.dtype != other.dtype)
        return fmt::format("{} with dtype {} but rank {} passed {}", head, dtypeName(DType(other.dtype)),
                           first.rank, dtypeName(DType(first.dtype)));
    if (first.op != other.op)
        return fmt::format("{} with op {} but rank {} passed {}", head, reduceOpName(ReduceOp(other.op)),
                           first.rank, reduceOpName(ReduceOp(first.op)));
    if (first.root != other.root)
        return fmt::format("{} with root {} but rank {} passed root {}", head, other.root, first.rank,
                           first.root);
    return std::nullopt;
}

void Communicator::throwBroken() const {
    const Broken& b = *m_broken;
    if (b.timedOut)
        throw CollectiveTimeout(b.collective, b.missingRanks, b.sequence, b.timeout, b.failedRanks, b.detail,
                                b.nodeGone);
    throw std::logic_error(b.message);
}

void Communicator::reduceChunk(int rank, void* data, size_t count, DType dtype, ReduceOp op,
                               const Read* read) const {
    const size_t n = static_cast<size_t>(m_worldSize);
    const size_t r = static_cast<size_t>(rank);
    const size_t begin = r * count / n;
    const size_t end = (r + 1) * count / n;
    if (begin == end)
        return;
    std::vector<const void*> ring(n); // (r+1)%N first, this rank last
    std::vector<int> ranks(n);
    for (size_t k = 0; k < n; ++k) {
        ranks[k] = static_cast<int>((r + 1 + k) % n);
        ring[k] = m_sources[size_t(ranks[k])];
    }
    const std::optional<ReadHook> hook =
        read ? std::optional<ReadHook>(ReadHook{*read, ranks}) : std::nullopt;
    if (dtype == DType::F32)
        reduceF32(ring, static_cast<float*>(data), begin, end, op, m_worldSize, 0, hook ? &*hook : nullptr);
    else
        reduceF16(ring, static_cast<uint16_t*>(data), begin, end, op, m_worldSize);
}

void Communicator::gatherChunks(int rank, void* data, size_t count, DType dtype,
                                const Delivered* delivered) const {
    const size_t n = static_cast<size_t>(m_worldSize);
    for (size_t j = 0; j < n; ++j)
        copyDelivering(data, j == static_cast<size_t>(rank) ? nullptr : m_results[j], j * count / n,
                       (j + 1) * count / n, dtypeSize(dtype), delivered);
}

} // namespace rs
