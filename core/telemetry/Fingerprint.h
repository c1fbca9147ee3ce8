// 64-bit bitwise fingerprints of tensors and id lists: equal bytes give equal fingerprints; one flipped bit
// changes it. Not cryptographic; fast enough to run on every gradient every step (~10 GB/s).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rs {

uint64_t fingerprint(const void* data, size_t bytes, uint64_t seed = 0);

// The same fingerprint fed in pieces, for passes that read the data for something else too: update() with
// whole 32-byte blocks, in order, then finish() with the rest (< 32 bytes). Equal to fingerprint() of the
// concatenation.
class Fingerprinter {
public:
    explicit Fingerprinter(uint64_t seed = 0);
    void update(const void* data, size_t bytes); // bytes: a multiple of 32
    uint64_t finish(const void* tail, size_t tailBytes);

private:
    uint64_t m_a, m_b, m_c, m_e;
    size_t m_bytes = 0;
};

inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

} // namespace rs
