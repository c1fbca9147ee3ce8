// loss-scale-not-restored: one rank's loss scale jumped away from the others' with no overflow skip they
// disagreed on: its loss-scale manager started over (a restarted rank process, or a checkpoint resumed
// without the scale). With a shared overflow vote every rank's scaler takes the same steps, so the ranks'
// scales agree. Every rank divides the all-reduced sum by its own scale, so from then on the ranks apply
// different gradients, and the ranks with the smaller scale apply the other's share of the sum too large.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SkipAgreement.h"

#include <cmath>
#include <fmt/format.h>

namespace rs::checks {
namespace {

class LossScaleNotRestored : public Check {
public:
    explicit LossScaleNotRestored(CheckContext& c)
        : m_R(c.facts.R)
        , m_skips(c.tallies.get<SkipAgreement>()) {}
    const Needs& needs() const override { return needs::kLossScaling; }
    void addStep(const StepRecord& st, const RunExtent&) override;
    void conclude(const RunExtent&, std::vector<Finding>& out) const override;

private:
    // The first split after agreement: the rank whose scale moved most against its own last step's.
    void noteSplit(const StepRecord& st);

    int m_R;
    const SkipAgreement& m_skips;
    std::vector<float> m_prevScales; // [rank] the last step's, when every rank recorded one
    bool m_prevAgree = true, m_prevSkipSplit = false;
    int64_t m_splitSteps = 0; // steps whose ranks' scales differ
    FirstSeen m_first;        // rank: the one whose scale jumped; value: log2(its scale / the others')
};

void LossScaleNotRestored::addStep(const StepRecord& st, const RunExtent&) {
    bool recorded = true, agree = true;
    for (const auto& x : st.ranks) {
        recorded = recorded && std::isfinite(x.lossScale) && x.lossScale > 0;
        agree = agree && x.lossScale == st.ranks[0].lossScale;
    }
    const bool skipSplit = SkipAgreement::split(st);
    if (recorded) {
        if (!agree) {
            ++m_splitSteps;
            if (m_prevAgree && m_prevScales.size() == size_t(m_R) && !skipSplit && !m_prevSkipSplit)
                noteSplit(st);
        }
        m_prevScales.resize(size_t(m_R));
        for (int r = 0; r < m_R; ++r)
            m_prevScales[size_t(r)] = st.ranks[size_t(r)].lossScale;
        m_prevAgree = agree;
    } else {
        m_prevScales.clear();
    }
    m_prevSkipSplit = skipSplit;
}

void LossScaleNotRestored::noteSplit(const StepRecord& st) {
    int odd = 0;
    double most = -1;
    for (int r = 0; r < m_R; ++r)
        if (const double jump = std::fabs(std::log2(st.ranks[size_t(r)].lossScale / m_prevScales[size_t(r)]));
            jump > most) {
            most = jump;
            odd = r;
        }
    std::vector<double> others;
    for (int r = 0; r < m_R; ++r)
        if (r != odd)
            others.push_back(st.ranks[size_t(r)].lossScale);
    m_first.note(st.step, odd, -1, std::log2(st.ranks[size_t(odd)].lossScale / median(others)));
}

void LossScaleNotRestored::conclude(const RunExtent&, std::vector<Finding>& out) const {
    if (!m_first.seen() || (m_skips.first.seen() && m_skips.first.step < m_first.step))
        return;
    const int r = m_first.rank;
    const double k = m_first.value;
    const std::string effect =
        k > 0
            ? fmt::format("the other ranks apply rank {}'s share of the all-reduced gradient {:g}x too large",
                          r, std::exp2(k))
            : fmt::format(
                  "rank {} applies the other ranks' shares of the all-reduced gradient {:g}x too large", r,
                  std::exp2(-k));
    out.push_back(makeFinding(
        Cause::LossScaleNotRestored, 0.9, m_first.step, {r},
        fmt::format(
            "at step {} rank {}'s loss scale became 2^{:.0f} times the other ranks' and stayed apart ({} "
            "step(s) with the ranks' scales unequal), with no overflow skip they disagreed on before it: its "
            "loss-scale manager started over. Each rank divides the all-reduced sum by its own scale, so the "
            "synced gradients differ across ranks and {}",
            m_first.step, r, k, m_splitSteps, effect),
        causeFix(Cause::LossScaleNotRestored, r, m_first.step, {})));
}

} // namespace

std::unique_ptr<Check> lossScaleNotRestored(CheckContext& c) {
    return std::make_unique<LossScaleNotRestored>(c);
}

} // namespace rs::checks
