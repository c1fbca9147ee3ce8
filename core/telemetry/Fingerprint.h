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

// A fingerprint of a tensor of 4-byte elements that does not depend on how the tensor is cut into pieces:
// the run file's local_fp, version 2 (docs/run-file.md, "Fingerprints"). The reduce-scatter hands each rank
// its chunk of every rank's gradient, so a rank's local gradient is read in pieces by every rank, and the
// pieces are combined afterwards; a chained hash (fingerprint()) would depend on where the chunks start.
//   raw = sum over elements i of bits(x_i) * K[i mod 256] * B(i / 256)   (mod 2^64)
//   fp  = splitmix64(raw + splitmix64(n + kPieceSeed))
// K: 256 odd 32-bit keys, B(b) = splitmix64(b + kBlockSeed) | 1: each term's key is odd, so changing any one
// element (any bit of it) always changes the fingerprint; the sum is linear, so pieces add in any order.
// Not cryptographic: two changed elements can cancel only by choosing them for it.
class PieceFingerprint {
public:
    // Elements [at, at + len) of the tensor, x pointing at element `at`.
    void add(const void* x, int64_t at, int64_t len);
    void merge(const PieceFingerprint& other) { m_raw += other.m_raw; }
    uint64_t finish(int64_t n) const; // n: the tensor's element count
    uint64_t raw() const { return m_raw; }

private:
    uint64_t m_raw = 0;
};

// PieceFingerprint of n elements in one piece.
uint64_t pieceFingerprint(const void* x, int64_t n);

inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

} // namespace rs
