// A tiny FuzzedDataProvider: consumes a fuzz input from the front as bytes, integers in a range, choices
// and strings. Hand-written (not <fuzzer/FuzzedDataProvider.h>) so the entry logic also builds with gcc in
// the normal build, where tst_fuzzregressions replays the inputs. Once the input is used up every consume
// returns the lowest value, so any byte string is a valid program.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace rs::fuzz {

class FuzzInput {
public:
    explicit FuzzInput(std::span<const uint8_t> data)
        : m_data(data) {}

    size_t remaining() const { return m_data.size() - m_pos; }
    bool empty() const { return remaining() == 0; }

    uint8_t byte() { return m_pos < m_data.size() ? m_data[m_pos++] : 0; }
    bool boolean() { return (byte() & 1) != 0; }
    uint64_t u64() {
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v = (v << 8) | byte();
        return v;
    }
    uint32_t u32() {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v = (v << 8) | byte();
        return v;
    }
    // A value in [lo, hi] from as few bytes as the range needs.
    uint64_t range(uint64_t lo, uint64_t hi) {
        if (hi <= lo)
            return lo;
        const uint64_t span = hi - lo;
        uint64_t v = 0;
        for (uint64_t s = span; s != 0; s >>= 8)
            v = (v << 8) | byte();
        return span == UINT64_MAX ? lo + v : lo + v % (span + 1);
    }
    template <class T, size_t N> const T& pick(const T (&choices)[N]) { return choices[range(0, N - 1)]; }
    // Up to maxLen bytes.
    std::string bytes(size_t maxLen) {
        const size_t n = std::min<size_t>(range(0, maxLen), remaining());
        std::string s(reinterpret_cast<const char*>(m_data.data() + m_pos), n);
        m_pos += n;
        return s;
    }
    std::string rest() {
        std::string s(reinterpret_cast<const char*>(m_data.data() + m_pos), remaining());
        m_pos = m_data.size();
        return s;
    }

private:
    std::span<const uint8_t> m_data;
    size_t m_pos = 0;
};

} // namespace rs::fuzz
