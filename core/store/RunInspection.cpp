#include "store/RunInspection.h"

#include "store/RankMean.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"
#include "store/RunSource.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs {
namespace {

float meanLoss(const StepRecord& s) {
    return finiteMean(s.ranks.size(), [&](size_t r) { return s.ranks[r].loss; });
}

void countStep(const StepRecord& s, RunInspection& in);

// Loss, overflow, skipped updates and the first gradient mismatch, over every step. Read in blocks so a
// 100k-step run never sits in memory whole.
void scanSteps(const RunReader& reader, RunInspection& in) {
    const int64_t block = stepsPerRead(reader.meta(), 2048);
    for (int64_t b = 0; b < in.stepsRecorded; b += block) {
        const auto steps = reader.readSteps(b, std::min(in.stepsRecorded, b + block), true);
        for (const auto& s : steps) {
            if (s.step == 0 || (&s == &steps.front() && b == 0))
                in.lossFirst = meanLoss(s);
            in.lossLast = meanLoss(s);
            countStep(s, in);
        }
    }
}

void countStep(const StepRecord& s, RunInspection& in) {
    bool overflow = false, skipped = false;
    for (const auto& r : s.ranks) {
        overflow = overflow || r.overflow;
        skipped = skipped || r.skipped;
    }
    in.overflowSteps += overflow;
    in.skippedSteps += skipped;
    if (in.firstGradMismatchStep)
        return;
    for (const auto& r : s.ranks)
        if (r.syncedFp != s.ranks[0].syncedFp) {
            in.firstGradMismatchStep = s.step;
            break;
        }
}

void scanWeights(const RunReader& reader, RunInspection& in) {
    for (const auto& w : reader.readWeights()) {
        bool same = true;
        for (const auto& fp : w.fp)
            same = same && fp == w.fp[0];
        if (!same && !in.firstWeightMismatchStep)
            in.firstWeightMismatchStep = w.step;
        in.weightsIdentical = same;
    }
}

// The last evaluation's accuracy, mean over ranks.
void lastEval(const RunReader& reader, RunInspection& in) {
    const auto evals = reader.readEvals();
    if (evals.empty())
        return;
    double sum = 0;
    for (float a : evals.back().accuracy)
        sum += a;
    in.evalAccuracy = static_cast<float>(sum / std::max<size_t>(1, evals.back().accuracy.size()));
}

RunInspection fromMeta(const RunReader& reader) {
    const RunMeta& m = reader.meta();
    RunInspection in;
    in.format = std::string(runschema::kFormatName);
    in.formatVersion = reader.formatVersion();
    in.source = m.source;
    in.description = describeRun(m);
    in.absent = m.absent;
    in.unreadable = m.unreadable;
    in.unreadableWhy = m.unreadableWhy;
    in.model = m.model;
    in.worldSize = m.worldSize;
    in.batchPerRank = m.batchPerRank;
    in.precision = m.precision;
    in.lossScale = m.lossScale;
    in.plannedSteps = m.plannedSteps;
    in.stepsRecorded = reader.stepCount();
    in.parameterTensors = static_cast<int64_t>(m.params.size());
    in.parameters = parameterCount(m);
    in.complete = reader.complete();
    in.stopReason = reader.stopReason();
    return in;
}

} // namespace

RunInspection inspectRun(const RunReader& reader) {
    RunInspection in = fromMeta(reader);
    scanSteps(reader, in);
    scanWeights(reader, in);
    lastEval(reader, in);
    in.events = static_cast<int64_t>(reader.readEvents().size());
    return in;
}

bool RunInspection::recorded(const std::string& name) const {
    return std::find(absent.begin(), absent.end(), name) == absent.end() &&
           std::find(unreadable.begin(), unreadable.end(), name) == unreadable.end();
}

