// param-not-synced: a few parameters' synced gradients differ across ranks on (nearly) every step since they
// first did, each rank holding its own local sum, while every other parameter agrees: they never went through
// the all-reduce (missing from the reducer's list or fusion buckets).
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SyncedAgreement.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class ParamNotSynced : public Check {
public:
    explicit ParamNotSynced(CheckContext& c)
        : m_facts(c.facts)
        , m_synced(c.tallies.get<SyncedAgreement>()) {}
    const Needs& needs() const override { return needs::kSyncedAgreement; }
    std::string cannotRun(const RunExtent& run) const override { return m_synced.notComparable(run); }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        if (m_synced.mismatchSteps == 0 || run.paramSteps == 0)
            return;
        const std::vector<int> left = m_synced.leftOut(run);
        if (left.empty())
            return;
        int64_t first = m_synced.paramFirst[size_t(left[0])], ownSteps = 0;
        std::vector<std::string> names;
        for (int p : left) {
            names.push_back(m_facts.paramName(p));
            first = std::min(first, m_synced.paramFirst[size_t(p)]);
            ownSteps += m_synced.paramOwnSum[size_t(p)];
        }
        Finding f = makeFinding(
            Cause::ParamNotSynced, 0.9, first, allRanks(m_facts.R),
            fmt::format(
                "the synced gradient of {} differs across ranks on {} of {} steps while every other "
                "parameter agrees; on {} of those its synced sum equals each rank's own local sum: it never "
                "went through the all-reduce",
                names.front(), m_synced.paramMismatch[size_t(left[0])], run.paramSteps, ownSteps) +
                syncedBasis(m_facts),
            causeFix(Cause::ParamNotSynced, -1, first, names.front()));
        f.parameters = std::move(names);
        out.push_back(std::move(f));
    }

private:
    const RunFacts& m_facts;
    const SyncedAgreement& m_synced;
};

} // namespace

std::unique_ptr<Check> paramNotSynced(CheckContext& c) {
    return std::make_unique<ParamNotSynced>(c);
}

} // namespace rs::checks
