#include "train/Trainer.h"

#include "cluster/Communicator.h"
#include "cluster/ComputeSlots.h"
#include "cluster/NodeGroup.h"
#include "cluster/RankTable.h"
#include "faults/FaultPlan.h"
#include "store/ReaderProtocol.h"
#include "store/RunWriter.h"
#include "telemetry/EventDetector.h"
#include "telemetry/Fingerprint.h"
#include "telemetry/GradStats.h"
#include "train/Dataset.h"
#include "train/DistributedSampler.h"
#include "train/LossScaler.h"
#include "train/Replica.h"
#include "util/HalfConvert.h"

#include <H5public.h>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <fmt/format.h>
#include <malloc.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <variant>

namespace rs {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::string nowUtc() {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// Digest each rank shares at the end of a step, so every rank sees at once whether the replicas still agree.
struct Digest {
    uint64_t synced = 0;  // fingerprint over the per-parameter synced fingerprints
    uint64_t weights = 0; // fingerprint over the weights (weight steps only)
    uint32_t nonfinite = 0;
    uint32_t dumpRequested = 0;
};

// Last K steps of full tensors of one card, kept within a memory budget.
struct FlightRing {
    struct Slot {
        int64_t step = -1;
        std::vector<float> local, synced, weights;
    };
    std::vector<Slot> slots;
    size_t next = 0;
};

using WriterItem = std::variant<StepRecord, WeightRecord, EvalRecord, Event, FlightDump>;

} // namespace

int64_t stepsPerEpoch(int64_t datasetSize, int ranks, int batchPerRank) {
    return (datasetSize / ranks) / batchPerRank;
}

struct Trainer::Impl {
    TrainConfig cfg;
    TrainObserver* observer = nullptr;
    std::atomic<bool> stopRequested{false};
    std::atomic<bool> dumpRequested{false};

    // Setup
    RunMeta meta;
    std::unique_ptr<Dataset> train, test;
    std::unique_ptr<Communicator> comm;
    std::unique_ptr<ComputeSlots> slots;
    // Multi-node: this process hosts ranks [base, base + localCards) of cfg.ranks; the others are other
    // node processes, reached through `group` (the communicator's cross-node stage and the record exchange).
    int localCards = 0, base = 0;
    std::unique_ptr<NodeGroup> group;
    int64_t totalSteps = 0, perEpoch = 0;
    int flightDepth = 0;
    bool halfPayload = false;
    std::unique_ptr<FaultPlan> faults; // null without --fault: every hook is one pointer test
    std::string preflightError;        // set when pre-flight refuses after the run file can be written

    struct Card {
        int rank = 0;  // in the whole run
        int local = 0; // on this node's communicator
        std::unique_ptr<Replica> replica;
        std::unique_ptr<DistributedSampler> sampler;
        std::unique_ptr<LossScaler> scaler;
        std::vector<float> momentum;
        std::vector<uint16_t> half;
        FlightRing ring;
        std::atomic<uint8_t> state{0};
        bool anomalyBefore = false;
        int dumps = 0;
    };
    std::vector<std::unique_ptr<Card>> cards;

    // Per-step records of all ranks are gathered here, then handed to the writer thread in step order.
    std::mutex gatherMutex;
    std::map<int64_t, std::pair<StepRecord, int>> pendingSteps;
    std::map<int64_t, std::pair<WeightRecord, int>> pendingWeights;
    std::map<int64_t, std::pair<EvalRecord, int>> pendingEvals;
    std::map<int64_t, std::pair<FlightDump, int>> pendingDumps;

    std::mutex queueMutex;
    std::condition_variable queueCv;
    std::deque<WriterItem> queue;
    bool queueClosed = false;
    std::string writerError;

    std::unique_ptr<RunWriter> writer;
    RunSummary summary;
    std::mutex summaryMutex;
    std::vector<std::string> cardErrors;

    void push(WriterItem item) {
        {
            std::lock_guard lock(queueMutex);
            queue.push_back(std::move(item));
        }
        queueCv.notify_one();
    }
    void event(int64_t step, int rank, Severity sev, std::string code, std::string message) {
        push(Event{step, rank, sev, std::move(code), std::move(message)});
    }

    void setup();
    void joinNodes();
    // Multi-node: every card's one-rank record goes to every node (two all-gathers through the
    // communicator, in each card's own program order, so the nodes' collectives line up); local card 0 gets
    // the whole run's records in rank order, the others an empty vector.
    template <class Record> std::vector<Record> exchange(const Card& card, const Record& mine);
    void buildCards();
    void cardLoop(Card& card);
    void trainStep(Card& card, int64_t step, std::vector<uint8_t>& raw, std::vector<float>& images,
                   std::vector<int64_t>& labels);
    void recordWeights(Card& card, int64_t step);
    void evaluate(Card& card, int64_t step);
    void writerLoop();
    float learningRate(int64_t step) const;
    RunSummary refuse();

