// ComparisonText: see ComparisonText.h.
#include "compare/ComparisonText.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs {
namespace {

std::string ranksText(const std::vector<int>& ranks) {
    if (ranks.empty())
        return "";
    std::string out;
    size_t i = 0;
    while (i < ranks.size()) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
            ++j;
        if (!out.empty())
            out += ',';
        out += j > i ? fmt::format("{}-{}", ranks[i], ranks[j]) : fmt::format("{}", ranks[i]);
        i = j + 1;
    }
    return out;
}

std::string valueText(const Divergence& d, bool first) {
    if (d.bits)
        return fmt::format("{:016x}", first ? d.aBits : d.bBits);
    const double v = first ? d.a : d.b;
    if (d.statistic == "global_batch")
        return v == 0 ? "the same samples" : "other samples";
    return fmt::format("{:.7g}", v);
}

std::string divergenceText(const Divergence& d) {
    const std::string where = d.parameter.empty() ? "" : " " + d.parameter;
    const std::string ranks = d.ranks.empty() ? "" : fmt::format(" on rank(s) {}", ranksText(d.ranks));
    if (d.statistic == "global_batch")
        return fmt::format("step {}: the ranks together saw other samples than the reference", d.step);
    std::string size;
    if (d.tolerance > 0)
        size = fmt::format("tolerance {:.3g}, {:.3g}x past it", d.tolerance, d.excess());
    else
        size = "equality expected";
    double rel = std::abs(d.a - d.b) / std::max({std::abs(d.a), std::abs(d.b), 1e-30});
    const std::string relText =
        d.bits || !std::isfinite(rel) ? "" : fmt::format(", {:.2g} of the value", rel);
    return fmt::format("step {},{} {}{}: {} vs {} ({}{})", d.step, where, d.statistic, ranks,
                       valueText(d, true), valueText(d, false), size, relText);
}

nlohmann::json divergenceJson(const Divergence& d) {
    nlohmann::json j;
    j["step"] = d.step;
    j["parameter"] = d.parameter.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.parameter);
    j["ranks"] = d.ranks;
    j["statistic"] = d.statistic;
    if (d.bits) {
        j["a"] = fmt::format("{:016x}", d.aBits);
        j["b"] = fmt::format("{:016x}", d.bBits);
    } else {
        j["a"] = std::isfinite(d.a) ? nlohmann::json(d.a) : nlohmann::json(fmt::format("{}", d.a));
        j["b"] = std::isfinite(d.b) ? nlohmann::json(d.b) : nlohmann::json(fmt::format("{}", d.b));
    }
    j["tolerance"] = d.tolerance;
    return j;
}

std::string expectationText(const RunComparison& c) {
    switch (c.expectation) {
    case Expectation::Bitwise:
        return "equal bit for bit: the same configuration on the same reduction layout";
    case Expectation::Rounding:
        return fmt::format("equal within rounding: the all-reduce differs ({} vs {})", c.shapeA.name,
                           c.shapeB.name);
    case Expectation::Unknown:
        return "equal within rounding if they ran the same job: the source records no configuration to check";
    case Expectation::Different:
        return "not equal: the configurations differ (below); compared with the rounding tolerances anyway";
    }
    return "?";
}

} // namespace

std::string comparisonLine(const RunComparison& c) {
    if (!c.first)
        return fmt::format("agrees with the reference within tolerance over {} aligned steps ({}..{})",
                           c.alignedSteps, c.firstStep, c.lastStep);
    const Divergence& d = *c.first;
    return fmt::format("differs from the reference from step {}{} ({}{})", d.step,
                       d.parameter.empty() ? "" : " in " + d.parameter, d.statistic,
                       d.ranks.empty() ? "" : ", ranks " + ranksText(d.ranks));
}

