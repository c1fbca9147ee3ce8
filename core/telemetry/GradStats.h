// One fused pass over a gradient tensor: everything a step records about it, in a single read of memory.
#pragma once

#include "telemetry/Fingerprint.h"

#include <cstdint>

namespace rs {

struct TensorStats {
    double sumSq = 0; // of the unscaled values
    double sum = 0;   // of the unscaled values
    float maxAbs = 0; // of the unscaled values
    uint32_t nonfinite = 0;
    uint32_t overflow = 0;  // elements whose fp16 rounding would be inf (of the scaled values)
    uint32_t underflow = 0; // nonzero elements whose fp16 rounding would be 0 (of the scaled values)
};

// g: n scaled gradient values; unscale = 1 / lossScale. When sketch is not null it receives k components of a
// signed block random projection (signs from sketchSeed and the element index), the same on every rank, so
// cos(sketch_a, sketch_b) estimates cos(g_a, g_b). Identical tensors give identical sketches.
// When fp is not null it receives pieceFingerprint(g, n), each block hashed while still in L1. When half is
// not null it receives the n values as fp16 (floatsToHalves' bits), each block converted while still in L1:
// the O2/O3 all-reduce payload without a second read of the gradient. The tensor in one piece (LocalPart).
TensorStats gradStats(const float* g, int64_t n, float unscale, uint64_t sketchSeed, int k, float* sketch,
                      uint64_t* fp = nullptr, uint16_t* half = nullptr);

// gradStats of a tensor read in pieces, in any cut: the reduce-scatter hands each rank its chunk of every
// rank's gradient, so one rank's local gradient is read by every rank, a piece each. Parts merged in a fixed
// order give the same bits every time; the fingerprint gives the same bits in any cut (PieceFingerprint), the
// sums and the sketch differ from one cut to another by float rounding only, and one piece gives gradStats'
// bits. Before the loss scale is divided out.
struct LocalPart {
    double sumSq = 0, sum = 0;
    float maxAbs = 0;
    uint32_t nonfinite = 0, overflow = 0, underflow = 0;
    PieceFingerprint fp;
    void merge(const LocalPart& o);
};

// Adds elements [from, to) of a tensor of n values (g: its element 0) to part, with their fingerprint when
// hash, and their sketch components to sketch (k sums, as gradStats' sketch) when it is not null; half, when
// not null, receives those elements as fp16 (half: the tensor's element 0).
void addLocalPiece(const float* g, int64_t n, int64_t from, int64_t to, uint64_t sketchSeed, int k,
                   double* sketch, bool hash, LocalPart& part, uint16_t* half = nullptr);
// The whole tensor's statistics from its merged part; sketch (k floats) from the merged sketch sums when
// both are not null, fp the fingerprint when not null.
TensorStats finishLocal(const LocalPart& part, int64_t n, float unscale, int k, const double* sketchSums,
                        float* sketch, uint64_t* fp);

// Sum of squares, element sum and non-finite count only (the other fields stay 0), for the synced gradient
// and the weights (unscaled by unscale); the same bits as gradStats gives for those three.
TensorStats normAndSum(const float* g, int64_t n, float unscale);
// normAndSum and fingerprint(g, n * 4) in one pass over the data (each block is hashed while still in L1):
// the same bits as the two apart.
TensorStats normSumFingerprint(const float* g, int64_t n, float unscale, uint64_t* fp);

// normSumFingerprint over a tensor whose elements become final in order (the all-reduce's last pass hands
// them over a few KiB at a time): feed(upTo) reads the whole blocks below upTo while they are still in L1,
// finish() the rest. The same bits as normSumFingerprint, which is this fed all at once.
class SyncedPass {
public:
    SyncedPass(const float* g, int64_t n, float unscale)
        : m_g(g)
        , m_n(n)
        , m_unscale(unscale) {}
    void feed(int64_t upTo);
    TensorStats finish(uint64_t* fp);

private:
    void read(int64_t len);

    const float* m_g;
    int64_t m_n, m_done = 0;
    float m_unscale;
    double m_sumSq = 0, m_sum = 0;
    uint32_t m_nonfinite = 0;
    Fingerprinter m_f;
};

// halvesToFloats(in, out, n) and normSumFingerprint(out, n, unscale, fp) in one pass (each block converted,
// then read while still in L1): the O2/O3 all-reduce's last pass with the synced statistics. The same bits as
// the two apart.
TensorStats halvesToFloatsWithStats(const uint16_t* in, float* out, int64_t n, float unscale, uint64_t* fp);

double cosine(const float* a, const float* b, int k);

} // namespace rs
