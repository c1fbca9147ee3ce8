// optimizer-mismatch: the weights start alike (the first row agrees, so no init-mismatch) and every rank
// receives the same synced gradients, yet one rank's weights part from the others' after an update: the
// update itself differs on that rank (its own learning rate or schedule, clipping or loss scaling on one rank
// only, weight decay or momentum set differently, an optimizer built before a checkpoint loaded on one rank).
// The odd rank is the one whose weights differ from the majority's, parameter by parameter (WeightParting).
// A source that recorded no synced gradients (an msprobe dump) cannot show the gradients agreed: weights that
// part in most tensors are still named, at half confidence with the doubt in the evidence (a tensor or two
// alone is param-not-synced's).
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SyncedAgreement.h"
#include "diagnose/tally/WeightParting.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class OptimizerMismatch : public Check {
public:
    explicit OptimizerMismatch(CheckContext& c)
        : m_facts(c.facts)
        , m_synced(c.tallies.get<SyncedAgreement>())
        , m_parting(c.tallies.get<WeightParting>()) {}
    const Needs& needs() const override { return needs::kWeightConsistency; }
    // The synced gradients must be comparable too: "while the synced gradients agree" is the evidence.
    std::string cannotRun(const RunExtent& run) const override { return m_synced.notComparable(run); }

    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        if (m_parting.firstRank() < 0)
            return;
        if (m_synced.comparableSteps == 0)
            return concludeWithoutSynced(out);
        std::vector<int> ranks;
        int64_t first = kNoStep;
        for (int r = 0; r < m_facts.R; ++r)
            if (m_parting.since[size_t(r)] != kNoStep) {
                ranks.push_back(r);
                first = std::min(first, m_parting.since[size_t(r)]);
            }
        // The synced gradients agreed on every step before the weights parted (a split there is sdc-after's
        // or param-not-synced's, not the optimizer's).
        if (m_synced.mismatchSteps > 0 && m_synced.firstMismatch.step < first)
            return;
        const int r = ranks.front();
        std::string evidence = fmt::format(
            "rank{} {}'s weights part from the other ranks' at step {} ({} of {} parameter tensors differ), "
            "after starting alike (step {}'s weight row agrees on every rank), while every rank received the "
            "same synced gradients on all {} steps compared: the update itself differs on {}",
            ranks.size() > 1 ? "s" : "", joinRanks(ranks), first, m_parting.differ[size_t(r)], m_facts.P,
            m_parting.firstStep, m_synced.comparableSteps, ranks.size() > 1 ? "those ranks" : "that rank");
        if (!m_facts.keys.weightFp || !m_facts.keys.syncedFp)
            evidence +=
                fmt::format("; the source ({}) records no fingerprints, so ranks were compared on their "
                            "norms as recorded (equal to the file's rounding)",
                            m_facts.meta.source);
        out.push_back(makeFinding(
            Cause::OptimizerMismatch, 0.8, first, ranks, evidence,
            causeFix(Cause::OptimizerMismatch, ranks.size() == 1 ? r : -1, first, {}, ranks.size() == 1)));
    }

private:
    void concludeWithoutSynced(std::vector<Finding>& out) const {
        const int r = m_parting.firstRank();
        if (m_parting.few(r))
            return; // param-not-synced names it
        const int64_t step = m_parting.since[size_t(r)];
        const std::string evidence = fmt::format(
            "{}; the source ({}) recorded no synced gradients, so whether the gradients or the update differ "
            "cannot be told: so many tensors point at the update (a tensor left out of the all-reduce moves "
            "alone)",
            m_parting.describe(r), m_facts.meta.source);
        out.push_back(makeFinding(Cause::OptimizerMismatch, 0.5, step, {r}, evidence,
                                  causeFix(Cause::OptimizerMismatch, r, step, {})));
    }

    const RunFacts& m_facts;
    const SyncedAgreement& m_synced;
    const WeightParting& m_parting;
};

} // namespace

std::unique_ptr<Check> optimizerMismatch(CheckContext& c) {
    return std::make_unique<OptimizerMismatch>(c);
}

} // namespace rs::checks
