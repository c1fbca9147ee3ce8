// Trainer: setup before the first step. Pre-flight (the config, the fault lab's config mistakes, the rank
// table), the data, the cards and what they see, the run file's meta, and the run file itself.
#include "store/RootAttributes.h"
#include "telemetry/Fingerprint.h"
#include "train/LocalStatistics.h"
#include "train/Replica.h"
#include "train/TrainerImpl.h"
#include "util/Versions.h"

#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <malloc.h>
#include <nlohmann/json.hpp>
#include <thread>

namespace rs {
namespace {

std::string nowUtc() {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// The fault lab's config mistakes, made the way a user makes them: in the config, before anything is built.
void applyConfigChanges(const FaultPlan::ConfigChanges& c, TrainConfig& cfg) {
    cfg.broadcastInit = cfg.broadcastInit && c.broadcastInit;
    cfg.gradientsMean = cfg.gradientsMean && c.gradientsMean;
    if (c.lossScale)
        cfg.lossScale = parseLossScale(*c.lossScale);
    if (c.halfGradients && cfg.precision == Precision::O0)
        cfg.precision = Precision::O2;
}

// Flight recorder depth within the budget. Depth 1 keeps one synced gradient per card (the local gradient and
// the weights are still live when a dump is taken); past it every slot holds all three (the slots' local
// gradients replace the card's own gradient buffer).
int flightDepthWithin(const TrainConfig& cfg, int64_t numParams, int localCards) {
    const int64_t oneCopy = numParams * 4 * localCards;
    const int64_t budget = int64_t(cfg.flightBudgetMb) << 20;
    int depth = cfg.telemetry && cfg.flightSteps >= 1 && oneCopy <= budget ? 1 : 0; // part of telemetry
    while (depth >= 1 && depth < cfg.flightSteps && int64_t(depth + 1) * 3 * oneCopy <= budget)
        ++depth;
    return depth;
}

std::vector<CardInfo> cardInfos(const RankTable& table, int64_t hbmUsed) {
    std::vector<CardInfo> out;
    for (const auto& dev : table.devices) {
        CardInfo c;
        c.rank = dev.rankId;
        c.deviceId = dev.deviceId;
        c.deviceIp = dev.deviceIp;
        c.serverId = dev.serverId;
        c.hbmTotalBytes = int64_t(32) << 30;
        c.hbmUsedBytes = hbmUsed;
        out.push_back(c);
    }
    return out;
}

} // namespace

void Trainer::Impl::setup() {
    cfg.validate();
    faults = FaultPlan::make(cfg.faults, cfg.ranks, lossScaleName(cfg.lossScale));
    applyConfigChanges(faults->configChanges(), cfg);
    // LibTorch allocates and frees the same large activation buffers every step; glibc would hand each one
    // back to the kernel (mmap/munmap) and fault it in again. Keep them in the heap instead.
    mallopt(M_MMAP_THRESHOLD, 32 << 20); // NOLINT(concurrency-mt-unsafe): before the card threads start
    mallopt(M_TRIM_THRESHOLD, 1 << 30);  // NOLINT(concurrency-mt-unsafe): idem
    std::string tableText;
    const RankTable table = rankTable(tableText);
    placeServers(table);
    plan.multiNode = cfg.nodes > 1;
    if (plan.multiNode)
        joinNodes();
    openData();
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    slots = std::make_unique<ComputeSlots>(cfg.computeThreads > 0 ? cfg.computeThreads : cores);
    context = std::make_unique<CardContext>(CardContext{cfg, plan, *comm, *slots, *faults, *recorder, *train,
                                                        *test, stopRequested, dumpRequested, cardErrors});
    buildCards();
    faults->bindParams(cards[0]->replica().params());
    if (cfg.telemetry && !plan.halfPayload) { // O0: the local statistics ride the all-reduce's read
        localReads = std::make_unique<ReducedLocalStats>(comm->worldSize(), cards[0]->replica().params(),
                                                         cfg.sketchDim, cfg.seed);
        context->localReads = localReads.get();
    }
    describeRun(table, tableText, cores);
    openRunFile();
}

// Pre-flight: the rank table must describe exactly the cards of this run. `text` gets the table as the run
// file records it.
RankTable Trainer::Impl::rankTable(std::string& text) {
    if (!cfg.rankTable.empty()) {
        auto check = loadRankTable(cfg.rankTable, cfg.ranks);
        if (!check.ok())
            throw TrainError(fmt::format("rank table {} is invalid:\n{}", cfg.rankTable, check.summary()));
        text = check.table->toJson();
        return *check.table;
    }
    // A node process holds whole servers: the largest server size up to --devices-per-server that splits its
    // cards evenly (64 cards on a node make 8 servers of 8).
    const bool multiNode = cfg.nodes > 1;
    int perServer = std::min(cfg.devicesPerServer, localCards);
    while (multiNode && localCards % perServer != 0)
        --perServer;
    RankTable table = generateRankTable(cfg.ranks, multiNode ? perServer : cfg.devicesPerServer);
    text = table.toJson();
    if (auto bad = faults->rankTableText(text)) {
        // A broken hccl.json: pre-flight refuses it, and the run file still records what it was given.
        text = *bad;
        if (const auto check = parseRankTable(text, cfg.ranks); !check.ok())
            preflightError = "rank table hccl.json is invalid: " + check.summary();
    }
    return table;
}

// HCCL reduces inside each server, then across servers: with servers of one size (each a contiguous block of
// ranks) the all-reduce does too, in one process as across node processes, whether a node process holds one
// server or several (the same bits).
void Trainer::Impl::placeServers(const RankTable& table) {
    if (cfg.nodes <= 1) {
        if (const int servers = table.serverCount(); servers > 1 && checkNodes(table, servers).empty())
            comm->setServers(servers);
        return;
    }
    if (const auto problems = checkNodes(table, cfg.nodes); !problems.empty()) {
        std::string text;
        for (const auto& p : problems)
            text += (text.empty() ? "" : "\n") + p.where + ": " + p.message;
        throw TrainError(fmt::format("rank table does not fit {} nodes:\n{}", cfg.nodes, text));
    }
    if (const int servers = table.serverCount() / cfg.nodes; servers > 1)
        comm->setServers(servers);
}

void Trainer::Impl::openData() {
    try {
        train = openDataset(cfg.data, Split::Train, cfg.seed);
        test = openDataset(cfg.data, Split::Test, cfg.seed);
    } catch (const DataError& e) {
        throw TrainError(e.what());
    }
    plan.perEpoch = stepsPerEpoch(train->size(), cfg.ranks, cfg.batchPerRank);
    if (plan.perEpoch < 1)
        throw TrainError(fmt::format("data: {} images cannot give {} ranks a batch of {}", train->size(),
                                     cfg.ranks, cfg.batchPerRank));
    plan.totalSteps = cfg.epochs > 0 ? cfg.epochs * plan.perEpoch : cfg.steps;
    plan.halfPayload = cfg.precision != Precision::O0;
}

void Trainer::Impl::buildCards() {
    // LibTorch's default generator is global: replicas are built one after another, never concurrently.
    for (int r = base; r < base + localCards; ++r)
        cards.push_back(std::make_unique<CardWorker>(*context, r, r - base));
    plan.flightDepth = flightDepthWithin(cfg, cards[0]->replica().numParams(), localCards);
    for (auto& card : cards)
        card->setFlightDepth(plan.flightDepth);
}

void Trainer::Impl::describeRun(const RankTable& table, const std::string& tableText, int cores) {
    const Replica& replica = cards[0]->replica();
    meta.model = modelKindName(cfg.model);
    meta.worldSize = cfg.ranks;
    meta.batchPerRank = cfg.batchPerRank;
    meta.precision = precisionName(cfg.precision);
    meta.lossScale = lossScaleName(cfg.lossScale);
    meta.data = cfg.data;
    meta.seed = cfg.seed;
    meta.sketchDim = cfg.telemetry ? cfg.sketchDim : 0;
    meta.localFpVersion = runschema::kLocalFpVersion; // PieceFingerprint, in whichever pass it is taken
    meta.weightEvery = cfg.weightEvery;
    meta.plannedSteps = plan.totalSteps;
    meta.configJson = cfg.toJson();
    meta.rankTableJson = tableText;
    meta.createdUtc = nowUtc();
    meta.params = replica.params();
    meta.bufferNames = replica.bufferNames();
    plan.hasBuffers = !meta.bufferNames.empty();
    nlohmann::json env = {{"ranksight", ranksightVersion()},
                          {"libtorch", torchVersion()},
                          {"hdf5", hdf5Version()},
                          {"blas", blasDescription()},
                          {"cores", cores},
                          {"compute_slots", cfg.computeThreads > 0 ? cfg.computeThreads : cores},
                          {"train_data", train->describe()},
                          {"test_data", test->describe()},
                          {"flight_recorder_steps", plan.flightDepth},
                          {"nodes", cfg.nodes}};
    meta.environment = env.dump();
    meta.cards = cardInfos(table, replica.activationBytesEstimate(cfg.batchPerRank));
}

void Trainer::Impl::openRunFile() {
    if (!cfg.writeFile || cfg.nodeRank != 0) // node 0 writes the one run file
        return;
    try {
        writer = RunWriter::create(cfg.out, meta, cfg.overwrite);
    } catch (const std::exception& e) {
        throw TrainError(e.what());
    }
}

} // namespace rs