    template <typename Record, typename Fill>
    void gather(std::map<int64_t, std::pair<Record, int>>& pending, int64_t key, Fill fill) {
        std::optional<Record> done;
        {
            std::lock_guard lock(gatherMutex);
            auto& [record, count] = pending[key];
            fill(record);
            if (++count == localCards) {
                done = std::move(record);
                pending.erase(key);
            }
        }
        if (done)
            push(std::move(*done));
    }
};

Trainer::Trainer(TrainConfig config)
    : d(std::make_unique<Impl>()) {
    d->cfg = std::move(config);
    const int nodes = std::max(1, d->cfg.nodes);
    d->localCards = std::max(1, d->cfg.ranks / nodes);
    d->base = d->cfg.nodeRank * d->localCards;
    // Created here, not in run(), so stop() from another thread never races with its creation.
    d->comm = std::make_unique<Communicator>(d->localCards, std::chrono::milliseconds(d->cfg.timeoutMs));
}
Trainer::~Trainer() = default;
void Trainer::setObserver(TrainObserver* observer) {
    d->observer = observer;
}
void Trainer::stop() {
    d->stopRequested = true;
    d->comm->cancel();
}
void Trainer::requestFlightDump() {
    d->dumpRequested = true;
}
const TrainConfig& Trainer::config() const {
    return d->cfg;
}

float Trainer::Impl::learningRate(int64_t step) const {
    const float base = cfg.effectiveLr();
    if (step < cfg.warmupSteps)
        return base * static_cast<float>(step + 1) / static_cast<float>(cfg.warmupSteps + 1);
    if (cfg.lrSchedule == "constant")
        return base;
    const auto span = static_cast<double>(std::max<int64_t>(1, totalSteps - cfg.warmupSteps));
    const double t = std::min(1.0, static_cast<double>(step - cfg.warmupSteps) / span);
    return static_cast<float>(base * 0.5 * (1.0 + std::cos(M_PI * t)));
}

void Trainer::Impl::setup() {
    cfg.validate();
    faults = FaultPlan::make(cfg);
    if (faults)
        faults->adjustConfig(cfg);
    // LibTorch allocates and frees the same large activation buffers every step; glibc would hand each one
    // back to the kernel (mmap/munmap) and fault it in again. Keep them in the heap instead.
    mallopt(M_MMAP_THRESHOLD, 32 << 20); // NOLINT(concurrency-mt-unsafe): before the card threads start
    mallopt(M_TRIM_THRESHOLD, 1 << 30);  // NOLINT(concurrency-mt-unsafe): idem
    // Pre-flight: the rank table must describe exactly the cards of this run.
    RankTable table;
    std::string tableText;
    const bool multiNode = cfg.nodes > 1;
    if (cfg.rankTable.empty()) {
        table = generateRankTable(cfg.ranks, multiNode ? localCards : cfg.devicesPerServer);
        tableText = table.toJson();
        if (auto bad = faults ? faults->rankTableText(tableText) : std::nullopt) {
            // A broken hccl.json: pre-flight refuses it, and the run file still records what it was given.
            tableText = *bad;
            if (const auto check = parseRankTable(tableText, cfg.ranks); !check.ok())
                preflightError = "rank table hccl.json is invalid: " + check.summary();
        }
    } else {
        auto check = loadRankTable(cfg.rankTable, cfg.ranks);
        if (!check.ok())
            throw TrainError(fmt::format("rank table {} is invalid:\n{}", cfg.rankTable, check.summary()));
        table = *check.table;
        tableText = table.toJson();
    }
    // HCCL reduces inside each server, then across servers: with servers of one size (each a contiguous block
    // of ranks) the all-reduce does too, in one process as across node processes (the same bits).
    if (multiNode) {
        if (const auto problems = checkNodes(table, cfg.nodes); !problems.empty()) {
            std::string text;
            for (const auto& p : problems)
                text += (text.empty() ? "" : "\n") + p.where + ": " + p.message;
            throw TrainError(fmt::format("rank table does not fit {} nodes:\n{}", cfg.nodes, text));
        }
    } else if (const int servers = table.serverCount(); servers > 1 && checkNodes(table, servers).empty()) {
        comm->setServers(servers);
    }
    if (multiNode)
        joinNodes();
    try {
        train = openDataset(cfg.data, Split::Train, cfg.seed);
        test = openDataset(cfg.data, Split::Test, cfg.seed);
    } catch (const DataError& e) {
        throw TrainError(e.what());
    }
    perEpoch = stepsPerEpoch(train->size(), cfg.ranks, cfg.batchPerRank);
    if (perEpoch < 1)
        throw TrainError(fmt::format("data: {} images cannot give {} ranks a batch of {}", train->size(),
                                     cfg.ranks, cfg.batchPerRank));
    totalSteps = cfg.epochs > 0 ? cfg.epochs * perEpoch : cfg.steps;
    halfPayload = cfg.precision != Precision::O0;

    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    slots = std::make_unique<ComputeSlots>(cfg.computeThreads > 0 ? cfg.computeThreads : cores);

    buildCards();
    if (faults)
        faults->bindParams(cards[0]->replica->params());

    meta.model = modelKindName(cfg.model);
    meta.worldSize = cfg.ranks;
    meta.batchPerRank = cfg.batchPerRank;
    meta.precision = precisionName(cfg.precision);
    meta.lossScale = lossScaleName(cfg.lossScale);
    meta.data = cfg.data;
    meta.seed = cfg.seed;
    meta.sketchDim = cfg.telemetry ? cfg.sketchDim : 0;
    meta.weightEvery = cfg.weightEvery;
    meta.plannedSteps = totalSteps;
    meta.configJson = cfg.toJson();
    meta.rankTableJson = tableText;
    meta.createdUtc = nowUtc();
    meta.params = cards[0]->replica->params();
    meta.bufferNames = cards[0]->replica->bufferNames();
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    nlohmann::json env = {{"ranksight", "0.1.0"},
                          {"libtorch", torchVersion()},
                          {"hdf5", fmt::format("{}.{}.{}", maj, min, rel)},
                          {"cores", cores},
                          {"compute_slots", cfg.computeThreads > 0 ? cfg.computeThreads : cores},
                          {"train_data", train->describe()},
                          {"test_data", test->describe()},
                          {"flight_recorder_steps", flightDepth}};
    meta.environment = env.dump();
    const int64_t hbmUsed = cards[0]->replica->activationBytesEstimate(cfg.batchPerRank);
    for (const auto& dev : table.devices) {
        CardInfo c;
        c.rank = dev.rankId;
        c.deviceId = dev.deviceId;
        c.deviceIp = dev.deviceIp;
        c.serverId = dev.serverId;
        c.hbmTotalBytes = int64_t(32) << 30;
        c.hbmUsedBytes = hbmUsed;
        meta.cards.push_back(c);
    }
    if (!cfg.writeFile || cfg.nodeRank != 0) // node 0 writes the one run file
        return;
    try {
        writer = RunWriter::create(cfg.out, meta, cfg.overwrite);
    } catch (const std::exception& e) {
        throw TrainError(e.what());
    }
}

void Trainer::Impl::joinNodes() {
    NodeOptions o;
    o.nodes = cfg.nodes;
    o.nodeRank = cfg.nodeRank;
    o.timeout = std::chrono::milliseconds(cfg.timeoutMs);
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
        [g = group.get()] { return g->lostNodes(); });
}

