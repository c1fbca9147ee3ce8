// StepRecorder: see StepRecorder.h. The cards' parts gathered into whole records, the queue, and the writer
// thread; the node exchange's collectives and reports are in StepRecorderNodes.cpp.
#include "train/StepRecorder.h"

#include "store/RankMean.h"
#include "store/RunWriter.h"
#include "telemetry/EventDetector.h"
#include "train/Clock.h"

#include <cmath>
#include <fmt/format.h>

namespace rs {
namespace {

int64_t wallClockNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Where a record's parts meet: its step (a flight dump's, the step that triggered it).
int64_t keyOf(const StepRecord& r) {
    return r.step;
}
int64_t keyOf(const WeightRecord& r) {
    return r.step;
}
int64_t keyOf(const EvalRecord& r) {
    return r.step;
}
int64_t keyOf(const FlightDump& r) {
    return r.triggerStep;
}

// One rank's part into the whole record: per-rank values at the rank's index.
void absorb(StepRecord& whole, StepRecord&& part, int rank, int ranks) {
    whole.step = part.step;
    whole.epoch = part.epoch;
    whole.lr = part.lr;
    whole.ranks.resize(static_cast<size_t>(ranks));
    whole.ranks[static_cast<size_t>(rank)] = std::move(part.ranks[0]);
}
void absorb(WeightRecord& whole, WeightRecord&& part, int rank, int ranks) {
    const auto r = static_cast<size_t>(rank);
    whole.step = part.step;
    whole.fp.resize(static_cast<size_t>(ranks));
    whole.norm.resize(static_cast<size_t>(ranks));
    whole.bufferFp.resize(static_cast<size_t>(ranks));
    whole.bufferNorm.resize(static_cast<size_t>(ranks));
    whole.fp[r] = std::move(part.fp[0]);
    whole.norm[r] = std::move(part.norm[0]);
    whole.bufferFp[r] = part.bufferFp[0];
    whole.bufferNorm[r] = part.bufferNorm[0];
}
void absorb(EvalRecord& whole, EvalRecord&& part, int rank, int ranks) {
    whole.step = part.step;
    whole.accuracy.resize(static_cast<size_t>(ranks));
    whole.loss.resize(static_cast<size_t>(ranks));
    whole.accuracy[static_cast<size_t>(rank)] = part.accuracy[0];
    whole.loss[static_cast<size_t>(rank)] = part.loss[0];
}
// A dump's entries in the order the parts arrive (rank order across nodes).
void absorb(FlightDump& whole, FlightDump&& part, int /*rank*/, int /*ranks*/) {
    whole.triggerStep = part.triggerStep;
    whole.reason = std::move(part.reason);
    for (auto& entry : part.entries)
        whole.entries.push_back(std::move(entry));
}

// A step's row is stamped when its last part is in: the time joins records other tools kept.
void complete(StepRecord& r) {
    r.endNs = wallClockNs();
}
template <class Record> void complete(Record& /*r*/) {}

} // namespace

StepRecorder::StepRecorder(Communicator& comm, std::function<void()> onWriteFailed)
    : m_comm(comm)
    , m_onWriteFailed(std::move(onWriteFailed)) {}

StepRecorder::~StepRecorder() {
    if (m_writer.joinable())
        finish();
}

void StepRecorder::open(RecordingSetup setup) {
    m_setup = std::move(setup);
    m_detector = std::make_unique<EventDetector>(m_setup.meta);
    m_writer = std::thread([this] { writerLoop(); });
}

void StepRecorder::submit(CardSeat from, StepRecord mine) {
    submitPart(from, std::move(mine));
}
void StepRecorder::submit(CardSeat from, WeightRecord mine) {
    submitPart(from, std::move(mine));
}
void StepRecorder::submit(CardSeat from, EvalRecord mine) {
    submitPart(from, std::move(mine));
}
void StepRecorder::submit(CardSeat from, FlightDump mine) {
    submitPart(from, std::move(mine));
}
void StepRecorder::submit(Event e) {
    if (m_setup.group && m_setup.nodeRank != 0) {
        std::lock_guard lock(m_nodeEventsMutex);
        m_nodeEvents.push_back(e);
    }
    push(std::move(e));
}

// Gathered in this process, exchanged across nodes.
template <class Record> void StepRecorder::submitPart(CardSeat from, Record mine) {
    if (m_setup.group)
        exchangeAcrossNodes(from, std::move(mine));
    else
        gather(from, std::move(mine));
}

