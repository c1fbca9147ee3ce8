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
    if (!d.bits && std::isfinite(d.a) != std::isfinite(d.b))
        size = "not finite where the other is";
    else if (d.tolerance > 0)
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

// The spread references and what they measured (nothing when none was given).
std::string spreadText(const RunComparison& c) {
    if (c.spreads.empty())
        return {};
    std::string out;
    if (!c.spreadUsed)
        out += "spread: not used (the runs do the same arithmetic, so they must agree bit for bit)\n";
    else
        out +=
            fmt::format("drift measured by {} spread reference(s): tolerances are {:g}x the drift measured "
                        "at each step and parameter where that exceeds the one-step bound\n",
                        c.spreads.size(), kSpreadFactor);
    for (const SpreadReference& r : c.spreads) {
        out += fmt::format("  spread {}: ", r.name);
        if (r.parted)
            out += fmt::format("parted from the reference at step {} ({}), at most {:.3g}x the bound",
                               r.parted->step, r.parted->statistic, r.worstExcess);
        else
            out += fmt::format("stayed within the one-step bound of the reference (at most {:.2g} of it)",
                               r.worstExcess);
        if (r.discreteFrom >= 0)
            out += fmt::format("; overflow skips may differ from step {}", r.discreteFrom);
        out += "\n";
    }
    return out;
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

// The two runs, what they are expected to agree on and how they pair.
std::string setupText(const RunComparison& c, const std::string& nameA, const std::string& nameB) {
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
    return out;
}

// The first divergence, or that there is none, and what the runs' skips meant.
std::string verdictText(const RunComparison& c) {
    std::string out;
    if (c.first)
        out += fmt::format("first divergence: {}\n", divergenceText(*c.first));
    else if (c.updatesDifferFrom >= 0)
        out += fmt::format("no divergence: every compared statistic is within its tolerance through step {}, "
                           "and samples and learning rate agree after it\n",
                           c.updatesDifferFrom);
    else
        out +=
            fmt::format("no divergence: every compared statistic is within its tolerance on all {} aligned "
                        "steps\n",
                        c.alignedSteps);
    if (c.updatesDifferFrom >= 0)
        out +=
            fmt::format("from step {} the runs skipped other updates, as the spread shows arithmetic alone "
                        "does once runs have drifted: the steps after it are compared only on samples and "
                        "learning rate\n",
                        c.updatesDifferFrom);
    // Runs of other arithmetic drift apart over many steps; without a spread the one-step bound cannot tell
    // that drift from a fault.
    if (c.first && c.spreads.empty() && c.first->tolerance > 0 &&
        (c.expectation == Expectation::Rounding || c.expectation == Expectation::Unknown) &&
        c.first->step > c.firstStep)
        out += "  (the tolerance bounds one step's rounding; runs of other arithmetic drift apart over many "
               "steps. To tell that drift from a fault, give the reference's job run once more with other "
               "arithmetic: --spread RUN2.h5)\n";
    return out;
}

// The parameters that parted, first step first (at most 10), then a count of the others.
std::string partedText(const RunComparison& c) {
    std::vector<const ParameterComparison*> parted;
    for (const ParameterComparison& p : c.perParameter)
        if (p.first)
            parted.push_back(&p);
    std::stable_sort(parted.begin(), parted.end(),
                     [](const auto* x, const auto* y) { return x->first->step < y->first->step; });
    if (parted.empty())
        return {};
    std::string out =
        fmt::format("\nparameters beyond tolerance: {} of {}\n", parted.size(), c.perParameter.size());
    for (size_t i = 0; i < parted.size() && i < 10; ++i)
        out += fmt::format("  {}\n", divergenceText(*parted[i]->first));
    if (parted.size() > 10)
        out += fmt::format("  ... and {} more (--json lists them all)\n", parted.size() - 10);
    return out;
}

// What was compared, what was not and why, and the parameters only one run has.
std::string coverageText(const RunComparison& c) {
    std::string out = fmt::format("\ncompared: {}\n", fmt::join(c.compared, ", "));
    for (const NotCompared& n : c.notCompared)
        out += fmt::format("not compared: {} ({}): {}\n", n.words, n.statistic, n.reason);
    if (!c.parametersOnlyInA.empty())
        out += fmt::format("parameters only in A: {}\n", fmt::join(c.parametersOnlyInA, ", "));
    if (!c.parametersOnlyInB.empty())
        out += fmt::format("parameters only in B: {}\n", fmt::join(c.parametersOnlyInB, ", "));
    return out;
}

nlohmann::json worstJson(double excess) {
    return std::isfinite(excess) ? nlohmann::json(excess) : nlohmann::json("inf");
}

nlohmann::json perParameterJson(const RunComparison& c) {
    nlohmann::json per = nlohmann::json::array();
    for (const ParameterComparison& p : c.perParameter) {
        nlohmann::json e;
        e["parameter"] = p.name;
        e["first_divergence"] = p.first ? divergenceJson(*p.first) : nlohmann::json(nullptr);
        e["worst_excess"] = worstJson(p.worstExcess);
        e["worst_step"] = p.worstStep >= 0 ? nlohmann::json(p.worstStep) : nlohmann::json(nullptr);
        per.push_back(e);
    }
    return per;
}

nlohmann::json spreadJson(const RunComparison& c) {
    nlohmann::json spreads = nlohmann::json::array();
    for (const SpreadReference& r : c.spreads)
        spreads.push_back({{"file", r.name},
                           {"expected", expectationName(r.expectation)},
                           {"parted", r.parted ? divergenceJson(*r.parted) : nlohmann::json(nullptr)},
                           {"worst_excess", worstJson(r.worstExcess)},
                           {"skips_may_differ_from",
                            r.discreteFrom >= 0 ? nlohmann::json(r.discreteFrom) : nlohmann::json(nullptr)}});
    return spreads;
}

} // namespace

