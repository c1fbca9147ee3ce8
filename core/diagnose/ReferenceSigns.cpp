// ReferenceSigns: see ReferenceSigns.h.
#include "diagnose/ReferenceSigns.h"

#include "diagnose/CheckNeeds.h"

#include <fmt/format.h>

namespace rs {

const Divergence* bitwiseFirst(const RunComparison& c) {
    return c.expectation == Expectation::Bitwise && c.first ? &*c.first : nullptr;
}

bool everyRankParted(const Divergence& d, int ranks) {
    if (d.statistic != "loss" && !isLocalStatistic(d.statistic))
        return false;
    return int(d.ranks.size()) == ranks || (d.statistic == "loss" && d.ranks.empty());
}

std::string configurationNote(const RunComparison& c, std::string_view key) {
    for (const std::string& d : c.differences)
        if (d.size() > key.size() && d.compare(0, key.size(), key) == 0 && d[key.size()] == ':')
            return fmt::format(" ({} in the configurations)", d);
    return {};
}

const Needs& checks::ReferenceCheck::needs() const {
    return needs::kNone;
}

} // namespace rs
