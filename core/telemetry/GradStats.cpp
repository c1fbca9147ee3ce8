#include "telemetry/GradStats.h"

#include "telemetry/Fingerprint.h"
#include "telemetry/KernelIsa.h"
#include "util/Half.h"
#include "util/HalfConvert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rs {
namespace {

// |x| at or past this rounds to inf in fp16 (65520); below half the smallest subnormal it rounds to 0.
constexpr float kHalfOverflowAt = 65520.0f;
constexpr float kHalfUnderflowBelow = kHalfMinSubnormal * 0.5f;
constexpr int64_t kMaxBlock = 256;
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

// One block of at most 256 elements (long enough to pay for combining its lanes): every statistic in a single
// branch-free pass with GCC/Clang vector extensions (no -march needed). Float accumulation inside a block,
// double across. Sixteen lanes: element i of the block's first 16 * floor(len / 16) goes to lane i mod 16, so
// the adds run in independent chains (a single chain was latency-bound at about a third of the speed). AVX2's
// main loop holds them as two 8-float vectors, the baseline's (SSE2) as four of 4 floats: the same lanes, the
// same order, so the same bits on either (KernelIsa.h).
// Inlined into each kernel below, so compiled for that kernel's instructions; no 32-byte vector crosses a
// call, so GCC's note that passing one changed ABI in GCC 4.6 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#define RS_INLINE inline __attribute__((always_inline))
using V4f = float __attribute__((vector_size(16)));
using V4i = int32_t __attribute__((vector_size(16)));
using V8f = float __attribute__((vector_size(32)));
using V8i = int32_t __attribute__((vector_size(32)));
constexpr int64_t kLanes = 4, kAcc = 4; // 64-bit: they scale offsets into long gradients

template <class F, class I> struct AccOf {
    F s2 = {}, s = {}, mx = {}, sg = {};
    I nf = {}, of = {}, uf = {};
};
using Acc = AccOf<V4f, V4i>;  // lanes 4k..4k+3: accumulator k
using Acc8 = AccOf<V8f, V8i>; // lanes 8k..8k+7: accumulators 2k and 2k + 1

RS_INLINE float hsum(V4f v) {
    return (v[0] + v[1]) + (v[2] + v[3]);
}
template <class F> RS_INLINE F vmax(const F& a, const F& b) {
    return a > b ? a : b;
}
RS_INLINE uint32_t hcount(V4i v) {
    return static_cast<uint32_t>(-(v[0] + v[1] + v[2] + v[3]));
}
template <class W, class H> RS_INLINE void halves(const W& w, H& lo, H& hi) { // no arithmetic: moves only
    std::memcpy(&lo, &w, sizeof(H));
    std::memcpy(&hi, reinterpret_cast<const char*>(&w) + sizeof(H), sizeof(H));
}
RS_INLINE void halves(const Acc8& w, Acc& lo, Acc& hi) {
    halves(w.s2, lo.s2, hi.s2);
    halves(w.s, lo.s, hi.s);
    halves(w.mx, lo.mx, hi.mx);
    halves(w.sg, lo.sg, hi.sg);
    halves(w.nf, lo.nf, hi.nf);
    halves(w.of, lo.of, hi.of);
    halves(w.uf, lo.uf, hi.uf);
}

// Full: every statistic; otherwise only what the synced gradient needs (sum of squares, sum, non-finite
// count), in the same order, so those agree bit for bit with a full pass. Checked: masks non-finite elements
// and counts them and the fp16 overflows. The unchecked pass is exact whenever its sum of squares comes out
// finite (no element was inf or NaN) and, for Full, its largest |x| is below fp16's overflow; blockPass
// runs it first and repeats the block checked otherwise, in the same order, so both give the same bits.
template <bool Full, bool Checked, class F, class I>
RS_INLINE void lanes(AccOf<F, I>& a, const F& x, const float* signs) {
    const I expMask = I{} + 0x7f800000, absMask = I{} + 0x7fffffff;
    const F over = F{} + kHalfOverflowAt, under = F{} + kHalfUnderflowBelow, zero = {};
    I bits = reinterpret_cast<I>(x);
    if constexpr (Checked) {
        const I finite = (bits & expMask) != expMask; // -1 where finite
        bits &= finite;
        a.nf += finite + 1; // adds 0 where finite, 1 where not
    }
    const F v = reinterpret_cast<F>(bits);
    a.s2 += v * v;
    a.s += v;
    if constexpr (Full) {
        F sign;
        std::memcpy(&sign, signs, sizeof(F));
        const F abs = reinterpret_cast<F>(bits & absMask);
        a.mx = vmax(abs, a.mx);
        a.sg += sign * v;
        a.uf += (abs > zero) & (abs < under);
        if constexpr (Checked)
            a.of += abs >= over;
    }
}

// Adds the block to b and its sign-weighted sum to *signed; false (b untouched) when an unchecked pass
// cannot be exact.
// B: Block, or LocalPart (the same sums and counts, carried from piece to piece).
// Wide: the main loop on 8-float vectors (AVX2); otherwise on 4-float ones (the baseline: GCC's lowering of
// 8-float vectors to SSE2 goes through memory, at a ninth of the speed). The same lanes either way.
template <bool Full, bool Checked, bool Wide, class B>
RS_INLINE bool blockLanes(const float* g, int64_t len, const float* signs, B& b, float* signed_) {
    Acc acc[kAcc];
    int64_t i = 0;
    if constexpr (Wide) {
        Acc8 wide[2];
        for (; i + kAcc * kLanes <= len; i += kAcc * kLanes)
            for (int64_t k = 0; k < 2; ++k) {
                V8f x;
                std::memcpy(&x, g + i + k * 2 * kLanes, 32);
                lanes<Full, Checked>(wide[k], x, signs + i + k * 2 * kLanes);
            }
        halves(wide[0], acc[0], acc[1]);
        halves(wide[1], acc[2], acc[3]);
    } else {
        for (; i + kAcc * kLanes <= len; i += kAcc * kLanes)
            for (int64_t k = 0; k < kAcc; ++k) {
                V4f x;
                std::memcpy(&x, g + i + k * kLanes, 16);
                lanes<Full, Checked>(acc[k], x, signs + i + k * kLanes);
            }
    }
    for (; i + kLanes <= len; i += kLanes) {
        V4f x;
        std::memcpy(&x, g + i, 16);
        lanes<Full, Checked>(acc[0], x, signs + i);
    }
    Acc a;
    a.s2 = (acc[0].s2 + acc[1].s2) + (acc[2].s2 + acc[3].s2);
    a.s = (acc[0].s + acc[1].s) + (acc[2].s + acc[3].s);
    a.sg = (acc[0].sg + acc[1].sg) + (acc[2].sg + acc[3].sg);
    a.mx = vmax(vmax(acc[0].mx, acc[1].mx), vmax(acc[2].mx, acc[3].mx));
    a.nf = (acc[0].nf + acc[1].nf) + (acc[2].nf + acc[3].nf);
    a.of = (acc[0].of + acc[1].of) + (acc[2].of + acc[3].of);
    a.uf = (acc[0].uf + acc[1].uf) + (acc[2].uf + acc[3].uf);
    float fs2 = hsum(a.s2), fs = hsum(a.s), fsg = hsum(a.sg);
    float fmx = std::max(std::max(a.mx[0], a.mx[1]), std::max(a.mx[2], a.mx[3]));
    uint32_t cnf = hcount(-a.nf), cof = hcount(a.of), cuf = hcount(a.uf);
    for (; i < len; ++i) { // tail
        const float x = g[i];
        const bool finite = !Checked || std::isfinite(x);
        const float v = finite ? x : 0.f, abs = std::fabs(v);
        fs2 += v * v;
        fs += v;
        cnf += finite ? 0u : 1u;
        if constexpr (Full) {
            fsg += signs[i] * v;
            fmx = std::max(fmx, abs);
            cof += Checked && abs >= kHalfOverflowAt;
            cuf += abs > 0.f && abs < kHalfUnderflowBelow;
        }
    }
    if constexpr (!Checked) { // exact only if nothing needed masking or counting as an overflow
        if (!std::isfinite(fs2) || (Full && !(fmx < kHalfOverflowAt)))
            return false;
    }
    b.sumSq += fs2;
    b.sum += fs;
    b.maxAbs = std::max(b.maxAbs, fmx);
    b.nonfinite += cnf;
    b.overflow += cof;
    b.underflow += cuf;
    *signed_ = fsg;
    return true;
}

template <bool Full, bool Wide, class B>
RS_INLINE float blockPass(const float* g, int64_t len, const float* signs, B& b) {
    float fsg = 0;
    if (!blockLanes<Full, false, Wide>(g, len, signs, b, &fsg))
        blockLanes<Full, true, Wide>(g, len, signs, b, &fsg);
    return fsg;
}

// Each kernel twice, the one body compiled for the baseline and for AVX2; kernelIsa() picks per block (a call
// per 256 elements costs nothing next to the block's arithmetic).
float fullBlock(const float* g, int64_t len, const float* signs, LocalPart& b) {
    return blockPass<true, false>(g, len, signs, b);
}
void sumsBlock(const float* g, int64_t len, Block& b) {
    blockPass<false, false>(g, len, nullptr, b);
}
using FullBlockFn = float (*)(const float*, int64_t, const float*, LocalPart&);
using SumsBlockFn = void (*)(const float*, int64_t, Block&);
#ifdef RS_HAVE_AVX2_KERNELS
__attribute__((target("avx2"))) float fullBlockAvx2(const float* g, int64_t len, const float* signs,
                                                    LocalPart& b) {
    return blockPass<true, true>(g, len, signs, b);
}
__attribute__((target("avx2"))) void sumsBlockAvx2(const float* g, int64_t len, Block& b) {
    blockPass<false, true>(g, len, nullptr, b);
}
#else
constexpr FullBlockFn fullBlockAvx2 = nullptr;
constexpr SumsBlockFn sumsBlockAvx2 = nullptr;
#endif

} // namespace

