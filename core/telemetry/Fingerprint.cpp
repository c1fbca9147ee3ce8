#include "telemetry/Fingerprint.h"

#include <cstring>

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

} // namespace

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