template <class Record> std::vector<Record> Trainer::Impl::exchange(const Card& card, const Record& mine) {
    readerwire::Writer w;
    readerwire::put(w, std::vector<Record>{mine});
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
    for (int r = 0; r < cfg.ranks; ++r) {
        readerwire::Reader in(std::string_view(all.data() + size_t(r) * width, size_t(sizes[size_t(r)])));
        std::vector<Record> one;
        if constexpr (std::is_same_v<Record, StepRecord>)
            one = readerwire::getSteps(in);
        else if constexpr (std::is_same_v<Record, WeightRecord>)
            one = readerwire::getWeights(in);
        else
            one = readerwire::getEvals(in);
        if (one.size() != 1)
            throw std::runtime_error(fmt::format("a record from rank {} did not decode", r));
        out.push_back(std::move(one.front()));
    }
    return out;
}

void Trainer::Impl::buildCards() {
    // LibTorch's default generator is global: replicas are built one after another, never concurrently.
    for (int r = base; r < base + localCards; ++r) {
        auto card = std::make_unique<Card>();
        card->rank = r;
        card->local = r - base;
        ReplicaOptions opt;
        opt.model = cfg.model;
        opt.precision = cfg.precision;
        // set_seed: every rank initialises alike (unless init-mismatch), and the broadcast makes sure
        opt.initSeed = faults ? faults->initSeed(r, cfg.seed) : cfg.seed;
        const int rankId = faults ? faults->rankId(r) : r; // what RANK_ID said; everything derives from it
        opt.dropoutSeed = splitmix64(cfg.seed * 1000003ull + static_cast<uint64_t>(rankId));
        opt.stopFlag = &stopRequested;
        card->replica = std::make_unique<Replica>(opt);
        if (faults && faults->sharedSampler()) // a plain sampler: every rank reads the whole set in order
            card->sampler = std::make_unique<DistributedSampler>(train->size(), 1, 0, cfg.seed);
        else
            card->sampler = std::make_unique<DistributedSampler>(train->size(), cfg.ranks, rankId, cfg.seed);
        card->scaler = std::make_unique<LossScaler>(cfg.lossScale);
        card->momentum.assign(static_cast<size_t>(card->replica->numParams()), 0.f);
        if (halfPayload)
            card->half.resize(static_cast<size_t>(card->replica->numParams()));
        cards.push_back(std::move(card));
    }
    // Flight recorder depth within the budget. Depth 1 copies only the local gradient each step (the synced
    // gradient and the weights are still live when a dump is taken); each deeper step copies all three.
    const int64_t oneCopy = cards[0]->replica->numParams() * 4 * localCards;
    const int64_t budget = int64_t(cfg.flightBudgetMb) << 20;
    flightDepth = cfg.telemetry && cfg.flightSteps >= 1 && oneCopy <= budget ? 1 : 0; // part of telemetry
    while (flightDepth >= 1 && flightDepth < cfg.flightSteps &&
           int64_t(flightDepth + 1) * 3 * oneCopy <= budget)
        ++flightDepth;
    for (auto& card : cards)
        card->ring.slots.resize(static_cast<size_t>(flightDepth));
}

