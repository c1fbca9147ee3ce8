// 64-bit bitwise fingerprints of tensors and id lists: equal bytes give equal fingerprints; one flipped bit
// changes it. Not cryptographic; fast enough to run on every gradient every step (~10 GB/s).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rs {

uint64_t fingerprint(const void* data, size_t bytes, uint64_t seed = 0);

inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

} // namespace rs
