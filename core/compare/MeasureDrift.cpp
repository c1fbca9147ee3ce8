// measureDrift: see MeasureDrift.h. The reference is compared with each spread reference over their aligned
// steps (compareAligned, without drift); their excess map, onto A's parameters, is the drift.
#include "compare/MeasureDrift.h"

#include "compare/AlignedComparison.h"
#include "store/RunReader.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>

namespace rs {
namespace {

int64_t earliest(int64_t a, int64_t b) {
    return a < 0 ? b : b < 0 ? a : std::min(a, b);
}

// What one spread reference measured against the reference (bc), or why it cannot measure drift.
SpreadReference spreadReference(const std::string& name, const RunComparison& bc) {
    if (bc.expectation == Expectation::Bitwise || bc.expectation == Expectation::Different)
        throw std::invalid_argument(fmt::format(
            "spread reference {}: {}; it must run the reference's job with other arithmetic (another "
            "layout, or another card count at the same global batch)",
            name,
            bc.expectation == Expectation::Bitwise
                ? "it does the same arithmetic as the reference, so it measures no drift"
                : fmt::format("it is not the reference's job ({})", fmt::join(bc.differences, "; "))));
    SpreadReference r;
    r.name = name;
    r.expectation = bc.expectation;
    r.parted = bc.first;
    for (const ParameterComparison& pc : bc.perParameter)
        r.worstExcess = std::max(r.worstExcess, pc.worstExcess);
    for (const char* discrete : {"skipped", "loss_scale"})
        if (const Divergence* dv = bc.firstOf(discrete))
            r.discreteFrom = earliest(r.discreteFrom, dv->step);
    // Once the trajectories have parted, an overflow may fall on other steps in each: which sum passes 65504
    // depends on weights that now differ.
    if (bc.first)
        r.discreteFrom = earliest(r.discreteFrom, bc.first->step);
    return r;
}

// bc's excess map onto A's parameters (by name), the largest over the references so far.
void addExcess(MeasuredDrift& d, const RunComparison& bc, const std::map<std::string, size_t>& paramOfA) {
    const size_t P = bc.perParameter.size();
    std::vector<int> toA(P, -1);
    for (size_t j = 0; j < P; ++j)
        if (const auto it = paramOfA.find(bc.perParameter[j].name); it != paramOfA.end())
            toA[j] = int(it->second);
    for (size_t row = 0; row < bc.mapSteps.size(); ++row) {
        auto [it, fresh] = d.rowOfStep.emplace(bc.mapSteps[row], d.rowOfStep.size());
        if (fresh)
            d.excess.resize(d.excess.size() + d.params, 0.0f);
        float* dst = d.excess.data() + it->second * d.params;
        // Where the reference and the spread disagreed on what must be equal (a non-finite value on one side:
        // an overflow), they measured no size of drift; the steps around carry it.
        for (size_t j = 0; j < P; ++j)
            if (toA[j] >= 0 && std::isfinite(bc.mapExcess[row * P + j]))
                dst[toA[j]] = std::max(dst[toA[j]], bc.mapExcess[row * P + j]);
    }
}

// A drift that crosses zero at a step has not closed: each cell takes the largest within a few steps.
void smoothOverSteps(MeasuredDrift& d) {
    constexpr size_t window = 2;
    std::vector<std::pair<int64_t, size_t>> rows(d.rowOfStep.begin(), d.rowOfStep.end()); // by step
    std::vector<float> smooth(d.excess.size(), 0.0f);
    d.stepMax.assign(rows.size(), 0.0f);
    for (size_t r = 0; r < rows.size(); ++r) {
        float* dst = smooth.data() + rows[r].second * d.params;
        const size_t lo = r >= window ? r - window : 0;
        const size_t hi = std::min(rows.size() - 1, r + window);
        for (size_t q = lo; q <= hi; ++q) {
            const float* src = d.excess.data() + rows[q].second * d.params;
            for (size_t p = 0; p < d.params; ++p)
                dst[p] = std::max(dst[p], src[p]);
        }
        d.stepMax[rows[r].second] = d.params ? *std::max_element(dst, dst + d.params) : 0.0f;
    }
    d.excess = std::move(smooth);
}

} // namespace

MeasuredDrift measureDrift(const RunReader& a, const RunReader& b,
                           const std::vector<std::pair<std::string, const RunReader*>>& spread,
                           std::vector<SpreadReference>& out, const std::function<void(int)>& progress,
                           int share) {
    const RunMeta& ma = a.meta();
    MeasuredDrift d;
    d.params = ma.params.size();
    std::map<std::string, size_t> paramOfA;
    for (size_t i = 0; i < ma.params.size(); ++i)
        paramOfA[ma.params[i].name] = i;
    for (size_t k = 0; k < spread.size(); ++k) {
        const auto& [name, reader] = spread[k];
        const RunComparison bc = compareAligned(b, *reader, nullptr, [&](int pct) {
            if (progress)
                progress(int((int(k) * 100 + pct) * share / (100 * int(spread.size()))));
        });
        out.push_back(spreadReference(name, bc));
        d.discreteFrom = earliest(d.discreteFrom, out.back().discreteFrom);
        addExcess(d, bc, paramOfA);
    }
    smoothOverSteps(d);
    return d;
}

} // namespace rs