void Trainer::Impl::recordWeights(Card& card, int64_t step) {
    const auto& params = card.replica->params();
    const float* w = card.replica->weights();
    std::vector<uint64_t> fp(params.size());
    std::vector<float> norm(params.size());
    for (size_t p = 0; p < params.size(); ++p) {
        const float* t = w + params[p].offset;
        fp[p] = fingerprint(t, static_cast<size_t>(params[p].numel) * 4);
        norm[p] = static_cast<float>(std::sqrt(normAndSum(t, params[p].numel, 1.f).sumSq));
    }
    const auto buffers = card.replica->bufferValues();
    const uint64_t bufferFp = fingerprint(buffers.data(), buffers.size() * 4);
    double bufferNorm = 0;
    for (float v : buffers)
        bufferNorm += static_cast<double>(v) * v;
    if (group) {
        WeightRecord one;
        one.step = step;
        one.fp = {std::move(fp)};
        one.norm = {std::move(norm)};
        one.bufferFp = {bufferFp};
        one.bufferDrift = {static_cast<float>(std::sqrt(bufferNorm))};
        auto all = exchange(card, one);
        if (card.local != 0)
            return;
        WeightRecord rec;
        rec.step = step;
        for (auto& x : all) {
            rec.fp.push_back(std::move(x.fp[0]));
            rec.norm.push_back(std::move(x.norm[0]));
            rec.bufferFp.push_back(x.bufferFp[0]);
            rec.bufferDrift.push_back(x.bufferDrift[0]);
        }
        push(std::move(rec));
        return;
    }
    gather(pendingWeights, step, [&](WeightRecord& rec) {
        rec.step = step;
        rec.fp.resize(cfg.ranks);
        rec.norm.resize(cfg.ranks);
        rec.bufferFp.resize(cfg.ranks);
        rec.bufferDrift.resize(cfg.ranks); // holds the buffer norm until the writer turns it into drift
        rec.fp[card.rank] = std::move(fp);
        rec.norm[card.rank] = std::move(norm);
        rec.bufferFp[card.rank] = bufferFp;
        rec.bufferDrift[card.rank] = static_cast<float>(std::sqrt(bufferNorm));
    });
}

void Trainer::Impl::evaluate(Card& card, int64_t step) {
    const int n = static_cast<int>(std::min<int64_t>(cfg.evalSamples, test->size()));
    if (n <= 0)
        return;
    std::vector<uint8_t> raw;
    std::vector<float> images;
    std::vector<int64_t> labels;
    int correct = 0;
    double lossSum = 0;
    constexpr int kChunk = 128;
    for (int begin = 0; begin < n; begin += kChunk) {
        const int m = std::min(kChunk, n - begin);
        std::vector<int64_t> ids(m);
        for (int i = 0; i < m; ++i)
            ids[i] = begin + i;
        loadNormalizedBatch(*test, ids.data(), m, raw, images, labels);
        ComputingGuard computing(*comm, card.local);
        ComputeSlotGuard slot(*slots);
        const auto r = card.replica->evaluate(images.data(), labels.data(), m);
        correct += r.correct;
        lossSum += static_cast<double>(r.loss) * m;
    }
    if (group) {
        EvalRecord one;
        one.step = step;
        one.accuracy = {static_cast<float>(correct) / static_cast<float>(n)};
        one.loss = {static_cast<float>(lossSum / n)};
        auto all = exchange(card, one);
        if (card.local != 0)
            return;
        EvalRecord rec;
        rec.step = step;
        for (const auto& x : all) {
            rec.accuracy.push_back(x.accuracy[0]);
            rec.loss.push_back(x.loss[0]);
        }
        push(std::move(rec));
        return;
    }
    gather(pendingEvals, step, [&](EvalRecord& rec) {
        rec.step = step;
        rec.accuracy.resize(cfg.ranks);
        rec.loss.resize(cfg.ranks);
        rec.accuracy[card.rank] = static_cast<float>(correct) / static_cast<float>(n);
        rec.loss[card.rank] = static_cast<float>(lossSum / n);
    });
}

