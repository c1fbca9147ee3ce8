// Mechanisms of the fault lab. Each one reproduces how the mistake happens on a real cluster (a config key,
// a rank id, a sampler, a dead card) rather than writing its symptom into the telemetry.
#include "faults/FaultPlan.h"

#include "util/ConfigError.h"

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>

namespace rs {

std::unique_ptr<FaultPlan> FaultPlan::make(const std::vector<std::string>& faults, int ranks,
                                           const std::string& lossScale) {
    auto plan = std::unique_ptr<FaultPlan>(new FaultPlan); // NOLINT(modernize-make-unique): private ctor
    plan->m_specs = parseFaults(faults);
    plan->m_ranks = ranks;
    checkFaults(plan->m_specs, ranks);
    if (plan->find(Cause::LossScaleNotRestored) && lossScale.rfind("dynamic", 0) != 0)
        throw ConfigError(fmt::format(
            "fault '{}': needs a dynamic loss scale (this run's is '{}'): it starts one rank's over "
            "from its initial value",
            causeInfo(Cause::LossScaleNotRestored).key, lossScale));
    if (plan->find(Cause::LossScaleChanged) && lossScale == "none")
        throw ConfigError(fmt::format("fault '{}': needs a loss scale (this run's is 'none'): it halves it",
                                      causeInfo(Cause::LossScaleChanged).key));
    return plan;
}

const FaultSpec* FaultPlan::find(Cause cause) const {
    for (const auto& f : m_specs)
        if (f.cause == cause)
            return &f;
    return nullptr;
}

bool FaultPlan::at(Cause cause, int rank, int64_t step, int64_t defaultStep) const {
    for (const auto& f : m_specs)
        if (f.cause == cause && rankOf(f) == rank && step == (f.step >= 0 ? f.step : defaultStep))
            return true;
    return false;
}

FaultPlan::ConfigChanges FaultPlan::configChanges() const {
    ConfigChanges c;
    c.broadcastInit = !find(Cause::InitMismatch); // and initSeed() gives every rank its own seed
    c.gradientsMean = !find(Cause::GradSum);
    if (find(Cause::LossScaleTooHigh)) // a fixed scale copied from an fp32 recipe: 2^30 overflows fp16
        c.lossScale = "fixed:1073741824";
    if (find(Cause::NoLossScale)) // fp16 gradients with the loss scale left out
        c.lossScale = "none";
    c.halfGradients = c.lossScale.has_value();
    return c;
}

std::optional<std::string> FaultPlan::rankTableText(const std::string& goodJson) const {
    if (!find(Cause::RankTableInvalid))
        return std::nullopt;
    // The hand-edited hccl.json mistakes seen in practice: a stale server_count, a device_ip pasted twice and
    // a rank_id that was not renumbered.
    auto doc = nlohmann::json::parse(goodJson);
    doc["server_count"] = std::to_string(doc["server_list"].size() + 1);
    auto& devices = doc["server_list"][0]["device"];
    if (devices.size() >= 2) {
        auto& last = devices[devices.size() - 1];
        last["device_ip"] = devices[0]["device_ip"];
        last["rank_id"] = devices[0]["rank_id"];
    }
    return doc.dump(4);
}

void FaultPlan::bindParams(const std::vector<ParamInfo>& params) {
    const FaultSpec* f = find(Cause::ParamNotSynced);
    if (!f || params.empty())
        return;
    if (f->param.empty()) {
        m_unsyncedParam = static_cast<int>(params.size()) - 1;
        return;
    }
    for (size_t p = 0; p < params.size(); ++p)
        if (params[p].name == f->param)
            m_unsyncedParam = static_cast<int>(p);
    if (m_unsyncedParam < 0)
        throw ConfigError(fmt::format("fault '{}:{}': the model has no parameter '{}' (first: {})", f->name,
                                      f->param, f->param, params.front().name));
}

uint64_t FaultPlan::initSeed(int rank, uint64_t seed) const {
    return find(Cause::InitMismatch) ? seed + 7919u * static_cast<uint64_t>(rank + 1) : seed;
}

int FaultPlan::rankId(int rank) const {
    const FaultSpec* f = find(Cause::DuplicateRankId);
    return f && rankOf(*f) == rank ? rank - 1 : rank;
}

bool FaultPlan::sharedSampler() const {
    return find(Cause::ShardOverlap) != nullptr;
}

int64_t FaultPlan::shardBatches(int rank, int64_t perEpoch) const {
    const FaultSpec* f = find(Cause::ShardUneven);
    if (!f || rankOf(*f) != rank)
        return perEpoch;
    // Default: the shard is one batch short, as when the data set size is not a multiple of ranks x batch.
    return std::max<int64_t>(1, std::min(perEpoch - 1, f->step >= 0 ? f->step : perEpoch - 1));
}

bool FaultPlan::diesAt(int rank, int64_t step) const {
    return at(Cause::RankExit, rank, step, 5);
}

bool FaultPlan::evalModeFrom(int rank, int64_t step) const {
    return at(Cause::EvalMode, rank, step, 0);
}

bool FaultPlan::overflowSynced(int64_t step) const {
    const FaultSpec* f = find(Cause::OverflowNotSynced);
    return !f || step < std::max<int64_t>(0, f->step);
}

int FaultPlan::unsyncedParam(int64_t step) const {
    const FaultSpec* f = find(Cause::ParamNotSynced);
    return f && step >= std::max<int64_t>(0, f->step) ? m_unsyncedParam : -1;
}

int FaultPlan::flipBit(Cause cause, int rank, int64_t step) const {
    for (const auto& f : m_specs)
        if (f.cause == cause && rankOf(f) == rank && step == (f.step >= 0 ? f.step : 5))
            return f.bit >= 0 ? f.bit : kDefaultFlipBit;
    return -1;
}

int FaultPlan::flipBefore(int rank, int64_t step) const {
    return flipBit(Cause::SdcBefore, rank, step);
}

int FaultPlan::flipAfter(int rank, int64_t step) const {
    return flipBit(Cause::SdcAfter, rank, step);
}

int FaultPlan::slowdown(int rank, int64_t step) const {
    const FaultSpec* f = find(Cause::Straggler);
    return f && rankOf(*f) == rank && step >= std::max<int64_t>(0, f->step) ? 4 : 1;
}

bool FaultPlan::scaleRestarts(int rank, int64_t step) const {
    return at(Cause::LossScaleNotRestored, rank, step, 5);
}

float FaultPlan::lrFactor(int rank, int64_t step) const {
    float factor = 1.f;
    if (const FaultSpec* f = find(Cause::OptimizerMismatch);
        f && rankOf(*f) == rank && step >= (f->step >= 0 ? f->step : 5))
        factor *= 1.5f;
    if (const FaultSpec* f = find(Cause::UpdateChanged); f && step >= (f->step >= 0 ? f->step : 6))
        factor *= 1.5f;
    return factor;
}

bool FaultPlan::scaleHalvesAt(int64_t step) const {
    const FaultSpec* f = find(Cause::LossScaleChanged);
    return f && step == (f->step >= 0 ? f->step : 6);
}

bool FaultPlan::allReduceWrongAt(int64_t step) const {
    const FaultSpec* f = find(Cause::AllReduceWrong);
    return f && step == (f->step >= 0 ? f->step : 6);
}

void FaultPlan::flipBit(float* data, int64_t count, int bit) {
    if (count <= 0 || bit < 0 || bit > 31)
        return;
    // The first nonzero element from the middle on whose magnitude is below 1. There the default flip (the
    // exponent's top bit, 30) turns |g| into |g| * 2^128, huge but finite, as a flipped bit in a small
    // gradient does. (In an element >= 2, which a loss-scaled gradient often is, the same flip makes it tiny
    // instead.) Other bits flip in the same element: a low exponent bit scales it by a power of two, a
    // mantissa bit changes it by at most a factor of two, bit 31 its sign.
    int64_t at = count / 2;
    for (int64_t k = 0; k < count; ++k) {
        const int64_t i = (count / 2 + k) % count;
        if (data[i] != 0.0f && std::fabs(data[i]) < 1.0f) {
            at = i;
            break;
        }
    }
    uint32_t bits = 0;
    std::memcpy(&bits, data + at, 4);
    bits ^= 1u << bit;
    std::memcpy(data + at, &bits, 4);
}

bool FaultPlan::overflows(const float* grads, int64_t count, bool half) {
    const float limit = half ? 65504.f : std::numeric_limits<float>::max();
    for (int64_t i = 0; i < count; ++i)
        if (!(std::fabs(grads[i]) <= limit))
            return true;
    return false;
}

} // namespace rs
