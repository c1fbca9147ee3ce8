// RunComparison: see RunComparison.h. What a comparison's result answers about itself.
#include "compare/RunComparison.h"

#include "compare/ComparedStatistics.h"

#include <cmath>
#include <limits>

namespace rs {

double excessOf(double a, double b, double tol) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) ? 0.0 : kInf;
    if (std::isinf(a) || std::isinf(b))
        return a == b ? 0.0 : kInf;
    const double d = std::abs(a - b);
    if (d == 0)
        return 0.0;
    return tol > 0 ? d / tol : kInf;
}

double Divergence::excess() const {
    if (bits)
        return aBits == bBits ? 0.0 : std::numeric_limits<double>::infinity();
    return excessOf(a, b, tolerance);
}

const Divergence* RunComparison::firstOf(std::string_view statistic) const {
    for (const Divergence& d : firstByStatistic)
        if (d.statistic == statistic)
            return &d;
    return nullptr;
}

bool RunComparison::partedAt(std::string_view statistic, int64_t step) const {
    const Divergence* d = firstOf(statistic);
    return d && d->step == step;
}

namespace {
bool hasPhase(std::string_view statistic, StatPhase phase) {
    const size_t s = statisticNamed(statistic);
    return s < kStatisticCount && kStatistics[s].phase == phase;
}
} // namespace

bool isLocalStatistic(std::string_view s) {
    return hasPhase(s, StatPhase::Local);
}

bool isSyncedStatistic(std::string_view s) {
    return hasPhase(s, StatPhase::Synced);
}

const char* expectationName(Expectation e) {
    switch (e) {
    case Expectation::Bitwise:
        return "bitwise";
    case Expectation::Rounding:
        return "rounding";
    case Expectation::Unknown:
        return "unknown";
    case Expectation::Different:
        return "different";
    }
    return "?";
}

} // namespace rs
