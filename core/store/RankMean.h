// The mean over ranks that RankSight shows wherever it shows one (inspect, the report, the loss chart, the
// loss-fluctuation event): of the finite values only, NaN when no rank has one. A rank whose loss is inf or
// NaN is shown on its own (NONFINITE_LOSS events, the overflow timeline, the per-rank lines), so it does not
// also turn the other ranks' mean into NaN.
#pragma once

#include <cmath>
#include <cstddef>

namespace rs {

// value(i) for i in [0, n).
template <class Value> float finiteMean(size_t n, Value&& value) {
    double sum = 0;
    size_t finite = 0;
    for (size_t i = 0; i < n; ++i) {
        const double v = double(value(i));
        if (std::isfinite(v)) {
            sum += v;
            ++finite;
        }
    }
    return finite ? float(sum / double(finite)) : std::nanf("");
}

inline float finiteMean(const float* v, size_t n) {
    return finiteMean(n, [v](size_t i) { return v[i]; });
}

} // namespace rs
