// How long the calling thread has waited for a CPU core: the kernel's run-queue delay for the thread
// (/proc/thread-self/schedstat, its second field). Emulated cards share the host's cores, so a card's compute
// time includes time it was ready to run and no core was free; that time says nothing about the card.
#pragma once

namespace rs {

// Milliseconds the calling thread has spent runnable but not running since it started; NaN where the kernel
// does not report it (no schedstat, not Linux). Only differences of two calls on one thread mean anything.
double runQueueDelayMs();

} // namespace rs
