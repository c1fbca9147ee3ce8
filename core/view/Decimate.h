// Plot math that keeps charts fast on long runs (Qt-free; tests reach it headlessly): a series of y values at
// evenly indexed x positions is reduced to at most two points (min and max, in x order) per pixel bucket, so
// a 100k-step run draws as fast as a 1k-step one and spikes never vanish.
#pragma once

#include <cstdint>
#include <vector>

namespace rs::view {

struct XY {
    std::vector<double> x, y;
};

// ys[i * stride + offset] for i in [begin, end) at x = xs[i]. Non-finite values are kept as gaps (NaN) when
// a bucket holds nothing finite. buckets <= 0 or (end - begin) <= 2 * buckets returns the points unchanged
// (except that non-finite y become NaN there too). begin/end are clamped to the indices that both xs and ys
// hold; stride <= 0 or offset < 0 gives an empty result.
XY minMaxDecimate(const std::vector<int64_t>& xs, const std::vector<float>& ys, int64_t begin, int64_t end,
                  int buckets, int stride = 1, int offset = 0);

// Index range [begin, end) of sorted xs covering [lower, upper], widened by one point on each side so lines
// reach the edges of the view.
std::pair<int64_t, int64_t> visibleRange(const std::vector<int64_t>& xs, double lower, double upper);

} // namespace rs::view
