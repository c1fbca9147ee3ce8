// straggler: one card computes far longer than the others, and the others wait for it inside the collectives;
// the gradients still agree. The first two steps allocate and warm up, so they date a slow card but do not
// count. On a step, a card is slow at 2x (3x, 4x, 6x) when its compute time is at least that many times the
// median of the others' (the slowest card left out of the median). A card is named when either
//   - steady: it is the slowest card, at 2x, on most steps of the run (60 %), or on most steps since it
//     turned slow (80 %, at least 8 steps), and over the whole run the others' collective time exceeds its
//     own by at least half of its extra compute; or
//   - beyond chance: at some slowness (2x, 3x, 4x or 6x) it is slow on at least 4 steps, and on more steps
//     than chance explains: were every card slow as often as the other cards of this run are at that slowness
//     (taken as at least 1 step in 50), the chance that any card of the run, at any of the four slownesses,
//     would be slow on as many steps is below 1 in 1,000; and on those steps the others' collective time
//     exceeds its own by at least a quarter of its extra compute.
// A card's compute time here is its own: the time it waited for a free core (/steps/cpu_wait_ms, which the
// engine records because its emulated cards share the host's cores) is taken off.
// Why the second rule: on 64 emulated cards sharing two cores, scheduling makes a card 2x slow on about one
// card-step in eight, 3x on one in twenty-two, 4x on one in fifty, at random; some card of a clean run is
// then 2x slow on 9 or 10 of 28 steps, as many as a card 6x slow on 9 of them, which is never the slowest on
// most steps either. What sets the straggler apart is how slow it is: on 9 of 28 steps at 6x, where the
// others are that slow on well under 1 % of theirs. The rate comes from the same run, so the rule follows the
// machine's noise, and the chance is taken over every rank, so a clean 1,024-rank run names no card. (The
// wait is a difference of comm times, not a ratio: where many emulated cards share few cores every card waits
// long for the CPU in each collective, and one card's lateness adds a small part to that.)
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"

#include <array>
#include <cmath>
#include <fmt/format.h>

