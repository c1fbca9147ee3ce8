// HCCL emulation among the worker threads of one process: every emulated card is a thread, and each
// collective is called by every rank's thread with its own buffer. AllReduce is a ring reduce-scatter +
// all-gather with a fixed summation order, so the result is bitwise identical on every rank and from run
// to run. Every wait has a timeout that names the ranks that never arrived; nothing hangs.
//
// Callers that limit compute with ComputeSlots must release their slot before calling a collective:
// a rank waiting here while holding a slot can starve the rank it is waiting for.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rs {

enum class DType { F32, F16 }; // F16 payload: uint16_t IEEE binary16 bits (util/Half.h)
enum class ReduceOp { Sum, Mean, Max };

const char* dtypeName(DType dtype);    // "fp32", "fp16"
size_t dtypeSize(DType dtype);         // bytes per element
const char* reduceOpName(ReduceOp op); // "sum", "mean", "max"

// Not every rank arrived at a collective within the timeout. what():
// "HCCL AllReduce timed out after 30000 ms waiting for rank(s) 3 (call #17)"
class CollectiveTimeout : public std::runtime_error {
public:
    CollectiveTimeout(std::string collective, std::vector<int> missingRanks, int64_t sequence,
                      std::chrono::milliseconds timeout, std::vector<int> failedRanks = {},
                      std::string detail = {}, bool nodeGone = false);

    std::string collective;        // "AllReduce", "Broadcast", "AllGather", "Barrier"
    std::vector<int> missingRanks; // ranks that had not arrived at call `sequence`, ascending
    int64_t sequence;              // 1-based index of the collective call on this communicator
    std::chrono::milliseconds timeout;
    std::vector<int> failedRanks; // the missing ranks that were marked failed (markFailed)
    std::string detail;           // appended after "; ", e.g. which node is gone and what gloo said
    bool nodeGone;                // the missing ranks are a node process that is gone (multi-node)
};

// The communicator was cancelled (Stop). what(): "HCCL AllReduce cancelled (call #17)"
class CollectiveCancelled : public std::runtime_error {
public:
    CollectiveCancelled(std::string collective, int64_t sequence);

    std::string collective;
    int64_t sequence;
};

class Communicator {
public:
    explicit Communicator(int worldSize, std::chrono::milliseconds timeout = std::chrono::seconds(30));
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    int worldSize() const { return m_worldSize; }
    std::chrono::milliseconds timeout() const;
    void setTimeout(std::chrono::milliseconds timeout);

    // In place. count elements of dtype. Rank r reduces elements [r*count/N, (r+1)*count/N) in ring order
    // (r+1)%N, (r+2)%N, ..., r; every rank then copies all chunks. F16 rounds to half after every add, so
    // sums past 65504 become inf; Mean divides the final sum by N; Max propagates NaN. NaN payloads
    // are not preserved.
    void allReduce(int rank, void* data, size_t count, DType dtype, ReduceOp op);
    // Out of place: `in` is left as it was and the result lands in `out` (the same bits as in place). The
    // flat ring reads every rank's `in` and writes only `out`, so the caller keeps its local payload for
    // free (the flight recorder's local gradient); with servers or nodes `in` is first copied to `out`.
    void allReduce(int rank, const void* in, void* out, size_t count, DType dtype, ReduceOp op);
    // Out of place, and `delivered(begin, end)` is called on this rank's thread for ascending, adjacent
    // ranges of `out` that cover [0, count) once each, as soon as they hold their final values: a few KiB at
    // a time as the last copy writes them (still in L1), so the caller can read the result in the
    // reduction's last pass. The last copy is the all-gather on the flat ring, the copy of the server's other
    // chunks with servers, the copy of the node exchange's result with nodes.
    using Delivered = std::function<void(size_t begin, size_t end)>;
    void allReduce(int rank, const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                   const Delivered& delivered);
    // And `read(source, begin, end, data)` is called on a reducing rank's thread as the reduce-scatter reads
    // elements [begin, end) of `source`'s input (a local rank; data points at its element begin), a few KiB
    // at a time while still in L1, so the caller can take statistics of every rank's input in the reduction's
    // own read. Every element of every rank's input is read once, by the rank that reduces its chunk (with
    // servers, a member of the source's server), and all of them before the call returns on any rank. F32
    // only (std::invalid_argument otherwise).
    using Read = std::function<void(int source, size_t begin, size_t end, const void* data)>;
    void allReduce(int rank, const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                   const Delivered& delivered, const Read& read);

