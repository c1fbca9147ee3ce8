// The check of each cause, one file each in this folder; makeCheck picks a cause's (Checks.cpp).
#pragma once

#include "diagnose/Check.h"

namespace rs::checks {

std::unique_ptr<Check> makeCheck(Cause cause, CheckContext& context);

std::unique_ptr<Check> rankTableInvalid(CheckContext&);
std::unique_ptr<Check> rankExit(CheckContext&);
std::unique_ptr<Check> shardUneven(CheckContext&);
std::unique_ptr<Check> initMismatch(CheckContext&);
std::unique_ptr<Check> shardOverlap(CheckContext&);
std::unique_ptr<Check> duplicateRankId(CheckContext&);
std::unique_ptr<Check> evalMode(CheckContext&);
std::unique_ptr<Check> lossScaleTooHigh(CheckContext&);
std::unique_ptr<Check> noLossScale(CheckContext&);
std::unique_ptr<Check> overflowNotSynced(CheckContext&);
std::unique_ptr<Check> lossScaleNotRestored(CheckContext&);
std::unique_ptr<Check> sdcBefore(CheckContext&);
std::unique_ptr<Check> paramNotSynced(CheckContext&);
std::unique_ptr<Check> sdcAfter(CheckContext&);
std::unique_ptr<Check> optimizerMismatch(CheckContext&);
std::unique_ptr<Check> gradSum(CheckContext&);
std::unique_ptr<Check> straggler(CheckContext&);
std::unique_ptr<Check> collectiveMismatch(CheckContext&);
std::unique_ptr<Check> updateChanged(CheckContext&);
std::unique_ptr<Check> lossScaleChanged(CheckContext&);
std::unique_ptr<Check> allReduceWrong(CheckContext&);

} // namespace rs::checks
