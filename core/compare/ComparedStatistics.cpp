// ComparedStatistics: see ComparedStatistics.h.
#include "compare/ComparedStatistics.h"

namespace rs {

// Each row reads its values through the getter of its phase, and only that one. (A column the schema renames
// or drops fails the build in the table itself: the rows name the schema's ids.)
static_assert([] {
    for (const Statistic& s : kStatistics)
        if ((s.phase == StatPhase::Weight) != (s.weightCell != nullptr) ||
            (s.stepCell == nullptr) == !s.weightCell)
            return false;
    return true;
}());

size_t statisticNamed(std::string_view name) {
    for (size_t s = 0; s < kStatisticCount; ++s)
        if (name == kStatistics[s].name)
            return s;
    return kStatisticCount;
}

} // namespace rs
