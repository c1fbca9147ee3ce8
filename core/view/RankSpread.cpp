// RankSpread: the band over ranks and the ranks that stand out (see RankSpread.h). Inputs are growing live
// buffers, so every index is clamped to what the vectors hold.
#include "view/RankSpread.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

namespace rs::view {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

// The median of v (reordered); v is not empty.
double median(std::vector<double>& v) {
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
    if (v.size() % 2)
        return v[mid];
    return (v[mid] + *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid))) / 2;
}

// The median of v and the spread around it in standard deviations of a normal: 1.4826 MAD, or where most
// values agree exactly (MAD 0) 1.2533 mean |deviation|, so one or two that differ still stand out. Scale 0:
// no spread beyond rounding. v (finite, not empty) is reordered and overwritten.
std::pair<double, double> robustCentreAndScale(std::vector<double>& v) {
    const double centre = median(v);
    double meanAbs = 0;
    for (double& x : v) {
        x = std::abs(x - centre);
        meanAbs += x;
    }
    meanAbs /= double(v.size());
    const double tiny = 1e-12 * std::max(1.0, std::abs(centre));
    double scale = 1.4826 * median(v);
    if (!(scale > tiny))
        scale = 1.2533 * meanAbs;
    return {centre, scale > tiny ? scale : 0.0};
}
} // namespace

RowRange rowRange(const float* row, int ranks) {
    RowRange r{kNaNf, kNaNf};
    for (int i = 0; i < ranks; ++i) {
        const float v = row[i];
        if (!std::isfinite(v))
            continue;
        if (std::isnan(r.low) || v < r.low)
            r.low = v;
        if (std::isnan(r.high) || v > r.high)
            r.high = v;
    }
    return r;
}

Band bandDecimate(const std::vector<int64_t>& xs, const std::vector<float>& lows,
                  const std::vector<float>& highs, int64_t begin, int64_t end, int buckets) {
    Band out;
    const int64_t n = int64_t(std::min({xs.size(), lows.size(), highs.size()}));
    end = std::clamp<int64_t>(end, 0, n);
    begin = std::clamp<int64_t>(begin, 0, end);
    const int64_t count = end - begin;
    const int64_t groups = (buckets <= 0 || count <= int64_t(buckets)) ? count : int64_t(buckets);
    out.x.reserve(size_t(groups));
    out.low.reserve(size_t(groups));
    out.high.reserve(size_t(groups));
    for (int64_t b = 0; b < groups; ++b) {
        // Integer bucket edges, as in minMaxDecimate: every index lands in exactly one bucket.
        const int64_t lo = begin + b * count / groups;
        const int64_t hi = begin + (b + 1) * count / groups;
        double low = kNaN, high = kNaN;
        for (int64_t i = lo; i < hi; ++i) {
            if (const float v = lows[size_t(i)]; std::isfinite(v) && !(double(v) >= low))
                low = double(v);
            if (const float v = highs[size_t(i)]; std::isfinite(v) && !(double(v) <= high))
                high = double(v);
        }
        out.x.push_back(double(xs[size_t(lo)]));
        out.low.push_back(std::isnan(high) ? kNaN : low); // a gap in one is a gap in both
        out.high.push_back(std::isnan(low) ? kNaN : high);
    }
    return out;
}

std::vector<Standout> standoutRanks(const std::vector<float>& values, int ranks, int64_t begin, int64_t end,
                                    int maxCount, double minScore, int64_t maxRows) {
    if (ranks <= 0 || maxCount <= 0)
        return {};
    const int64_t rows = int64_t(values.size() / size_t(ranks));
    end = std::clamp<int64_t>(end, 0, rows);
    begin = std::clamp<int64_t>(begin, 0, end);
    const int64_t count = end - begin;
    const int64_t sampled = std::min(count, std::max<int64_t>(1, maxRows));

    std::vector<Standout> all(static_cast<size_t>(ranks));
    std::vector<double> zSum(size_t(ranks), 0.0);
    std::vector<int64_t> zRows(size_t(ranks), 0);
    std::vector<double> scratch;
    scratch.reserve(size_t(ranks));
    for (int r = 0; r < ranks; ++r)
        all[size_t(r)].rank = r;
    for (int64_t k = 0; k < sampled; ++k) {
        const float* row = values.data() + size_t(begin + k * count / sampled) * size_t(ranks);
        scratch.clear();
        for (int r = 0; r < ranks; ++r)
            if (std::isfinite(row[r]))
                scratch.push_back(double(row[r]));
        if (scratch.empty())
            continue; // every rank non-finite: nobody stands out from the others here
        for (int r = 0; r < ranks; ++r)
            if (!std::isfinite(row[r]))
                ++all[size_t(r)].nonFinite;
        if (scratch.size() < 3)
            continue;
        // Robust centre and scale (median, MAD), so that a few ranks far out do not widen the yardstick
        // they are measured by and hide each other.
        const auto [centre, scale] = robustCentreAndScale(scratch);
        if (!(scale > 0))
            continue; // all equal (or rounding): no spread to measure against
        for (int r = 0; r < ranks; ++r) {
            if (std::isfinite(row[r])) {
                zSum[size_t(r)] += std::abs(double(row[r]) - centre) / scale;
                ++zRows[size_t(r)];
            }
        }
    }
    for (int r = 0; r < ranks; ++r)
        all[size_t(r)].score = zRows[size_t(r)] ? zSum[size_t(r)] / double(zRows[size_t(r)]) : 0.0;

    std::vector<Standout> out;
    for (const Standout& s : all)
        if (s.nonFinite > 0 || s.score >= minScore)
            out.push_back(s);
    std::sort(out.begin(), out.end(), [](const Standout& a, const Standout& b) {
        if ((a.nonFinite > 0) != (b.nonFinite > 0))
            return a.nonFinite > 0;
        if (a.nonFinite != b.nonFinite)
            return a.nonFinite > b.nonFinite;
        if (a.score != b.score)
            return a.score > b.score;
        return a.rank < b.rank;
    });
    if (out.size() > size_t(maxCount))
        out.resize(size_t(maxCount));
    return out;
}

std::vector<int> outlierRanks(const std::vector<float>& perRank, double minZ) {
    std::vector<double> finite;
    for (float v : perRank)
        if (std::isfinite(v))
            finite.push_back(double(v));
    std::vector<int> out;
    if (finite.empty())
        return out; // nobody has a figure: nobody differs from the others
    double centre = 0, scale = 0;
    if (finite.size() >= 3)
        std::tie(centre, scale) = robustCentreAndScale(finite);
    for (size_t r = 0; r < perRank.size(); ++r) {
        const float v = perRank[r];
        if (!std::isfinite(v) || (scale > 0 && std::abs(double(v) - centre) / scale >= minZ))
            out.push_back(int(r));
    }
    return out;
}

float commonValue(const float* row, int ranks) {
    std::vector<float> values;
    for (int r = 0; r < ranks; ++r)
        if (std::isfinite(row[r]) && row[r] > 0)
            values.push_back(row[r]);
    // Sorted, the most common value is the longest run of one value.
    std::sort(values.begin(), values.end());
    float best = std::numeric_limits<float>::quiet_NaN();
    size_t bestCount = 0;
    for (size_t i = 0; i < values.size();) {
        size_t j = i;
        while (j < values.size() && values[j] == values[i])
            ++j;
        if (j - i > bestCount) {
            bestCount = j - i;
            best = values[i];
        }
        i = j;
    }
    return best;
}

} // namespace rs::view