void Trainer::Impl::trainStep(Card& card, int64_t step, std::vector<uint8_t>& raw, std::vector<float>& images,
                              std::vector<int64_t>& labels) {
    const auto t0 = Clock::now();
    Replica& rep = *card.replica;
    const auto& params = rep.params();
    const size_t P = params.size();
    const int64_t N = rep.numParams();
    const int B = cfg.batchPerRank;
    const int W = cfg.ranks;
    const int r = card.rank;

    const int64_t epoch = step / perEpoch;
    if (step % perEpoch == 0)
        card.sampler->setEpoch(epoch);
    const int64_t* ids = card.sampler->indices().data() + (step % perEpoch) * B;
    loadNormalizedBatch(*train, ids, B, raw, images, labels);

    RankStep rs;
    rs.sampleIds.assign(ids, ids + B);
    rs.sampleFp = fingerprint(ids, sizeof(int64_t) * B);
    const float scale = card.scaler->scale();
    rs.lossScale = scale;

    double commMs = 0;
    BatchResult res;
    {
        ComputingGuard computing(*comm, card.local);
        ComputeSlotGuard slot(*slots);
        const auto tc = Clock::now();
        res = rep.forwardBackward(images.data(), labels.data(), B, scale);
        if (const int slower = faults ? faults->slowdown(r, step) : 1; slower > 1) // a slow card, still busy
            std::this_thread::sleep_for(
                std::chrono::duration<double, std::milli>((slower - 1) * msSince(tc)));
        rs.computeMs = static_cast<float>(msSince(tc));
    }
    rs.loss = res.loss;
    rs.accuracy = res.accuracy;
    float* g = rep.grads();
    const float unscale = 1.0f / scale;
    if (faults && faults->flipBefore(r, step)) // silent data corruption in this card's backward
        FaultPlan::flipBit(g, N);

    // Local gradient, as this card computed it. The flight recorder's copy is taken in the same pass.
    FlightRing::Slot* slot = nullptr;
    if (!card.ring.slots.empty()) {
        slot = &card.ring.slots[card.ring.next];
        card.ring.next = (card.ring.next + 1) % card.ring.slots.size();
        slot->step = step;
        slot->local.resize(static_cast<size_t>(N));
    }
    const bool tele = cfg.telemetry;
    if (tele) {
        const int K = cfg.sketchDim;
        rs.localNorm.resize(P);
        rs.localMax.resize(P);
        rs.localSum.resize(P);
        rs.nonfinite.resize(P);
        rs.overflowCount.resize(P);
        rs.underflowCount.resize(P);
        rs.sketch.resize(P * K);
        for (size_t p = 0; p < P; ++p) {
            const auto s = gradStats(g + params[p].offset, params[p].numel, unscale,
                                     splitmix64(cfg.seed ^ (0x5ce7c4ull + p)), K, rs.sketch.data() + p * K,
                                     slot && !halfPayload ? slot->local.data() + params[p].offset : nullptr);
            rs.localNorm[p] = static_cast<float>(std::sqrt(s.sumSq));
            rs.localMax[p] = s.maxAbs;
            rs.localSum[p] = s.sum;
            rs.nonfinite[p] = s.nonfinite;
            rs.overflowCount[p] = s.overflow;
            rs.underflowCount[p] = s.underflow;
        }
    } else if (slot && !halfPayload) {
        std::copy(g, g + N, slot->local.begin());
    }
    // Under O2/O3 the gradient leaves backward in fp16: the conversion to the fp16 payload below does that
    // rounding, so only the flight recorder needs a rounded fp32 copy of what the card sent.
    if (halfPayload && slot)
        roundFloatsThroughHalf(g, slot->local.data(), static_cast<size_t>(N));

    // The all-reduce: fp16 payload under O2/O3 (sums past 65504 overflow like hardware), fp32 under O0.
    const ReduceOp op = cfg.gradientsMean ? ReduceOp::Mean : ReduceOp::Sum;
    // Faults around the all-reduce: a parameter outside every fusion bucket keeps its local gradient, and a
    // rank that checks overflow alone reads its own float status.
    const int unsynced = faults ? faults->unsyncedParam(step) : -1;
    std::vector<float> kept;
    if (unsynced >= 0)
        kept.assign(g + params[unsynced].offset, g + params[unsynced].offset + params[unsynced].numel);
    const bool ownStatus = faults && !faults->overflowSynced(step);
    const bool localOverflow = ownStatus && FaultPlan::overflows(g, N, halfPayload);
    auto tcomm = Clock::now();
    if (halfPayload) {
        rep.gradsToHalf(card.half.data());
        comm->allReduce(card.local, card.half.data(), static_cast<size_t>(N), DType::F16, op);
        rep.gradsFromHalf(card.half.data());
    } else {
        comm->allReduce(card.local, g, static_cast<size_t>(N), DType::F32, op);
    }
    commMs += msSince(tcomm);
    if (unsynced >= 0)
        std::copy(kept.begin(), kept.end(), g + params[unsynced].offset);
    if (faults && faults->flipAfter(r, step)) // corruption after the all-reduce, on this card only
        FaultPlan::flipBit(g, N);

    // Synced gradient, as the all-reduce delivered it: norm, sum and a bitwise fingerprint per parameter.
    uint32_t nonfiniteSynced = 0;
    if (tele) {
        rs.syncedNorm.resize(P);
        rs.syncedSum.resize(P);
        rs.syncedFp.resize(P);
    }
    for (size_t p = 0; p < P; ++p) {
        const float* t = g + params[p].offset;
        const auto s = normAndSum(t, params[p].numel, unscale);
        nonfiniteSynced += s.nonfinite;
        if (tele) {
            rs.syncedNorm[p] = static_cast<float>(std::sqrt(s.sumSq));
            rs.syncedSum[p] = s.sum;
            rs.syncedFp[p] = fingerprint(t, static_cast<size_t>(params[p].numel) * 4);
        }
    }
    if (slot)
        slot->synced.assign(g, g + N);

    // Overflow status is all-reduced so every rank skips the same steps (NPUAllocFloatStatus + AllReduce).
    float overflow = nonfiniteSynced > 0 ? 1.f : 0.f;
    if (ownStatus) {
        overflow = localOverflow ? 1.f : 0.f;
    } else {
        tcomm = Clock::now();
        comm->allReduce(card.local, &overflow, 1, DType::F32, ReduceOp::Max);
        commMs += msSince(tcomm);
    }
    rs.overflow = overflow > 0 ? 1 : 0;
    const bool skip = card.scaler->update(rs.overflow);
    rs.skipped = skip ? 1 : 0;

    if (!skip) { // Momentum SGD with weight decay on the fp32 master weights, gradients unscaled on the fly
        const float lr = learningRate(step), mom = cfg.momentum, wd = cfg.weightDecay;
        float* w = rep.weights();
        float* v = card.momentum.data();
        for (int64_t i = 0; i < N; ++i) {
            v[i] = mom * v[i] + g[i] * unscale + wd * w[i];
            w[i] -= lr * v[i];
        }
        if (cfg.precision == Precision::O3)
            rep.roundWeightsThroughHalf();
    }
    if (slot)
        slot->weights.assign(rep.weights(), rep.weights() + N);

    // Share a digest: every rank learns at once whether the replicas still agree (anomaly -> flight dump).
    const bool weightStep = (step + 1) % cfg.weightEvery == 0 || step + 1 == totalSteps;
    Digest mine;
    if (tele)
        mine.synced = fingerprint(rs.syncedFp.data(), P * 8);
    if (weightStep)
        mine.weights = fingerprint(rep.weights(), static_cast<size_t>(N) * 4);
    mine.nonfinite = !std::isfinite(rs.loss) ? 1u : 0u;
    mine.dumpRequested = dumpRequested.exchange(false) ? 1u : 0u;
    std::vector<Digest> all(W);
    tcomm = Clock::now();
    comm->allGather(card.local, &mine, sizeof(Digest), all.data());
    commMs += msSince(tcomm);
    bool anomaly = false, requested = false;
    std::string reason;
    for (const auto& dg : all) {
        if (dg.synced != all[0].synced)
            reason = "synced gradient fingerprints differ across ranks";
        if (dg.weights != all[0].weights)
            reason = "weight fingerprints differ across ranks";
        if (dg.nonfinite)
            reason = "non-finite loss";
        requested = requested || dg.dumpRequested;
    }
    anomaly = !reason.empty();
    rs.commMs = static_cast<float>(commMs);
    rs.stepMs = static_cast<float>(msSince(t0));

    const float lr = learningRate(step);
    if (group) {
        StepRecord one;
        one.step = step;
        one.epoch = epoch;
        one.lr = lr;
        one.ranks.push_back(std::move(rs));
        auto all = exchange(card, one);
        if (card.local == 0) {
            StepRecord rec;
            rec.step = step;
            rec.epoch = epoch;
            rec.lr = lr;
            for (auto& x : all)
                rec.ranks.push_back(std::move(x.ranks[0]));
            push(std::move(rec));
        }
    } else
        gather(pendingSteps, step, [&](StepRecord& rec) {
            rec.step = step;
            rec.epoch = epoch;
            rec.lr = lr;
            rec.ranks.resize(W);
            rec.ranks[r] = std::move(rs);
        });
    if (weightStep)
        recordWeights(card, step + 1);

    // Dump on the step an anomaly appears (not on every step it persists) and on request. Every rank sees
    // the same digests, so every rank takes the same decision and the gather completes.
    static constexpr int kMaxDumps = 3;
    const bool fresh = anomaly && !card.anomalyBefore;
    card.anomalyBefore = anomaly;
    if ((fresh || requested) && slot && card.dumps < kMaxDumps) {
        ++card.dumps;
        const std::string why = fresh ? reason : "requested";
        gather(pendingDumps, step, [&](FlightDump& dump) {
            dump.triggerStep = step;
            dump.reason = why;
            for (const auto& s : card.ring.slots) {
                if (s.step < 0)
                    continue;
                dump.entries.push_back({s.step, r, 0, s.local});
                dump.entries.push_back({s.step, r, 1, s.synced});
                dump.entries.push_back({s.step, r, 2, s.weights});
            }
        });
    }
}

