// RankGroups: see RankGroups.h.
#include "view/RankGroups.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace rs::view {

int RankGroups::groupOf(int rank) const {
    const auto it = std::upper_bound(start.begin(), start.end(), rank);
    return int(it - start.begin()) - 1;
}

std::string RankGroups::label(int g) const {
    const int a = start[size_t(g)], b = end(g) - 1;
    return a == b ? fmt::format("rank {}", a) : fmt::format("ranks {}-{}", a, b);
}

RankGroups rankGroups(const RunMeta& meta, int maxGroups) {
    RankGroups g;
    g.ranks = std::max(meta.worldSize, 0);
    maxGroups = std::max(maxGroups, 1);
    // Servers: where consecutive ranks change server.
    std::vector<int> servers;
    if (int(meta.cards.size()) == g.ranks && g.ranks > 0) {
        for (int r = 0; r < g.ranks; ++r)
            if (r == 0 || meta.cards[size_t(r)].serverId != meta.cards[size_t(r) - 1].serverId)
                servers.push_back(r);
    }
    if (servers.size() > 1 || (servers.size() == 1 && g.ranks <= maxGroups)) {
        const size_t k = (servers.size() + size_t(maxGroups) - 1) / size_t(maxGroups);
        for (size_t s = 0; s < servers.size(); s += k)
            g.start.push_back(servers[s]);
        g.serversPerGroup = int(k);
        if (g.size() <= maxGroups)
            return g;
        g.start.clear();
    }
    g.serversPerGroup = 0;
    const int block = std::max(1, (g.ranks + maxGroups - 1) / maxGroups);
    for (int r = 0; r < g.ranks; r += block)
        g.start.push_back(r);
    return g;
}

Matrix poolMatrix(const Matrix& m, const RankGroups& g, bool lowIsWorse) {
    Matrix out;
    out.rows = out.cols = g.size();
    out.v.assign(size_t(out.rows) * size_t(out.cols), std::numeric_limits<double>::quiet_NaN());
    std::vector<int> groupOf(size_t(std::max(m.cols, 0)));
    for (int c = 0; c < m.cols; ++c)
        groupOf[size_t(c)] = std::min(g.groupOf(c), out.cols - 1);
    for (int r = 0; r < m.rows; ++r) {
        const int gr = g.groupOf(r);
        for (int c = 0; c < m.cols; ++c) {
            const double x = m.at(r, c);
            if (!std::isfinite(x))
                continue;
            double& cell = out.at(gr, groupOf[size_t(c)]);
            if (std::isnan(cell) || (lowIsWorse ? x < cell : x > cell))
                cell = x;
        }
    }
    return out;
}

} // namespace rs::view
