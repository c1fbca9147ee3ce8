// What records a run: the cards submit their part of each record (their rank's row of a step, of a weight
// check, of an evaluation, their tensors of a flight dump) and events; the recorder gathers the parts of all
// ranks (in this process, and across node processes through the communicator), queues whole records in step
// order and appends them on its one writer thread, which also runs the event detector, keeps the run's
// totals and tells the observer. The cards never see the file, the queue or the other cards' parts.
#pragma once

#include "store/RunRecords.h"
#include "train/TrainObserver.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

namespace rs {

class Communicator;
class EventDetector;
class NodeGroup;
class RunWriter;

// A card as the recorder knows it: its rank in the whole run and its index on this process's communicator
// (the one the node exchange's collectives take).
struct CardSeat {
    int rank = 0;
    int local = 0;
};

// What the recorder is told once the run is set up.
struct RecordingSetup {
    RunMeta meta;                    // the event detector reads it
    std::unique_ptr<RunWriter> file; // null: nothing written here (no file asked for, or not node 0)
    TrainObserver* observer = nullptr;
    NodeGroup* group = nullptr; // multi-node: the other node processes; null in one process
    int ranks = 1;              // in the whole run: a record is whole with a part from each
    int localCards = 1;         // cards in this process
    int nodes = 1, nodeRank = 0;
    int flightDepth = 0; // named in the flight recorder's event
};

class StepRecorder {
public:
    // onWriteFailed: called on the writer thread when the file cannot take a record; the run must stop
    // (nothing is lost silently).
    StepRecorder(Communicator& comm, std::function<void()> onWriteFailed);
    ~StepRecorder();
    StepRecorder(const StepRecorder&) = delete;
    StepRecorder& operator=(const StepRecorder&) = delete;

    // Starts the writer thread.
    void open(RecordingSetup setup);

    // A card's part of a record: `mine` holds this card's rank alone (one entry in each per-rank vector; a
    // flight dump this card's entries). Called on the card's thread, in the same order on every card: across
    // nodes the parts travel in collectives. A record is queued once every rank's part is in.
    void submit(CardSeat from, StepRecord mine);
    void submit(CardSeat from, WeightRecord mine);
    void submit(CardSeat from, EvalRecord mine);
    void submit(CardSeat from, FlightDump mine);
    // An event, recorded as it comes. On nodes other than 0 it is also kept for node 0's file
    // (shareNodeEvents).
    void submit(Event e);

    // Multi-node, after the card threads end: nodes other than 0 hand their cards' events (failures,
    // timeouts) to node 0, which records them as if its own cards had reported them. Collectives may be
    // broken by then, so this goes through the rendezvous store.
    void shareNodeEvents();
    // Records what is queued and ends the writer thread. The run's totals as recorded: steps completed,
    // first and last loss, evaluation accuracy, the writer's busy time, the bytes of records sent to node 0.
    RunSummary finish();
    // Why the run file could not take a record; empty when it took them all. After finish().
    const std::string& writeError() const { return m_writeError; }
    // Closes the run file (if this process writes one). Throws when the file cannot be completed.
    void closeFile(const std::string& stopReason);

private:
    using Item = std::variant<StepRecord, WeightRecord, EvalRecord, Event, FlightDump>;
    template <class Record>
    using Pending = std::map<int64_t, std::pair<Record, int>>; // key -> (record, parts)

    template <class Record> void submitPart(CardSeat from, Record mine);
    template <class Record> void gather(CardSeat from, Record mine);
    template <class Record> void exchangeAcrossNodes(CardSeat from, Record mine);
    template <class Record> std::vector<Record> exchange(CardSeat from, const Record& mine);
    void collectNodeReports();
    void reportToNode0();
    void push(Item item);
    std::optional<Item> take();
    void writerLoop();
    void write(StepRecord& step);
    void write(WeightRecord& w);
    void write(EvalRecord& ev);
    void write(Event& e);
    void write(FlightDump& dump);

    Communicator& m_comm;
    std::function<void()> m_onWriteFailed;
    RecordingSetup m_setup;
    std::unique_ptr<EventDetector> m_detector; // the writer thread's

    // Parts of records of this process's cards, until each record has all of them.
    std::mutex m_gatherMutex;
    std::tuple<Pending<StepRecord>, Pending<WeightRecord>, Pending<EvalRecord>, Pending<FlightDump>>
        m_pending;

    // Whole records, in the order they became whole, for the writer thread.
    std::mutex m_queueMutex;
    std::condition_variable m_queueCv;
    std::deque<Item> m_queue;
    bool m_queueClosed = false;
    std::thread m_writer;

    // The writer thread's, read after it ends.
    std::string m_writeError;
    RunSummary m_totals;

    std::mutex m_nodeEventsMutex;
    std::vector<Event> m_nodeEvents;            // this node's cards' events, for node 0 (nodes other than 0)
    std::atomic<uint64_t> m_recordBytesSent{0}; // the part of the node traffic that carries records
};

} // namespace rs
