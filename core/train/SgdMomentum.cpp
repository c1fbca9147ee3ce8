#include "train/SgdMomentum.h"

namespace rs {

void sgdMomentumStep(float* w, float* v, const float* g, int64_t n, float lr, float mom, float wd,
                     float unscale) {
    for (int64_t i = 0; i < n; ++i) {
        v[i] = mom * v[i] + g[i] * unscale + wd * w[i];
        w[i] -= lr * v[i];
    }
}

} // namespace rs
