// Tally: ranks that left the job. A card failure, a step recorded Dead, peers' timeouts that name a rank, or
// a multi-node timeout naming the ranks of a node process that is gone. Read by rank-exit (the rank failed or
// its node went) and shard-uneven (the rank stopped answering without failing: its loader ran out first).
#pragma once

#include "diagnose/Check.h"

namespace rs {

class RankDepartures : public Accumulator {
public:
    explicit RankDepartures(const RunFacts& f);
    void addStep(const StepRecord& st, const RunExtent&) override;
    void addEvent(const Event& e) override;

    struct Departure {
        int rank = -1;
        bool failed = false;    // a card failure is recorded (event or state), or its node process is gone
        int64_t at = kNoStep;   // the first step any of the signs shows
        bool epochEdge = false; // at falls on an epoch boundary or right after a short batch
        std::string evidence;
    };
    // One per rank that failed or that a peer's timeout named.
    std::vector<Departure> departures(const RunExtent& run) const;

private:
    struct Kept {
        int64_t step = 0;
        int rank = -1;
        bool failure = false; // CARD_FAILED; else TIMEOUT
        bool nodeGone = false;
        std::string message;
        std::vector<int> named; // ranks a TIMEOUT waited for
    };
    struct PerRank; // departures()' working figures
    std::vector<PerRank> perRank() const;
    bool onEpochEdge(int rank, int64_t at, const RunExtent& run) const;

    const RunFacts& m_facts;
    bool m_peerRecorded; // TIMEOUT events name their peer in /events/peer (else: ranksNamedIn the message)
    std::vector<Kept> m_events;         // capped
    std::vector<int64_t> m_deadStep;    // [rank] first step recorded Dead
    std::vector<int64_t> m_paddedSteps; // [rank] steps whose batch has -1 (short shard)
    std::vector<int64_t> m_epochStarts; // steps where the epoch advanced (capped)
    int64_t m_prevEpoch = -1;
};

// "... waiting for rank(s) 1, 3 (call #12)" -> {1, 3}: the ranks a TIMEOUT message names. Only for files
// written before /events/peer: their messages come from this communicator's wording at the time.
std::vector<int> ranksNamedIn(const std::string& message);

} // namespace rs
