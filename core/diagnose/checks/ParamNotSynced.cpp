// param-not-synced: a few parameters' synced gradients differ across ranks on (nearly) every step since they
// first did, each rank holding its own local sum, while every other parameter agrees: they never went through
// the all-reduce (missing from the reducer's list or fusion buckets). A source that recorded no synced
// gradients (an msprobe dump) shows it only in the weights: one rank's weights part in a tensor or two while
// the rest stay alike (WeightParting), named at half confidence, the doubt in the evidence.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SyncedAgreement.h"
#include "diagnose/tally/WeightParting.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class ParamNotSynced : public Check {
public:
    explicit ParamNotSynced(CheckContext& c)
        : m_facts(c.facts)
        , m_synced(c.tallies.get<SyncedAgreement>())
        , m_parting(c.tallies.get<WeightParting>()) {}
    const Needs& needs() const override { return needs::kSyncedAgreement; }
    std::string cannotRun(const RunExtent& run) const override { return m_synced.notComparable(run); }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        if (m_synced.comparableSteps == 0)
            return concludeFromWeights(out);
        if (m_synced.mismatchSteps == 0 || run.paramSteps == 0)
            return;
        const std::vector<int> left = m_synced.leftOut(run);
        if (left.empty())
            return;
        int64_t first = m_synced.paramFirst[size_t(left[0])], ownSteps = 0, distinctSteps = 0;
        std::vector<std::string> names;
        for (int p : left) {
            names.push_back(m_facts.paramName(p));
            first = std::min(first, m_synced.paramFirst[size_t(p)]);
            ownSteps += m_synced.paramOwnSum[size_t(p)];
            distinctSteps += m_synced.paramAllDistinct[size_t(p)];
        }
        // Without gradient sums (an msprobe Monitor V2 import prints no shapes) the own-sum comparison has
        // nothing to compare: say so rather than "on 0 steps".
        const bool sums =
            m_facts.meta.recorded("/grads/local_sum") && m_facts.meta.recorded("/grads/synced_sum");
        const std::string why =
            sums ? fmt::format("on {} of those its synced sum equals each rank's own local sum", ownSteps)
                 : fmt::format("on {} of those every rank's synced value is its own (the source recorded no "
                               "gradient sums to compare with each rank's local one)",
                               distinctSteps);
        Finding f = makeFinding(
            Cause::ParamNotSynced, 0.9, first, allRanks(m_facts.R),
            fmt::format("the synced gradient of {} differs across ranks on {} of {} steps while every other "
                        "parameter agrees; {}: it never went through the all-reduce",
                        names.front(), m_synced.paramMismatch[size_t(left[0])], run.paramSteps, why) +
                syncedBasis(m_facts),
            causeFix(Cause::ParamNotSynced, -1, first, names.front()));
        f.parameters = std::move(names);
        out.push_back(std::move(f));
    }

private:
    void concludeFromWeights(std::vector<Finding>& out) const {
        const int r = m_parting.firstRank();
        if (r < 0 || !m_parting.few(r))
            return; // many tensors: optimizer-mismatch names it
        const int64_t step = m_parting.since[size_t(r)];
        const auto& params = m_parting.params[size_t(r)];
        const std::string first = params.empty() ? std::string() : m_facts.paramName(params.front());
        Finding f = makeFinding(
            Cause::ParamNotSynced, 0.5, step, {r},
            fmt::format(
                "{}; the source ({}) recorded no synced gradients, so whether the gradients or the update "
                "differ cannot be told: so few tensors point at the all-reduce (a learning rate or "
                "clipping moves them all)",
                m_parting.describe(r), m_facts.meta.source),
            causeFix(Cause::ParamNotSynced, r, step, first));
        for (int p : params)
            f.parameters.push_back(m_facts.paramName(p));
        out.push_back(std::move(f));
    }

    const RunFacts& m_facts;
    const SyncedAgreement& m_synced;
    const WeightParting& m_parting;
};

} // namespace

std::unique_ptr<Check> paramNotSynced(CheckContext& c) {
    return std::make_unique<ParamNotSynced>(c);
}

} // namespace rs::checks
