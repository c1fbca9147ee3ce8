// duplicate-rank-id: one rank reads exactly another's batches while the rest read disjoint shards: it runs
// as a second copy of that rank (the same RANK_ID). A local-gradient sketch cosine of 1 and a rank table that
// lists the id twice corroborate.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "diagnose/tally/BatchPairs.h"

#include <fmt/format.h>

namespace rs::checks {
namespace {

class DuplicateRankId : public Check {
public:
    explicit DuplicateRankId(CheckContext& c)
        : m_pairs(c.tallies.get<BatchPairs>()) {}
    const Needs& needs() const override { return needs::kDataShards; }

    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        const BatchPairs::Shape shape = m_pairs.shape();
        if (!shape.onePair)
            return;
        const auto [a, b] = shape.identical.front();
        const auto k = size_t(m_pairs.pair(a, b));
        const double cos = m_pairs.identCosMin[k];
        const bool sameGrad = cos <= 1.0 && cos > 0.999999;
        const bool listedTwice = !shape.duplicateIds.empty();
        out.push_back(makeFinding(
            Cause::DuplicateRankId, 0.8 + (sameGrad ? 0.1 : 0) + (listedTwice ? 0.05 : 0),
            m_pairs.firstIdentical[k], {a, b},
            fmt::format(
                "ranks {} and {} read identical batches (sample fingerprints and ids equal) on {} of {} "
                "steps while the other ranks read disjoint shards{}{}: rank {} behaves as a second rank {}",
                a, b, m_pairs.identical[k], m_pairs.steps,
                cos <= 1.0 ? fmt::format("; local-gradient sketch cosine {:.7f}", cos) : "",
                listedTwice ? fmt::format("; the rank table lists rank_id {} twice", shape.duplicateIds[0])
                            : "",
                b, a),
            causeFix(Cause::DuplicateRankId, b, -1, {})));
    }

private:
    const BatchPairs& m_pairs;
};

} // namespace

std::unique_ptr<Check> duplicateRankId(CheckContext& c) {
    return std::make_unique<DuplicateRankId>(c);
}

} // namespace rs::checks
