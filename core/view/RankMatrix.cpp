// RankMatrix: the per-step comparisons behind the rank heatmaps. Every cell is computed from the records
// alone and guards its own inputs: a vector of the wrong size (telemetry off gives empty vectors in memory,
// fill values once read back) turns the affected cells into NaN instead of reading out of bounds.
#include "view/RankMatrix.h"

#include "store/RecordKeys.h"

#include <algorithm>
#include <iterator>
#include <limits>

namespace rs::view {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The run file stores 0 for a fingerprint that was not recorded; a real 64-bit hash is never 0 in practice,
// so 0 must not count as "equal" (an all-zero row would otherwise look perfectly in sync).
constexpr uint64_t kFpNotRecorded = 0;

Matrix nanMatrix(int rows, int cols) {
    Matrix m;
    m.rows = std::max(rows, 0);
    m.cols = std::max(cols, 0);
    m.v.assign(size_t(m.rows) * size_t(m.cols), kNaN);
    return m;
}

// The parameters a cell looks at: all of them, or one.
struct ParamRange {
    size_t begin = 0, end = 0;
    bool valid = false;
};

ParamRange paramRange(int param, size_t P) {
    if (param == -1)
        return {0, P, P > 0};
    if (param < 0 || size_t(param) >= P)
        return {};
    return {size_t(param), size_t(param) + 1, true};
}

// Fills every cell (i, j) with f(i, j); f returns NaN where it cannot tell.
template <class F> Matrix fillPairs(int R, F&& f) {
    Matrix m = nanMatrix(R, R);
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < R; ++j)
            m.at(i, j) = f(i, j);
    return m;
}

// Number of parameters whose identities (RecordKeys: fingerprints, or the norms a source without them
// recorded) differ; NaN when no parameter was recorded on both ranks.
template <class Key> double keyMismatch(Key&& key, ParamRange pr) {
    int compared = 0, differ = 0;
    for (size_t p = pr.begin; p < pr.end; ++p) {
        const uint64_t a = key(0, p), b = key(1, p);
        if (a == kFpNotRecorded || b == kFpNotRecorded)
            continue;
        ++compared;
        differ += a != b;
    }
    return compared ? double(differ) : kNaN;
}

double syncedMismatch(const RecordKeys& keys, const std::vector<RankStep>& ranks, int i, int j, size_t P,
                      ParamRange pr) {
    if (size_t(i) >= ranks.size() || size_t(j) >= ranks.size())
        return kNaN;
    const RankStep& a = ranks[size_t(i)];
    const RankStep& b = ranks[size_t(j)];
    if ((keys.syncedFp ? a.syncedFp.size() : a.syncedNorm.size()) != P ||
        (keys.syncedFp ? b.syncedFp.size() : b.syncedNorm.size()) != P)
        return kNaN;
    return keyMismatch([&](int side, size_t p) { return keys.synced(side ? b : a, p); }, pr);
}

// Relative difference of two norms in [0, 1]. Equal values (both 0, both inf) give 0; exactly one
// non-finite value is as different as norms get (1), since a NaN synced gradient on one rank is exactly the
// divergence this metric exists to show; both NaN tells nothing (NaN).
double relativeDiff(float a, float b) {
    if (std::isnan(a) && std::isnan(b))
        return kNaN;
    if (a == b)
        return 0.0;
    if (!std::isfinite(a) || !std::isfinite(b))
        return 1.0;
    const double scale = std::max(std::fabs(double(a)), std::fabs(double(b)));
    return std::fabs(double(a) - double(b)) / scale;
}

double syncedNormDiff(const std::vector<RankStep>& ranks, int i, int j, size_t P, ParamRange pr) {
    if (size_t(i) >= ranks.size() || size_t(j) >= ranks.size())
        return kNaN;
    const auto& a = ranks[size_t(i)].syncedNorm;
    const auto& b = ranks[size_t(j)].syncedNorm;
    if (a.size() != P || b.size() != P)
        return kNaN;
    double worst = kNaN;
    for (size_t p = pr.begin; p < pr.end; ++p) {
        const double d = relativeDiff(a[p], b[p]);
        if (!std::isnan(d))
            worst = std::isnan(worst) ? d : std::max(worst, d);
    }
    return worst;
}

// One rank's sketch over the selected parameters (contiguous: parameter p owns [p*K, p*K+K)), or empty when
// it cannot take part in a cosine (wrong size, non-finite, zero norm). Norm in double.
struct SketchView {
    const float* data = nullptr;
    size_t n = 0;
    double norm = 0;
};

SketchView sketchView(const RankStep& r, size_t P, size_t K, ParamRange pr) {
    if (K == 0 || r.sketch.size() != P * K)
        return {};
    SketchView s{r.sketch.data() + pr.begin * K, (pr.end - pr.begin) * K, 0.0};
    double sq = 0;
    for (size_t k = 0; k < s.n; ++k) {
        if (!std::isfinite(s.data[k]))
            return {};
        sq += double(s.data[k]) * double(s.data[k]);
    }
    s.norm = std::sqrt(sq);
    if (!(s.norm > 0) || !std::isfinite(s.norm))
        return {};
    return s;
}

Matrix sketchCosine(int R, const RunMeta& meta, const StepRecord& step, ParamRange pr) {
    const size_t P = meta.params.size(), K = size_t(std::max(meta.sketchDim, 0));
    std::vector<SketchView> views(static_cast<size_t>(R));
    for (int r = 0; r < R && size_t(r) < step.ranks.size(); ++r)
        views[size_t(r)] = sketchView(step.ranks[size_t(r)], P, K, pr);
    return fillPairs(R, [&](int i, int j) {
        const SketchView& a = views[size_t(i)];
        const SketchView& b = views[size_t(j)];
        if (!a.data || !b.data)
            return kNaN;
        if (i == j)
            return 1.0;
        double dot = 0;
        for (size_t k = 0; k < a.n; ++k)
            dot += double(a.data[k]) * double(b.data[k]);
        // Rounding can push |cos| a hair past 1; colour scales expect [-1, 1].
        return std::clamp(dot / (a.norm * b.norm), -1.0, 1.0);
    });
}

