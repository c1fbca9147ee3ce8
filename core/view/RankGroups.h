// Ranks in groups, for views that cannot give every rank of a large run its own cell or row (past 64): by
// server (the run's cards, consecutive ranks on one server), several servers to a group where even the
// servers are too many. Pooling keeps the worst value of a group, so that one outlying rank still shows.
#pragma once

#include "store/RunRecords.h"
#include "view/RankMatrix.h"

#include <string>
#include <vector>

namespace rs::view {

struct RankGroups {
    std::vector<int> start;  // first rank of each group, increasing; start[0] == 0
    int ranks = 0;           // ranks in all; group g is [start[g], start[g + 1] or ranks)
    int serversPerGroup = 0; // servers in a group (by the run's cards); 0: the cards record no servers
    int size() const { return int(start.size()); }
    int end(int g) const { return g + 1 < size() ? start[size_t(g) + 1] : ranks; }
    int groupOf(int rank) const;
    std::string label(int g) const; // "ranks 8-15"
};

// At most maxGroups groups of the meta's worldSize ranks: servers (from meta.cards) merged k at a time, or,
// without servers, blocks of ceil(ranks / maxGroups).
RankGroups rankGroups(const RunMeta& meta, int maxGroups);

// m (square, one row and column per rank) pooled into groups x groups cells: each the largest finite value
// of its block, or the smallest where low is worse (lowIsWorse: a cosine); NaN when the block has none.
Matrix poolMatrix(const Matrix& m, const RankGroups& g, bool lowIsWorse);

} // namespace rs::view