void LocalPart::merge(const LocalPart& o) {
    sumSq += o.sumSq;
    sum += o.sum;
    maxAbs = std::max(maxAbs, o.maxAbs);
    nonfinite += o.nonfinite;
    overflow += o.overflow;
    underflow += o.underflow;
    fp.merge(o.fp);
}

void addLocalPiece(const float* g, int64_t n, int64_t from, int64_t to, uint64_t sketchSeed, int k,
                   double* sketch, bool hash, LocalPart& part, uint16_t* half) {
    // The sketch: contiguous blocks of L elements (L <= 256, small enough that every component gets some),
    // each with random signs, summed into component (block index mod k). Every element lands in exactly one
    // component with a random sign, so inner products are preserved in expectation. A piece may start or end
    // inside a block: its elements keep their block's signs.
    const int64_t len = sketch && k > 0 ? std::clamp<int64_t>((n + k - 1) / k, 1, kMaxBlock) : kMaxBlock;
    const int kk = sketch ? std::min(k, 256) : 1;
    const float* table = signTable();
    const FullBlockFn block = pickKernel<FullBlockFn>(fullBlock, fullBlockAvx2);
    for (int64_t at = std::max<int64_t>(from, 0); at < std::min(to, n);) {
        const int64_t blockIndex = at / len, blockStart = blockIndex * len;
        const int64_t upTo = std::min({to, n, blockStart + len});
        const uint64_t h = sketch ? splitmix64(sketchSeed ^ static_cast<uint64_t>(blockIndex)) : 0;
        const float signed_ = block(g + at, upTo - at, table + h % kSignTable + (at - blockStart), part);
        if (sketch)
            sketch[blockIndex % kk] += signed_;
        if (half) // elementwise, so the same bits as one conversion of the whole tensor
            floatsToHalves(g + at, half + at, static_cast<size_t>(upTo - at));
        if (hash) // while the block is still in L1
            part.fp.add(g + at, at, upTo - at);
        at = upTo;
    }
}

