// ComparisonPlan: see ComparisonPlan.h.
#include "compare/ComparisonPlan.h"

#include "store/RunSource.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

namespace rs {
namespace {

// Configuration keys that decide the arithmetic, and the layout keys a rounding comparison may differ in.
constexpr const char* kArithmeticKeys[] = {
    "model",        "precision",   "loss_scale",   "data",      "seed",           "lr",    "momentum",
    "weight_decay", "lr_schedule", "warmup_steps", "broadcast", "gradients_mean", "steps", "epochs"};

std::string jsonText(const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

// The arithmetic keys the two configurations disagree on, into p.differences; true if any.
bool configDifferences(const nlohmann::json& ca, const nlohmann::json& cb, ComparisonPlan& p) {
    bool differs = false;
    for (const char* key : kArithmeticKeys) {
        const bool ina = ca.contains(key), inb = cb.contains(key);
        if ((!ina && !inb) || (ina && inb && ca[key] == cb[key]))
            continue;
        if (std::strcmp(key, "model") == 0)
            continue; // said from the meta
        p.differences.push_back(fmt::format("{}: {} vs {}", key, ina ? jsonText(ca[key]) : "not set",
                                            inb ? jsonText(cb[key]) : "not set"));
        differs = true;
    }
    if (ca.contains("momentum") && ca["momentum"].is_number())
        p.momentum = std::clamp(ca["momentum"].get<double>(), 0.0, 0.99);
    return differs;
}

// How the ranks' batches pair, into p; true if the arithmetic differs because of them.
bool batchDifferences(const RunMeta& a, const RunMeta& b, ComparisonPlan& p) {
    const int na = a.worldSize, nb = b.worldSize;
    const int64_t globalA = int64_t(na) * a.batchPerRank, globalB = int64_t(nb) * b.batchPerRank;
    // A source that did not record the batch (an msprobe import): the runs are taken for the same job, as the
    // user who compares them says; the expectation is then "unknown" and says so.
    const bool batchKnown = a.batchPerRank > 0 && b.batchPerRank > 0;
    p.globalSame = !batchKnown || globalA == globalB;
    p.oneToOne = na == nb;
    p.sameBatch = p.oneToOne && (!batchKnown || a.batchPerRank == b.batchPerRank);
    if (na != nb)
        p.differences.push_back(fmt::format("ranks: {} vs {}", na, nb));
    if (a.batchPerRank != b.batchPerRank)
        p.differences.push_back(fmt::format("batch per rank: {} vs {}", a.batchPerRank, b.batchPerRank));
    bool differs = false;
    if (!p.globalSame) {
        p.differences.push_back(fmt::format("global batch: {} vs {}", globalA, globalB));
        differs = true;
    }
    // BatchNorm normalises over each card's batch: other per-card batches compute other gradients.
    const bool batchNorm = !a.bufferNames.empty() || !b.bufferNames.empty();
    if (batchNorm && a.batchPerRank != b.batchPerRank) {
        p.differences.push_back(fmt::format("BatchNorm normalises over each card's batch ({} vs {} samples)",
                                            a.batchPerRank, b.batchPerRank));
        differs = true;
    }
    return differs;
}

Expectation expectationOf(const RunMeta& a, const RunMeta& b, const ComparisonPlan& p, bool arithmeticDiffers,
                          bool haveConfigs) {
    const ReductionShape sa = reductionShape(a), sb = reductionShape(b);
    const bool engines = sourceKind(a) == SourceKind::Engine && sourceKind(b) == SourceKind::Engine;
    if (arithmeticDiffers)
        return Expectation::Different;
    if (!engines || !haveConfigs)
        return Expectation::Unknown;
    if (p.sameBatch && sa.name == sb.name && !sa.assumed)
        return Expectation::Bitwise;
    return Expectation::Rounding;
}

} // namespace

ComparisonPlan planComparison(const RunMeta& a, const RunMeta& b) {
    ComparisonPlan p;
    const auto ca = nlohmann::json::parse(a.configJson, nullptr, false);
    const auto cb = nlohmann::json::parse(b.configJson, nullptr, false);
    const bool haveConfigs = ca.is_object() && cb.is_object() && !ca.empty() && !cb.empty();
    bool arithmeticDiffers = false;
    if (a.source != b.source)
        p.differences.push_back(fmt::format("source: {} vs {}", a.source, b.source));
    if (a.model != b.model && !a.model.empty() && !b.model.empty()) {
        p.differences.push_back(fmt::format("model: {} vs {}", a.model, b.model));
        arithmeticDiffers = true;
    }
    if (haveConfigs && configDifferences(ca, cb, p))
        arithmeticDiffers = true;
    if (batchDifferences(a, b, p))
        arithmeticDiffers = true;
    p.expectation = expectationOf(a, b, p, arithmeticDiffers, haveConfigs);
    return p;
}

ToleranceModel toleranceModel(const RunMeta& a, const RunMeta& b, const ComparisonPlan& plan) {
    ToleranceModel tm;
    tm.bitwise = plan.expectation == Expectation::Bitwise;
    tm.u = std::max(unitRoundoff(a), unitRoundoff(b));
    tm.momentum = plan.momentum;
    // Additions an element's sum goes through: across ranks, plus inside the card when per-card batches
    // differ (then the backward itself sums other numbers of samples).
    const bool batchesDiffer = a.batchPerRank != b.batchPerRank;
    const int da = reductionShape(a).depth + (batchesDiffer ? std::max(a.batchPerRank - 1, 0) : 0);
    const int db = reductionShape(b).depth + (batchesDiffer ? std::max(b.batchPerRank - 1, 0) : 0);
    tm.depthRoot = std::sqrt(double(da)) + std::sqrt(double(db));
    return tm;
}

std::vector<int> mapParameters(const RunMeta& a, const RunMeta& b, std::vector<std::string>& onlyInA,
                               std::vector<std::string>& onlyInB) {
    std::map<std::string, int> inB;
    for (size_t j = 0; j < b.params.size(); ++j)
        inB[b.params[j].name] = int(j);
    std::vector<int> map(a.params.size(), -1);
    std::vector<bool> used(b.params.size(), false);
    for (size_t i = 0; i < a.params.size(); ++i) {
        const auto it = inB.find(a.params[i].name);
        if (it != inB.end() && b.params[size_t(it->second)].numel == a.params[i].numel) {
            map[i] = it->second;
            used[size_t(it->second)] = true;
        } else {
            onlyInA.push_back(a.params[i].name);
        }
    }
    for (size_t j = 0; j < b.params.size(); ++j)
        if (!used[j])
            onlyInB.push_back(b.params[j].name);
    return map;
}

std::vector<std::pair<int, int>> rankPairs(const RunMeta& a, const RunMeta& b) {
    std::vector<std::pair<int, int>> pairs;
    pairs.reserve(size_t(std::max(a.worldSize, 0)));
    for (int r = 0; r < a.worldSize; ++r)
        pairs.emplace_back(r, a.worldSize == b.worldSize ? r : 0);
    return pairs;
}

std::string rankMappingText(const RunMeta& a, const RunMeta& b) {
    if (a.worldSize == b.worldSize)
        return "rank r of A against rank r of B";
    return b.worldSize == 1 ? "every rank of A against B's one rank"
                            : "every rank of A against rank 0 of B (the ranks of a healthy run agree)";
}

} // namespace rs
