// Trainer: see Trainer.h. The public face and the run: setup (TrainerSetup.cpp), then the recorder's writer
// thread and one thread per card (CardWorker), then the summary. What records a step is the StepRecorder's;
// a card's step is the CardWorker's.
#include "train/Clock.h"
#include "train/Replica.h"
#include "train/TrainerImpl.h"

#include <algorithm>
#include <thread>

namespace rs {

Trainer::Trainer(TrainConfig config)
    : d(std::make_unique<Impl>()) {
    d->cfg = std::move(config);
    const int nodes = std::max(1, d->cfg.nodes);
    d->localCards = std::max(1, d->cfg.ranks / nodes);
    d->base = d->cfg.nodeRank * d->localCards;
    // Created here, not in run(), so stop() from another thread never races with its creation.
    d->comm = std::make_unique<Communicator>(d->localCards, std::chrono::milliseconds(d->cfg.timeoutMs));
    // A run that cannot be recorded stops: nothing is lost silently.
    d->recorder = std::make_unique<StepRecorder>(*d->comm, [impl = d.get()] {
        impl->stopRequested = true;
        impl->comm->cancel();
    });
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

RunSummary Trainer::run() {
    d->setup();
    if (!d->preflightError.empty())
        return d->refuse();
    if (d->observer)
        d->observer->runStarted(d->meta);
    const auto t0 = Clock::now();
    d->startRecording();
    d->runCards();
    d->recorder->shareNodeEvents();
    RunSummary s = d->recorder->finish();
    d->summarize(s, msSince(t0) / 1000.0);
    try {
        d->recorder->closeFile(s.stopReason);
    } catch (const std::exception& e) {
        s.stopReason = std::string("error: closing the run file failed: ") + e.what();
    }
    if (d->observer)
        d->observer->runFinished(s);
    return s;
}

void Trainer::Impl::startRecording() {
    RecordingSetup r;
    r.meta = meta;
    r.file = std::move(writer);
    r.observer = observer;
    r.group = group.get();
    r.ranks = cfg.ranks;
    r.localCards = localCards;
    r.nodes = cfg.nodes;
    r.nodeRank = cfg.nodeRank;
    r.flightDepth = plan.flightDepth;
    recorder->open(std::move(r));
}

void Trainer::Impl::runCards() {
    std::vector<std::thread> threads;
    for (auto& card : cards)
        threads.emplace_back([c = card.get()] { c->run(); });
    for (auto& t : threads)
        t.join();
}

// The recorder's totals (`s`) completed with what the cards and the node group know.
void Trainer::Impl::summarize(RunSummary& s, double seconds) const {
    if (group) {
        const NodeGroup::Traffic t = group->traffic();
        s.nodeBytesSent = t.bytesSent;
        s.nodeCollectiveMs = t.ms;
        s.nodeCollectives = t.collectives;
    }
    for (size_t k = 0; k < kPhaseNames.size(); ++k) {
        double total = 0;
        for (const auto& card : cards)
            total += card->phaseMs()[k];
        s.phaseMs.emplace_back(kPhaseNames[k], total);
    }
    TrafficShape shape;
    shape.numParams = cards[0]->replica().numParams();
    shape.ranks = cfg.ranks;
    shape.batchPerRank = cfg.batchPerRank;
    shape.halfPayload = plan.halfPayload;
    shape.roundWeights = cfg.precision == Precision::O3;
    shape.telemetry = cfg.telemetry;
    shape.flightDepth = plan.flightDepth;
    shape.weightStepShare = weightStepShare(s.stepsCompleted, plan.totalSteps, cfg.weightEvery);
    // Every rank skips the same steps (the overflow vote): card 0's count is the run's.
    shape.updateShare = s.stepsCompleted > 0
                            ? static_cast<double>(cards[0]->updates()) / static_cast<double>(s.stepsCompleted)
                            : 1;
    s.phaseTraffic = cardStepTraffic(shape);
    for (const auto& card : cards)
        s.cardStates.push_back(card->state());
    const std::vector<std::string> errors = cardErrors.list();
    const std::string& writeError = recorder->writeError();
    s.completed = s.stepsCompleted == plan.totalSteps && errors.empty() && writeError.empty();
    if (!writeError.empty())
        s.stopReason = "error: writing the run file failed: " + writeError;
    else if (!errors.empty())
        s.stopReason = "error: " + errors.front();
    else
        s.stopReason = s.completed ? "completed" : "stopped";
    s.imagesPerSecond = seconds > 0 ? double(s.stepsCompleted) * cfg.ranks * cfg.batchPerRank / seconds : 0;
}

// Pre-flight refused after the run file was created: record why (RANK_TABLE event, 0 steps) and stop.
RunSummary Trainer::Impl::refuse() {
    RunSummary s;
    s.stopReason = "error: " + preflightError.substr(0, preflightError.find('\n'));
    if (observer)
        observer->runStarted(meta);
    startRecording();
    recorder->submit(Event{0, -1, Severity::Error, eventcode::kRankTable, preflightError.substr(0, 255)});
    recorder->finish();
    if (!recorder->writeError().empty())
        throw TrainError("writing the run file failed: " + recorder->writeError());
    recorder->closeFile(s.stopReason);
    if (observer)
        observer->runFinished(s);
    return s;
}

} // namespace rs
