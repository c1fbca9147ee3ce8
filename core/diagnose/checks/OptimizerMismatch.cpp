// optimizer-mismatch: the weights start alike (the first row agrees, so no init-mismatch) and every rank
// receives the same synced gradients, yet one rank's weights part from the others' after an update: the
// update itself differs on that rank (its own learning rate or schedule, clipping or loss scaling on one rank
// only, weight decay or momentum set differently, an optimizer built before a checkpoint loaded on one rank).
// The odd rank is the one whose weights differ from the majority's, parameter by parameter (WeightParting).
// A source that recorded no synced gradients (an msprobe dump) cannot show the gradients agreed: weights that
// part in most tensors are still named, at half confidence with the doubt in the evidence (a tensor or two
// alone is param-not-synced's).
// Where the run records the learning rate each rank's optimizer applied (/steps/optimizer_lr), a rank apart
// from the majority names it too: under the sharded update (optimizer_shard) the ranks all-gather the weights
// each updated a chunk of, so they stay alike and the learning rates are the only rank-against-rank sign.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SyncedAgreement.h"
#include "diagnose/tally/WeightParting.h"

#include <fmt/format.h>
#include <map>

namespace rs::checks {
namespace {

// The learning rates the ranks' optimizers applied: each rank's first step apart from the majority's value.
class LrParting {
public:
    explicit LrParting(int R)
        : since(size_t(std::max(R, 0)), kNoStep)
        , own(since.size(), 0)
        , others(since.size(), 0) {}
    void add(const StepRecord& st) {
        std::map<float, int> count;
        for (const auto& x : st.ranks)
            if (std::isfinite(x.optimizerLr))
                ++count[x.optimizerLr];
        if (count.size() < 2)
            return;
        const auto top = std::max_element(count.begin(), count.end(),
                                          [](const auto& a, const auto& b) { return a.second < b.second; });
        if (top->second * 2 <= int(st.ranks.size()))
            return; // no majority to be apart from
        for (size_t r = 0; r < st.ranks.size() && r < since.size(); ++r) {
            const float v = st.ranks[r].optimizerLr;
            if (std::isfinite(v) && v != top->first && since[r] == kNoStep) {
                since[r] = st.step;
                own[r] = v;
                others[r] = top->first;
            }
        }
    }
    std::vector<int> ranks() const {
        std::vector<int> out;
        for (size_t r = 0; r < since.size(); ++r)
            if (since[r] != kNoStep)
                out.push_back(int(r));
        return out;
    }
    std::vector<int64_t> since;
    std::vector<float> own, others;
};

class OptimizerMismatch : public Check {
public:
    explicit OptimizerMismatch(CheckContext& c)
        : m_facts(c.facts)
        , m_synced(c.tallies.get<SyncedAgreement>())
        , m_parting(c.tallies.get<WeightParting>())
        , m_lr(c.facts.R)
        , m_lrRecorded(c.facts.meta.recorded("/steps/optimizer_lr")) {}
    const Needs& needs() const override { return needs::kWeightConsistency; }
    void addStep(const StepRecord& st, const RunExtent&) override {
        if (m_lrRecorded)
            m_lr.add(st);
    }
    // The synced gradients must be comparable too: "while the synced gradients agree" is the evidence.
    std::string cannotRun(const RunExtent& run) const override { return m_synced.notComparable(run); }

    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        if (m_parting.firstRank() < 0)
            return concludeFromLr(out);
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
        if (!m_lr.ranks().empty())
            evidence += "; " + lrEvidence(m_lr.ranks().front());
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
    std::string lrEvidence(int r) const {
        return fmt::format(
            "rank {}'s optimizer applied a learning rate of {:.6g} from step {} where the other "
            "ranks applied {:.6g}",
            r, m_lr.own[size_t(r)], m_lr.since[size_t(r)], m_lr.others[size_t(r)]);
    }

    // The weights agree (or were compared nowhere) but a rank's optimizer applied another learning rate:
    // under the sharded update the ranks all-gather what each updated, so the weights cannot part.
    void concludeFromLr(std::vector<Finding>& out) const {
        const std::vector<int> ranks = m_lr.ranks();
        if (ranks.empty())
            return;
        const int r = ranks.front();
        const int64_t first = m_lr.since[size_t(r)];
        std::string evidence = lrEvidence(r);
        if (ranks.size() > 1)
            evidence += fmt::format(" (ranks {} each apart from the majority)", joinRanks(ranks));
        evidence += "; the weights stay alike across ranks";
        if (m_facts.meta.configJson.find("\"optimizer_shard\": true") != std::string::npos ||
            m_facts.meta.configJson.find("\"optimizer_shard\":true") != std::string::npos)
            evidence +=
                " because the update is sharded (optimizer_shard): each rank updates its own chunk of "
                "the weights and every rank takes that chunk from it, so the odd learning rate "
                "reached every rank's copy of that chunk";
        out.push_back(makeFinding(
            Cause::OptimizerMismatch, 0.8, first, ranks, evidence,
            causeFix(Cause::OptimizerMismatch, ranks.size() == 1 ? r : -1, first, {}, ranks.size() == 1)));
    }

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
    LrParting m_lr;
    bool m_lrRecorded;
};

} // namespace

std::unique_ptr<Check> optimizerMismatch(CheckContext& c) {
    return std::make_unique<OptimizerMismatch>(c);
}

} // namespace rs::checks
