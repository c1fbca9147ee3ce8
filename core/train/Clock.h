// The trainer's clock for durations (phases, communication, the writer's busy time): steady, in ms.
#pragma once

#include <chrono>

namespace rs {

using Clock = std::chrono::steady_clock;

inline double msSince(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

} // namespace rs
