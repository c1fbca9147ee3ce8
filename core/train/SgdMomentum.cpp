#include "train/SgdMomentum.h"

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rs {
namespace {

inline void stepOne(float* w, float* v, const float* g, int64_t i, float lr, float mom, float wd,
                    float unscale) {
    v[i] = mom * v[i] + g[i] * unscale + wd * w[i];
    w[i] -= lr * v[i];
}

} // namespace

void sgdMomentumStep(float* w, float* v, const float* g, int64_t n, float lr, float mom, float wd,
                     float unscale, float* copy) {
    int64_t i = 0;
#if defined(__SSE2__)
    // The copy is read again only by a dump: non-temporal stores write it without first reading each line
    // of it into the cache, about half the memory traffic of a plain store. The lanes compute the scalar
    // expression in its order, so the weights come out bit for bit the same.
    if (copy) {
        for (; i < n && (reinterpret_cast<uintptr_t>(copy + i) & 15) != 0; ++i) {
            stepOne(w, v, g, i, lr, mom, wd, unscale);
            copy[i] = w[i];
        }
        const __m128 vm = _mm_set1_ps(mom), vu = _mm_set1_ps(unscale), vwd = _mm_set1_ps(wd),
                     vlr = _mm_set1_ps(lr);
        for (; i + 4 <= n; i += 4) {
            const __m128 wi = _mm_loadu_ps(w + i);
            const __m128 vi = _mm_add_ps(
                _mm_add_ps(_mm_mul_ps(vm, _mm_loadu_ps(v + i)), _mm_mul_ps(_mm_loadu_ps(g + i), vu)),
                _mm_mul_ps(vwd, wi));
            const __m128 wn = _mm_sub_ps(wi, _mm_mul_ps(vlr, vi));
            _mm_storeu_ps(v + i, vi);
            _mm_storeu_ps(w + i, wn);
            _mm_stream_ps(copy + i, wn);
        }
        _mm_sfence(); // the streamed lines are visible before another thread reads the copy for a dump
    }
#endif
    for (; i < n; ++i) {
        stepOne(w, v, g, i, lr, mom, wd, unscale);
        if (copy)
            copy[i] = w[i];
    }
}

} // namespace rs
