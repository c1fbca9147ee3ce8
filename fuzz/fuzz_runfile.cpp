// libFuzzer target: the entry logic is rs::fuzz::runRunFile (FuzzEntries.h), shared with tst_fuzzregressions.
#include "FuzzEntries.h"

// Every input opens, reads and (half of them) writes HDF5 files, which allocates and frees many large
// buffers: with ASan's default 256 MB quarantine each one is fresh, page-faulted memory (8 exec/s instead of
// ~20). Leak detection is off: libhdf5 leaks small blocks of its own (object header images, free lists) on
// the error paths corrupt files take, which are not RankSight's to fix and would stop every run; our own
// allocations are RAII. Options given in ASAN_OPTIONS still win.
extern "C" const char* __asan_default_options() {
    return "quarantine_size_mb=16:malloc_context_size=8:detect_leaks=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return rs::fuzz::fuzzRunFile(data, size);
}
