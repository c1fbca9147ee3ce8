// grad-sum: the all-reduce sums the gradients instead of averaging them. The synced sum over the mean of the
// ranks' local sums (median over parameters) is 1 with gradients_mean and R when the gradients are summed.
// A lossy communication hook (PowerSGD, fp16/bf16 compression) delivers a synced gradient that is not the
// mean of the local ones, so the ratio says nothing there: the check does not run on such a job.
#include "diagnose/CheckNeeds.h"
#include "diagnose/ReferenceSigns.h"
#include "diagnose/checks/Checks.h"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>

namespace rs::checks {
namespace {

class GradSum : public Check {
public:
    explicit GradSum(CheckContext& c)
        : m_R(c.facts.R)
        , m_P(c.facts.P)
        , m_lossyHook(lossyHook(c.facts.meta)) {}
    const Needs& needs() const override { return needs::kAllReduceArithmetic; }
    std::string cannotRun(const RunExtent&) const override { return m_lossyHook; }

    void addParamStep(const StepRecord& st) override {
        if (m_R < 2 || st.ranks[0].overflow != 0 || !m_lossyHook.empty())
            return;
        std::vector<double> ratios;
        for (int p = 0; p < m_P; ++p) {
            double mean = 0, meanAbs = 0;
            for (const auto& x : st.ranks) {
                mean += x.localSum[size_t(p)] / m_R;
                meanAbs += std::fabs(x.localSum[size_t(p)]) / m_R;
            }
            const double syn = st.ranks[0].syncedSum[size_t(p)];
            // Sums that nearly cancel across ranks say nothing about the arithmetic.
            if (!std::isfinite(mean) || !std::isfinite(syn) || std::fabs(mean) < 0.3 * meanAbs ||
                std::fabs(mean) < 1e-20)
                continue;
            ratios.push_back(syn / mean);
        }
        if (ratios.empty())
            return;
        const double m = median(ratios);
        ++m_steps;
        m_sum += m;
        if (std::fabs(m - 1) < 0.15) {
            ++m_nearOne;
        } else if (std::fabs(m - m_R) < 0.15 * m_R) {
            ++m_nearN;
            m_firstNearN.note(st.step, -1, -1, m);
        }
    }

    std::string figures() const override {
        return fmt::format("synced/local sum ratio: mean {:.3f} over {} steps, near 1: {}, near N: {}",
                           m_steps ? m_sum / double(m_steps) : 0.0, m_steps, m_nearOne, m_nearN);
    }

    // Against a reference run: every rank's synced gradient parts first, at R times the reference's, while
    // the local gradients and losses of that step still match. Seen on the first applied step, and on a job
    // whose local sums were not recorded.
    void addReference(const RunComparison& c) override {
        const Divergence* n = c.firstOf("synced_norm");
        if (m_R < 2 || !c.first || !isSyncedStatistic(c.first->statistic) || !n || n->step != c.first->step ||
            int(n->ranks.size()) != m_R || n->b == 0 || std::fabs(n->a / n->b - m_R) > 0.15 * m_R)
            return;
        m_reference = makeFinding(
            Cause::GradSum, 0.9, n->step, allRanks(m_R),
            fmt::format(
                "from step {} every rank's synced gradient of {} is {:.3g}x the reference run's ({:.4g} vs "
                "{:.4g}){} while the local gradients and losses of that step match it: the all-reduce "
                "sums the {} ranks' gradients instead of averaging them",
                n->step, n->parameter, n->a / n->b, n->a, n->b, configurationNote(c, "gradients_mean"), m_R),
            causeFix(Cause::GradSum, -1, n->step, {}));
    }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        const size_t before = out.size();
        concludeRatio(run, out);
        if (out.size() == before && m_reference)
            out.push_back(*m_reference);
    }

private:
    void concludeRatio(const RunExtent&, std::vector<Finding>& out) const {
        if (m_R < 2 || m_steps < 5 || m_nearN * 10 < m_steps * 7)
            return;
        out.push_back(makeFinding(
            Cause::GradSum, 0.9, m_firstNearN.step, allRanks(m_R),
            fmt::format(
                "the synced gradient sum is {:.2f}x the mean of the ranks' local sums (median over "
                "parameters, {} of {} steps near {}): the all-reduce sums instead of averaging, so the "
                "effective learning rate is {}x",
                m_sum / double(m_steps), m_nearN, m_steps, m_R, m_R),
            causeFix(Cause::GradSum, -1, m_firstNearN.step, {})));
    }

    // Why the ratio cannot be read, when the recorder noted a lossy hook (environment comm_hook,
    // comm_hook_lossy); "" otherwise.
    static std::string lossyHook(const RunMeta& meta) {
        const auto env = nlohmann::json::parse(meta.environment, nullptr, false);
        if (!env.is_object() || !env.value("comm_hook_lossy", false))
            return {};
        return fmt::format(
            "the job's communication hook ({}) is lossy: its synced gradient is not the mean of "
            "the local ones",
            env.value("comm_hook", std::string("not named")));
    }

    int m_R, m_P;
    std::string m_lossyHook;
    int64_t m_steps = 0, m_nearOne = 0, m_nearN = 0; // steps with a ratio; near 1; near R
    double m_sum = 0;
    FirstSeen m_firstNearN;
    std::optional<Finding> m_reference; // against a reference run (addReference)
};

} // namespace

std::unique_ptr<Check> gradSum(CheckContext& c) {
    return std::make_unique<GradSum>(c);
}

} // namespace rs::checks
