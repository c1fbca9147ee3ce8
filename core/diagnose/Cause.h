// The causes RankSight names, in one table: the one place a cause id is spelled. The fault lab parses its
// specs against it, diagnosis builds its checks from it, and the Findings panel, the window's "go to
// evidence", the report and `diagnose --json` read a finding's cause through it. Adding a cause is one row
// here and one check file in diagnose/checks/ (docs/architecture.md walks through it).
#pragma once

#include "view/RankMatrix.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rs {

// In the order diagnosis runs the checks: a finding list sorted by confidence keeps this order among equals.
enum class Cause : uint8_t {
    RankTableInvalid,
    RankExit,
    ShardUneven,
    InitMismatch,
    ShardOverlap,
    DuplicateRankId,
    EvalMode,
    LossScaleTooHigh,
    NoLossScale,
    OverflowNotSynced,
    LossScaleNotRestored,
    SdcBefore,
    ParamNotSynced,
    SdcAfter,
    OptimizerMismatch,
    GradSum,
    Straggler,
    CollectiveMismatch,
    // Named only against a reference run (diagnose --reference): every rank does it alike.
    UpdateChanged,
    LossScaleChanged,
    AllReduceWrong,
};
inline constexpr size_t kCauseCount = 21;

// What the fault lab's spec for a cause accepts after its name.
enum class FaultArgs : uint8_t {
    None,      // a setting, there from the first step: NAME
    Step,      // NAME[@STEP]
    Rank,      // NAME[:RANK]
    StepRank,  // NAME[@STEP][:RANK]
    StepParam, // NAME[@STEP][:PARAMETER]
    StepBit,   // NAME[@STEP][:RANK[:BIT]]
};

struct CauseInfo {
    Cause id;
    const char* key;       // the id users and files see: "param-not-synced"
    const char* dimension; // environment | data-model | numerics | parallel
    const char* title;     // a few words for people: "parameter left out of the all-reduce"
    // The rank x rank heatmap that draws the evidence (none: keep the current one), and whether it should
    // show the finding's first parameter rather than all of them.
    std::optional<view::RankMetric> metric;
    bool showsParameter;
    // The fault-lab spec that reproduces it on a small run; null for a cause named only from records the
    // lab does not make (collective-mismatch: imported flight-recorder dumps).
    const char* reproduce;
    FaultArgs faultArgs;
    // The fix, a fmt template over {rank}, {step} and {param}; fixUnlocated when the evidence names no rank.
    const char* fix;
    const char* fixUnlocated;
    // A finding of this cause below `explainedBelow` confidence is dropped when a finding of one of these
    // causes starts at or before it: the other explains its weak sign.
    std::array<std::optional<Cause>, 2> explainedBy;
    double explainedBelow;
};

std::span<const CauseInfo> causes();
const CauseInfo& causeInfo(Cause c);
// The row for a key ("param-not-synced"), or null for an unknown one.
const CauseInfo* findCause(std::string_view key);
// The fix text of `c` for these particulars.
std::string causeFix(Cause c, int rank, int64_t step, const std::string& param, bool located = true);

} // namespace rs
