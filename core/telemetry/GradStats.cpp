#include "telemetry/GradStats.h"

#include "telemetry/Fingerprint.h"
#include "util/Half.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rs {
namespace {

// |x| at or past this rounds to inf in fp16 (65520); below half the smallest subnormal it rounds to 0.
constexpr float kHalfOverflowAt = 65520.0f;
constexpr float kHalfUnderflowBelow = kHalfMinSubnormal * 0.5f;
constexpr int64_t kMaxBlock = 64;
constexpr int kSignTable = 4096;

// Random +-1 signs. A block takes kMaxBlock consecutive entries from a random offset (one hash per block),
// which keeps the inner loop a plain multiply the compiler vectorises.
const float* signTable() {
    static const auto table = [] {
        static float t[kSignTable + kMaxBlock];
        for (int i = 0; i < kSignTable + kMaxBlock; i += 64) {
            const uint64_t bits = splitmix64(0x5167a7e5ull + static_cast<uint64_t>(i));
            for (int j = 0; j < 64 && i + j < kSignTable + kMaxBlock; ++j)
                t[i + j] = ((bits >> j) & 1u) ? 1.f : -1.f;
        }
        return t;
    }();
    return table;
}

struct Block {
    double sumSq = 0, sum = 0;
    float maxAbs = 0;
    uint32_t nonfinite = 0, overflow = 0, underflow = 0;
};

// One block of at most 64 elements: every statistic in a single branch-free pass, four lanes at a time with
// GCC/Clang vector extensions (plain SSE2, no -march needed). Float accumulation inside a block, double
// across.
using V4f = float __attribute__((vector_size(16)));
using V4i = int32_t __attribute__((vector_size(16)));

inline float hsum(V4f v) {
    return (v[0] + v[1]) + (v[2] + v[3]);
}
inline uint32_t hcount(V4i v) {
    return static_cast<uint32_t>(-(v[0] + v[1] + v[2] + v[3]));
}

// Full: every statistic; otherwise only what the synced gradient needs (sum of squares, sum, non-finite
// count), in the same order, so those agree bit for bit with a full pass.
template <bool Full>
inline float blockPass(const float* g, int64_t len, const float* signs, float* copy, Block& b) {
    V4f s2 = {}, s = {}, mx = {}, sg = {};
    V4i nf = {}, of = {}, uf = {};
    const V4i expMask = {0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000};
    const V4i absMask = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    const V4f over = {kHalfOverflowAt, kHalfOverflowAt, kHalfOverflowAt, kHalfOverflowAt};
    const V4f under = {kHalfUnderflowBelow, kHalfUnderflowBelow, kHalfUnderflowBelow, kHalfUnderflowBelow};
    const V4f zero = {};
    int64_t i = 0;
    for (; i + 4 <= len; i += 4) {
        V4f x;
        std::memcpy(&x, g + i, 16);
        if (copy)
            std::memcpy(copy + i, &x, 16);
        const V4i bits = reinterpret_cast<V4i>(x);
        const V4i finite = (bits & expMask) != expMask; // -1 where finite
        const V4f v = reinterpret_cast<V4f>(bits & finite);
        s2 += v * v;
        s += v;
        nf += finite + 1; // finite is -1 (true) or 0: adds 0 where finite, 1 where not
        if constexpr (Full) {
            V4f sign;
            std::memcpy(&sign, signs + i, 16);
            const V4f a = reinterpret_cast<V4f>(bits & finite & absMask);
            mx = a > mx ? a : mx;
            sg += sign * v;
            of += a >= over;
            uf += (a > zero) & (a < under);
        }
    }
    float fs2 = hsum(s2), fs = hsum(s), fsg = hsum(sg);
    float fmx = std::max(std::max(mx[0], mx[1]), std::max(mx[2], mx[3]));
    uint32_t cnf = static_cast<uint32_t>(nf[0] + nf[1] + nf[2] + nf[3]), cof = hcount(of), cuf = hcount(uf);
    for (; i < len; ++i) { // tail
        const float x = g[i];
        if (copy)
            copy[i] = x;
        const bool finite = std::isfinite(x);
        const float v = finite ? x : 0.f, a = std::fabs(v);
        fs2 += v * v;
        fs += v;
        cnf += finite ? 0u : 1u;
        if constexpr (Full) {
            fsg += signs[i] * v;
            fmx = std::max(fmx, a);
            cof += a >= kHalfOverflowAt;
            cuf += a > 0.f && a < kHalfUnderflowBelow;
        }
    }
    b.sumSq += fs2;
    b.sum += fs;
    b.maxAbs = std::max(b.maxAbs, fmx);
    b.nonfinite += cnf;
    b.overflow += cof;
    b.underflow += cuf;
    return fsg;
}

} // namespace

