// Trainer: see Trainer.h. Setup (pre-flight, data, cards, the run file's meta) and the run's threads; a
// card's steps are in TrainerStep.cpp, the node processes' plumbing in TrainerNodes.cpp, recording in
// TrainerWriter.cpp.
#include "cluster/RankTable.h"
#include "telemetry/Fingerprint.h"
#include "train/TrainerImpl.h"
#include "util/Versions.h"

#include <algorithm>
#include <cmath>
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

} // namespace

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
    // Across nodes a cancelled collective would leave the other nodes waiting in gloo until their timeout:
    // there the stop travels in the step digest instead, and every node ends after the same step.
    if (d->cfg.nodes <= 1)
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
    faults = FaultPlan::make(cfg.faults, cfg.ranks, lossScaleName(cfg.lossScale));
    applyConfigChanges(faults->configChanges(), cfg);
    // LibTorch allocates and frees the same large activation buffers every step; glibc would hand each one
    // back to the kernel (mmap/munmap) and fault it in again. Keep them in the heap instead.
    mallopt(M_MMAP_THRESHOLD, 32 << 20); // NOLINT(concurrency-mt-unsafe): before the card threads start
    mallopt(M_TRIM_THRESHOLD, 1 << 30);  // NOLINT(concurrency-mt-unsafe): idem
    // Pre-flight: the rank table must describe exactly the cards of this run.
    RankTable table;
    std::string tableText;
    const bool multiNode = cfg.nodes > 1;
    if (cfg.rankTable.empty()) {
        // A node process holds whole servers: the largest server size up to --devices-per-server that
        // splits its cards evenly (64 cards on a node make 8 servers of 8).
        int perServer = std::min(cfg.devicesPerServer, localCards);
        while (multiNode && localCards % perServer != 0)
            --perServer;
        table = generateRankTable(cfg.ranks, multiNode ? perServer : cfg.devicesPerServer);
        tableText = table.toJson();
        if (auto bad = faults->rankTableText(tableText)) {
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
    // of ranks) the all-reduce does too, in one process as across node processes, whether a node process
    // holds one server or several (the same bits).
    if (multiNode) {
        if (const auto problems = checkNodes(table, cfg.nodes); !problems.empty()) {
            std::string text;
            for (const auto& p : problems)
                text += (text.empty() ? "" : "\n") + p.where + ": " + p.message;
            throw TrainError(fmt::format("rank table does not fit {} nodes:\n{}", cfg.nodes, text));
        }
        if (const int servers = table.serverCount() / cfg.nodes; servers > 1)
            comm->setServers(servers);
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
    hasBuffers = !meta.bufferNames.empty();
    nlohmann::json env = {{"ranksight", ranksightVersion()},
                          {"libtorch", torchVersion()},
                          {"hdf5", hdf5Version()},
                          {"blas", blasDescription()},
                          {"cores", cores},
                          {"compute_slots", cfg.computeThreads > 0 ? cfg.computeThreads : cores},
                          {"train_data", train->describe()},
                          {"test_data", test->describe()},
                          {"flight_recorder_steps", flightDepth},
                          {"nodes", cfg.nodes}};
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
        opt.initSeed = faults->initSeed(r, cfg.seed);
        const int rankId = faults->rankId(r); // what RANK_ID said; everything derives from it
        opt.dropoutSeed = splitmix64(cfg.seed * 1000003ull + static_cast<uint64_t>(rankId));
        opt.stopFlag = cfg.nodes > 1 ? nullptr : &stopRequested; // nodes finish the step (see stop())
        card->replica = std::make_unique<Replica>(opt);
        if (faults->sharedSampler()) // a plain sampler: every rank reads the whole set in order
            card->sampler = std::make_unique<DistributedSampler>(train->size(), 1, 0, cfg.seed);
        else
            card->sampler = std::make_unique<DistributedSampler>(train->size(), cfg.ranks, rankId, cfg.seed);
        card->scaler = std::make_unique<LossScaler>(cfg.lossScale);
        card->momentum.assign(static_cast<size_t>(card->replica->numParams()), 0.f);
        if (halfPayload)
            card->half.resize(static_cast<size_t>(card->replica->numParams()));
        cards.push_back(std::move(card));
    }
    // Flight recorder depth within the budget. Depth 1 keeps one synced gradient per card (the local gradient
    // and the weights are still live when a dump is taken); past it every slot holds all three (the slots'
    // local gradients replace the card's own gradient buffer).
    const int64_t oneCopy = cards[0]->replica->numParams() * 4 * localCards;
    const int64_t budget = int64_t(cfg.flightBudgetMb) << 20;
    flightDepth = cfg.telemetry && cfg.flightSteps >= 1 && oneCopy <= budget ? 1 : 0; // part of telemetry
    while (flightDepth >= 1 && flightDepth < cfg.flightSteps &&
           int64_t(flightDepth + 1) * 3 * oneCopy <= budget)
        ++flightDepth;
    for (auto& card : cards)
        card->ring.slots.resize(static_cast<size_t>(flightDepth));
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
    if (d->group && d->cfg.nodeRank != 0)
        d->reportToNode0();
    else if (d->group)
        d->collectNodeReports();
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
    if (d->group) {
        const NodeGroup::Traffic t = d->group->traffic();
        s.nodeBytesSent = t.bytesSent;
        s.nodeRecordBytesSent = d->recordBytesSent;
        s.nodeCollectiveMs = t.ms;
        s.nodeCollectives = t.collectives;
    }
    for (int k = 0; k < Impl::kPhases; ++k) {
        double total = 0;
        for (const auto& card : d->cards)
            total += card->phaseMs[size_t(k)];
        s.phaseMs.emplace_back(Impl::kPhaseNames[size_t(k)], total);
    }
    s.writerMs = d->writerMs;
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
