// RankDepartures: see RankDepartures.h.
#include "diagnose/tally/RankDepartures.h"

#include "store/RunSchema.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace rs {
namespace {

constexpr size_t kMaxEvents = 1000, kMaxEpochStarts = 64;

int64_t stepOr(int64_t step) {
    return step == kNoStep ? -1 : step;
}

} // namespace

std::vector<int> ranksNamedIn(const std::string& message) {
    static const std::string kLead = "waiting for rank(s) ";
    std::vector<int> out;
    const size_t at = message.find(kLead);
    if (at == std::string::npos)
        return out;
    int value = -1;
    for (size_t i = at + kLead.size(); i <= message.size(); ++i) {
        const char c = i < message.size() ? message[i] : '\0';
        if (std::isdigit(static_cast<unsigned char>(c))) {
            value = (value < 0 ? 0 : value * 10) + (c - '0');
            continue;
        }
        if (value >= 0)
            out.push_back(value);
        value = -1;
        if (c != ',' && c != ' ')
            break;
    }
    return out;
}

struct RankDepartures::PerRank {
    int64_t failedAt = kNoStep, timeoutAt = kNoStep;
    int failedEvents = 0, named = 0, nodeGone = 0;
    std::string firstMessage;
};

RankDepartures::RankDepartures(const RunFacts& f)
    : m_facts(f)
    , m_peerRecorded(f.meta.recorded(runschema::kEventColumns[runschema::kVPeer].path))
    , m_deadStep(size_t(std::max(f.R, 0)), kNoStep)
    , m_paddedSteps(size_t(std::max(f.R, 0)), 0) {}

void RankDepartures::addStep(const StepRecord& st, const RunExtent&) {
    if (m_prevEpoch >= 0 && st.epoch > m_prevEpoch && m_epochStarts.size() < kMaxEpochStarts)
        m_epochStarts.push_back(st.step);
    m_prevEpoch = st.epoch;
    for (size_t r = 0; r < st.ranks.size(); ++r) {
        const auto& x = st.ranks[r];
        if (x.state == uint8_t(CardState::Dead))
            m_deadStep[r] = std::min(m_deadStep[r], st.step);
        if (std::count(x.sampleIds.begin(), x.sampleIds.end(), -1) > 0)
            ++m_paddedSteps[r];
    }
}

void RankDepartures::addEvent(const Event& e) {
    const bool failure = e.code == eventcode::kCardFailed;
    if ((!failure && e.code != eventcode::kTimeout) || m_events.size() >= kMaxEvents)
        return;
    if (failure) {
        m_events.push_back({e.step, e.rank, true, false, e.message, {}});
    } else if (m_peerRecorded) { // one TIMEOUT per rank waited for, as data
        m_events.push_back({e.step, e.rank, false, e.peerGone != 0, e.message,
                            e.peer >= 0 ? std::vector<int>{e.peer} : std::vector<int>{}});
    } else { // a file older than /events/peer: the communicator's message is all there is
        const bool nodeGone = e.message.find(" is gone (") != std::string::npos;
        m_events.push_back({e.step, e.rank, false, nodeGone, e.message, ranksNamedIn(e.message)});
    }
}

// A rank whose own node reported it waiting (its TIMEOUT reached node 0's file) was alive: its node ended
// because its cards did, and node 0's "is gone" says nothing more about it.
std::vector<RankDepartures::PerRank> RankDepartures::perRank() const {
    const int R = m_facts.R;
    std::vector<PerRank> out(size_t(std::max(R, 0)));
    std::vector<int> waited(size_t(std::max(R, 0)), 0);
    for (const Kept& e : m_events)
        if (!e.failure && e.rank >= 0 && e.rank < R)
            waited[size_t(e.rank)] = 1;
    for (const Kept& e : m_events) {
        if (e.failure && e.rank >= 0 && e.rank < R) {
            PerRank& p = out[size_t(e.rank)];
            ++p.failedEvents;
            p.failedAt = std::min(p.failedAt, e.step);
            if (p.firstMessage.empty())
                p.firstMessage = e.message;
        }
        if (e.failure)
            continue;
        for (int r : e.named) {
            if (r < 0 || r >= R || r == e.rank || (waited[size_t(r)] && e.nodeGone))
                continue;
            PerRank& p = out[size_t(r)];
            ++p.named;
            p.nodeGone += e.nodeGone;
            p.timeoutAt = std::min(p.timeoutAt, e.step);
            if (p.firstMessage.empty())
                p.firstMessage = e.message;
        }
    }
    return out;
}

bool RankDepartures::onEpochEdge(int rank, int64_t at, const RunExtent& run) const {
    const auto& starts = m_epochStarts;
    return std::find(starts.begin(), starts.end(), at) != starts.end() ||
           (!starts.empty() && starts.front() > 0 && at % starts.front() == 0) ||
           (run.lastStep >= 0 && at == run.lastStep + 1 && m_paddedSteps[size_t(rank)] > 0);
}

std::vector<RankDepartures::Departure> RankDepartures::departures(const RunExtent& run) const {
    std::vector<Departure> out;
    const auto all = perRank();
    for (int r = 0; r < m_facts.R; ++r) {
        const PerRank& p = all[size_t(r)];
        const bool cardFailed = m_deadStep[size_t(r)] != kNoStep || p.failedEvents > 0;
        if (!cardFailed && p.nodeGone == 0 && p.named == 0)
            continue;
        Departure d;
        d.rank = r;
        d.failed = cardFailed || p.nodeGone > 0;
        d.at = std::min({p.failedAt, p.timeoutAt, m_deadStep[size_t(r)]});
        d.epochEdge = onEpochEdge(r, d.at, run);
        d.evidence = fmt::format(
            "{}{} peer timeout(s) name rank {} from step {}; steps recorded {}..{} of {} planned{}",
            cardFailed       ? fmt::format("rank {} is dead (card failure recorded); ", r)
            : p.nodeGone > 0 ? fmt::format("rank {}'s node process is gone; ", r)
                             : "",
            p.named, r, stepOr(d.at), stepOr(run.firstStep), run.lastStep, m_facts.meta.plannedSteps,
            p.firstMessage.empty() ? "" : fmt::format("; \"{}\"", p.firstMessage));
        out.push_back(std::move(d));
    }
    return out;
}

} // namespace rs
