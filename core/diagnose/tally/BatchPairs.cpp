// BatchPairs: see BatchPairs.h.
#include "diagnose/tally/BatchPairs.h"

#include "store/RunSchema.h"
#include "view/RankMatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace rs {
namespace {

uint64_t floatBits(float v) {
    uint32_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

bool hasParamVectors(const RankStep& x, int P) {
    const auto p = size_t(P);
    return P > 0 && x.localNorm.size() == p && x.localMax.size() == p && x.localSum.size() == p &&
           x.syncedSum.size() == p && x.syncedFp.size() == p && x.underflowCount.size() == p;
}

std::set<int32_t> idsOf(const RankStep& x) {
    std::set<int32_t> ids;
    for (int32_t id : x.sampleIds)
        if (id >= 0)
            ids.insert(id);
    return ids;
}

// Duplicate rank_id entries in the stored hccl.json.
std::vector<int> duplicateRankIds(const std::string& rankTableJson) {
    std::vector<int> dup;
    try {
        const auto j = nlohmann::json::parse(rankTableJson);
        std::set<std::string> seen;
        for (const auto& server : j.value("server_list", nlohmann::json::array()))
            for (const auto& dev : server.value("device", nlohmann::json::array())) {
                const std::string id = dev.value("rank_id", std::string());
                if (!id.empty() && !seen.insert(id).second)
                    dup.push_back(std::atoi(id.c_str()));
            }
    } catch (const std::exception&) {
        // A table diagnosis cannot parse is the pre-flight check's business, not this tally's.
    }
    return dup;
}

} // namespace

BatchPairs::BatchPairs(const RunFacts& f)
    : m_facts(f)
    , m_haveSampleFp(f.meta.recorded(runschema::kStepColumns[runschema::kSampleFp].path))
    , m_haveLocalNorm(f.meta.recorded(runschema::kStepColumns[runschema::kLocalNorm].path)) {
    const size_t pairs = size_t(std::max(f.R, 0)) * size_t(std::max(f.R, 0));
    identical.assign(pairs, 0);
    overlapping.assign(pairs, 0);
    overlapSum.assign(pairs, 0);
    firstIdentical.assign(pairs, kNoStep);
    identCosMin.assign(pairs, 2.0);
}

// What identifies a rank's batch: the sample fingerprint, or without sample ids the local gradient it
// produced (every parameter's norm and max |g| as recorded). 0: nothing to compare.
uint64_t BatchPairs::batchKey(const RankStep& x) const {
    if (m_haveSampleFp)
        return x.sampleFp;
    if (!m_haveLocalNorm || x.localNorm.size() != size_t(m_facts.P) || m_facts.P == 0)
        return 0;
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (size_t p = 0; p < x.localNorm.size(); ++p) {
        if (!std::isfinite(x.localNorm[p]))
            return 0;
        const uint64_t mx = p < x.localMax.size() ? floatBits(x.localMax[p]) : 0;
        h = (h ^ floatBits(x.localNorm[p]) ^ (mx << 32)) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    return h | 1;
}

void BatchPairs::addStep(const StepRecord& st, const RunExtent&) {
    const int R = m_facts.R;
    std::vector<uint64_t> batch(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r)
        batch[size_t(r)] = batchKey(st.ranks[size_t(r)]);
    if (std::count(batch.begin(), batch.end(), uint64_t(0)) == R)
        return; // nothing recorded to compare batches by
    ++steps;
    gradientKeySteps += !m_haveSampleFp;
    // Only the pairs that could count are visited: those with equal batch keys, and those that share an id
    // (through each id's ranks). Shards are disjoint in a healthy run, so that is next to none of the R^2
    // pairs a 1,024-rank run has.
    std::vector<std::set<int32_t>> ids;
    // (id, rank) of every rank's ids, sorted: each id's ranks in a row.
    std::vector<std::pair<int32_t, int>> holders;
    for (int r = 0; r < R; ++r) {
        ids.push_back(idsOf(st.ranks[size_t(r)]));
        for (int32_t id : ids.back())
            holders.emplace_back(id, r);
    }
    std::sort(holders.begin(), holders.end());
    // pair -> ids both hold; the pairs with equal batch keys are visited too, with what they share.
    std::map<size_t, size_t> shared;
    for (size_t a = 0; a < holders.size(); ++a)
        for (size_t b = a + 1; b < holders.size() && holders[b].first == holders[a].first; ++b)
            ++shared[size_t(pair(holders[a].second, holders[b].second))];
    std::map<uint64_t, std::vector<int>> byKey; // batch key -> its ranks, ascending
    for (int r = 0; r < R; ++r)
        if (batch[size_t(r)] != 0)
            byKey[batch[size_t(r)]].push_back(r);
    for (const auto& [key, ranks] : byKey)
        for (size_t a = 0; a < ranks.size(); ++a)
            for (size_t b = a + 1; b < ranks.size(); ++b)
                shared.try_emplace(size_t(pair(ranks[a], ranks[b])), 0);
    bool anyIdentical = false;
    for (const auto& [k, n] : shared) {
        const int i = int(k / size_t(R)), j = int(k % size_t(R));
        anyIdentical |=
            comparePair(st, i, j, batch[size_t(i)], batch[size_t(j)], ids[size_t(i)], ids[size_t(j)], n);
    }
    if (anyIdentical && m_facts.meta.sketchDim > 0 && hasParamVectors(st.ranks[0], m_facts.P))
        sketchCosines(st);
}

bool BatchPairs::comparePair(const StepRecord& st, int i, int j, uint64_t batchI, uint64_t batchJ,
                             const std::set<int32_t>& ia, const std::set<int32_t>& ib, size_t shared) {
    const auto& a = st.ranks[size_t(i)];
    const auto& b = st.ranks[size_t(j)];
    const bool same = batchI != 0 && batchI == batchJ && (a.sampleIds.empty() || a.sampleIds == b.sampleIds);
    const auto k = size_t(pair(i, j));
    if (same) {
        ++identical[k];
        firstIdentical[k] = std::min(firstIdentical[k], st.step);
    }
    if (!ia.empty() && !ib.empty()) {
        const double frac = double(shared) / double(std::min(ia.size(), ib.size()));
        overlapSum[k] += frac;
        overlapping[k] += frac >= 0.25;
    } else if (same) {
        overlapSum[k] += 1;
        ++overlapping[k];
    }
    return same;
}

// Identical batches on identical weights give identical local gradients: the sketch cosine tells whether
// the two ranks really computed the same thing (duplicate rank) or only shared samples.
void BatchPairs::sketchCosines(const StepRecord& st) {
    const auto cos = view::rankMatrix(view::RankMetric::SketchCosine, m_facts.meta, st, nullptr);
    for (int i = 0; i < m_facts.R; ++i)
        for (int j = i + 1; j < m_facts.R; ++j) {
            const auto k = size_t(pair(i, j));
            const double c = cos.at(i, j);
            if (firstIdentical[k] <= st.step && std::isfinite(c))
                identCosMin[k] = std::min(identCosMin[k], c);
        }
}

BatchPairs::Shape BatchPairs::shape() const {
    Shape out;
    if (steps < 3 || m_facts.R < 2)
        return out;
    for (int i = 0; i < m_facts.R; ++i)
        for (int j = i + 1; j < m_facts.R; ++j) {
            const auto k = size_t(pair(i, j));
            if (identical[k] * 10 >= steps * 8)
                out.identical.emplace_back(i, j);
            else if (overlapping[k] * 2 >= steps)
                out.overlapping.emplace_back(i, j);
        }
    if (out.identical.empty() && out.overlapping.empty())
        return out;
    out.duplicateIds = duplicateRankIds(m_facts.meta.rankTableJson);
    out.onePair =
        out.identical.size() == 1 && out.overlapping.empty() && (m_facts.R > 2 || !out.duplicateIds.empty());
    return out;
}

std::string BatchPairs::figures() const {
    return fmt::format("identical-batch steps per pair [{}]; overlapping [{}]", figureList(identical),
                       figureList(overlapping));
}

} // namespace rs