void Trainer::Impl::cardLoop(Card& card) {
    setTorchThreads(1); // one intra-op thread per card; ComputeSlots caps cards computing at once
    const int r = card.rank;
    std::vector<uint8_t> raw;
    std::vector<float> images;
    std::vector<int64_t> labels;
    int64_t step = 0;
    try {
        if (cfg.broadcastInit) // MindSpore parameter_broadcast: everyone starts from rank 0's weights
            comm->broadcast(card.local, card.replica->weights(),
                            static_cast<size_t>(card.replica->numParams()) * 4, 0);
        recordWeights(card, 0);
        const int64_t shard = faults ? faults->shardBatches(r, perEpoch) : perEpoch;
        for (; step < totalSteps && !stopRequested; ++step) {
            // rank-exit: the card is gone; its peers find out in their next collective.
            if (faults && faults->diesAt(r, step))
                throw std::runtime_error("EL0004: device HBM out of memory, the card stopped responding");
            if (faults && faults->evalModeFrom(r, step))
                card.replica->setTrainMode(false);
            if (step % perEpoch >= shard) { // this rank's loader is exhausted: its epoch (and loop) ends here
                evaluate(card, step);
                break;
            }
            trainStep(card, step, raw, images, labels);
            if (cfg.evalEvery > 0 && (step + 1) % cfg.evalEvery == 0 && step + 1 < totalSteps)
                evaluate(card, step + 1);
        }
        if (!stopRequested && step == totalSteps)
            evaluate(card, step);
        card.state = static_cast<uint8_t>(stopRequested ? CardState::Stopped : CardState::Ok);
    } catch (const CollectiveCancelled&) {
        card.state = static_cast<uint8_t>(CardState::Stopped);
    } catch (const ReplicaStopped&) {
        card.state = static_cast<uint8_t>(CardState::Stopped);
    } catch (const CollectiveTimeout& e) {
        card.state = static_cast<uint8_t>(CardState::TimedOut);
        event(step, r, Severity::Error, eventcode::kTimeout, fmt::format("Rank {}: {}", r, e.what()));
        std::lock_guard lock(summaryMutex);
        cardErrors.push_back(fmt::format("rank {}: {}", r, e.what()));
    } catch (const std::exception& e) {
        card.state = static_cast<uint8_t>(CardState::Dead);
        comm->markFailed(card.local);
        event(step, r, Severity::Error, eventcode::kCardFailed,
              fmt::format("Rank {} failed at step {}: {}", r, step, e.what()));
        std::lock_guard lock(summaryMutex);
        cardErrors.push_back(fmt::format("rank {}: {}", r, e.what()));
    }
}

