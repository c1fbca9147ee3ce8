// The flight recorder's ring of one card: the last steps' gradients and weights, for a dump, within a memory
// budget. The backward accumulates each step's local gradient straight into its slot and the all-reduce
// writes the synced gradient there, so only the weights are a copy (streamed out in the optimizer's pass; a
// skipped update copies nothing, see carryWeightsForward), and at depth 1 not even that: the ring keeps the
// synced gradient and a dump takes the local gradient and the weights live.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rs {

struct FlightRing {
    struct Slot {
        int64_t step = -1;
        std::vector<float> local, synced, weights; // (numParams) each; local and weights: depth > 1 only
        size_t weightsIn = 0; // the slot whose `weights` buffer holds this step's weights (itself or newer)
    };
    std::vector<Slot> slots;
    size_t next = 0;

    // After a step that left the weights as they were (an overflow-skipped update): slot `cur` takes over the
    // previous step's buffer, which holds the same bits, instead of copying, and the slots that read their
    // weights there read them here. False when the previous step is not in the ring.
    bool carryWeightsForward(size_t cur) {
        const size_t prev = (cur + slots.size() - 1) % slots.size();
        if (slots.size() < 2 || slots[prev].step < 0 || slots[prev].step != slots[cur].step - 1)
            return false;
        slots[cur].weights.swap(slots[prev].weights);
        for (Slot& s : slots)
            if (s.weightsIn == prev)
                s.weightsIn = cur;
        slots[cur].weightsIn = cur;
        return true;
    }
};

} // namespace rs
