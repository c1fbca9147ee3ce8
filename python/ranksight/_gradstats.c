/* The recorder's per-tensor statistics in one read of memory per tensor: ranksight.gradstats loads this
 * library with ctypes (and computes the same statistics with torch, in several passes, when it is absent).
 * Plain C with GCC vector extensions and no Python API, so setuptools and CMake build it alike and it needs
 * no headers. Each entry point runs a body compiled for AVX2 on CPUs that have it and one for plain x86-64
 * (SSE2) elsewhere: at SSE2 the local pass is bound by arithmetic, at AVX2 by memory. The two keep the same
 * lanes and add in the same order, so they give the same bits (tests/python/test_gradstats.py compares
 * them). The fingerprint is ranksight.ddp.fingerprint's definition, bit for bit; the sums are float within
 * short runs and double across them, as the engine's gradStats does. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef uint64_t v4u __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

/* RS_BASELINE_ONLY: a build with the baseline bodies alone, for the test that compares the two. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(RS_BASELINE_ONLY)
#define HAVE_AVX2_BODIES 1
static int cpu_has_avx2(void) { /* idempotent: a race between threads stores the same value */
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return have;
}
#endif
/* Inlined into each body, so it is compiled for that body's instructions; no 32-byte vector crosses a call,
 * so GCC's note that passing one changed ABI in GCC 4.6 does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
#define INLINE static inline __attribute__((always_inline))

/* Floats summed in float before they reach the double accumulators: long enough that combining the lanes
 * costs little (at 256 it cost a third of the pass), short enough that each lane adds at most 256 values. */
enum { RUN = 2048 };

static const float kHalfMax = 65504.0f;                 /* |x| above it is an fp16 overflow (ddp._FP16_MAX) */
static const float kHalfZero = 2.98023223876953125e-8f; /* 2^-25: 0 < |x| <= it rounds to 0 in fp16 */

