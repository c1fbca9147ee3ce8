#include "train/SgdMomentum.h"

namespace rs {

void sgdMomentumStep(float* w, float* v, const float* g, int64_t n, float lr, float mom, float wd,
                     float unscale, float* copy) {
    if (!copy) {
        for (int64_t i = 0; i < n; ++i) {
            v[i] = mom * v[i] + g[i] * unscale + wd * w[i];
            w[i] -= lr * v[i];
        }
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        v[i] = mom * v[i] + g[i] * unscale + wd * w[i];
        w[i] -= lr * v[i];
        copy[i] = w[i];
    }
}

} // namespace rs