template <class Record> void StepRecorder::gather(CardSeat from, Record mine) {
    std::optional<Record> done;
    {
        std::lock_guard lock(m_gatherMutex);
        auto& pending = std::get<Pending<Record>>(m_pending);
        const int64_t key = keyOf(mine);
        auto& [whole, parts] = pending[key];
        absorb(whole, std::move(mine), from.rank, m_setup.ranks);
        if (++parts == m_setup.localCards) {
            complete(whole);
            done = std::move(whole);
            pending.erase(key);
        }
    }
    if (done)
        push(std::move(*done));
}

// Every card of every node takes part in the exchange; local card 0 of each node gets the whole run's parts.
template <class Record> void StepRecorder::exchangeAcrossNodes(CardSeat from, Record mine) {
    std::vector<Record> all = exchange(from, mine);
    if (from.local != 0)
        return;
    Record whole;
    for (size_t r = 0; r < all.size(); ++r)
        absorb(whole, std::move(all[r]), static_cast<int>(r), m_setup.ranks);
    complete(whole);
    push(std::move(whole));
}

void StepRecorder::push(Item item) {
    {
        std::lock_guard lock(m_queueMutex);
        m_queue.push_back(std::move(item));
    }
    m_queueCv.notify_one();
}

// The next whole record; none once the queue is closed and empty.
std::optional<StepRecorder::Item> StepRecorder::take() {
    std::unique_lock lock(m_queueMutex);
    m_queueCv.wait(lock, [&] { return !m_queue.empty() || m_queueClosed; });
    if (m_queue.empty())
        return std::nullopt;
    Item item = std::move(m_queue.front());
    m_queue.pop_front();
    return item;
}

void StepRecorder::writerLoop() {
    while (auto item = take()) {
        if (!m_writeError.empty())
            continue; // keep draining so producers never block; the error ends the run
        const auto t0 = Clock::now();
        try {
            std::visit([this](auto& record) { write(record); }, *item);
            m_totals.writerMs += msSince(t0);
        } catch (const std::exception& e) {
            m_writeError = e.what();
            m_onWriteFailed(); // a run that cannot be recorded stops: nothing is lost silently
        }
    }
}

void StepRecorder::write(StepRecord& step) {
    if (m_setup.file)
        m_setup.file->appendStep(step);
    const float mean = finiteMean(step.ranks.size(), [&](size_t r) { return step.ranks[r].loss; });
    if (m_totals.stepsCompleted == 0)
        m_totals.lossFirst = mean;
    m_totals.lossLast = mean;
    m_totals.stepsCompleted = step.step + 1;
    if (m_setup.observer)
        m_setup.observer->stepRecorded(step);
    for (auto& e : m_detector->onStep(step))
        write(e);
}

void StepRecorder::write(WeightRecord& w) {
    const auto& norm = w.bufferNorm; // the cards' buffer norms -> drift relative to rank 0
    w.bufferDrift.assign(norm.size(), 0.f);
    for (size_t r = 0; r < norm.size(); ++r)
        w.bufferDrift[r] = norm[0] > 0 ? std::fabs(norm[r] - norm[0]) / norm[0] : 0.f;
    if (m_setup.file)
        m_setup.file->appendWeights(w);
    if (m_setup.observer)
        m_setup.observer->weightsRecorded(w);
    for (auto& e : m_detector->onWeights(w))
        write(e);
}

void StepRecorder::write(EvalRecord& ev) {
    if (m_setup.file)
        m_setup.file->appendEval(ev);
    float mean = 0;
    for (float a : ev.accuracy)
        mean += a / static_cast<float>(ev.accuracy.size());
    m_totals.evalAccuracy = mean;
    if (m_setup.observer)
        m_setup.observer->evalRecorded(ev);
}

void StepRecorder::write(Event& e) {
    if (m_setup.file)
        m_setup.file->appendEvent(e);
    if (m_setup.observer)
        m_setup.observer->eventRecorded(e);
}

void StepRecorder::write(FlightDump& dump) {
    if (m_setup.file)
        m_setup.file->appendFlightDump(dump);
    Event e{dump.triggerStep, -1, Severity::Info, eventcode::kFlightRecorder,
            fmt::format("Flight recorder wrote the last {} step(s) of full tensors at step {}: {}",
                        m_setup.flightDepth, dump.triggerStep, dump.reason)};
    write(e);
}

RunSummary StepRecorder::finish() {
    {
        std::lock_guard lock(m_queueMutex);
        m_queueClosed = true;
    }
    m_queueCv.notify_one();
    if (m_writer.joinable())
        m_writer.join();
    RunSummary s = m_totals;
    s.nodeRecordBytesSent = m_recordBytesSent;
    return s;
}

void StepRecorder::closeFile(const std::string& stopReason) {
    if (m_setup.file)
        m_setup.file->close(stopReason);
}

} // namespace rs
