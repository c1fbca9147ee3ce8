// glibc gives each thread that allocates an arena of its own, up to eight per core, and an arena keeps what
// its threads freed. A node process of 64 card threads held about 150 MB more that way, and 16 of them on one
// 24 GiB host ran it out of memory. Only as many cards as cores compute at once (ComputeSlots), so as many
// arenas serve them. The programs that train (ranksight-engine, the window) call this before any thread
// starts.
#pragma once

#include <algorithm>
#include <malloc.h>
#include <thread>

namespace rs {

inline void limitMallocArenas() {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): called before any other thread exists
    mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
}

} // namespace rs