Matrix weightMismatch(int R, const RunMeta& meta, const WeightRecord* weights, ParamRange pr) {
    const RecordKeys keys = RecordKeys::of(meta);
    if (!weights || (keys.weightFp ? weights->fp.size() : weights->norm.size()) != size_t(R))
        return nanMatrix(R, R);
    const size_t P = meta.params.size();
    auto sized = [&](int r) {
        return (keys.weightFp ? weights->fp[size_t(r)].size() : weights->norm[size_t(r)].size()) == P;
    };
    return fillPairs(R, [&](int i, int j) {
        if (!sized(i) || !sized(j))
            return kNaN;
        return keyMismatch([&](int side, size_t p) { return keys.weight(*weights, size_t(side ? j : i), p); },
                           pr);
    });
}

// Distinct valid (!= -1) sample ids, sorted, for set intersection.
std::vector<int32_t> validIds(const std::vector<int32_t>& ids) {
    std::vector<int32_t> v;
    v.reserve(ids.size());
    std::copy_if(ids.begin(), ids.end(), std::back_inserter(v), [](int32_t id) { return id != -1; });
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

Matrix shardOverlap(int R, const StepRecord& step) {
    std::vector<std::vector<int32_t>> ids(static_cast<size_t>(R));
    for (int r = 0; r < R && size_t(r) < step.ranks.size(); ++r)
        ids[size_t(r)] = validIds(step.ranks[size_t(r)].sampleIds);
    std::vector<int32_t> common;
    return fillPairs(R, [&](int i, int j) {
        const auto& a = ids[size_t(i)];
        const auto& b = ids[size_t(j)];
        if (a.empty() || b.empty())
            return kNaN; // a fraction of nothing, or a rank that recorded no batch
        if (i == j)
            return 1.0;
        common.clear();
        std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
        return double(common.size()) / double(a.size());
    });
}

// Median of finite values; for an even count the mean of the two middle values. NaN when there are none.
double median(std::vector<double> v) {
    if (v.empty())
        return kNaN;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2)
        return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid));
    return (lower + upper) / 2;
}

} // namespace

const char* rankMetricName(RankMetric m) {
    switch (m) {
    case RankMetric::SyncedMismatch:
        return "synced gradient mismatch";
    case RankMetric::SyncedNormDiff:
        return "synced gradient norm difference";
    case RankMetric::SketchCosine:
        return "local gradient cosine";
    case RankMetric::WeightMismatch:
        return "weight mismatch";
    case RankMetric::ShardOverlap:
        return "data shard overlap";
    }
    return "unknown metric";
}

Matrix rankMatrix(RankMetric metric, const RunMeta& meta, const StepRecord& step, const WeightRecord* weights,
                  int param) {
    const int R = std::max(meta.worldSize, 0);
    const size_t P = meta.params.size();
    const ParamRange pr = paramRange(param, P);
    // ShardOverlap does not depend on the parameter; every other metric needs a valid selection.
    if (!pr.valid && metric != RankMetric::ShardOverlap)
        return nanMatrix(R, R);
    switch (metric) {
    case RankMetric::SyncedMismatch: {
        const RecordKeys keys = RecordKeys::of(meta);
        return fillPairs(R, [&](int i, int j) { return syncedMismatch(keys, step.ranks, i, j, P, pr); });
    }
    case RankMetric::SyncedNormDiff:
        return fillPairs(R, [&](int i, int j) { return syncedNormDiff(step.ranks, i, j, P, pr); });
    case RankMetric::SketchCosine:
        return sketchCosine(R, meta, step, pr);
    case RankMetric::WeightMismatch:
        return weightMismatch(R, meta, weights, pr);
    case RankMetric::ShardOverlap:
        return shardOverlap(R, step);
    }
    return nanMatrix(R, R);
}

Matrix paramRankNormRatio(const RunMeta& meta, const StepRecord& step) {
    const int R = std::max(meta.worldSize, 0);
    const size_t P = meta.params.size();
    Matrix m = nanMatrix(int(P), R);
    // Ranks whose vector has the wrong size (or that are missing) keep NaN and stay out of the median.
    auto normOf = [&](int r, size_t p) {
        if (size_t(r) >= step.ranks.size() || step.ranks[size_t(r)].localNorm.size() != P)
            return kNaN;
        return double(step.ranks[size_t(r)].localNorm[p]);
    };
    std::vector<double> finite;
    for (size_t p = 0; p < P; ++p) {
        finite.clear();
        for (int r = 0; r < R; ++r)
            if (const double x = normOf(r, p); std::isfinite(x))
                finite.push_back(x);
        const double med = median(finite);
        if (!std::isfinite(med) || med == 0)
            continue;
        for (int r = 0; r < R; ++r)
            m.at(int(p), r) = normOf(r, p) / med; // a NaN or inf norm stays NaN or inf
    }
    return m;
}

std::pair<double, double> finiteRange(const Matrix& m) {
    double lo = kNaN, hi = kNaN;
    for (double x : m.v) {
        if (!std::isfinite(x))
            continue;
        if (std::isnan(lo) || x < lo)
            lo = x;
        if (std::isnan(hi) || x > hi)
            hi = x;
    }
    return {lo, hi};
}

} // namespace rs::view
