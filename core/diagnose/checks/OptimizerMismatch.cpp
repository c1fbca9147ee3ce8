// optimizer-mismatch: the weights start alike (the first row agrees, so no init-mismatch) and every rank
// receives the same synced gradients, yet one rank's weights part from the others' after an update: the
// update itself differs on that rank (its own learning rate or schedule, clipping or loss scaling on one rank
// only, weight decay or momentum set differently, an optimizer built before a checkpoint loaded on one rank).
// The odd rank is the one whose weights differ from the majority's, parameter by parameter.
// A source that recorded no synced gradients (an msprobe dump) cannot say whether the update or the
// all-reduce differs; weights that part are still named, never passed over as agreement: as param-not-synced
// when the rank differs in a few parameter tensors (a tensor left out of the all-reduce moves alone; a
// learning rate moves them all), as optimizer-mismatch otherwise, at half confidence, with the doubt in the
// evidence.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/SyncedAgreement.h"

#include <fmt/format.h>
#include <map>

namespace rs::checks {
namespace {

class OptimizerMismatch : public Check {
public:
    explicit OptimizerMismatch(CheckContext& c)
        : m_facts(c.facts)
        , m_synced(c.tallies.get<SyncedAgreement>())
        , m_since(size_t(std::max(c.facts.R, 0)), kNoStep)
        , m_differ(size_t(std::max(c.facts.R, 0)), 0)
        , m_params(size_t(std::max(c.facts.R, 0)))
        , m_lastOdd(size_t(std::max(c.facts.R, 0))) {}
    const Needs& needs() const override { return needs::kWeightConsistency; }
    // The synced gradients must be comparable too: "while the synced gradients agree" is the evidence.
    std::string cannotRun(const RunExtent& run) const override { return m_synced.notComparable(run); }

    void addWeights(const WeightRecord& w) override {
        if (m_facts.R < 2 || m_facts.P == 0)
            return;
        std::vector<int> odd(size_t(m_facts.R), 0);
        for (auto& l : m_lastOdd)
            l.clear();
        oddParams(w, odd);
        if (!m_firstSeen) {
            m_firstSeen = true;
            m_firstStep = w.step;
            for (int n : odd)
                m_firstAgree = m_firstAgree && n == 0;
            return;
        }
        for (int r = 0; r < m_facts.R; ++r)
            if (odd[size_t(r)] > 0 && m_since[size_t(r)] == kNoStep) {
                m_since[size_t(r)] = w.step;
                m_differ[size_t(r)] = odd[size_t(r)];
                m_params[size_t(r)] = m_lastOdd[size_t(r)];
            }
    }

