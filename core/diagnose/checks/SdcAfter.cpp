// sdc-after: silent data corruption after the all-reduce. Synced gradient fingerprints differ across ranks
// (and not in the shape of a parameter left out of the all-reduce): the all-reduce delivers the same bits to
// every rank, so a copy changed after it. The odd rank is the one alone in its fingerprint (3+ ranks) or
// alone failing the synced-sum check; without one, the finding names every rank.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SyncedAgreement.h"
#include "diagnose/tally/WeightDivergence.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class SdcAfter : public Check {
public:
    explicit SdcAfter(CheckContext& c)
        : m_facts(c.facts)
        , m_synced(c.tallies.get<SyncedAgreement>())
        , m_weights(c.tallies.get<WeightDivergence>()) {}
    const Needs& needs() const override { return needs::kSyncedAgreement; }
    std::string cannotRun(const RunExtent& run) const override { return m_synced.notComparable(run); }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        const SyncedAgreement& s = m_synced;
        if (s.mismatchSteps == 0 || run.paramSteps == 0 || !s.leftOut(run).empty())
            return;
        std::vector<int64_t> score(size_t(m_facts.R));
        for (int r = 0; r < m_facts.R; ++r)
            score[size_t(r)] = s.oddRank[size_t(r)] + s.sumCheckAlone[size_t(r)];
        const int r = argmax(score);
        const bool located = r >= 0 && score[size_t(r)] > 0;
        const int64_t first =
            located ? std::min(s.firstOdd[size_t(r)], s.firstMismatch.step) : s.firstMismatch.step;
        Finding f = makeFinding(Cause::SdcAfter, located ? 0.85 : 0.6, first,
                                located ? std::vector<int>{r} : allRanks(m_facts.R),
                                evidence(located ? r : -1), causeFix(Cause::SdcAfter, r, first, {}, located));
        for (int p : s.firstMismatchParams)
            f.parameters.push_back(m_facts.paramName(p));
        out.push_back(std::move(f));
    }

private:
    std::string evidence(int odd) const {
        const SyncedAgreement& s = m_synced;
        std::string params;
        for (size_t i = 0; i < s.firstMismatchParams.size(); ++i)
            params += (i ? ", " : "") + m_facts.paramName(s.firstMismatchParams[i]);
        std::string located;
        if (odd >= 0) {
            located =
                fmt::format("; rank {} is the odd one ({} step(s) alone in its fingerprint, {} alone failing "
                            "the synced-sum check)",
                            odd, s.oddRank[size_t(odd)], s.sumCheckAlone[size_t(odd)]);
            if (m_weights.since[size_t(odd)] != kNoStep)
                located += fmt::format("; its weights differ from rank 0's from step {}",
                                       m_weights.since[size_t(odd)]);
        }
        return fmt::format(
                   "synced gradient fingerprints differ across ranks on {} step(s) from step {} ({}){}; the "
                   "all-reduce delivers the same bits to every rank, so the copy changed after it",
                   s.mismatchSteps, s.firstMismatch.step, params, located) +
               syncedBasis(m_facts);
    }

    const RunFacts& m_facts;
    const SyncedAgreement& m_synced;
    const WeightDivergence& m_weights;
};

} // namespace

std::unique_ptr<Check> sdcAfter(CheckContext& c) {
    return std::make_unique<SdcAfter>(c);
}

} // namespace rs::checks
