// How a per-rank series spreads over the ranks, for charts of runs with too many ranks to draw a line each
// (Qt-free; tests reach it headlessly): the band from the lowest to the highest rank at each step, decimated
// to one point per pixel bucket, and the ranks that stand out from the others over a range of steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rs::view {

// The lowest and highest finite value of row[0 .. ranks); both NaN when no rank has a finite value.
struct RowRange {
    float low, high;
};
RowRange rowRange(const float* row, int ranks);

// A band: x and, per x, the lowest and highest value.
struct Band {
    std::vector<double> x, low, high;
};
// lows[i] and highs[i] for i in [begin, end) at x = xs[i], clamped to what all three hold. With more than
// buckets points, one point per bucket: the bucket's first x, the lowest low and the highest high in it (so
// no spike leaves the band). Non-finite values are skipped; a bucket with none finite is a gap (NaN).
Band bandDecimate(const std::vector<int64_t>& xs, const std::vector<float>& lows,
                  const std::vector<float>& highs, int64_t begin, int64_t end, int buckets);

// A rank that stands out: how far it sits from the other ranks, in the rows' own spread.
struct Standout {
    int rank = 0;
    double score = 0;      // mean |value - row median| / the row's robust spread (1.4826 MAD)
    int64_t nonFinite = 0; // rows where this rank's value is inf or NaN while some other rank's is finite
};
// The ranks of values (row-major, ranks per row) over rows [begin, end) that stand out: any rank with a
// non-finite value where other ranks have finite ones, and any whose score is at least minScore (ranks that
// only differ by chance score about 0.8, the mean of |z| for a normal z). At most maxCount, non-finite ones
// first, then by score; rows are sampled evenly, at most maxRows of them, so the cost stays bounded on long
// runs. Rows with fewer than three finite ranks or no spread are skipped; where most ranks agree exactly the
// spread is the mean absolute deviation, so one rank that differs still stands out.
std::vector<Standout> standoutRanks(const std::vector<float>& values, int ranks, int64_t begin, int64_t end,
                                    int maxCount = 4, double minScore = 2.0, int64_t maxRows = 4096);

// One figure per rank (a final loss, a median step time): the ranks whose figure is non-finite while some
// other rank's is finite, or at least minZ robust deviations (as standoutRanks measures them, over these
// figures) from the median; in rank order. Fewer than three finite figures, or no spread: only the
// non-finite ones.
std::vector<int> outlierRanks(const std::vector<float>& perRank, double minZ = 3.5);

// The value most ranks of a row hold (a loss scale: ranks that agree share it bit for bit), over the finite
// positive values of row[0 .. ranks); of equally common values the smallest; NaN when there is none.
float commonValue(const float* row, int ranks);

} // namespace rs::view
