// What the throughput benchmarks share: a step clock on the trainer's observer (setup and model building are
// not throughput) and the median over rounds (the machine is noisy; rounds alternate configurations).
#pragma once

#include "train/TrainObserver.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

namespace rs {

class StepClock : public TrainObserver {
public:
    explicit StepClock(int warmup)
        : m_warmup(warmup) {}
    void stepRecorded(const StepRecord& s) override {
        if (s.step + 1 == m_warmup) {
            m_start = Clock::now();
            m_cpuStart = processCpuSeconds();
        }
        m_end = Clock::now();
        m_cpuEnd = processCpuSeconds();
        m_last = s.step + 1;
    }
    // Images per second over the steps after warm-up.
    double imagesPerSecond(int imagesPerStep) const {
        const double secs = std::chrono::duration<double>(m_end - m_start).count();
        return secs > 0 ? double(m_last - m_warmup) * imagesPerStep / secs : 0;
    }
    // Over the same steps: the process's CPU time (every thread's) against what `cores` cores could give in
    // that wall time. Nothing in the trainer spins while it waits, so 1 minus this is the time the cores
    // stood idle, all that overlapping work can win on this machine.
    double coresBusy(int cores) const {
        const double secs = std::chrono::duration<double>(m_end - m_start).count();
        return secs > 0 && cores > 0 ? (m_cpuEnd - m_cpuStart) / (secs * cores) : 0;
    }

private:
    using Clock = std::chrono::steady_clock;
    static double processCpuSeconds() {
        timespec t{};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
    }
    int m_warmup;
    int64_t m_last = 0;
    Clock::time_point m_start, m_end;
    double m_cpuStart = 0, m_cpuEnd = 0;
};

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace rs