std::string comparisonText(const RunComparison& c, const std::string& nameA, const std::string& nameB) {
    std::string out;
    out += fmt::format("A: {}\nB: {} (the reference)\n", nameA, nameB);
    out += fmt::format("expected: {}\n", expectationText(c));
    for (const std::string& d : c.differences)
        out += fmt::format("  differs: {}\n", d);
    out += fmt::format("reduction: A {}, B {}; ranks: {}\n", c.shapeA.name, c.shapeB.name, c.rankMapping);
    out += fmt::format("aligned steps: {} ({}..{})\n", c.alignedSteps, c.firstStep, c.lastStep);
    if (c.bitwiseThrough >= 0)
        out += fmt::format("fingerprints equal bit for bit through step {}{}\n", c.bitwiseThrough,
                           c.bitwiseThrough == c.lastStep ? " (every aligned step)" : "");
    else if (!c.fingerprints)
        out += "fingerprints: none that both runs recorded\n";
    else
        out += "fingerprints: differ from the first aligned step\n";
    out += "\n";
    if (c.first)
        out += fmt::format("first divergence: {}\n", divergenceText(*c.first));
    else
        out +=
            fmt::format("no divergence: every compared statistic is within its tolerance on all {} aligned "
                        "steps\n",
                        c.alignedSteps);
    // The parameters that parted, first step first (at most 10), then a count of the others.
    std::vector<const ParameterComparison*> parted;
    for (const ParameterComparison& p : c.perParameter)
        if (p.first)
            parted.push_back(&p);
    std::stable_sort(parted.begin(), parted.end(),
                     [](const auto* x, const auto* y) { return x->first->step < y->first->step; });
    if (!parted.empty()) {
        out += fmt::format("\nparameters beyond tolerance: {} of {}\n", parted.size(), c.perParameter.size());
        for (size_t i = 0; i < parted.size() && i < 10; ++i)
            out += fmt::format("  {}\n", divergenceText(*parted[i]->first));
        if (parted.size() > 10)
            out += fmt::format("  ... and {} more (--json lists them all)\n", parted.size() - 10);
    }
    out += fmt::format("\ncompared: {}\n", fmt::join(c.compared, ", "));
    for (const NotCompared& n : c.notCompared)
        out += fmt::format("not compared: {}: {}\n", n.statistic, n.reason);
    if (!c.parametersOnlyInA.empty())
        out += fmt::format("parameters only in A: {}\n", fmt::join(c.parametersOnlyInA, ", "));
    if (!c.parametersOnlyInB.empty())
        out += fmt::format("parameters only in B: {}\n", fmt::join(c.parametersOnlyInB, ", "));
    return out;
}

std::string comparisonJson(const RunComparison& c) {
    nlohmann::json j;
    j["expected"] = expectationName(c.expectation);
    j["differences"] = c.differences;
    j["reduction"] = {{"a", c.shapeA.name}, {"b", c.shapeB.name}};
    j["unit_roundoff"] = c.tolerance.u;
    j["rank_mapping"] = c.rankMapping;
    j["aligned_steps"] = c.alignedSteps;
    j["first_step"] = c.firstStep;
    j["last_step"] = c.lastStep;
    j["bitwise_through"] = c.bitwiseThrough >= 0 ? nlohmann::json(c.bitwiseThrough) : nlohmann::json(nullptr);
    j["fingerprints_recorded"] = c.fingerprints;
    j["first_divergence"] = c.first ? divergenceJson(*c.first) : nlohmann::json(nullptr);
    nlohmann::json per = nlohmann::json::array();
    for (const ParameterComparison& p : c.perParameter) {
        nlohmann::json e;
        e["parameter"] = p.name;
        e["first_divergence"] = p.first ? divergenceJson(*p.first) : nlohmann::json(nullptr);
        e["worst_excess"] =
            std::isfinite(p.worstExcess) ? nlohmann::json(p.worstExcess) : nlohmann::json("inf");
        e["worst_step"] = p.worstStep >= 0 ? nlohmann::json(p.worstStep) : nlohmann::json(nullptr);
        per.push_back(e);
    }
    j["per_parameter"] = per;
    j["compared"] = c.compared;
    nlohmann::json nc = nlohmann::json::array();
    for (const NotCompared& n : c.notCompared)
        nc.push_back({{"statistic", n.statistic}, {"reason", n.reason}});
    j["not_compared"] = nc;
    j["parameters_only_in_a"] = c.parametersOnlyInA;
    j["parameters_only_in_b"] = c.parametersOnlyInB;
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace rs
