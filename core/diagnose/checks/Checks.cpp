// makeCheck: the check of each cause, in the cause table's order.
#include "diagnose/checks/Checks.h"

namespace rs::checks {
namespace {

using Factory = std::unique_ptr<Check> (*)(CheckContext&);

// Indexed by Cause: a row per cause, in enum order.
constexpr Factory kFactories[] = {
    rankTableInvalid,
    rankExit,
    shardUneven,
    initMismatch,
    shardOverlap,
    duplicateRankId,
    evalMode,
    lossScaleTooHigh,
    noLossScale,
    overflowNotSynced,
    lossScaleNotRestored,
    sdcBefore,
    paramNotSynced,
    sdcAfter,
    optimizerMismatch,
    gradSum,
    straggler,
    collectiveMismatch,
    updateChanged,
    lossScaleChanged,
    allReduceWrong,
};
static_assert(std::size(kFactories) == kCauseCount, "a check for every cause");

} // namespace

std::unique_ptr<Check> makeCheck(Cause cause, CheckContext& context) {
    return kFactories[size_t(cause)](context);
}

} // namespace rs::checks
