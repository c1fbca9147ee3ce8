// What diagnosis concludes from a run file: a likely cause of cross-rank disagreement, with the evidence that
// convinced it and the fix a user applies in their MindSpore / PyTorch job.
#pragma once

#include "diagnose/Cause.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rs {

struct Finding {
    Cause cause = Cause::RankTableInvalid; // its row of the cause table (diagnose/Cause.h)
    double confidence = 0;                 // 0..1
    int64_t firstStep = -1;                // the first step the evidence shows; -1 when not tied to a step
    std::vector<int> ranks;                // the ranks concerned
    std::vector<std::string> parameters;
    std::string evidence; // the figures that convinced the rule, in words
    std::string fix;      // what the user changes in their job

    const CauseInfo& info() const { return causeInfo(cause); }
    // The cause id users and files see, as the fault lab spells it: "param-not-synced".
    std::string key() const { return info().key; }
    std::string dimension() const {
        return info().dimension;
    } // environment | data-model | numerics | parallel
};

// A diagnosis check that could not run on a file, and why: the file's source did not record what it reads
// (an msprobe import has no fingerprints), or the run has too little of it (one rank, no BatchNorm). A rule
// that cannot run does not guess; the user sees which causes were not looked for.
struct CheckNotRun {
    std::string check;               // e.g. "weight consistency"
    std::vector<std::string> causes; // the causes the check would name
    std::string reason; // e.g. "the source (msprobe) recorded no weight fingerprints (/weights/fp)"
};

// Configuration advice (diagnose/Advice.h): a setting that makes a job fragile or its diagnosis weaker. Not a
// finding, which rests on what the training did.
struct Advice {
    std::string key;   // the config key concerned (TrainConfig's JSON name), e.g. "loss_scale"
    std::string value; // its value in this run, as the config records it
    std::string text;  // why it matters and what to set instead
};

// {"findings": [ {...}, ... ], "not_run": [ {"check", "causes", "reason"}, ... ],
//  "advice": [ {"key", "value", "advice"}, ... ]}, findings in the order given (diagnosis orders by
//  confidence).
std::string findingsToJson(const std::vector<Finding>& findings, const std::vector<CheckNotRun>& notRun = {},
                           const std::vector<Advice>& advice = {});
// "weight consistency (init-mismatch): the source (msprobe) recorded no weight fingerprints (/weights/fp)"
std::string checkNotRunLine(const CheckNotRun& c);

} // namespace rs
