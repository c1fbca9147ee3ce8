#include "MemoryBandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace rs {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBytes = size_t(256) << 20;
constexpr int kPasses = 5;

double seconds(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
}

// Integer sums: addition is associative, so the compiler vectorizes the loop across four accumulators and
// the read runs at the memory's speed, not at one add's latency.
uint64_t sumWords(const uint64_t* w, size_t n) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a += w[i];
        b += w[i + 1];
        c += w[i + 2];
        d += w[i + 3];
    }
    for (; i < n; ++i)
        a += w[i];
    return a + b + c + d;
}

} // namespace

MemoryBandwidth measureMemoryBandwidth() {
    std::vector<uint64_t> src(kBytes / 8), dst(kBytes / 8); // written through: every page is touched
    for (size_t i = 0; i < src.size(); ++i)
        src[i] = i;
    double bestCopy = 1e300, bestRead = 1e300;
    volatile uint64_t sink = 0; // keeps the sums
    for (int pass = 0; pass < kPasses; ++pass) {
        auto t = Clock::now();
        std::memcpy(dst.data(), src.data(), kBytes);
        bestCopy = std::min(bestCopy, seconds(t));
        t = Clock::now();
        sink = sink + sumWords(dst.data(), dst.size());
        bestRead = std::min(bestRead, seconds(t));
    }
    constexpr double kGiB = double(1 << 30);
    return {2.0 * kBytes / bestCopy / kGiB, kBytes / bestRead / kGiB};
}

} // namespace rs