std::string comparisonLine(const RunComparison& c) {
    if (!c.first) {
        const std::string within = c.spreadUsed ? "the measured drift" : "tolerance";
        if (c.updatesDifferFrom >= 0)
            return fmt::format(
                "agrees with the reference within {} through step {}, where they skipped other "
                "updates (as arithmetic alone does once runs have drifted)",
                within, c.updatesDifferFrom);
        return fmt::format("agrees with the reference within {} over {} aligned steps ({}..{})", within,
                           c.alignedSteps, c.firstStep, c.lastStep);
    }
    const Divergence& d = *c.first;
    return fmt::format("differs from the reference from step {}{} ({}{})", d.step,
                       d.parameter.empty() ? "" : " in " + d.parameter, d.statistic,
                       d.ranks.empty() ? "" : ", ranks " + ranksText(d.ranks));
}

std::string comparisonText(const RunComparison& c, const std::string& nameA, const std::string& nameB) {
    return setupText(c, nameA, nameB) + spreadText(c) + "\n" + verdictText(c) + partedText(c) +
           coverageText(c);
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
    j["per_parameter"] = perParameterJson(c);
    j["compared"] = c.compared;
    nlohmann::json nc = nlohmann::json::array();
    for (const NotCompared& n : c.notCompared)
        nc.push_back({{"statistic", n.statistic}, {"reason", n.reason}});
    j["not_compared"] = nc;
    j["parameters_only_in_a"] = c.parametersOnlyInA;
    j["parameters_only_in_b"] = c.parametersOnlyInB;
    j["spread"] = spreadJson(c);
    j["spread_used"] = c.spreadUsed;
    j["spread_factor"] = kSpreadFactor;
    j["updates_differ_from"] =
        c.updatesDifferFrom >= 0 ? nlohmann::json(c.updatesDifferFrom) : nlohmann::json(nullptr);
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace rs