void Trainer::Impl::writerLoop() {
    EventDetector detector(meta);
    auto emit = [&](const Event& e) {
        if (writer)
            writer->appendEvent(e);
        if (observer)
            observer->eventRecorded(e);
    };
    for (;;) {
        WriterItem item;
        {
            std::unique_lock lock(queueMutex);
            queueCv.wait(lock, [&] { return !queue.empty() || queueClosed; });
            if (queue.empty())
                return;
            item = std::move(queue.front());
            queue.pop_front();
        }
        if (!writerError.empty())
            continue; // keep draining so producers never block; the error ends the run
        try {
            if (auto* step = std::get_if<StepRecord>(&item)) {
                if (writer)
                    writer->appendStep(*step);
                {
                    std::lock_guard lock(summaryMutex);
                    float mean = 0;
                    for (const auto& rs : step->ranks)
                        mean += rs.loss / static_cast<float>(step->ranks.size());
                    if (summary.stepsCompleted == 0)
                        summary.lossFirst = mean;
                    summary.lossLast = mean;
                    summary.stepsCompleted = step->step + 1;
                }
                if (observer)
                    observer->stepRecorded(*step);
                for (const auto& e : detector.onStep(*step))
                    emit(e);
            } else if (auto* w = std::get_if<WeightRecord>(&item)) {
                for (size_t r = w->bufferDrift.size(); r-- > 0;) // buffer norm -> drift relative to rank 0
                    w->bufferDrift[r] =
                        w->bufferDrift[0] > 0
                            ? std::fabs(w->bufferDrift[r] - w->bufferDrift[0]) / w->bufferDrift[0]
                            : 0.f;
                if (writer)
                    writer->appendWeights(*w);
                if (observer)
                    observer->weightsRecorded(*w);
                for (const auto& e : detector.onWeights(*w))
                    emit(e);
            } else if (auto* ev = std::get_if<EvalRecord>(&item)) {
                if (writer)
                    writer->appendEval(*ev);
                {
                    std::lock_guard lock(summaryMutex);
                    float mean = 0;
                    for (float a : ev->accuracy)
                        mean += a / static_cast<float>(ev->accuracy.size());
                    summary.evalAccuracy = mean;
                }
                if (observer)
                    observer->evalRecorded(*ev);
            } else if (auto* e = std::get_if<Event>(&item)) {
                emit(*e);
            } else if (auto* dump = std::get_if<FlightDump>(&item)) {
                if (writer)
                    writer->appendFlightDump(*dump);
                emit(Event{
                    dump->triggerStep, -1, Severity::Info, eventcode::kFlightRecorder,
                    fmt::format("Flight recorder wrote the last {} step(s) of full tensors at step {}: {}",
                                flightDepth, dump->triggerStep, dump->reason)});
            }
        } catch (const std::exception& e) {
            writerError = e.what();
            stopRequested = true; // a run that cannot be recorded stops: nothing is lost silently
            comm->cancel();
        }
    }
}

