// This machine's memory speed for one thread, the unit of the cost model bench-report prints: a phase of a
// card's step that moves B bytes cannot take less than B at this speed (StepPhases.h).
#pragma once

namespace rs {

struct MemoryBandwidth {
    double copyGiBs = 0; // memcpy between two buffers far larger than the caches: bytes read plus written
    double readGiBs = 0; // a sum over one such buffer: bytes read
};

// The best of a few passes of each over 256 MiB buffers (the fastest pass is the one least disturbed by
// the machine's other work). Takes about a second.
MemoryBandwidth measureMemoryBandwidth();

} // namespace rs
