// Decimate: min/max reduction per pixel bucket and the visible index range of a sorted x axis. Inputs come
// from growing live buffers, so every index is clamped to what xs and ys actually hold.
#include "view/Decimate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rs::view {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Number of indices i for which both xs[i] and ys[i * stride + offset] exist.
int64_t usableCount(const std::vector<int64_t>& xs, const std::vector<float>& ys, int stride, int offset) {
    if (stride <= 0 || offset < 0 || size_t(offset) >= ys.size())
        return 0;
    const int64_t inY = int64_t((ys.size() - size_t(offset) - 1) / size_t(stride)) + 1;
    return std::min<int64_t>(int64_t(xs.size()), inY);
}

// Non-finite values become NaN so the chart draws a gap instead of a line to infinity.
double plotValue(float y) {
    return std::isfinite(y) ? double(y) : kNaN;
}

void push(XY& out, int64_t x, double y) {
    out.x.push_back(double(x));
    out.y.push_back(y);
}

} // namespace

XY minMaxDecimate(const std::vector<int64_t>& xs, const std::vector<float>& ys, int64_t begin, int64_t end,
                  int buckets, int stride, int offset) {
    XY out;
    const int64_t n = usableCount(xs, ys, stride, offset);
    end = std::clamp<int64_t>(end, 0, n);
    begin = std::clamp<int64_t>(begin, 0, end);
    const int64_t count = end - begin;
    auto yAt = [&](int64_t i) { return ys[size_t(i) * size_t(stride) + size_t(offset)]; };

    if (buckets <= 0 || count <= 2 * int64_t(buckets)) {
        out.x.reserve(size_t(count));
        out.y.reserve(size_t(count));
        for (int64_t i = begin; i < end; ++i)
            push(out, xs[size_t(i)], plotValue(yAt(i)));
        return out;
    }

    out.x.reserve(2 * size_t(buckets));
    out.y.reserve(2 * size_t(buckets));
    for (int64_t b = 0; b < buckets; ++b) {
        // Integer bucket edges: sizes differ by at most one and every index lands in exactly one bucket.
        const int64_t lo = begin + b * count / buckets;
        const int64_t hi = begin + (b + 1) * count / buckets;
        int64_t iMin = -1, iMax = -1;
        for (int64_t i = lo; i < hi; ++i) {
            const float y = yAt(i);
            if (!std::isfinite(y))
                continue;
            if (iMin < 0 || y < yAt(iMin))
                iMin = i;
            if (iMax < 0 || y > yAt(iMax))
                iMax = i;
        }
        if (iMin < 0) {
            push(out, xs[size_t(lo)], kNaN); // nothing finite: a gap
            continue;
        }
        // Two points in x order keep the line's shape; a flat bucket needs only one.
        const int64_t first = std::min(iMin, iMax), second = std::max(iMin, iMax);
        push(out, xs[size_t(first)], double(yAt(first)));
        if (second != first)
            push(out, xs[size_t(second)], double(yAt(second)));
    }
    return out;
}

std::pair<int64_t, int64_t> visibleRange(const std::vector<int64_t>& xs, double lower, double upper) {
    const auto first =
        std::lower_bound(xs.begin(), xs.end(), lower, [](int64_t x, double v) { return double(x) < v; });
    const auto last =
        std::upper_bound(xs.begin(), xs.end(), upper, [](double v, int64_t x) { return v < double(x); });
    const int64_t size = int64_t(xs.size());
    const int64_t begin = std::max<int64_t>(0, int64_t(first - xs.begin()) - 1);
    const int64_t end = std::min<int64_t>(size, int64_t(last - xs.begin()) + 1);
    return {begin, std::max(begin, end)}; // lower > upper must not give a negative count
}

} // namespace rs::view