// Pre-flight refused after the run file was created: record why (RANK_TABLE event, 0 steps) and stop.
RunSummary Trainer::Impl::refuse() {
    RunSummary s;
    s.stopReason = "error: " + preflightError.substr(0, preflightError.find('\n'));
    Event e{0, -1, Severity::Error, eventcode::kRankTable, preflightError.substr(0, 255)};
    if (writer) {
        writer->appendEvent(e);
        writer->close(s.stopReason);
    }
    if (observer) {
        observer->runStarted(meta);
        observer->eventRecorded(e);
        observer->runFinished(s);
    }
    return s;
}

RunSummary Trainer::run() {
    d->setup();
    if (!d->preflightError.empty())
        return d->refuse();
    if (d->observer)
        d->observer->runStarted(d->meta);
    const auto t0 = Clock::now();
    std::thread writerThread([this] { d->writerLoop(); });
    {
        std::vector<std::thread> threads;
        for (auto& card : d->cards)
            threads.emplace_back([this, c = card.get()] { d->cardLoop(*c); });
        for (auto& t : threads)
            t.join();
    }
    {
        std::lock_guard lock(d->queueMutex);
        d->queueClosed = true;
    }
    d->queueCv.notify_one();
    writerThread.join();
    const double seconds = msSince(t0) / 1000.0;

    RunSummary s;
    {
        std::lock_guard lock(d->summaryMutex);
        s = d->summary;
    }
    for (const auto& card : d->cards)
        s.cardStates.push_back(static_cast<CardState>(card->state.load()));
    s.completed = s.stepsCompleted == d->totalSteps && d->cardErrors.empty() && d->writerError.empty();
    if (!d->writerError.empty())
        s.stopReason = "error: writing the run file failed: " + d->writerError;
    else if (!d->cardErrors.empty())
        s.stopReason = "error: " + d->cardErrors.front();
    else
        s.stopReason = s.completed ? "completed" : "stopped";
    s.imagesPerSecond =
        seconds > 0 ? double(s.stepsCompleted) * d->cfg.ranks * d->cfg.batchPerRank / seconds : 0;
    try {
        if (d->writer)
            d->writer->close(s.stopReason);
    } catch (const std::exception& e) {
        s.stopReason = std::string("error: closing the run file failed: ") + e.what();
    }
    if (d->observer)
        d->observer->runFinished(s);
    return s;
}

} // namespace rs
