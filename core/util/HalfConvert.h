// Bulk fp16 conversions for the hot paths (fp16 all-reduce payloads, O2/O3 rounding at every layer).
// x86 F16C converts eight lanes at once with the same bits as util/Half.h (nearest even, overflow to inf,
// exact subnormals, NaN payloads truncated and quieted); elsewhere a scalar fallback. So a conversion split
// into pieces gives the same bits as one over the whole buffer. LibTorch 1.13's own
// CPU float<->half conversion is scalar and ~25 ns per element: O2 would spend more time rounding than
// convolving.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rs {

void halvesToFloats(const uint16_t* in, float* out, size_t n);
void floatsToHalves(const float* in, uint16_t* out, size_t n);
// out[i] = float(half(in[i])); in may equal out.
void roundFloatsThroughHalf(const float* in, float* out, size_t n);
// acc[i] = half(acc[i] + half_to_float(src[i])): one fp16 add, the partial sum rounded to half.
void accumulateHalves(float* acc, const uint16_t* src, size_t n);
bool haveF16c();

} // namespace rs
