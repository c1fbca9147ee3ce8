// IEEE 754 binary16 conversions without LibTorch, for fp16 payloads and overflow accounting.
// Round to nearest even; magnitudes past 65504 become inf, as on hardware.
#pragma once

#include <cstdint>
#include <cstring>

namespace rs {

constexpr float kHalfMax = 65504.0f;
constexpr float kHalfMinSubnormal = 5.9604644775390625e-08f; // 2^-24

inline uint16_t floatToHalf(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mag = x & 0x7fffffffu;
    if (mag > 0x7f800000u) // nan: quiet, the payload's top bits kept, as x86 F16C converts it
        return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
    if (mag == 0x7f800000u) // inf
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (mag >= 0x477ff000u) // rounds to >= 65520: overflow to inf
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (mag < 0x38800000u) {   // below the smallest normal half: subnormal or zero
        if (mag < 0x33000000u) // < 2^-25 rounds to zero
            return static_cast<uint16_t>(sign);
        const uint32_t e = mag >> 23;
        const uint32_t m = (mag & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - e; // 14..24
        uint32_t h = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u)))
            ++h;
        return static_cast<uint16_t>(sign | h);
    }
    // normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits to nearest even
    uint32_t h = ((mag - 0x38000000u) >> 13);
    const uint32_t rem = mag & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        ++h;
    return static_cast<uint16_t>(sign | h);
}

inline float halfToFloat(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else { // subnormal: normalise
            int e = -1;
            do {
                ++e;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            x = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | mant << 13;
    } else {
        x = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

inline float roundThroughHalf(float f) {
    return halfToFloat(floatToHalf(f));
}

} // namespace rs