namespace rs::checks {
namespace {

constexpr double kSlowRatio = 2.0;                           // compute time vs the other ranks' median
constexpr std::array<double, 4> kRatios{2.0, 3.0, 4.0, 6.0}; // the slownesses the chance rule counts at
constexpr size_t kSlowDated = 32;                            // slow steps kept per rank for its date
constexpr size_t kSlowListed = 24;   // slow steps kept per rank and slowness for evidence
constexpr int64_t kMinSlowSteps = 4; // fewer slow steps are no straggler, however rare
constexpr double kChance = 1e-3;     // a clean run names a card this rarely
constexpr double kLeastNoise = 0.02; // a card may be slow on 1 step in 50 by chance
// The others' extra wait on a card's slow steps, as a share of its extra compute, that names it by the second
// rule: on 64 emulated cards sharing two cores the others use the CPU while the slow card is held up, and
// wait for it less than its extra time (measured 44 % to 170 % with the straggler fault).
constexpr double kWaitShare = 0.25;

// The first slow step that another slow step follows within three steps (the first slow step if none does):
// a slow card is slow from its first step, and one step lost to a noisy neighbour must not move the date.
int64_t slowSince(const std::vector<int64_t>& dated) {
    for (size_t i = 0; i + 1 < dated.size(); ++i)
        if (dated[i + 1] - dated[i] <= 3)
            return dated[i];
    return dated.empty() ? kNoStep : dated.front();
}

// ln n!: summed up to 20, Stirling's series beyond (its error there is below 1e-12). Not std::lgamma, which
// sets the global signgam and so is not safe while the window and a live diagnosis run checks at once.
double logFactorial(int64_t n) {
    if (n <= 20) {
        double s = 0;
        for (int64_t i = 2; i <= n; ++i)
            s += std::log(double(i));
        return s;
    }
    const double x = double(n), x2 = x * x;
    constexpr double kHalfLog2Pi = 0.91893853320467274178;
    return x * std::log(x) - x + 0.5 * std::log(x) + kHalfLog2Pi + 1 / (12 * x) - 1 / (360 * x * x2) +
           1 / (1260 * x * x2 * x2);
}

// log P(X >= k) for X ~ Binomial(n, q); 0 (certain) when k is no more than the mean. Past the mean each
// term is smaller than the one before, so the sum stops once the terms no longer count.
double logTail(int64_t n, int64_t k, double q) {
    if (double(k) <= double(n) * q)
        return 0;
    const double lq = std::log(q), lp = std::log1p(-q), ln = logFactorial(n);
    auto term = [&](int64_t j) {
        return ln - logFactorial(j) - logFactorial(n - j) + double(j) * lq + double(n - j) * lp;
    };
    const double first = term(k);
    double sum = 1;
    for (int64_t j = k + 1; j <= n; ++j) {
        const double rel = std::exp(term(j) - first);
        sum += rel;
        if (rel < 1e-12 * sum)
            break;
    }
    return std::min(0.0, first + std::log(sum));
}

// The median of the finite values.
double finiteMedian(std::vector<double> v) {
    std::erase_if(v, [](double x) { return !std::isfinite(x); });
    return median(std::move(v));
}

// The time a card computed: its compute time less what it waited for a free CPU core (recorded by the engine,
// whose emulated cards share the host's cores). Without that part a card that the scheduler keeps waiting,
// step after step, looks like a slow card: 4 cards on 2 cores compute two at a time, and the two that start
// second share the cores with the first two's statistics and all-reduce.
double busyMs(const RankStep& x) {
    return std::isfinite(x.cpuWaitMs) && x.cpuWaitMs > 0 ? x.computeMs - x.cpuWaitMs : x.computeMs;
}

// One rank's steps at one slowness: how many, the figures on them, and the first of them.
struct SlowSteps {
    int64_t steps = 0;
    double mine = 0, median = 0; // sum over those steps of its compute ms and the others' median
    double wait = 0;             // sum over those steps of the others' median comm ms minus its own
    std::vector<int64_t> listed; // the first kSlowListed of them
};

// The card the chance rule names, and what showed it.
struct Intermittent {
    int rank = -1;
    size_t ratio = 0;      // index into kRatios
    double logChance = 0;  // of a clean run showing as many slow steps on any card
    double othersRate = 0; // the other cards' share of steps at that slowness
};

class Straggler : public Check {
public:
    explicit Straggler(CheckContext& c)
        : m_R(c.facts.R)
        , m_slowest(size_t(std::max(m_R, 0)), 0)
        , m_computeSum(size_t(std::max(m_R, 0)), 0)
        , m_commSum(size_t(std::max(m_R, 0)), 0)
        , m_dated(size_t(std::max(m_R, 0)))
        , m_timedCells(size_t(std::max(m_R, 0)), 0) {
        for (auto& s : m_slow)
            s.resize(size_t(std::max(m_R, 0)));
    }
    const Needs& needs() const override { return needs::kStepTiming; }
    void addStep(const StepRecord& st, const RunExtent& before) override;
    std::string figures() const override;
    void conclude(const RunExtent& run, std::vector<Finding>& out) const override;

private:
    void tallySlow(const StepRecord& st, int slowest, double med);
    bool concludeSteady(const RunExtent& run, std::vector<Finding>& out) const;
    Intermittent mostUnlikely() const;
    void concludeIntermittent(std::vector<Finding>& out) const;

