// Limits how many emulated cards compute at once to the number of cores: more card threads computing
// than cores halves ResNet-50 throughput. A card holds a slot around its forward/backward and releases it
// before it communicates, so a card waiting in a collective never holds a core another card needs.
#pragma once

#include <chrono>
#include <semaphore>
#include <stdexcept>
#include <string>

namespace rs {

class ComputeSlots {
public:
    explicit ComputeSlots(int count)
        : m_capacity(checked(count))
        , m_semaphore(count) {}
    ComputeSlots(const ComputeSlots&) = delete;
    ComputeSlots& operator=(const ComputeSlots&) = delete;

    int capacity() const { return m_capacity; } // not slots(): Qt defines `slots` as a macro
    void acquire() { m_semaphore.acquire(); }
    // False if no slot became free in time (lets a waiting card check its stop flag).
    bool tryAcquireFor(std::chrono::milliseconds timeout) { return m_semaphore.try_acquire_for(timeout); }
    void release() { m_semaphore.release(); }

private:
    static int checked(int count) {
        if (count < 1)
            throw std::invalid_argument("ComputeSlots: need at least one slot, got " + std::to_string(count));
        return count;
    }

    const int m_capacity;
    std::counting_semaphore<> m_semaphore;
};

// Holds one slot for its lifetime.
class ComputeSlotGuard {
public:
    explicit ComputeSlotGuard(ComputeSlots& owner)
        : m_slots(owner) {
        m_slots.acquire();
    }
    ~ComputeSlotGuard() { m_slots.release(); }
    ComputeSlotGuard(const ComputeSlotGuard&) = delete;
    ComputeSlotGuard& operator=(const ComputeSlotGuard&) = delete;

private:
    ComputeSlots& m_slots;
};

} // namespace rs
