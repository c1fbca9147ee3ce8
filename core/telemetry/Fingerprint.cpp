#include "telemetry/Fingerprint.h"

#include "telemetry/KernelIsa.h"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef RS_HAVE_AVX2_KERNELS
#include <immintrin.h>
#endif

namespace rs {
namespace {

constexpr uint64_t kP1 = 0x9e3779b185ebca87ull;
constexpr uint64_t kP2 = 0xc2b2ae3d27d4eb4full;

inline uint64_t rotl(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}
inline uint64_t round(uint64_t acc, uint64_t v) {
    return rotl(acc + v * kP2, 31) * kP1;
}

constexpr int64_t kPieceBlock = 256;
constexpr uint64_t kPieceKeySeed = 0x6b657973ull;      // "keys"
constexpr uint64_t kBlockSeed = 0x626c6f636b73ull;     // "blocks"
constexpr uint64_t kPieceSeed = 0x6c6f63616c667032ull; // "localfp2"

const std::array<uint32_t, kPieceBlock>& pieceKeys() {
    static const auto keys = [] {
        std::array<uint32_t, kPieceBlock> k{};
        for (size_t i = 0; i < k.size(); ++i)
            k[i] = static_cast<uint32_t>(splitmix64(kPieceKeySeed + i)) | 1u;
        return k;
    }();
    return keys;
}

// sum of w[i] * k[i] over len elements, mod 2^64 (32 x 32 -> 64-bit products).
uint64_t keyedSum(const unsigned char* w, const uint32_t* k, int64_t len) {
    uint64_t s = 0;
    int64_t i = 0;
#if defined(__SSE2__)
    // Two lanes of 64-bit sums per register: the even elements' products, then the odd ones' (pmuludq).
    __m128i even = _mm_setzero_si128(), odd = _mm_setzero_si128();
    for (; i + 4 <= len; i += 4) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i * 4));
        const __m128i kk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i));
        even = _mm_add_epi64(even, _mm_mul_epu32(x, kk));
        odd = _mm_add_epi64(odd, _mm_mul_epu32(_mm_srli_epi64(x, 32), _mm_srli_epi64(kk, 32)));
    }
    uint64_t lanes[2];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), _mm_add_epi64(even, odd));
    s = lanes[0] + lanes[1];
#endif
    for (; i < len; ++i) {
        uint32_t x;
        std::memcpy(&x, w + i * 4, 4);
        s += uint64_t(x) * k[i];
    }
    return s;
}

using KeyedSumFn = uint64_t (*)(const unsigned char*, const uint32_t*, int64_t);

#ifdef RS_HAVE_AVX2_KERNELS
// keyedSum with four lanes of 64-bit sums per register: a sum mod 2^64, so any order gives the same bits.
__attribute__((target("avx2"))) uint64_t keyedSumAvx2(const unsigned char* w, const uint32_t* k,
                                                      int64_t len) {
    __m256i even = _mm256_setzero_si256(), odd = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + i * 4));
        const __m256i kk = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + i));
        even = _mm256_add_epi64(even, _mm256_mul_epu32(x, kk));
        odd = _mm256_add_epi64(odd, _mm256_mul_epu32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(kk, 32)));
    }
    uint64_t lanes[4];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(even, odd));
    uint64_t s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < len; ++i) {
        uint32_t x;
        std::memcpy(&x, w + i * 4, 4);
        s += uint64_t(x) * k[i];
    }
    return s;
}
#else
constexpr KeyedSumFn keyedSumAvx2 = nullptr;
#endif

} // namespace

void PieceFingerprint::add(const void* x, int64_t at, int64_t len) {
    const auto* p = static_cast<const unsigned char*>(x);
    const auto& keys = pieceKeys();
    const KeyedSumFn keyed = pickKernel<KeyedSumFn>(keyedSum, keyedSumAvx2);
    for (int64_t i = at, end = at + len; i < end;) {
        const int64_t block = i / kPieceBlock, upTo = std::min(end, (block + 1) * kPieceBlock);
        const uint64_t b = splitmix64(kBlockSeed + static_cast<uint64_t>(block)) | 1u;
        m_raw += b * keyed(p + (i - at) * 4, keys.data() + (i - block * kPieceBlock), upTo - i);
        i = upTo;
    }
}

uint64_t PieceFingerprint::finish(int64_t n) const {
    return splitmix64(m_raw + splitmix64(static_cast<uint64_t>(n) + kPieceSeed));
}

uint64_t pieceFingerprint(const void* x, int64_t n) {
    PieceFingerprint f;
    f.add(x, 0, n);
    return f.finish(n);
}

// Four independent lanes over 32-byte blocks (the xxHash64 structure), so the loop pipelines well.
Fingerprinter::Fingerprinter(uint64_t seed)
    : m_a(seed + kP1 + kP2)
    , m_b(seed + kP2)
    , m_c(seed)
    , m_e(seed - kP1) {}

void Fingerprinter::update(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t a = m_a, b = m_b, c = m_c, e = m_e;
    for (size_t i = 0; i + 32 <= bytes; i += 32) {
        uint64_t w[4];
        std::memcpy(w, p + i, 32);
        a = round(a, w[0]);
        b = round(b, w[1]);
        c = round(c, w[2]);
        e = round(e, w[3]);
    }
    m_a = a;
    m_b = b;
    m_c = c;
    m_e = e;
    m_bytes += bytes;
}

uint64_t Fingerprinter::finish(const void* tail, size_t tailBytes) {
    const auto* p = static_cast<const unsigned char*>(tail);
    uint64_t h = rotl(m_a, 1) + rotl(m_b, 7) + rotl(m_c, 12) + rotl(m_e, 18) + (m_bytes + tailBytes);
    size_t i = 0;
    for (; i + 8 <= tailBytes; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = rotl(h ^ round(0, w), 27) * kP1 + kP2;
    }
    for (; i < tailBytes; ++i)
        h = rotl(h ^ (p[i] * kP1), 11) * kP2;
    return splitmix64(h);
}

uint64_t fingerprint(const void* data, size_t bytes, uint64_t seed) {
    Fingerprinter f(seed);
    const size_t whole = bytes / 32 * 32;
    f.update(data, whole);
    return f.finish(static_cast<const unsigned char*>(data) + whole, bytes - whole);
}

} // namespace rs