    int m_R;
    int64_t m_timedSteps = 0;
    std::vector<int64_t> m_slowest;            // [rank] timed steps where it was >= kSlowRatio x the others
    std::vector<double> m_computeSum;          // [rank] ms
    std::vector<double> m_commSum;             // [rank] ms
    std::vector<std::vector<int64_t>> m_dated; // [rank] its first slow steps (warm-up included), capped
    std::vector<int64_t> m_timedCells;         // [rank] timed steps with its compute time recorded
    std::array<std::vector<SlowSteps>, kRatios.size()> m_slow; // [slowness][rank], timed steps only
    std::array<int64_t, kRatios.size()> m_slowCells{};         // [slowness] summed over ranks
};

void Straggler::addStep(const StepRecord& st, const RunExtent& before) {
    if (m_R < 2 || st.ranks.size() != size_t(m_R))
        return;
    const auto& rk = st.ranks;
    const bool timed = before.steps >= 2;
    m_timedSteps += timed;
    int slow = 0;
    for (int r = 0; r < m_R; ++r) {
        if (timed) {
            m_computeSum[size_t(r)] += std::isfinite(rk[size_t(r)].computeMs) ? busyMs(rk[size_t(r)]) : 0;
            m_commSum[size_t(r)] += std::isfinite(rk[size_t(r)].commMs) ? rk[size_t(r)].commMs : 0;
        }
        if (busyMs(rk[size_t(r)]) > busyMs(rk[size_t(slow)]))
            slow = r;
    }
    std::vector<double> others;
    for (int r = 0; r < m_R; ++r)
        if (r != slow)
            others.push_back(busyMs(rk[size_t(r)]));
    const double med = finiteMedian(std::move(others));
    if (!(med > 0))
        return;
    if (timed)
        tallySlow(st, slow, med);
    if (!(busyMs(rk[size_t(slow)]) >= kSlowRatio * med))
        return;
    m_slowest[size_t(slow)] += timed;
    if (auto& dated = m_dated[size_t(slow)]; dated.size() < kSlowDated)
        dated.push_back(st.step);
}

// Every card's slowness on a timed step, against the median of the others (`slowest` left out), and what
// the others waited in the collectives on the steps a card was slow.
void Straggler::tallySlow(const StepRecord& st, int slowest, double med) {
    std::vector<double> comm;
    for (int r = 0; r < m_R; ++r)
        if (r != slowest)
            comm.push_back(st.ranks[size_t(r)].commMs);
    const double othersComm = finiteMedian(std::move(comm));
    for (int r = 0; r < m_R; ++r) {
        const RankStep& x = st.ranks[size_t(r)];
        if (!std::isfinite(x.computeMs))
            continue;
        ++m_timedCells[size_t(r)];
        for (size_t i = 0; i < kRatios.size() && busyMs(x) >= kRatios[i] * med; ++i) {
            SlowSteps& s = m_slow[i][size_t(r)];
            ++s.steps;
            ++m_slowCells[i];
            s.mine += busyMs(x);
            s.median += med;
            s.wait += std::isfinite(x.commMs) && std::isfinite(othersComm) ? othersComm - x.commMs : 0;
            if (s.listed.size() < kSlowListed)
                s.listed.push_back(st.step);
        }
    }
}

void Straggler::conclude(const RunExtent& run, std::vector<Finding>& out) const {
    if (m_R < 2 || m_timedSteps < 8)
        return;
    if (!concludeSteady(run, out))
        concludeIntermittent(out);
}

// The first rule: slow on most of the run, or on most of it since it turned slow.
bool Straggler::concludeSteady(const RunExtent& run, std::vector<Finding>& out) const {
    const int r = argmax(m_slowest);
    if (r < 0)
        return false;
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
        return false;
    double othersCompute = 0, othersComm = 0;
    for (int q = 0; q < m_R; ++q)
        if (q != r) {
            othersCompute += m_computeSum[size_t(q)] / (m_R - 1);
            othersComm += m_commSum[size_t(q)] / (m_R - 1);
        }
    const double n = double(m_timedSteps);
    const double mine = m_computeSum[size_t(r)] / n, myComm = m_commSum[size_t(r)] / n;
    // The others wait for it inside the collectives: their comm time exceeds its own by at least half of its
    // extra compute.
    const double extra = mine - othersCompute / n;
    if (othersComm / n - myComm < 0.5 * extra || mine < kSlowRatio * othersCompute / n)
        return false;
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
    return true;
}

// The card and slowness whose count of slow steps chance explains least (the second rule), if any card has
// at least kMinSlowSteps at some slowness.
Intermittent Straggler::mostUnlikely() const {
    Intermittent best;
    // Any of R cards at any of the slownesses: the chance for one card at one slowness, that many times.
    const double tries = std::log(double(m_R) * double(kRatios.size()));
    int64_t cells = 0;
    for (int64_t c : m_timedCells)
        cells += c;
    for (size_t i = 0; i < kRatios.size(); ++i) {
        Intermittent atRatio;
        for (int r = 0; r < m_R; ++r) {
            const SlowSteps& s = m_slow[i][size_t(r)];
            if (s.steps < kMinSlowSteps)
                continue;
            const int64_t othersCells = cells - m_timedCells[size_t(r)];
            const double rate =
                std::max(kLeastNoise, double(m_slowCells[i] - s.steps + 1) / double(othersCells + 2));
            const double chance = logTail(m_timedCells[size_t(r)], s.steps, rate) + tries;
            if (atRatio.rank < 0 || chance < atRatio.logChance)
                atRatio = {r, i, chance,
                           double(m_slowCells[i] - s.steps) / double(std::max<int64_t>(othersCells, 1))};
        }
        // A tie goes to the higher slowness: it lists fewer steps that noise made slow.
        if (atRatio.rank >= 0 && (best.rank < 0 || atRatio.logChance <= best.logChance))
            best = atRatio;
    }
    return best;
}

// "4, 7, 9", and how many more there were.
std::string stepList(const SlowSteps& s) {
    std::string out;
    for (size_t i = 0; i < s.listed.size(); ++i)
        out += fmt::format("{}{}", i ? ", " : "", s.listed[i]);
    if (s.steps > int64_t(s.listed.size()))
        out += fmt::format(" and {} more", s.steps - int64_t(s.listed.size()));
    return out;
}

// The second rule: slow on more steps than chance allows, the others waiting for it on those steps.
void Straggler::concludeIntermittent(std::vector<Finding>& out) const {
    const Intermittent c = mostUnlikely();
    if (c.rank < 0 || !(c.logChance < std::log(kChance)))
        return;
    const SlowSteps& s = m_slow[c.ratio][size_t(c.rank)];
    const double k = double(s.steps), extra = (s.mine - s.median) / k, wait = s.wait / k;
    if (wait < kWaitShare * extra)
        return;
    const int64_t since = slowSince(s.listed);
    out.push_back(makeFinding(
        Cause::Straggler, 0.7, since, {c.rank},
        fmt::format(
            "rank {} computes {:.1f} ms where the others' median is {:.1f} ms, on {} of {} steps (at least "
            "{:.0f}x: steps {}), while the other ranks are that slow on {:.1f}% of their steps; on those "
            "steps the others wait {:.1f} ms longer in collectives than it does; gradients still agree",
            c.rank, s.mine / k, s.median / k, s.steps, m_timedCells[size_t(c.rank)], kRatios[c.ratio],
            stepList(s), 100 * c.othersRate, wait),
        causeFix(Cause::Straggler, c.rank, since, {})));
}

std::string Straggler::figures() const {
    std::string out =
        fmt::format("slowest-by-{}x steps per rank [{}] of {}; compute ms [{}]; comm ms [{}]", kSlowRatio,
                    figureList(m_slowest), m_timedSteps, figureList(m_computeSum), figureList(m_commSum));
    if (const Intermittent c = m_R >= 2 ? mostUnlikely() : Intermittent{}; c.rank >= 0) {
        const SlowSteps& s = m_slow[c.ratio][size_t(c.rank)];
        out += fmt::format(
            "\nleast likely by chance: rank {} slow at {:.0f}x on {} of {} steps (others {:.2f}%), "
            "chance in a clean run {:.3g} (names below {:.3g}); others wait {:.1f} ms per slow step "
            "for {:.1f} ms extra compute",
            c.rank, kRatios[c.ratio], s.steps, m_timedCells[size_t(c.rank)], 100 * c.othersRate,
            std::exp(c.logChance), kChance, s.wait / double(s.steps), (s.mine - s.median) / double(s.steps));
    }
    return out;
}

} // namespace

std::unique_ptr<Check> straggler(CheckContext& c) {
    return std::make_unique<Straggler>(c);
}

} // namespace rs::checks
