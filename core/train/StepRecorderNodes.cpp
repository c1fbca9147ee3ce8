// StepRecorder across node processes (issue 12): node 0 writes the one run file, so every card's part of a
// record goes to every node through the communicator (the records travel in RecordWire.h's encoding, which
// the run file's schema table defines); after the run, what each node's cards reported that the others
// cannot know.
#include "cluster/Communicator.h"
#include "cluster/NodeGroup.h"
#include "store/RecordWire.h"
#include "train/StepRecorder.h"

#include <algorithm>
#include <fmt/format.h>
#include <string_view>

namespace rs {

// Two all-gathers through the communicator (the parts' sizes, then the parts padded to the largest), in each
// card's own program order, so the nodes' collectives line up. Local card 0 gets the whole run's parts in
// rank order, the others an empty vector.
template <class Record> std::vector<Record> StepRecorder::exchange(CardSeat from, const Record& mine) {
    recordwire::Writer w;
    recordwire::put(w, std::vector<Record>{mine});
    std::string& bytes = w.bytes();
    const uint64_t size = bytes.size();
    const int ranks = m_setup.ranks;
    std::vector<uint64_t> sizes(static_cast<size_t>(ranks));
    m_comm.allGather(from.local, &size, sizeof size, sizes.data());
    const uint64_t width = *std::max_element(sizes.begin(), sizes.end());
    bytes.resize(size_t(width));
    std::vector<char> all(size_t(width) * size_t(ranks));
    m_comm.allGather(from.local, bytes.data(), size_t(width), all.data());
    std::vector<Record> out;
    if (from.local != 0)
        return out;
    // What this node sent for the exchange: its block of the two all-gathers to each other node.
    m_recordBytesSent += uint64_t(m_setup.nodes - 1) * uint64_t(m_setup.localCards) * (sizeof size + width);
    for (int r = 0; r < ranks; ++r) {
        recordwire::Reader in(std::string_view(all.data() + size_t(r) * width, size_t(sizes[size_t(r)])));
        std::vector<Record> one = recordwire::get<Record>(in);
        if (one.size() != 1)
            throw std::runtime_error(fmt::format("a record from rank {} did not decode", r));
        out.push_back(std::move(one.front()));
    }
    return out;
}

template std::vector<StepRecord> StepRecorder::exchange(CardSeat, const StepRecord&);
template std::vector<WeightRecord> StepRecorder::exchange(CardSeat, const WeightRecord&);
template std::vector<EvalRecord> StepRecorder::exchange(CardSeat, const EvalRecord&);
template std::vector<FlightDump> StepRecorder::exchange(CardSeat, const FlightDump&);

void StepRecorder::shareNodeEvents() {
    if (!m_setup.group)
        return;
    if (m_setup.nodeRank != 0)
        reportToNode0();
    else
        collectNodeReports();
}

void StepRecorder::reportToNode0() {
    recordwire::Writer w;
    {
        std::lock_guard lock(m_nodeEventsMutex);
        recordwire::put(w, m_nodeEvents);
    }
    m_setup.group->postReport(w.bytes());
}

void StepRecorder::collectNodeReports() {
    for (int k = 1; k < m_setup.nodes; ++k) {
        const auto bytes = m_setup.group->takeReport(k);
        if (!bytes)
            continue; // the node is gone: node 0's own cards have named its ranks in their timeouts
        try {
            recordwire::Reader in(*bytes);
            for (Event& e : recordwire::get<Event>(in))
                push(std::move(e));
        } catch (const std::exception& e) {
            submit(Event{0, -1, Severity::Warning, eventcode::kTimeout,
                         fmt::format("node {}'s report of its cards did not decode: {}", k, e.what())});
        }
    }
}

} // namespace rs