    std::string figures() const override {
        std::vector<int64_t> since; // -1: never
        for (int64_t s : m_since)
            since.push_back(s == kNoStep ? -1 : s);
        return fmt::format("first weight row agrees {}; weights part from the majority at steps [{}]",
                           m_firstSeen ? (m_firstAgree ? "yes" : "no") : "not seen", figureList(since));
    }

    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        if (!m_firstSeen || !m_firstAgree)
            return;
        if (m_synced.comparableSteps == 0)
            return concludeWithoutSynced(out);
        std::vector<int> ranks;
        int64_t first = kNoStep;
        for (int r = 0; r < m_facts.R; ++r)
            if (m_since[size_t(r)] != kNoStep) {
                ranks.push_back(r);
                first = std::min(first, m_since[size_t(r)]);
            }
        if (ranks.empty())
            return;
        // The synced gradients agreed on every step before the weights parted (a split there is sdc-after's
        // or param-not-synced's, not the optimizer's).
        if (m_synced.mismatchSteps > 0 && m_synced.firstMismatch.step < first)
            return;
        const int r = ranks.front();
        std::string evidence = fmt::format(
            "rank{} {}'s weights part from the other ranks' at step {} ({} of {} parameter tensors differ), "
            "after starting alike (step {}'s weight row agrees on every rank), while every rank received the "
            "same synced gradients on all {} steps compared: the update itself differs on {}",
            ranks.size() > 1 ? "s" : "", joinRanks(ranks), first, m_differ[size_t(r)], m_facts.P, m_firstStep,
            m_synced.comparableSteps, ranks.size() > 1 ? "those ranks" : "that rank");
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
        int r = -1;
        for (int i = 0; i < m_facts.R; ++i)
            if (m_since[size_t(i)] != kNoStep && (r < 0 || m_since[size_t(i)] < m_since[size_t(r)]))
                r = i;
        if (r < 0)
            return;
        const int64_t step = m_since[size_t(r)];
        const int n = m_differ[size_t(r)];
        const bool few = n * 2 < m_facts.P;
        std::string names;
        for (size_t i = 0; i < m_params[size_t(r)].size() && i < 3; ++i)
            names += (i ? ", " : "") + m_facts.paramName(m_params[size_t(r)][i]);
        const std::string evidence = fmt::format(
            "rank {}'s weights part from the other ranks' at step {} in {} of {} parameter tensors ({}{}), "
            "after "
            "starting alike (step {}'s weight row agrees on every rank); the source ({}) recorded no synced "
            "gradients, so whether the gradient missed the all-reduce or the update differs cannot be told: "
            "{}",
            r, step, n, m_facts.P, names, n > 3 ? ", ..." : "", m_firstStep, m_facts.meta.source,
            few ? "so few tensors point at the all-reduce (a learning rate or clipping moves them all)"
                : "so many tensors point at the update (a tensor left out of the all-reduce moves alone)");
        const Cause cause = few ? Cause::ParamNotSynced : Cause::OptimizerMismatch;
        const std::string param =
            m_params[size_t(r)].empty() ? std::string() : m_facts.paramName(m_params[size_t(r)][0]);
        Finding f = makeFinding(cause, 0.5, step, {r}, evidence, causeFix(cause, r, step, param));
        for (int p : m_params[size_t(r)])
            f.parameters.push_back(m_facts.paramName(p));
        out.push_back(std::move(f));
    }

    // Per rank, the parameters whose weight key differs from the majority's key (a strict majority of the
    // ranks that recorded it); a parameter without a majority counts for no rank.
    void oddParams(const WeightRecord& w, std::vector<int>& odd) const {
        std::map<uint64_t, int> count;
        for (int p = 0; p < m_facts.P; ++p) {
            count.clear();
            int recorded = 0;
            for (int r = 0; r < m_facts.R; ++r)
                if (const uint64_t k = m_facts.keys.weight(w, size_t(r), size_t(p)); k != 0) {
                    ++count[k];
                    ++recorded;
                }
            uint64_t major = 0;
            for (const auto& [k, n] : count)
                if (n * 2 > recorded)
                    major = k;
            if (major == 0)
                continue;
            for (int r = 0; r < m_facts.R; ++r) {
                const uint64_t k = m_facts.keys.weight(w, size_t(r), size_t(p));
                if (k != 0 && k != major) {
                    ++odd[size_t(r)];
                    if (m_lastOdd[size_t(r)].size() < 8)
                        m_lastOdd[size_t(r)].push_back(p);
                }
            }
        }
    }

    const RunFacts& m_facts;
    const SyncedAgreement& m_synced;
    bool m_firstSeen = false, m_firstAgree = true;
    int64_t m_firstStep = kNoStep;
    std::vector<int64_t> m_since;           // [rank] the first row whose weights differ from the majority's
    std::vector<int> m_differ;              // [rank] parameters differing in that row
    std::vector<std::vector<int>> m_params; // [rank] the first few of them
    mutable std::vector<std::vector<int>> m_lastOdd; // [rank] the current row's (scratch of oddParams)
};

} // namespace

std::unique_ptr<Check> optimizerMismatch(CheckContext& c) {
    return std::make_unique<OptimizerMismatch>(c);
}

} // namespace rs::checks
