// The datasets diagnosis checks read, by check name as users see it, and which checks could not run on a
// file: its source did not record what they read (RunMeta::absent: msprobe has no fingerprints, a DDP job
// without a GradScaler no fp16 counts), or its run lacks it (one rank, no BatchNorm, no weight row at step
// 0). The checks themselves read the "missing" fill (NaN, 0) harmlessly; this is what tells the user which
// causes were not looked for, instead of a silence that reads like "all clear".
#pragma once

#include "diagnose/Check.h"

#include <span>

namespace rs::needs {

extern const Needs kNone; // checks that read the events and step states every source records
extern const Needs kWeightConsistency;
extern const Needs kBatchNormStatistics;
extern const Needs kSyncedAgreement;
extern const Needs kAllReduceArithmetic;
extern const Needs kDataShards;
extern const Needs kLocalOutliers;
extern const Needs kFp16Underflow;
extern const Needs kLossScaling;
extern const Needs kStepTiming;

// The named needs in the order the user reads them.
std::span<const Needs* const> listed();

// The checks of `checks` that cannot run, grouped by Needs in listed() order, with the causes each would
// name.
std::vector<CheckNotRun> notRun(const RunFacts& facts, const RunExtent& run,
                                const std::vector<std::pair<Cause, const Check*>>& checks);

} // namespace rs::needs