TensorStats finishLocal(const LocalPart& part, int64_t n, float unscale, int k, const double* sketchSums,
                        float* sketch, uint64_t* fp) {
    TensorStats s;
    s.sumSq = part.sumSq * unscale * unscale;
    s.sum = part.sum * unscale;
    s.maxAbs = part.maxAbs * unscale;
    s.nonfinite = part.nonfinite;
    s.overflow = part.overflow + part.nonfinite;
    s.underflow = part.underflow;
    if (sketch && sketchSums)
        for (int j = 0; j < k; ++j)
            sketch[j] = j < 256 ? static_cast<float>(sketchSums[j] * unscale) : 0.f;
    if (fp)
        *fp = part.fp.finish(n);
    return s;
}

TensorStats gradStats(const float* g, int64_t n, float unscale, uint64_t sketchSeed, int k, float* sketch,
                      uint64_t* fp, uint16_t* half) {
    LocalPart part;
    double sums[256] = {};
    const bool sketching = sketch && k > 0;
    addLocalPiece(g, n, 0, n, sketchSeed, k, sketching ? sums : nullptr, fp != nullptr, part, half);
    return finishLocal(part, n, unscale, k, sketching ? sums : nullptr, sketch, fp);
}

TensorStats normAndSum(const float* g, int64_t n, float unscale) {
    Block b;
    const SumsBlockFn block = pickKernel<SumsBlockFn>(sumsBlock, sumsBlockAvx2);
    for (int64_t start = 0; start < n; start += kMaxBlock)
        block(g + start, std::min(kMaxBlock, n - start), b);
    TensorStats s;
    s.sumSq = b.sumSq * unscale * unscale;
    s.sum = b.sum * unscale;
    s.nonfinite = b.nonfinite;
    return s;
}

