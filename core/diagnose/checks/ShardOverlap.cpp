// shard-overlap: pairs of ranks read identical batches, or share many samples: the data set is not sharded
// across ranks (no distributed sampler). Without sample ids the batches are compared through the local
// gradients they produced: identical on every parameter means the same samples went through the same weights.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/BatchPairs.h"

#include <fmt/format.h>
#include <set>

namespace rs::checks {
namespace {

class ShardOverlap : public Check {
public:
    explicit ShardOverlap(CheckContext& c)
        : m_facts(c.facts)
        , m_pairs(c.tallies.get<BatchPairs>()) {}
    const Needs& needs() const override { return needs::kDataShards; }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        const BatchPairs::Shape shape = m_pairs.shape();
        if (shape.onePair || (shape.identical.empty() && shape.overlapping.empty()))
            return;
        std::set<int> ranks;
        int64_t first = kNoStep, ident = 0;
        double overlap = 0;
        for (const auto& [i, j] : shape.identical) {
            const auto k = size_t(m_pairs.pair(i, j));
            ranks.insert({i, j});
            first = std::min(first, m_pairs.firstIdentical[k]);
            ident += m_pairs.identical[k];
        }
        for (const auto& [i, j] : shape.overlapping) {
            ranks.insert({i, j});
            overlap =
                std::max(overlap, m_pairs.overlapSum[size_t(m_pairs.pair(i, j))] / double(m_pairs.steps));
        }
        const int totalPairs = m_facts.R * (m_facts.R - 1) / 2;
        const double conf =
            shape.identical.size() == size_t(totalPairs) ? 0.9 : (shape.identical.empty() ? 0.7 : 0.8);
        Finding f = makeFinding(Cause::ShardOverlap, conf, first == kNoStep ? run.firstStep : first,
                                {ranks.begin(), ranks.end()}, evidence(shape, totalPairs, ident, overlap),
                                causeFix(Cause::ShardOverlap, -1, -1, {}));
        if (shape.identical.size() == 1 && m_facts.R == 2 && shape.overlapping.empty())
            f.evidence += "; with 2 ranks this is also what a duplicate rank id looks like";
        out.push_back(std::move(f));
    }

private:
    std::string evidence(const BatchPairs::Shape& shape, int totalPairs, int64_t ident,
                         double overlap) const {
        const bool byGradients = m_pairs.gradientKeySteps > 0;
        const int64_t n = m_pairs.steps;
        return fmt::format(
            "{} of {} rank pairs read identical batches ({}){}; with a distributed sampler {}",
            shape.identical.size(), totalPairs,
            byGradients
                ? fmt::format("the source ({}) records no sample ids: their local gradients are identical "
                              "on every parameter",
                              m_facts.meta.source)
                : "equal sample fingerprints",
            shape.overlapping.empty()
                ? fmt::format(" on {:.0f}% of steps",
                              100.0 * double(ident) / double(std::max<size_t>(1, shape.identical.size()) * n))
                : fmt::format(", {} more pairs share up to {:.0f}% of their sample ids",
                              shape.overlapping.size(), 100 * overlap),
            byGradients ? "every rank's batch, and so its local gradient, differs"
                        : "every rank's ids are disjoint");
    }

    const RunFacts& m_facts;
    const BatchPairs& m_pairs;
};

} // namespace

std::unique_ptr<Check> shardOverlap(CheckContext& c) {
    return std::make_unique<ShardOverlap>(c);
}

} // namespace rs::checks
