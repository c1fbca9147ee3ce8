// no-loss-scale: small gradients flushed to zero in fp16, measured as the share of gradient elements whose
// fp16 rounding (of the scaled gradient, as the card sent it) is zero although the value was not. It rests on
// what the training did, not on the settings: a loss scale of 1 under O2 is advice (diagnose/Advice.h), the
// flushed share is the finding. A dynamic scale keeps the share near zero (it multiplies the gradients up to
// just below overflow); without one, a small network's gradients lose several percent of their elements.
// Under O3 the emulator's backward already rounds every layer through fp16, so the flushed elements arrive as
// zeros and are not counted: that case is advice only.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/LossScaleSeen.h"
#include "store/RunSchema.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

constexpr double kUnderflowFrac = 1e-3; // share of gradient elements flushed to zero

class NoLossScale : public Check {
public:
    explicit NoLossScale(CheckContext& c)
        : m_facts(c.facts)
        , m_scale(c.tallies.get<LossScaleSeen>()) {}
    const Needs& needs() const override { return needs::kFp16Underflow; }

    void addParamStep(const StepRecord& st) override {
        double under = 0, total = 0;
        for (const auto& x : st.ranks)
            for (int p = 0; p < m_facts.P; ++p) {
                under += x.underflowCount[size_t(p)];
                total += double(m_facts.meta.params[size_t(p)].numel);
            }
        if (total <= 0)
            return;
        ++m_steps;
        m_fracSum += under / total;
        if (m_first < 0 && under / total >= kUnderflowFrac)
            m_first = st.step;
    }

    std::string figures() const override {
        return fmt::format("underflow fraction mean {:.5f} (threshold {})",
                           m_steps ? m_fracSum / double(m_steps) : 0.0, kUnderflowFrac);
    }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        if (!m_facts.meta.recorded(runschema::kStepColumns[runschema::kUnderflowCount].path) || m_steps < 5)
            return;
        const double frac = m_fracSum / double(m_steps);
        if (frac < kUnderflowFrac)
            return;
        out.push_back(makeFinding(
            Cause::NoLossScale, frac >= 4 * kUnderflowFrac ? 0.9 : 0.8,
            m_first >= 0 ? m_first : run.firstStep, allRanks(m_facts.R),
            fmt::format(
                "on average {:.2f}% of the gradient elements flushed to zero in fp16 over {} steps, with a "
                "loss scale of {}: those updates are lost. A loss scale of 2^k keeps elements down to "
                "2^-(24+k); a dynamic scale starts at 2^24 and stays just below overflow",
                100 * frac, m_steps, m_scale.scaleText()),
            causeFix(Cause::NoLossScale, -1, -1, {})));
    }

private:
    const RunFacts& m_facts;
    const LossScaleSeen& m_scale;
    int64_t m_steps = 0; // steps with a gradient element count
    double m_fracSum = 0;
    int64_t m_first = -1; // the first step whose flushed share reached kUnderflowFrac
};

} // namespace

std::unique_ptr<Check> noLossScale(CheckContext& c) {
    return std::make_unique<NoLossScale>(c);
}

} // namespace rs::checks
