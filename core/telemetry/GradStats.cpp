#include "telemetry/GradStats.h"

#include "telemetry/Fingerprint.h"
#include "util/Half.h"

#include <algorithm>
#include <cmath>

namespace rs {
namespace {

// |x| at or past this rounds to inf in fp16 (65520); below half the smallest subnormal it rounds to 0.
constexpr float kHalfOverflowAt = 65520.0f;
constexpr float kHalfUnderflowBelow = kHalfMinSubnormal * 0.5f;

struct Block {
    double sumSq = 0, sum = 0;
    float maxAbs = 0;
    uint32_t nonfinite = 0, overflow = 0, underflow = 0;
};

// Plain loops the compiler vectorises; the sign pattern comes 64 elements per hash.
void accumulate(const float* g, int64_t n, Block& b) {
    float mx = 0;
    double s2 = 0, s = 0;
    uint32_t nf = 0, of = 0, uf = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float v = g[i];
        const float a = std::fabs(v);
        if (!std::isfinite(v)) {
            ++nf;
            continue;
        }
        s2 += static_cast<double>(v) * v;
        s += v;
        mx = std::max(mx, a);
        of += a >= kHalfOverflowAt;
        uf += (a > 0.f) & (a < kHalfUnderflowBelow);
    }
    b.sumSq += s2;
    b.sum += s;
    b.maxAbs = std::max(b.maxAbs, mx);
    b.nonfinite += nf;
    b.overflow += of;
    b.underflow += uf;
}

float signedSum(const float* g, int64_t begin, int64_t end, uint64_t seed) {
    double acc = 0;
    for (int64_t base = begin & ~int64_t(63); base < end; base += 64) {
        const uint64_t bits = splitmix64(seed ^ static_cast<uint64_t>(base));
        const int64_t lo = std::max(base, begin), hi = std::min(base + 64, end);
        float part = 0;
        for (int64_t i = lo; i < hi; ++i) {
            const float v = std::isfinite(g[i]) ? g[i] : 0.f;
            part += ((bits >> (i - base)) & 1u) ? v : -v;
        }
        acc += part;
    }
    return static_cast<float>(acc);
}

} // namespace

TensorStats gradStats(const float* g, int64_t n, float unscale, uint64_t sketchSeed, int k, float* sketch) {
    Block b;
    accumulate(g, n, b);
    TensorStats s;
    s.sumSq = b.sumSq * unscale * unscale;
    s.sum = b.sum * unscale;
    s.maxAbs = b.maxAbs * unscale;
    s.nonfinite = b.nonfinite;
    s.overflow = b.overflow + b.nonfinite;
    s.underflow = b.underflow;
    if (sketch) {
        // Component j projects the j-th contiguous block of elements: every element lands in exactly one
        // component with a random sign, so inner products are preserved in expectation.
        for (int j = 0; j < k; ++j) {
            const int64_t begin = n * j / k, end = n * (j + 1) / k;
            sketch[j] = signedSum(g, begin, end, sketchSeed) * unscale;
        }
    }
    return s;
}

TensorStats normAndSum(const float* g, int64_t n, float unscale) {
    Block b;
    accumulate(g, n, b);
    TensorStats s;
    s.sumSq = b.sumSq * unscale * unscale;
    s.sum = b.sum * unscale;
    s.maxAbs = b.maxAbs * unscale;
    s.nonfinite = b.nonfinite;
    return s;
}

double cosine(const float* a, const float* b, int k) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < k; ++i) {
        ab += static_cast<double>(a[i]) * b[i];
        aa += static_cast<double>(a[i]) * a[i];
        bb += static_cast<double>(b[i]) * b[i];
    }
    if (aa == 0 && bb == 0) return 1.0;
    if (aa == 0 || bb == 0) return 0.0;
    return ab / std::sqrt(aa * bb);
}

} // namespace rs
