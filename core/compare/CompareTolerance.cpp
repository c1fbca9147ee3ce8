// CompareTolerance: see CompareTolerance.h.
#include "compare/CompareTolerance.h"

#include "store/RunSource.h"

#include <cmath>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace rs {

ReductionShape reductionShape(const RunMeta& meta) {
    const int n = meta.worldSize;
    if (n <= 1)
        return {"one card", 0, false};
    if (sourceKind(meta) != SourceKind::Engine || meta.cards.size() != size_t(n))
        return {fmt::format("a ring over {} ranks (assumed: the source records no layout)", n), n - 1, true};
    // Servers in the order their first card appears; the engine reduces inside each server, then across.
    std::vector<std::string> servers;
    std::vector<int> sizes;
    for (const CardInfo& c : meta.cards) {
        size_t i = 0;
        while (i < servers.size() && servers[i] != c.serverId)
            ++i;
        if (i == servers.size()) {
            servers.push_back(c.serverId);
            sizes.push_back(0);
        }
        ++sizes[i];
    }
    const int s = int(servers.size());
    bool equal = true;
    for (int size : sizes)
        equal = equal && size == sizes.front();
    if (s > 1 && equal)
        return {fmt::format("hierarchical: {} servers x {} cards", s, sizes.front()),
                (sizes.front() - 1) + (s - 1), false};
    return {fmt::format("flat ring over {} cards", n), n - 1, false};
}

double unitRoundoff(const RunMeta& meta) {
    // O2 and O3 round gradients to fp16 when they leave the backward, and reduce fp16 payloads.
    if (meta.precision == "O2" || meta.precision == "O3")
        return std::ldexp(1.0, -11);
    return std::ldexp(1.0, -24);
}

double ToleranceModel::vectorBound(double terms) const {
    return bitwise ? 0.0 : kRoundingLambda * u * depthRoot * std::abs(terms);
}

double ToleranceModel::norm(double terms, double a, double b) const {
    // Each norm is accumulated in double and stored as a float: off by at most u of itself.
    return bitwise ? 0.0 : vectorBound(terms) + u * (std::abs(a) + std::abs(b));
}

double ToleranceModel::sum(double terms, int64_t numel) const {
    // |sum(d)| <= sqrt(numel) * |d|_2 for the element differences d.
    return bitwise ? 0.0 : std::sqrt(double(std::max<int64_t>(numel, 1))) * vectorBound(terms);
}

double ToleranceModel::loss(double a, double b) const {
    const double m = std::max(std::abs(a), std::abs(b));
    return bitwise ? 0.0 : kRoundingLambda * u * depthRoot * m + u * (std::abs(a) + std::abs(b));
}

} // namespace rs
