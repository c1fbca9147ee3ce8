// straggler: one card computes far longer than the others on most steps (or on most steps since it turned
// slow), and the others wait for it inside the collectives; the gradients still agree. The first two steps
// allocate and warm up, so they date a slow card but do not count.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"

#include <cmath>
#include <fmt/format.h>

namespace rs::checks {
namespace {

constexpr double kSlowRatio = 2.0; // compute time vs the other ranks' median
constexpr size_t kSlowDated = 32;  // slow steps kept per rank for its date

// The first slow step that another slow step follows within three steps (the first slow step if none does):
// a slow card is slow from its first step, and one step lost to a noisy neighbour must not move the date.
int64_t slowSince(const std::vector<int64_t>& dated) {
    for (size_t i = 0; i + 1 < dated.size(); ++i)
        if (dated[i + 1] - dated[i] <= 3)
            return dated[i];
    return dated.empty() ? kNoStep : dated.front();
}

class Straggler : public Check {
public:
    explicit Straggler(CheckContext& c)
        : m_R(c.facts.R)
        , m_slowest(size_t(std::max(m_R, 0)), 0)
        , m_computeSum(size_t(std::max(m_R, 0)), 0)
        , m_commSum(size_t(std::max(m_R, 0)), 0)
        , m_dated(size_t(std::max(m_R, 0))) {}
    const Needs& needs() const override { return needs::kStepTiming; }
    void addStep(const StepRecord& st, const RunExtent& before) override;
    std::string figures() const override;
    void conclude(const RunExtent& run, std::vector<Finding>& out) const override;

private:
    int m_R;
    int64_t m_timedSteps = 0;
    std::vector<int64_t> m_slowest;            // [rank] timed steps where it was >= kSlowRatio x the others
    std::vector<double> m_computeSum;          // [rank] ms
    std::vector<double> m_commSum;             // [rank] ms
    std::vector<std::vector<int64_t>> m_dated; // [rank] its first slow steps (warm-up included), capped
};

void Straggler::addStep(const StepRecord& st, const RunExtent& before) {
    if (m_R < 2)
        return;
    const auto& rk = st.ranks;
    const bool timed = before.steps >= 2;
    m_timedSteps += timed;
    int slow = 0;
    for (int r = 0; r < m_R; ++r) {
        if (timed) {
            m_computeSum[size_t(r)] += std::isfinite(rk[size_t(r)].computeMs) ? rk[size_t(r)].computeMs : 0;
            m_commSum[size_t(r)] += std::isfinite(rk[size_t(r)].commMs) ? rk[size_t(r)].commMs : 0;
        }
        if (rk[size_t(r)].computeMs > rk[size_t(slow)].computeMs)
            slow = r;
    }
    std::vector<double> others;
    for (int r = 0; r < m_R; ++r)
        if (r != slow)
            others.push_back(rk[size_t(r)].computeMs);
    const double med = median(others);
    if (!(med > 0 && rk[size_t(slow)].computeMs >= kSlowRatio * med))
        return;
    m_slowest[size_t(slow)] += timed;
    if (auto& dated = m_dated[size_t(slow)]; dated.size() < kSlowDated)
        dated.push_back(st.step);
}

void Straggler::conclude(const RunExtent& run, std::vector<Finding>& out) const {
    const int r = argmax(m_slowest);
    if (m_R < 2 || m_timedSteps < 8 || r < 0)
        return;
    // Slow on most steps of the run, or a card that turned slow late and stayed slow: most steps since its
    // streak began (at least 8 of them), however few of the whole run that is.
    const int64_t since = slowSince(m_dated[size_t(r)]);
    int64_t slowBefore = 0;
    for (int64_t d : m_dated[size_t(r)])
        slowBefore += d < since ? 1 : 0;
    const int64_t slowAfter = m_slowest[size_t(r)] - slowBefore, span = run.lastStep - since + 1;
    const bool most = m_slowest[size_t(r)] * 10 >= m_timedSteps * 6;
    const bool late = since != kNoStep && slowAfter >= 8 && slowAfter * 10 >= span * 8;
    if (!most && !late)
        return;
    double othersCompute = 0, othersComm = 0;
    for (int q = 0; q < m_R; ++q)
        if (q != r) {
            othersCompute += m_computeSum[size_t(q)] / (m_R - 1);
            othersComm += m_commSum[size_t(q)] / (m_R - 1);
        }
    const double n = double(m_timedSteps);
    const double mine = m_computeSum[size_t(r)] / n, myComm = m_commSum[size_t(r)] / n;
    // The others wait for it inside the collectives: their comm time exceeds its own by at least half of its
    // extra compute. (Not a ratio of the comm times: where many emulated cards share few cores, every card
    // waits long for the CPU in each collective, and one card's extra time is a small part of that.)
    const double extra = mine - othersCompute / n;
    if (othersComm / n - myComm < 0.5 * extra || mine < kSlowRatio * othersCompute / n)
        return;
    out.push_back(makeFinding(
        Cause::Straggler, 0.8, since, {r},
        fmt::format(
            "rank {} computes {:.1f} ms per step against {:.1f} ms on the others ({} of {} steps at least "
            "{:.0f}x slower{}), and the others wait {:.1f} ms per step in collectives against its {:.1f} ms; "
            "gradients still agree",
            r, mine, othersCompute / n, m_slowest[size_t(r)], m_timedSteps, kSlowRatio,
            most ? std::string() : fmt::format("; {} of the {} since step {}", slowAfter, span, since),
            othersComm / n, myComm),
        causeFix(Cause::Straggler, r, since, {})));
}

std::string Straggler::figures() const {
    return fmt::format("slowest-by-{}x steps per rank [{}] of {}; compute ms [{}]; comm ms [{}]", kSlowRatio,
                       figureList(m_slowest), m_timedSteps, figureList(m_computeSum), figureList(m_commSum));
}

} // namespace

std::unique_ptr<Check> straggler(CheckContext& c) {
    return std::make_unique<Straggler>(c);
}

} // namespace rs::checks