std::string RunInspection::toJson() const {
    namespace rsc = runschema;
    nlohmann::json j;
    auto orNull = [&](const std::string& name, auto v) {
        return recorded(name) ? nlohmann::json(v) : nlohmann::json(nullptr);
    };
    auto step = [](rsc::StepCol c) { return std::string(rsc::kStepColumns[c].path); };
    j["format"] = format;
    j["format_version"] = formatVersion;
    j["source"] = source;
    j["description"] = description;
    j["absent"] = absent;
    j["unreadable"] = unreadable;
    j["unreadable_why"] = unreadableWhy.empty() ? nlohmann::json(nullptr) : nlohmann::json(unreadableWhy);
    j["model"] = orNull(rsc::kAttrModel, model);
    j["world_size"] = worldSize;
    j["batch_per_rank"] = orNull(rsc::kAttrBatchPerRank, batchPerRank);
    j["precision"] = orNull(rsc::kAttrPrecision, precision);
    j["loss_scale"] = orNull(rsc::kAttrLossScale, lossScale);
    j["planned_steps"] = plannedSteps;
    j["steps_recorded"] = stepsRecorded;
    j["parameter_tensors"] = parameterTensors;
    j["parameters"] = parameters ? nlohmann::json(*parameters) : nlohmann::json(nullptr);
    auto num = [](float v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    j["loss_first"] = stepsRecorded ? num(lossFirst) : nlohmann::json(nullptr);
    j["loss_last"] = stepsRecorded ? num(lossLast) : nlohmann::json(nullptr);
    j["weights_identical"] = orNull(rsc::kWeightColumns[rsc::kWFp].path, weightsIdentical);
    j["first_grad_mismatch_step"] = firstGradMismatchStep ? nlohmann::json(*firstGradMismatchStep) : nullptr;
    j["first_weight_mismatch_step"] =
        firstWeightMismatchStep ? nlohmann::json(*firstWeightMismatchStep) : nullptr;
    j["overflow_steps"] = orNull(step(rsc::kOverflow), overflowSteps);
    j["skipped_steps"] = orNull(step(rsc::kSkipped), skippedSteps);
    j["events"] = events;
    j["eval_accuracy"] = evalAccuracy ? num(*evalAccuracy) : nlohmann::json(nullptr);
    j["complete"] = complete;
    j["stop_reason"] = stopReason;
    // Strings come from the file (model, precision, stop reason...): invalid UTF-8 there must not make dump()
    // throw (type_error.316); it is printed as U+FFFD instead.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RunInspection::toText() const {
    namespace rsc = runschema;
    auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("none"); };
    auto attr = [&](const char* name, const std::string& v) { return recorded(name) ? v : kNotRecorded; };
    auto step = [](rsc::StepCol c) { return std::string(rsc::kStepColumns[c].path); };
    std::string s;
    s += fmt::format("format          {} v{} (written by {})\n", format, formatVersion, source);
    s += fmt::format("source          {}\n", description);
    s += fmt::format("model           {} ({} tensors, {})\n", attr(rsc::kAttrModel, model), parameterTensors,
                     parameters ? fmt::format("{} parameters", *parameters) : "parameter sizes not recorded");
    s += fmt::format("cluster         {} ranks x batch {}, {}, loss scale {}\n", worldSize,
                     attr(rsc::kAttrBatchPerRank, std::to_string(batchPerRank)),
                     attr(rsc::kAttrPrecision, precision), attr(rsc::kAttrLossScale, lossScale));
    s += fmt::format("steps           {} of {} recorded ({})\n", stepsRecorded, plannedSteps,
                     complete ? "complete: " + stopReason : "incomplete: the writer did not close the file");
    if (!recorded(step(rsc::kLoss)))
        s += "loss            not recorded by the source\n";
    else
        s += fmt::format("loss            {:.4f} -> {:.4f} (mean over ranks)\n", lossFirst, lossLast);
    if (evalAccuracy)
        s += fmt::format("eval accuracy   {:.1f}%\n", *evalAccuracy * 100);
    if (!absent.empty()) {
        std::string list;
        for (const std::string& a : absent)
            list += (list.empty() ? "" : ", ") + a;
        s += fmt::format("not recorded    {}\n", list);
    }
    if (!unreadableWhy.empty())
        s += fmt::format("unreadable      {}\n", unreadableWhy);
    const bool weightFp = recorded(rsc::kWeightColumns[rsc::kWFp].path);
    s += fmt::format("weights         {}\n", !weightFp          ? "fingerprints not recorded"
                                             : weightsIdentical ? "identical across ranks"
                                                                : "DIFFER across ranks");
    const bool syncedFp = recorded(step(rsc::kSyncedFp));
    s += fmt::format("first mismatch  gradient step {}, weight step {}\n",
                     syncedFp ? opt(firstGradMismatchStep) : std::string(kNotRecorded),
                     weightFp ? opt(firstWeightMismatchStep) : std::string(kNotRecorded));
    const bool overflow = recorded(step(rsc::kOverflow)), skipped = recorded(step(rsc::kSkipped));
    s += fmt::format("overflow        {}; {}\n",
                     overflow ? fmt::format("{} steps", overflowSteps) : std::string(kNotRecorded),
                     skipped ? fmt::format("updates skipped in {} steps", skippedSteps)
                             : "skipped updates " + std::string(kNotRecorded));
    s += fmt::format("events          {}\n", events);
    return s;
}

} // namespace rs
