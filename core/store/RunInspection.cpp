#include "store/RunInspection.h"

#include "store/RankMean.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs {
namespace {

float meanLoss(const StepRecord& s) {
    return finiteMean(s.ranks.size(), [&](size_t r) { return s.ranks[r].loss; });
}

} // namespace

RunInspection inspectRun(const RunReader& reader) {
    const RunMeta& m = reader.meta();
    RunInspection in;
    in.format = std::string(runschema::kFormatName);
    in.formatVersion = reader.formatVersion();
    in.source = m.source;
    in.absent = m.absent;
    in.model = m.model;
    in.worldSize = m.worldSize;
    in.batchPerRank = m.batchPerRank;
    in.precision = m.precision;
    in.lossScale = m.lossScale;
    in.plannedSteps = m.plannedSteps;
    in.stepsRecorded = reader.stepCount();
    in.parameterTensors = static_cast<int64_t>(m.params.size());
    for (const auto& p : m.params)
        in.parameters += p.numel;
    in.complete = reader.complete();
    in.stopReason = reader.stopReason();

    // Read in blocks so a 100k-step run never sits in memory whole.
    constexpr int64_t kBlock = 2048;
    for (int64_t b = 0; b < in.stepsRecorded; b += kBlock) {
        const auto steps = reader.readSteps(b, std::min(in.stepsRecorded, b + kBlock), true);
        for (const auto& s : steps) {
            if (s.step == 0 || (&s == &steps.front() && b == 0))
                in.lossFirst = meanLoss(s);
            in.lossLast = meanLoss(s);
            bool overflow = false, skipped = false;
            for (const auto& r : s.ranks) {
                overflow = overflow || r.overflow;
                skipped = skipped || r.skipped;
            }
            in.overflowSteps += overflow;
            in.skippedSteps += skipped;
            if (!in.firstGradMismatchStep) {
                for (const auto& r : s.ranks)
                    if (r.syncedFp != s.ranks[0].syncedFp) {
                        in.firstGradMismatchStep = s.step;
                        break;
                    }
            }
        }
    }
    const auto weights = reader.readWeights();
    for (const auto& w : weights) {
        bool same = true;
        for (const auto& fp : w.fp)
            same = same && fp == w.fp[0];
        if (!same && !in.firstWeightMismatchStep)
            in.firstWeightMismatchStep = w.step;
        in.weightsIdentical = same;
    }
    const auto evals = reader.readEvals();
    if (!evals.empty()) {
        double sum = 0;
        for (float a : evals.back().accuracy)
            sum += a;
        in.evalAccuracy = static_cast<float>(sum / std::max<size_t>(1, evals.back().accuracy.size()));
    }
    in.events = static_cast<int64_t>(reader.readEvents().size());
    return in;
}

std::string RunInspection::toJson() const {
    nlohmann::json j;
    j["format"] = format;
    j["format_version"] = formatVersion;
    j["source"] = source;
    j["absent"] = absent;
    j["model"] = model;
    j["world_size"] = worldSize;
    j["batch_per_rank"] = batchPerRank;
    j["precision"] = precision;
    j["loss_scale"] = lossScale;
    j["planned_steps"] = plannedSteps;
    j["steps_recorded"] = stepsRecorded;
    j["parameter_tensors"] = parameterTensors;
    j["parameters"] = parameters;
    auto num = [](float v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    j["loss_first"] = stepsRecorded ? num(lossFirst) : nlohmann::json(nullptr);
    j["loss_last"] = stepsRecorded ? num(lossLast) : nlohmann::json(nullptr);
    j["weights_identical"] = weightsIdentical;
    j["first_grad_mismatch_step"] = firstGradMismatchStep ? nlohmann::json(*firstGradMismatchStep) : nullptr;
    j["first_weight_mismatch_step"] =
        firstWeightMismatchStep ? nlohmann::json(*firstWeightMismatchStep) : nullptr;
    j["overflow_steps"] = overflowSteps;
    j["skipped_steps"] = skippedSteps;
    j["events"] = events;
    j["eval_accuracy"] = evalAccuracy ? num(*evalAccuracy) : nlohmann::json(nullptr);
    j["complete"] = complete;
    j["stop_reason"] = stopReason;
    // Strings come from the file (model, precision, stop reason...): invalid UTF-8 there must not make dump()
    // throw (type_error.316); it is printed as U+FFFD instead.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RunInspection::toText() const {
    auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("none"); };
    std::string s;
    s += fmt::format("format          {} v{} (written by {})\n", format, formatVersion, source);
    s += fmt::format("model           {} ({} tensors, {} parameters)\n", model, parameterTensors, parameters);
    s += fmt::format("cluster         {} ranks x batch {}, {}, loss scale {}\n", worldSize, batchPerRank,
                     precision, lossScale);
    s += fmt::format("steps           {} of {} recorded ({})\n", stepsRecorded, plannedSteps,
                     complete ? "complete: " + stopReason : "incomplete: the writer did not close the file");
    if (std::find(absent.begin(), absent.end(), runschema::kStepColumns[runschema::kLoss].path) !=
        absent.end())
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
    const bool noWeights = std::find(absent.begin(), absent.end(),
                                     runschema::kWeightColumns[runschema::kWFp].path) != absent.end();
    s += fmt::format("weights         {}\n", noWeights          ? "no fingerprints recorded"
                                             : weightsIdentical ? "identical across ranks"
                                                                : "DIFFER across ranks");
    s += fmt::format("first mismatch  gradient step {}, weight step {}\n", opt(firstGradMismatchStep),
                     opt(firstWeightMismatchStep));
    s += fmt::format("overflow        {} steps ({} skipped)\n", overflowSteps, skippedSteps);
    s += fmt::format("events          {}\n", events);
    return s;
}

} // namespace rs
