// What the throughput benchmarks share: a step clock on the trainer's observer (setup and model building are
// not throughput) and the median over rounds (the machine is noisy; rounds alternate configurations).
#pragma once

#include "train/TrainObserver.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace rs {

class StepClock : public TrainObserver {
public:
    explicit StepClock(int warmup)
        : m_warmup(warmup) {}
    void stepRecorded(const StepRecord& s) override {
        if (s.step + 1 == m_warmup)
            m_start = Clock::now();
        m_end = Clock::now();
        m_last = s.step + 1;
    }
    // Images per second over the steps after warm-up.
    double imagesPerSecond(int imagesPerStep) const {
        const double secs = std::chrono::duration<double>(m_end - m_start).count();
        return secs > 0 ? double(m_last - m_warmup) * imagesPerStep / secs : 0;
    }

private:
    using Clock = std::chrono::steady_clock;
    int m_warmup;
    int64_t m_last = 0;
    Clock::time_point m_start, m_end;
};

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace rs