    // Servers and nodes (issue 12). With more than one server, or with other nodes, AllReduce is hierarchical
    // like HCCL's: inside each server its members reduce the server's chunks (the ring above, over the
    // server's members, summing), then the server sums are added in server order (server 0 first; across
    // nodes through the node exchange, in node order), Mean divides by every rank of the run, and every
    // member takes the result. So N nodes x c cards and one process with N servers of c give the same bits.
    // servers: the ranks split into that many equal contiguous groups (worldSize must divide by it). With
    // nodes, these are this node's servers, and the run's servers are added in global order (node 0's
    // first), so a node process holding several servers gives the same bits too.
    void setServers(int servers);
    // This process's ranks are one node of `nodes` (this one is nodeRank); allGather sends `bytes` and
    // receives nodes x bytes, node k's at offset k x bytes (NodeGroup::allGather). Called by rank 0's thread
    // while the other ranks wait; its exceptions reach every rank. With nodes, `rank` arguments stay local
    // (0..worldSize-1), a Broadcast root is a rank of the whole run (node root / worldSize), and AllGather's
    // recv holds every rank of the run (nodes x worldSize x bytes, in global rank order).
    using NodeAllGather = std::function<void(const void* send, size_t bytes, void* recv)>;
    // After a failed exchange: the nodes that are gone (NodeGroup::lostNodes). Their ranks are then reported
    // like ranks that never arrived (CollectiveTimeout naming them and their node), so the run file's TIMEOUT
    // events and diagnosis name the lost cards, not this node's own.
    using NodeLost = std::function<std::vector<int>()>;
    // send holds nodes blocks of `block` bytes, block k for node k; recv receives nodes blocks, block k from
    // node k (NodeGroup::allToAll). With it, the all-reduce's cross-node stage is a reduce-scatter (each node
    // sums one chunk over the nodes in node order) and an all-gather of the chunks: 2 (N - 1) / N of the
    // payload leaves each node, like a ring, instead of the N - 1 payloads an all-gather of whole sums sends,
    // and the sum of every element keeps the node order, so the bits do not change.
    using NodeAllToAll = std::function<void(const void* send, size_t block, void* recv)>;
    void setNodes(int nodes, int nodeRank, NodeAllGather allGather, NodeAllToAll allToAll,
                  NodeLost lost = {});
    // The chunk of `count` elements that `rank` (a local rank) owns: [g*count/W, (g+1)*count/W) for its
    // global rank g of the run's W ranks, the chunk a flat ring's reduce-scatter leaves on it.
    std::pair<size_t, size_t> chunkOf(int rank, size_t count) const;
    // In place: each rank's data holds its own chunk (chunkOf); afterwards every rank's data holds every
    // rank's chunk, bit for bit as its owner wrote it. The weights' all-gather of the sharded update
    // (optimizer_shard): each rank updates its chunk, then all take the others'. Its errors read as
    // "HCCL AllGather ...".
    void allGatherChunks(int rank, void* data, size_t count, DType dtype);
    // bytes from root's data into every other rank's data.
    void broadcast(int rank, void* data, size_t bytes, int root);
    // recv holds worldSize * bytes: rank i's send at offset i * bytes.
    void allGather(int rank, const void* send, size_t bytes, void* recv);
    void barrier(int rank);

    // Wakes every waiter now; current and later calls throw CollectiveCancelled. A call whose ranks have
    // all arrived finishes moving data first (so no rank reads a buffer another rank already released),
    // then throws. Permanent: a new run makes a new communicator.
    void cancel();
    bool cancelled() const { return m_cancelled.load(); }
    // That rank will never arrive again (its card died). Others still time out, and the timeout says so.
    void markFailed(int rank);
    // After a timeout or a mismatched call every later call throws the same error at once.
    bool broken() const;

