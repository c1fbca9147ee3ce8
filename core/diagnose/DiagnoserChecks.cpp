// What each diagnosis check needs, and Diagnoser::checksNotRun(): the checks that cannot run on a file whose
// source did not record what they read (RunMeta::absent: msprobe has no fingerprints, a DDP job without a
// GradScaler no fp16 counts), or whose run lacks it (one rank, no BatchNorm, no weight row at step 0). The
// rules themselves read the "missing" fill (NaN, 0) harmlessly; this is what tells the user which causes were
// not looked for, instead of a silence that reads like "all clear".
#include "diagnose/DiagnoserState.h"

#include <fmt/format.h>

namespace rs {
namespace {

namespace rsc = runschema;

struct Need {
    const char* path;
    const char* what; // in "the source recorded no <what>"
};

// A check runs when every dataset of `all` and at least one of `any` (if given) is recorded.
struct Check {
    const char* name;
    std::vector<std::string> causes;
    std::vector<Need> all;
    std::vector<Need> any;
};

const char* step(rsc::StepCol c) {
    return rsc::kStepColumns[c].path;
}

const char* weight(rsc::WeightCol c) {
    return rsc::kWeightColumns[c].path;
}

std::vector<Check> checks() {
    return {
        {"weight consistency",
         {"init-mismatch"},
         {},
         {{weight(rsc::kWFp), "weight fingerprints"}, {weight(rsc::kWNorm), "weight norms"}}},
        {"BatchNorm statistics",
         {"eval-mode"},
         {},
         {{step(rsc::kBufferFpStep), "BatchNorm statistics per step"},
          {weight(rsc::kWBufferFp), "BatchNorm statistics fingerprints"}}},
        {"synced gradient agreement",
         {"param-not-synced", "sdc-after"},
         {},
         {{step(rsc::kSyncedFp), "synced gradient fingerprints"},
          {step(rsc::kSyncedNorm), "synced gradient norms"}}},
        {"all-reduce arithmetic",
         {"grad-sum"},
         {{step(rsc::kLocalSum), "local gradient sums"}, {step(rsc::kSyncedSum), "synced gradient sums"}},
         {}},
        {"data shards",
         {"shard-overlap", "duplicate-rank-id"},
         {},
         {{step(rsc::kSampleFp), "sample ids"}, {step(rsc::kLocalNorm), "local gradient norms"}}},
        {"local gradient outliers", {"sdc-before"}, {{step(rsc::kLocalMax), "local max |g|"}}, {}},
        {"fp16 underflow",
         {"no-loss-scale"},
         {{step(rsc::kUnderflowCount), "fp16 underflow counts"}, {step(rsc::kLossScale), "loss scale"}},
         {}},
        {"loss scaling",
         {"loss-scale-too-high", "overflow-not-synced", "loss-scale-not-restored"},
         {{step(rsc::kLossScale), "loss scale"},
          {step(rsc::kOverflow), "overflow flags"},
          {step(rsc::kSkipped), "skipped updates"}},
         {}},
        {"step timing",
         {"straggler"},
         {{step(rsc::kComputeMs), "compute time"}, {step(rsc::kCommMs), "time in collectives"}},
         {}},
    };
}

// The data-side reason a check that has its datasets still cannot run; "" when it can.
std::string lacking(const Diagnoser::State& s, const std::string& check) {
    if (check == "weight consistency") {
        if (s.weightRows == 0)
            return "no weight row is recorded yet";
        if (!s.initChecked)
            return "no weight row at step 0, so weights cannot be compared before the first update";
    }
    if (check == "BatchNorm statistics" && s.meta.bufferNames.empty())
        return "the model has no BatchNorm running statistics";
    if (check == "synced gradient agreement" && s.paramSteps > 0 && s.syncedComparableSteps == 0)
        return "no step recorded synced gradients on every rank (an msprobe run with dp_group set writes "
               "them on data-parallel rank 0 only)";
    return "";
}

} // namespace

std::vector<CheckNotRun> Diagnoser::checksNotRun() const {
    const State& s = *m_s;
    std::vector<CheckNotRun> out;
    if (s.R < 2) {
        std::vector<std::string> causes;
        for (const Check& c : checks())
            causes.insert(causes.end(), c.causes.begin(), c.causes.end());
        out.push_back({"cross-rank comparison", causes, fmt::format("the run has {} rank", s.R)});
        return out;
    }
    for (const Check& c : checks()) {
        std::vector<std::string> missing;
        for (const Need& n : c.all)
            if (!s.meta.recorded(n.path))
                missing.push_back(fmt::format("{} ({})", n.what, n.path));
        bool anyRecorded = c.any.empty();
        for (const Need& n : c.any)
            anyRecorded = anyRecorded || s.meta.recorded(n.path);
        if (!anyRecorded)
            for (const Need& n : c.any)
                missing.push_back(fmt::format("{} ({})", n.what, n.path));
        std::string reason;
        if (!missing.empty()) {
            std::string list;
            for (size_t i = 0; i < missing.size(); ++i)
                list += (i == 0                    ? ""
                         : i + 1 == missing.size() ? (anyRecorded ? " and " : " or ")
                                                   : ", ") +
                        missing[i];
            reason = fmt::format("the source ({}) recorded no {}", s.meta.source, list);
        } else {
            reason = lacking(s, c.name);
        }
        if (!reason.empty())
            out.push_back({c.name, c.causes, reason});
    }
    return out;
}

} // namespace rs
