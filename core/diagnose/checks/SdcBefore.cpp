// sdc-before: silent data corruption before the all-reduce. A finite local-gradient value a thousand times
// every other rank's largest, on one rank and few steps, while the synced gradients still agree. Corruption
// before the all-reduce never splits the synced copies; a split at or before the outlier is sdc-after's (the
// corrupted replica's later gradients are the outliers then). A ratio of two roundings is not corruption: a
// parameter whose gradient is zero up to rounding on every rank (a bias feeding BatchNorm: 9.7e-9 against
// 8.6e-12 and 0) can show any ratio, so an outlier must also be material against the step's gradient scale.
#include "diagnose/CheckNeeds.h"
#include "diagnose/ReferenceSigns.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SyncedAgreement.h"

#include <cmath>
#include <fmt/format.h>
#include <optional>

namespace rs::checks {
namespace {

constexpr double kOutlierRatio = 1e3; // local max |g| vs the other ranks' largest
// The outlier's max |g| against the step's gradient scale (the largest over parameters of the median over
// ranks of max |g|): below this it is rounding noise, whatever its ratio. A corrupted exponent or mantissa
// bit of a gradient that matters lands far above it.
constexpr double kMaterialShare = 1e-4;

class SdcBefore : public Check {
public:
    explicit SdcBefore(CheckContext& c)
        : m_facts(c.facts)
        , m_synced(c.tallies.get<SyncedAgreement>()) {}
    const Needs& needs() const override { return needs::kLocalOutliers; }

    void addParamStep(const StepRecord& st) override {
        if (m_facts.R < 2)
            return;
        bool counted = false;
        // The step's scale costs a median per parameter: computed only on a step that has an outlier.
        double floor = -1;
        for (int p = 0; p < m_facts.P; ++p) {
            const Column col = column(st, p);
            if (!col.finite)
                continue; // every rank's ratio is 0
            for (int r = 0; r < m_facts.R; ++r) {
                const double ratio = outlierRatio(st, r, p, col);
                if (ratio < kOutlierRatio)
                    continue;
                if (floor < 0)
                    floor = kMaterialShare * stepScale(st);
                if (!(st.ranks[size_t(r)].localMax[size_t(p)] >= floor)) {
                    ++m_immaterial;
                    continue;
                }
                if (!counted) {
                    counted = true;
                    ++m_steps;
                    m_syncedAgree += syncedAgree(st);
                }
                m_first.note(st.step, r, p, ratio);
            }
        }
    }

    std::string figures() const override {
        return fmt::format(
            "local outlier steps {} (synced agreeing {}); ratios over {:g} left out as below {:g} of "
            "the step's gradient scale: {}",
            m_steps, m_syncedAgree, kOutlierRatio, kMaterialShare, m_immaterial);
    }

    // Against a reference of the same configuration: one rank's local gradient parts from the reference's
    // while every other rank's stays equal to the bit. Finds what the ratio above cannot: a flip that does
    // not make an element huge, which the all-reduce then averages into every rank alike.
    void addReference(const RunComparison& c) override {
        const Divergence* d = bitwiseFirst(c);
        if (!d || !isLocalStatistic(d->statistic) || d->ranks.empty() || int(d->ranks.size()) >= m_facts.R)
            return;
        m_reference = makeFinding(
            Cause::SdcBefore, 0.85, d->step, d->ranks,
            fmt::format(
                "at step {} rank(s) {}'s local gradient of {} differs from the reference run's ({}), "
                "while every other rank's is equal to it bit for bit: a value was corrupted before the "
                "all-reduce, which averaged it into every rank's synced gradient alike",
                d->step, joinRanks(d->ranks), d->parameter, d->statistic),
            causeFix(Cause::SdcBefore, d->ranks.front(), d->step, {}));
        if (!d->parameter.empty())
            m_reference->parameters = {d->parameter};
    }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        const size_t before = out.size();
        concludeRanks(run, out);
        if (out.size() == before && m_reference)
            out.push_back(*m_reference);
    }

private:
    void concludeRanks(const RunExtent& run, std::vector<Finding>& out) const {
        if (m_steps == 0 || !m_first.seen())
            return;
        if (m_steps > std::max<int64_t>(3, run.paramSteps / 20) || m_syncedAgree < m_steps)
            return;
        if (m_synced.mismatchSteps > 0 && m_synced.firstMismatch.step <= m_first.step)
            return;
        const int r = m_first.rank;
        out.push_back(makeFinding(
            Cause::SdcBefore, m_steps == 1 ? 0.85 : 0.75, m_first.step, {r},
            fmt::format(
                "at step {} rank {}'s local gradient of {} has max |g| {:.3g}x the largest of the other "
                "ranks ({} such step(s) in {}), while the synced gradient is identical on every rank: one "
                "card's value was corrupted before the all-reduce",
                m_first.step, r, m_facts.paramName(m_first.param), m_first.value, m_steps, run.paramSteps),
            causeFix(Cause::SdcBefore, r, m_first.step, {})));
    }