TensorStats gradStats(const float* g, int64_t n, float unscale, uint64_t sketchSeed, int k, float* sketch,
                      float* copy) {
    Block b;
    // The sketch: contiguous blocks of L elements (L <= 64, small enough that every component gets some),
    // each with random signs, summed into component (block index mod k). Every element lands in exactly one
    // component with a random sign, so inner products are preserved in expectation.
    const int64_t len = sketch && k > 0 ? std::clamp<int64_t>((n + k - 1) / k, 1, kMaxBlock) : kMaxBlock;
    double acc[256] = {};
    const int kk = sketch ? std::min(k, 256) : 1;
    const float* table = signTable();
    int64_t blockIndex = 0;
    for (int64_t start = 0; start < n; start += len, ++blockIndex) {
        const uint64_t h = sketch ? splitmix64(sketchSeed ^ static_cast<uint64_t>(blockIndex)) : 0;
        const float part = blockPass<true>(g + start, std::min(len, n - start), table + h % kSignTable,
                                           copy ? copy + start : nullptr, b);
        acc[blockIndex % kk] += part;
    }
    TensorStats s;
    s.sumSq = b.sumSq * unscale * unscale;
    s.sum = b.sum * unscale;
    s.maxAbs = b.maxAbs * unscale;
    s.nonfinite = b.nonfinite;
    s.overflow = b.overflow + b.nonfinite;
    s.underflow = b.underflow;
    if (sketch)
        for (int j = 0; j < k; ++j)
            sketch[j] = j < kk ? static_cast<float>(acc[j] * unscale) : 0.f;
    return s;
}

TensorStats normAndSum(const float* g, int64_t n, float unscale) {
    Block b;
    for (int64_t start = 0; start < n; start += kMaxBlock)
        blockPass<false>(g + start, std::min(kMaxBlock, n - start), nullptr, nullptr, b);
    TensorStats s;
    s.sumSq = b.sumSq * unscale * unscale;
    s.sum = b.sum * unscale;
    s.nonfinite = b.nonfinite;
    return s;
}

TensorStats normSumFingerprint(const float* g, int64_t n, float unscale, uint64_t* fp) {
    Block b;
    Fingerprinter f;
    int64_t start = 0;
    for (; start + kMaxBlock <= n; start += kMaxBlock) { // 256 bytes: eight whole fingerprint blocks
        blockPass<false>(g + start, kMaxBlock, nullptr, nullptr, b);
        f.update(g + start, kMaxBlock * 4);
    }
    if (start < n) {
        const int64_t rest = n - start;
        blockPass<false>(g + start, rest, nullptr, nullptr, b);
        const size_t bytes = static_cast<size_t>(rest) * 4, whole = bytes / 32 * 32;
        f.update(g + start, whole);
        *fp = f.finish(reinterpret_cast<const unsigned char*>(g + start) + whole, bytes - whole);
    } else {
        *fp = f.finish(nullptr, 0);
    }
    TensorStats s;
    s.sumSq = b.sumSq * unscale * unscale;
    s.sum = b.sum * unscale;
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
    if (aa == 0 && bb == 0)
        return 1.0;
    if (aa == 0 || bb == 0)
        return 0.0;
    return ab / std::sqrt(aa * bb);
}

} // namespace rs
