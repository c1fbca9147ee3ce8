#include "util/HalfConvert.h"

#include "util/Half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define RS_HAVE_F16C_PATH 1
#endif

namespace rs {
namespace {

#ifdef RS_HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) void halfToFloatF16c(const uint16_t* in, float* out, size_t m) {
    size_t i = 0;
    for (; i + 8 <= m; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    for (; i < m; ++i)
        out[i] = halfToFloat(in[i]);
}

__attribute__((target("avx,f16c"))) void floatToHalfF16c(const float* in, uint16_t* out, size_t m) {
    size_t i = 0;
    for (; i + 8 <= m; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < m; ++i)
        out[i] = floatToHalf(in[i]);
}

__attribute__((target("avx,f16c"))) void roundF16c(const float* in, float* out, size_t m) {
    size_t i = 0;
    for (; i + 8 <= m; i += 8)
        _mm256_storeu_ps(
            out + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < m; ++i)
        out[i] = roundThroughHalf(in[i]);
}

__attribute__((target("avx,f16c"))) void accumulateHalfF16c(float* acc, const uint16_t* src, size_t m) {
    size_t i = 0;
    for (; i + 8 <= m; i += 8) {
        const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
        const __m256 sum = _mm256_add_ps(_mm256_loadu_ps(acc + i), x);
        _mm256_storeu_ps(acc + i, _mm256_cvtph_ps(_mm256_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT)));
    }
    for (; i < m; ++i)
        acc[i] = roundThroughHalf(acc[i] + halfToFloat(src[i]));
}
#endif

} // namespace

bool haveF16c() {
#ifdef RS_HAVE_F16C_PATH
    // CPUID leaf 1 rather than __builtin_cpu_supports("f16c"), which clang 14 does not know. AVX also needs
    // the OS to save the YMM registers (OSXSAVE, and XCR0 bits 1-2).
    static const bool have = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!__get_cpuid(1, &a, &b, &c, &d))
            return false;
        const bool osxsave = c & bit_OSXSAVE, avx = c & bit_AVX, f16c = c & bit_F16C;
        if (!(osxsave && avx && f16c))
            return false;
        unsigned lo = 0, hi = 0;
        __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        return (lo & 0x6u) == 0x6u;
    }();
    return have;
#else
    return false;
#endif
}

void halvesToFloats(const uint16_t* in, float* out, size_t n) {
#ifdef RS_HAVE_F16C_PATH
    if (haveF16c())
        return halfToFloatF16c(in, out, n);
#endif
    for (size_t i = 0; i < n; ++i)
        out[i] = halfToFloat(in[i]);
}

void floatsToHalves(const float* in, uint16_t* out, size_t n) {
#ifdef RS_HAVE_F16C_PATH
    if (haveF16c())
        return floatToHalfF16c(in, out, n);
#endif
    for (size_t i = 0; i < n; ++i)
        out[i] = floatToHalf(in[i]);
}

void roundFloatsThroughHalf(const float* in, float* out, size_t n) {
#ifdef RS_HAVE_F16C_PATH
    if (haveF16c())
        return roundF16c(in, out, n);
#endif
    for (size_t i = 0; i < n; ++i)
        out[i] = roundThroughHalf(in[i]);
}

void accumulateHalves(float* acc, const uint16_t* src, size_t n) {
#ifdef RS_HAVE_F16C_PATH
    if (haveF16c())
        return accumulateHalfF16c(acc, src, n);
#endif
    for (size_t i = 0; i < n; ++i)
        acc[i] = roundThroughHalf(acc[i] + halfToFloat(src[i]));
}

} // namespace rs