    // Emulated cards share the machine's cores, so a card's compute (and its wait for a core) can take far
    // longer than on an Ascend card. A rank marked computing is not late: the timeout clock counts only time
    // during which some missing rank is neither computing nor queued for a core (dead, hung, elsewhere).
    void setComputing(int rank, bool computing);

    // Every wait failing with a timeout, a mismatch, or a cancel throws: CollectiveTimeout,
    // std::logic_error (ranks disagree on the collective, count, dtype, op or root), CollectiveCancelled.
    // Bad arguments (rank or root out of range, null buffer) throw std::invalid_argument.

private:
    struct Call {
        const char* name = "";
        int rank = 0;
        size_t size = 0; // elements for AllReduce, bytes otherwise
        int dtype = -1;
        int op = -1;
        int root = -1;
        int64_t sequence = 0; // set on arrival
    };
    struct Broken {
        bool timedOut = false; // else a mismatch (logic error)
        std::string message;
        std::string collective;
        std::vector<int> missingRanks;
        std::vector<int> failedRanks;
        int64_t sequence = 0;
        std::chrono::milliseconds timeout{0};
        std::string detail;
        bool nodeGone = false;
    };

    void checkRank(int rank, const char* what) const;
    // Waits until every rank reached this synchronisation point. `arrival` marks the first one of a call:
    // it checks that the ranks agree and it can be cancelled; later ones only wait out data movement.
    void sync(std::unique_lock<std::mutex>& lock, Call& call, bool arrival);
    void finish(const Call& call); // throws CollectiveCancelled if cancel() came during the call
    std::optional<std::string> mismatch(const Call& first, const Call& other) const;
    [[noreturn]] void throwBroken() const;
    void reduceChunk(int rank, void* data, size_t count, DType dtype, ReduceOp op, const Read* read) const;
    void gatherChunks(int rank, void* data, size_t count, DType dtype, const Delivered* delivered) const;
    void allReduceHierarchical(std::unique_lock<std::mutex>& lock, Call& call, void* data, size_t count,
                               DType dtype, ReduceOp op, const Delivered* delivered, const Read* read);
    // With the lock held and every local rank arrived: rank 0's thread runs the cross-node exchange while the
    // others wait, then all meet again; an exchange that threw breaks the communicator on every rank.
    void nodeStage(std::unique_lock<std::mutex>& lock, Call& call, const std::function<void()>& exchange);

    const int m_worldSize;
    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::atomic<bool> m_cancelled{false};
    // Guarded by m_mutex:
    std::chrono::milliseconds m_timeout;
    std::optional<Broken> m_broken;
    uint64_t m_generation = 0; // bumps when every rank reached a synchronisation point
    int m_arrived = 0;
    std::vector<char> m_present; // per rank: arrived at the current synchronisation point
    std::vector<char> m_failed;
    std::vector<char> m_computing; // per rank
    std::vector<std::chrono::steady_clock::time_point>
        m_computedAt; // per rank: when it last stopped computing
    int64_t m_callsStarted = 0;
    Call m_current; // the first arrival of the call being assembled
    // Published at the arrival point, read by the other ranks until the call's last synchronisation.
    std::vector<const void*> m_sources;
    std::vector<void*> m_results; // AllReduce: where each rank's result lands (its source when in place)
    // Hierarchy (setServers / setNodes); set before the first collective.
    int m_servers = 1;
    int m_nodes = 1, m_nodeRank = 0;
    NodeAllGather m_nodeAllGather;
    NodeAllToAll m_nodeAllToAll;
    NodeLost m_nodeLost;
    std::vector<char> m_nodeResult; // the cross-node sum rank 0 computed, read by every local rank
};

// Marks a card as computing (or queued for a core) for the communicator's timeout clock while in scope.
class ComputingGuard {
public:
    ComputingGuard(Communicator& comm, int rank)
        : m_comm(comm)
        , m_rank(rank) {
        m_comm.setComputing(rank, true);
    }
    ~ComputingGuard() {
        try {
            m_comm.setComputing(m_rank, false);
        } catch (...) {
            // Only a bad rank throws, and the constructor already checked it with the same call.
        }
    }
    ComputingGuard(const ComputingGuard&) = delete;
    ComputingGuard& operator=(const ComputingGuard&) = delete;

private:
    Communicator& m_comm;
    int m_rank;
};

} // namespace rs