    // Parameter p's max |g| over the ranks: the largest (and whose), the second largest, both from 0, and
    // whether every one is finite. Each rank's "other ranks' largest" is then one of the two: O(R) a
    // parameter instead of O(R^2), which at 1,024 ranks was most of a diagnosis.
    struct Column {
        double first = 0, second = 0;
        int firstAt = -1;
        bool finite = true;
    };
    Column column(const StepRecord& st, int p) const {
        Column c;
        for (int r = 0; r < m_facts.R; ++r) {
            const double v = st.ranks[size_t(r)].localMax[size_t(p)];
            if (!std::isfinite(v)) {
                c.finite = false;
                return c;
            }
            if (v > c.first) {
                c.second = c.first;
                c.first = v;
                c.firstAt = r;
            } else if (v > c.second) {
                c.second = v;
            }
        }
        return c;
    }

    // Rank r's max |g| of parameter p over the other ranks' largest; 0 when it is not positive, or when any
    // rank's is not finite (col.finite).
    static double outlierRatio(const StepRecord& st, int r, int p, const Column& col) {
        const double mx = st.ranks[size_t(r)].localMax[size_t(p)];
        if (!col.finite || mx <= 0)
            return 0;
        const double others = r == col.firstAt ? col.second : col.first;
        return others > 0 ? mx / others : 0;
    }

    // The largest over parameters of the median over ranks of max |g|: how large this step's gradients are.
    double stepScale(const StepRecord& st) const {
        double scale = 0;
        std::vector<double> v;
        for (int p = 0; p < m_facts.P; ++p) {
            v.clear();
            for (int r = 0; r < m_facts.R; ++r)
                if (const double x = st.ranks[size_t(r)].localMax[size_t(p)]; std::isfinite(x))
                    v.push_back(x);
            if (!v.empty())
                scale = std::max(scale, median(v));
        }
        return scale;
    }

    bool syncedAgree(const StepRecord& st) const {
        for (int q = 1; q < m_facts.R; ++q)
            for (int p = 0; p < m_facts.P; ++p)
                if (m_facts.keys.synced(st.ranks[size_t(q)], size_t(p)) !=
                    m_facts.keys.synced(st.ranks[0], size_t(p)))
                    return false;
        return true;
    }

    const RunFacts& m_facts;
    const SyncedAgreement& m_synced;
    int64_t m_steps = 0;       // steps with an outlier
    int64_t m_syncedAgree = 0; // of those, with every synced gradient identical across ranks
    int64_t m_immaterial = 0;  // (rank, parameter) ratios over kOutlierRatio below the material floor
    FirstSeen m_first;         // value: ratio to the other ranks' largest
    std::optional<Finding> m_reference; // located against a reference run (addReference)
};

} // namespace

std::unique_ptr<Check> sdcBefore(CheckContext& c) {
    return std::make_unique<SdcBefore>(c);
}

} // namespace rs::checks
