// The local gradient's statistics (norm, max, sum, fp16 counts, sketch, fingerprint per parameter) into a
// card's record: in a pass of their own, or in the all-reduce's own read of the gradient.
//
// Each rank's reduce-scatter reads its chunk of every rank's gradient (Communicator::Read), so every local
// gradient is read anyway, a piece by each rank. ReducedLocalStats takes the statistics there: the reading
// rank adds each piece to its row's part for (source rank, parameter); once the all-reduce has returned, each
// rank merges its parts from every row, in row order, into its record. The fingerprint does not depend on the
// cut (PieceFingerprint), the sums and sketch differ from the own pass's by float rounding only.
//
// Threads: a rank writes only its own row, from its reduce-scatter; it reads the others' rows after its
// all-reduce returned (every read happened before that call's last synchronisation) and before its next
// collective (so no row is reset under it).
#pragma once

#include "store/RunRecords.h"
#include "telemetry/GradStats.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rs {

// The seed of parameter p's sketch signs in a run with this seed: the same on every rank.
uint64_t sketchSeedOf(uint64_t runSeed, size_t p);

// The local statistics of every parameter of a flat gradient g in one pass, into rs (its local vectors sized
// to the parameters); half, when not null, receives the fp16 payload in the same pass (CardWorker: O2/O3).
void localStatsInOwnPass(const float* g, const std::vector<ParamInfo>& params, float unscale,
                         uint64_t runSeed, int k, uint16_t* half, RankStep& rs);

class ReducedLocalStats {
public:
    // ranks: the communicator's (local) ranks; params tile the flat gradient.
    ReducedLocalStats(int ranks, std::vector<ParamInfo> params, int k, uint64_t runSeed);

    // On reader's thread before its all-reduce: the previous step's parts are forgotten.
    void startStep(int reader);
    // On reader's thread as its reduce-scatter reads elements [begin, end) of source's flat gradient (data:
    // element begin).
    void read(int reader, int source, size_t begin, size_t end, const float* data);
    // On source's thread after the all-reduce: its local statistics into rs, as localStatsInOwnPass gives
    // them.
    void combine(int source, float unscale, RankStep& rs) const;

private:
    struct Row {
        std::vector<LocalPart> parts; // [source * P + p]
        std::vector<double> sketch;   // [(source * P + p) * K + j]
        size_t lo = 0, hi = 0;        // the parameters this row's reads touched since startStep: [lo, hi)
    };

    const int m_ranks;
    const std::vector<ParamInfo> m_params;
    const int m_k;
    std::vector<uint64_t> m_seeds; // per parameter
    std::vector<Row> m_rows;       // per reader
};

} // namespace rs