static inline uint64_t mix64(uint64_t x) { /* splitmix64's finaliser, as ddp._mix64 */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* What one tensor's local statistics add up. |x| is kept as its bits: for non-negative floats the integer
 * order is the float order, and a NaN's bits lie above inf's, so the largest bits are NaN when any element
 * is NaN (as torch.aminmax says) and inf when any is inf. */
typedef struct {
    double sumsq, sum;
    int32_t amax_bits;
    int64_t nonfinite, overflow, underflow;
} Local;

INLINE float hsum(v8f v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
INLINE float hsum4(v4f v) { /* hsum4 of lanes 0-3 plus hsum4 of lanes 4-7 is hsum */
    return (v[0] + v[1]) + (v[2] + v[3]);
}

INLINE v8f vmax(v8f a, v8f b) { /* a where a > b, else b: a NaN in a gives b (as maxps) */
    const v8i m = a > b;
    return (v8f)(((v8i)a & m) | ((v8i)b & ~m));
}
INLINE v4f vmax4(v4f a, v4f b) {
    const v4i m = a > b;
    return (v4f)(((v4i)a & m) | ((v4i)b & ~m));
}

/* Lanes 0-3 or 4-7 of run_stats' accumulators, for the baseline, where GCC runs the comparisons of 32-byte
 * vectors one element at a time (a tenth of the speed). */
typedef struct {
    v4f s2, sm, sk, mx;
    v4i uf;
} HalfLanes;

INLINE void half_add(HalfLanes* q, const float* g, const float* s, const int sketch, const int under) {
    const v4i abs_mask = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    const v4f zero = {0, 0, 0, 0};
    const float z = kHalfZero;
    const v4f tiny = {z, z, z, z};
    v4f x;
    memcpy(&x, g, 16);
    const v4f ax = (v4f)((v4i)x & abs_mask);
    q->s2 += x * x;
    q->sm += x;
    q->mx = vmax4(ax, q->mx);
    if (sketch) {
        v4f sg;
        memcpy(&sg, s, 16);
        q->sk += x * sg;
    }
    if (under)
        q->uf -= (ax > zero) & (ax <= tiny);
}

/* One run of n <= RUN elements, 8 at a time: at SSE2 each 32-byte accumulator is two independent chains, so
 * the adds do not wait on one another, and everything stays in the 16 vector registers. A run
 * whose sum of squares is not finite (an inf or NaN, or |x| past 1.8e19) or whose largest |x| is an fp16
 * overflow takes a second, scalar pass for the non-finite and overflow counts and the exact largest |x|;
 * otherwise those counts are 0. sketch and under are constants where this is inlined. */
INLINE void run_stats(const float* g, int64_t n, const float* s, Local* a, double* component,
                      const int sketch, const int under, const int wide) {
    float fs2, fsm, fsk, m;
    int64_t cuf = 0, i = 0;
    if (wide) {
        const int32_t am = 0x7fffffff;
        const v8i abs_mask = {am, am, am, am, am, am, am, am};
        const v8f zero = {0, 0, 0, 0, 0, 0, 0, 0};
        const float z = kHalfZero;
        const v8f tiny = {z, z, z, z, z, z, z, z};
        v8f s2 = zero, sm = zero, sk = zero, mx = zero;
        v8i uf = {0, 0, 0, 0, 0, 0, 0, 0};
        for (; i + 8 <= n; i += 8) {
            v8f x;
            memcpy(&x, g + i, 32);
            const v8f ax = (v8f)((v8i)x & abs_mask);
            s2 += x * x;
            sm += x;
            mx = vmax(ax, mx);
            if (sketch) {
                v8f sg;
                memcpy(&sg, s + i, 32);
                sk += x * sg;
            }
            if (under)
                uf -= (ax > zero) & (ax <= tiny);
        }
        fs2 = hsum(s2), fsm = hsum(sm), fsk = hsum(sk);
        m = mx[0];
        for (int k = 1; k < 8; ++k)
            m = mx[k] > m ? mx[k] : m;
        for (int k = 0; k < 8; ++k)
            cuf += uf[k];
    } else { /* the same eight lanes as two halves, combined in the same order: the same bits */
        HalfLanes lo, hi;
        memset(&lo, 0, sizeof lo);
        memset(&hi, 0, sizeof hi);
        for (; i + 8 <= n; i += 8) {
            half_add(&lo, g + i, s ? s + i : NULL, sketch, under);
            half_add(&hi, g + i + 4, s ? s + i + 4 : NULL, sketch, under);
        }
        fs2 = hsum4(lo.s2) + hsum4(hi.s2);
        fsm = hsum4(lo.sm) + hsum4(hi.sm);
        fsk = hsum4(lo.sk) + hsum4(hi.sk);
        m = lo.mx[0];
        for (int k = 1; k < 8; ++k) {
            const float v = k < 4 ? lo.mx[k] : hi.mx[k - 4];
            m = v > m ? v : m;
        }
        for (int k = 0; k < 4; ++k)
            cuf += (int64_t)lo.uf[k] + hi.uf[k];
    }
    for (; i < n; ++i) {
        const float x = g[i], ax = fabsf(x);
        fs2 += x * x;
        fsm += x;
        m = ax > m ? ax : m;
        if (sketch)
            fsk += x * s[i];
        if (under)
            cuf += ax > 0.0f && ax <= kHalfZero;
    }
    int32_t bits;
    memcpy(&bits, &m, 4);
    if (!(m <= kHalfMax) || !isfinite(fs2)) {
        bits = 0;
        for (int64_t j = 0; j < n; ++j) {
            const float ax = fabsf(g[j]);
            int32_t b;
            memcpy(&b, &ax, 4);
            bits = b > bits ? b : bits;
            a->nonfinite += !isfinite(g[j]);
            a->overflow += ax > kHalfMax;
        }
    }
    a->sumsq += fs2;
    a->sum += fsm;
    a->amax_bits = bits > a->amax_bits ? bits : a->amax_bits;
    a->underflow += cuf;
    if (sketch)
        *component += fsk;
}

/* Elements g[0, len) with signs s[0, len) (s may be NULL: no sketch): adds to a and to *component; the fp16
 * underflow count only when under is set. With div (not 0) each run is then divided by it in place while
 * it is still in L1: DDP's averaging (x / world size, as torch's div_ rounds it) in the statistics' read. */
INLINE void local_run(const float* g, int64_t len, const float* s, Local* a, double* component, int under,
                      float div, const int wide) {
    for (int64_t at = 0; at < len; at += RUN) {
        const int64_t n = len - at < RUN ? len - at : RUN;
        if (s && under)
            run_stats(g + at, n, s + at, a, component, 1, 1, wide);
        else if (s)
            run_stats(g + at, n, s + at, a, component, 1, 0, wide);
        else if (under)
            run_stats(g + at, n, NULL, a, component, 0, 1, wide);
        else
            run_stats(g + at, n, NULL, a, component, 0, 0, wide);
        if (div != 0.0f) {
            float* w = (float*)(uintptr_t)(g + at); /* the caller's writable gradient */
            for (int64_t i = 0; i < n; ++i)
                w[i] = w[i] / div;
        }
    }
}

/* One tensor: g[0, n). The sketch's component c (of k) covers [c * part, (c + 1) * part), the last one up to
 * n (all of it when part is 0); the sign of element i is signs[i % period]. */
INLINE void local_one(const float* g, int64_t n, const float* signs, int64_t period, int64_t part, int64_t k,
                      double* out, double* sketch, int under, float div, const int wide) {
    Local a = {0, 0, 0, 0, 0, 0};
    for (int64_t c = 0; c < k; ++c)
        sketch[c] = 0.0;
    if (k <= 0 || n == 0) {
        local_run(g, n, NULL, &a, NULL, under, div, wide);
    } else {
        for (int64_t c = 0; c < k; ++c) {
            const int64_t lo = c * part < n ? c * part : n;
            const int64_t hi = c == k - 1 ? n : ((c + 1) * part < n ? (c + 1) * part : n);
            for (int64_t i = lo; i < hi;) {
                const int64_t at = i % period;
                const int64_t len = hi - i < period - at ? hi - i : period - at;
                local_run(g + i, len, signs + at, &a, &sketch[c], under, div, wide);
                i += len;
            }
        }
    }
    float amax;
    memcpy(&amax, &a.amax_bits, 4);
    out[0] = a.sumsq;
    out[1] = a.sum;
    out[2] = amax;
    out[3] = (double)a.nonfinite;
    out[4] = (double)a.overflow;
    out[5] = (double)a.underflow;
}

/* ddp.fingerprint of nbytes at p (read as little-endian 64-bit words, blocks of 64 words), and when floats
 * is set the sum of squares and the sum of the nbytes / 4 floats there, all in the same read. */
INLINE uint64_t fingerprint_sums(const unsigned char* p, int64_t nbytes, int floats, double* sumsq,
                                 double* sum) {
    const int64_t words = nbytes / 8, blocks = words / 64;
    uint64_t h = mix64((uint64_t)nbytes);
    double s2 = 0.0, sm = 0.0;
    /* The weighted sum needs no multiply: with run_b the sum of blocks 0..b, sum_b (b + 1) block_b equals
     * (blocks + 1) * total - sum_b run_b, all mod 2^64; so per block only vector adds, and the lanes are
     * combined once at the end. The floats go to double every GROUP blocks (2,048 floats). */
    enum { GROUP = 16 };
    v4u run = {0, 0, 0, 0}, runs = run;
    for (int64_t g0 = 0; g0 < blocks; g0 += GROUP) {
        const int64_t g1 = g0 + GROUP < blocks ? g0 + GROUP : blocks;
        v8f f2a = {0}, f2b = {0}, fsa = {0}, fsb = {0};
        for (int64_t b = g0; b < g1; ++b) {
            const unsigned char* q = p + b * 512;
            v4u wa = {0, 0, 0, 0}, wb = wa; /* two independent chains (four at SSE2) */
            for (int i = 0; i < 512; i += 64) {
                v4u x, y;
                memcpy(&x, q + i, 32);
                memcpy(&y, q + i + 32, 32);
                wa += x;
                wb += y;
                if (floats) {
                    v8f f, e;
                    memcpy(&f, q + i, 32);
                    memcpy(&e, q + i + 32, 32);
                    f2a += f * f;
                    f2b += e * e;
                    fsa += f;
                    fsb += e;
                }
            }
            run += wa + wb;
            runs += run;
        }
        s2 += hsum(f2a + f2b);
        sm += hsum(fsa + fsb);
    }
    const uint64_t total = (run[0] + run[1]) + (run[2] + run[3]);
    const uint64_t weighted = (uint64_t)(blocks + 1) * total - ((runs[0] + runs[1]) + (runs[2] + runs[3]));
    if (blocks) {
        h = mix64(h ^ total);
        h = mix64(h ^ weighted);
    }
    if (blocks * 64 < words) {
        uint64_t tail = 0;
        for (int64_t i = blocks * 64; i < words; ++i) {
            uint64_t x;
            memcpy(&x, p + i * 8, 8);
            tail += (uint64_t)(i - blocks * 64 + 1) * x;
        }
        h = mix64(h ^ tail);
    }
    for (int64_t i = words * 8; i < nbytes; ++i)
        h = mix64(h ^ ((uint64_t)p[i] << (8 * (i - words * 8))));
    if (floats) {
        float fs2 = 0.0f, fsm = 0.0f;
        for (int64_t i = blocks * 128; i < nbytes / 4; ++i) {
            float x;
            memcpy(&x, p + i * 4, 4);
            fs2 += x * x;
            fsm += x;
        }
        *sumsq = s2 + fs2;
        *sum = sm + fsm;
    }
    return h;
}

/* The bodies of the entry points below, for one instruction set each (wide: AVX2's 32-byte vectors). */
INLINE void local_all(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row,
                      const uint64_t* sign_ptr, const int64_t* period, const int64_t* part, int64_t k,
                      double* local, double* sketch, int64_t under, float div, const int wide) {
    for (int64_t t = 0; t < m; ++t)
        local_one((const float*)(uintptr_t)ptr[t], n[t], (const float*)(uintptr_t)sign_ptr[t], period[t],
                  part[t], k, local + row[t] * 6, sketch + row[t] * (k > 0 ? k : 0), (int)under, div, wide);
}
INLINE void synced_all(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row, double* synced,
                       uint64_t* fp) {
    for (int64_t t = 0; t < m; ++t)
        fp[row[t]] = fingerprint_sums((const unsigned char*)(uintptr_t)ptr[t], n[t] * 4, 1,
                                      synced + row[t] * 2, synced + row[t] * 2 + 1);
}

static void local_base(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row,
                       const uint64_t* sign_ptr, const int64_t* period, const int64_t* part, int64_t k,
                       double* local, double* sketch, int64_t under, float div) {
    local_all(m, ptr, n, row, sign_ptr, period, part, k, local, sketch, under, div, 0);
}
static void synced_base(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row, double* synced,
                        uint64_t* fp) {
    synced_all(m, ptr, n, row, synced, fp);
}
static uint64_t fingerprint_base(const void* p, int64_t nbytes) {
    return fingerprint_sums((const unsigned char*)p, nbytes, 0, NULL, NULL);
}
#ifdef HAVE_AVX2_BODIES
#define AVX2 __attribute__((target("avx2")))
AVX2 static void local_avx2(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row,
                            const uint64_t* sign_ptr, const int64_t* period, const int64_t* part, int64_t k,
                            double* local, double* sketch, int64_t under, float div) {
    local_all(m, ptr, n, row, sign_ptr, period, part, k, local, sketch, under, div, 1);
}
AVX2 static void synced_avx2(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row,
                             double* synced, uint64_t* fp) {
    synced_all(m, ptr, n, row, synced, fp);
}
AVX2 static uint64_t fingerprint_avx2(const void* p, int64_t nbytes) {
    return fingerprint_sums((const unsigned char*)p, nbytes, 0, NULL, NULL);
}
#define PICK(base, avx2) (cpu_has_avx2() ? (avx2) : (base))
#else
#define PICK(base, avx2) (base)
#endif

/* m tensors of float32: tensor t has n[t] elements at ptr[t] and its statistics go to row[t] of local (rows
 * of 6: sum of squares, sum, largest |x|, non-finite, fp16 overflow and underflow counts) and of sketch
 * (rows of k); its sketch signs are at sign_ptr[t] with period[t], part[t] elements per component. The
 * underflow count is left 0 unless under is set (it costs a compare per element; the rest is free). */
void rs_local_stats(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row,
                    const uint64_t* sign_ptr, const int64_t* period, const int64_t* part, int64_t k,
                    double* local, double* sketch, int64_t under) {
    PICK(local_base, local_avx2)(m, ptr, n, row, sign_ptr, period, part, k, local, sketch, under, 0.0f);
}

/* rs_local_stats, then each tensor divided by div in place, in the same read (DDP's averaging before its
 * all-reduce sums): the statistics are of the gradient as backward left it, the tensors end divided. */
void rs_local_stats_div(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row,
                        const uint64_t* sign_ptr, const int64_t* period, const int64_t* part, int64_t k,
                        double* local, double* sketch, int64_t under, float div) {
    PICK(local_base, local_avx2)(m, ptr, n, row, sign_ptr, period, part, k, local, sketch, under, div);
}

/* m tensors of float32: sum of squares and sum to row[t] of synced (rows of 2), fingerprint to fp[row[t]]. */
void rs_synced_stats(int64_t m, const uint64_t* ptr, const int64_t* n, const int64_t* row, double* synced,
                     uint64_t* fp) {
    PICK(synced_base, synced_avx2)(m, ptr, n, row, synced, fp);
}

/* ddp.fingerprint of any nbytes. */
uint64_t rs_fingerprint(const void* p, int64_t nbytes) {
    return PICK(fingerprint_base, fingerprint_avx2)(p, nbytes);
}

/* Which bodies the entry points run: 1 for AVX2, 0 for the baseline (ranksight.gradstats.kernel_info). */
int rs_wide_bodies(void) {
#ifdef HAVE_AVX2_BODIES
    return cpu_has_avx2();
#else
    return 0;
#endif
}
