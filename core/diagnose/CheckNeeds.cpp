// The needs of the checks and the "could not run" list: see CheckNeeds.h.
#include "diagnose/CheckNeeds.h"

#include "store/RunSchema.h"

#include <fmt/format.h>

namespace rs::needs {
namespace {

namespace rsc = runschema;

const char* step(rsc::StepCol c) {
    return rsc::kStepColumns[c].path;
}

const char* weight(rsc::WeightCol c) {
    return rsc::kWeightColumns[c].path;
}

// "the source (msprobe) recorded no weight fingerprints or weight norms" (words, not dataset paths); ""
// when everything `n` reads is recorded.
std::string missingData(const RunFacts& f, const Needs& n) {
    std::vector<std::string> missing;
    for (const Need& d : n.all)
        if (!f.meta.recorded(d.path))
            missing.emplace_back(d.what);
    bool anyRecorded = n.any.empty();
    for (const Need& d : n.any)
        anyRecorded = anyRecorded || f.meta.recorded(d.path);
    if (!anyRecorded)
        for (const Need& d : n.any)
            missing.emplace_back(d.what);
    if (missing.empty())
        return "";
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i)
        list += (i == 0                    ? ""
                 : i + 1 == missing.size() ? (anyRecorded ? " and " : " or ")
                                           : ", ") +
                missing[i];
    return fmt::format("the source ({}) recorded no {}", f.meta.source, list);
}

} // namespace

const Needs kNone{nullptr, {}, {}};
const Needs kWeightConsistency{
    "weight consistency",
    {},
    {{weight(rsc::kWFp), "weight fingerprints"}, {weight(rsc::kWNorm), "weight norms"}}};
const Needs kBatchNormStatistics{"BatchNorm statistics",
                                 {},
                                 {{step(rsc::kBufferFpStep), "BatchNorm statistics per step"},
                                  {weight(rsc::kWBufferFp), "BatchNorm statistics fingerprints"}}};
const Needs kSyncedAgreement{"synced gradient agreement",
                             {},
                             {{step(rsc::kSyncedFp), "synced gradient fingerprints"},
                              {step(rsc::kSyncedNorm), "synced gradient norms"}}};
const Needs kAllReduceArithmetic{
    "all-reduce arithmetic",
    {{step(rsc::kLocalSum), "local gradient sums"}, {step(rsc::kSyncedSum), "synced gradient sums"}},
    {}};
const Needs kDataShards{
    "data shards",
    {},
    {{step(rsc::kSampleFp), "sample ids"}, {step(rsc::kLocalNorm), "local gradient norms"}}};
const Needs kLocalOutliers{"local gradient outliers", {{step(rsc::kLocalMax), "local max |g|"}}, {}};
const Needs kFp16Underflow{
    "fp16 underflow",
    {{step(rsc::kUnderflowCount), "fp16 underflow counts"}, {step(rsc::kLossScale), "loss scale"}},
    {}};
const Needs kLossScaling{"loss scaling",
                         {{step(rsc::kLossScale), "loss scale"},
                          {step(rsc::kOverflow), "overflow flags"},
                          {step(rsc::kSkipped), "skipped updates"}},
                         {}};
const Needs kStepTiming{
    "step timing",
    {{step(rsc::kComputeMs), "compute time"}, {step(rsc::kCommMs), "time in collectives"}},
    {}};

std::span<const Needs* const> listed() {
    static const Needs* const kListed[] = {&kWeightConsistency,   &kBatchNormStatistics, &kSyncedAgreement,
                                           &kAllReduceArithmetic, &kDataShards,          &kLocalOutliers,
                                           &kFp16Underflow,       &kLossScaling,         &kStepTiming};
    return kListed;
}

std::vector<CheckNotRun> notRun(const RunFacts& facts, const RunExtent& run,
                                const std::vector<std::pair<Cause, const Check*>>& checks) {
    std::vector<CheckNotRun> out;
    auto causesOf = [&](const Needs* n) {
        std::vector<std::string> keys;
        for (const auto& [cause, check] : checks)
            if (&check->needs() == n)
                keys.emplace_back(causeInfo(cause).key);
        return keys;
    };
    if (facts.R < 2) {
        std::vector<std::string> all;
        for (const Needs* n : listed())
            for (std::string& k : causesOf(n))
                all.push_back(std::move(k));
        out.push_back({"cross-rank comparison", all, fmt::format("the run has {} rank", facts.R)});
        return out;
    }
    for (const Needs* n : listed()) {
        std::string reason = missingData(facts, *n);
        for (const auto& [cause, check] : checks)
            if (reason.empty() && &check->needs() == n)
                reason = check->cannotRun(run);
        if (!reason.empty())
            out.push_back({n->name, causesOf(n), reason});
    }
    return out;
}

} // namespace rs::needs
