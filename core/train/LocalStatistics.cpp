#include "train/LocalStatistics.h"

#include "telemetry/Fingerprint.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace rs {
namespace {

void sizeLocal(RankStep& rs, size_t P, int k) {
    rs.localNorm.resize(P);
    rs.localMax.resize(P);
    rs.localSum.resize(P);
    for (auto* v : {&rs.nonfinite, &rs.overflowCount, &rs.underflowCount})
        v->resize(P);
    rs.sketch.resize(P * size_t(k));
    rs.localFp.resize(P);
}

void storeLocal(RankStep& rs, size_t p, const TensorStats& s) {
    rs.localNorm[p] = static_cast<float>(std::sqrt(s.sumSq));
    rs.localMax[p] = s.maxAbs;
    rs.localSum[p] = s.sum;
    rs.nonfinite[p] = s.nonfinite;
    rs.overflowCount[p] = s.overflow;
    rs.underflowCount[p] = s.underflow;
}

} // namespace

uint64_t sketchSeedOf(uint64_t runSeed, size_t p) {
    return splitmix64(runSeed ^ (0x5ce7c4ull + p));
}

void localStatsInOwnPass(const float* g, const std::vector<ParamInfo>& params, float unscale,
                         uint64_t runSeed, int k, uint16_t* half, RankStep& rs) {
    const size_t P = params.size();
    sizeLocal(rs, P, k);
    for (size_t p = 0; p < P; ++p) {
        const ParamInfo& info = params[p];
        storeLocal(rs, p,
                   gradStats(g + info.offset, info.numel, unscale, sketchSeedOf(runSeed, p), k,
                             rs.sketch.data() + p * size_t(k), &rs.localFp[p],
                             half ? half + info.offset : nullptr));
    }
}

ReducedLocalStats::ReducedLocalStats(int ranks, std::vector<ParamInfo> params, int k, uint64_t runSeed)
    : m_ranks(ranks)
    , m_params(std::move(params))
    , m_k(k)
    , m_rows(size_t(ranks)) {
    for (size_t p = 0; p < m_params.size(); ++p)
        m_seeds.push_back(sketchSeedOf(runSeed, p));
    const size_t cells = size_t(ranks) * m_params.size();
    for (Row& row : m_rows) {
        row.parts.resize(cells);
        row.sketch.resize(cells * size_t(k));
    }
}

void ReducedLocalStats::startStep(int reader) {
    Row& row = m_rows[size_t(reader)];
    const size_t P = m_params.size(), K = size_t(m_k);
    for (size_t s = 0; s < size_t(m_ranks) && row.lo < row.hi; ++s) {
        std::fill(row.parts.begin() + long(s * P + row.lo), row.parts.begin() + long(s * P + row.hi),
                  LocalPart{});
        std::fill(row.sketch.begin() + long((s * P + row.lo) * K),
                  row.sketch.begin() + long((s * P + row.hi) * K), 0.0);
    }
    row.lo = P;
    row.hi = 0;
}

void ReducedLocalStats::read(int reader, int source, size_t begin, size_t end, const float* data) {
    Row& row = m_rows[size_t(reader)];
    const size_t P = m_params.size(), K = size_t(m_k);
    // The first parameter that ends past begin: the parameters tile the flat gradient in order.
    auto it = std::upper_bound(m_params.begin(), m_params.end(), int64_t(begin),
                               [](int64_t at, const ParamInfo& q) { return at < q.offset + q.numel; });
    for (size_t p = size_t(it - m_params.begin()); p < P && size_t(m_params[p].offset) < end; ++p) {
        const ParamInfo& q = m_params[p];
        const auto off = size_t(q.offset);
        const size_t cell = size_t(source) * P + p;
        // The parameter's element 0 sits (begin - off) elements before data, in the same buffer.
        addLocalPiece(data - (std::ptrdiff_t(begin) - std::ptrdiff_t(off)), q.numel,
                      int64_t(std::max(begin, off) - off),
                      int64_t(std::min(end, off + size_t(q.numel)) - off), m_seeds[p], m_k,
                      m_k > 0 ? row.sketch.data() + cell * K : nullptr, true, row.parts[cell]);
        row.lo = std::min(row.lo, p);
        row.hi = std::max(row.hi, p + 1);
    }
}

void ReducedLocalStats::combine(int source, float unscale, RankStep& rs) const {
    const size_t P = m_params.size(), K = size_t(m_k);
    sizeLocal(rs, P, m_k);
    std::vector<double> sums(K);
    for (size_t p = 0; p < P; ++p) {
        LocalPart total;
        std::fill(sums.begin(), sums.end(), 0.0);
        const size_t cell = size_t(source) * P + p;
        for (const Row& row : m_rows) {
            if (p < row.lo || p >= row.hi)
                continue;
            total.merge(row.parts[cell]);
            for (size_t j = 0; j < K; ++j)
                sums[j] += row.sketch[cell * K + j];
        }
        storeLocal(rs, p,
                   finishLocal(total, m_params[p].numel, unscale, m_k, sums.data(), rs.sketch.data() + p * K,
                               &rs.localFp[p]));
    }
}

} // namespace rs