// blockPass over the next len elements, its sums carried from one call to the next.
void SyncedPass::read(int64_t len) {
    Block b;
    b.sumSq = m_sumSq;
    b.sum = m_sum;
    b.nonfinite = m_nonfinite;
    pickKernel<SumsBlockFn>(sumsBlock, sumsBlockAvx2)(m_g + m_done, len, b);
    m_sumSq = b.sumSq;
    m_sum = b.sum;
    m_nonfinite = b.nonfinite;
}

void SyncedPass::feed(int64_t upTo) {
    for (; m_done + kMaxBlock <= std::min(upTo, m_n); m_done += kMaxBlock) { // 1 KiB: 32 fingerprint blocks
        read(kMaxBlock);
        m_f.update(m_g + m_done, kMaxBlock * 4);
    }
}

TensorStats SyncedPass::finish(uint64_t* fp) {
    feed(m_n);
    if (m_done < m_n) {
        const int64_t rest = m_n - m_done;
        read(rest);
        const size_t bytes = static_cast<size_t>(rest) * 4, whole = bytes / 32 * 32;
        m_f.update(m_g + m_done, whole);
        *fp = m_f.finish(reinterpret_cast<const unsigned char*>(m_g + m_done) + whole, bytes - whole);
        m_done = m_n;
    } else {
        *fp = m_f.finish(nullptr, 0);
    }
    TensorStats s;
    s.sumSq = m_sumSq * m_unscale * m_unscale;
    s.sum = m_sum * m_unscale;
    s.nonfinite = m_nonfinite;
    return s;
}

TensorStats normSumFingerprint(const float* g, int64_t n, float unscale, uint64_t* fp) {
    SyncedPass pass(g, n, unscale);
    return pass.finish(fp);
}

TensorStats halvesToFloatsWithStats(const uint16_t* in, float* out, int64_t n, float unscale, uint64_t* fp) {
    SyncedPass pass(out, n, unscale);
    for (int64_t start = 0; start < n; start += kMaxBlock) { // each block converted, then read while in L1
        const int64_t len = std::min(kMaxBlock, n - start);
        halvesToFloats(in + start, out + start, static_cast<size_t>(len));
        pass.feed(start + len);
    }
    return pass.finish(fp);
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
