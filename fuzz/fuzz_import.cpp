// libFuzzer target: the entry logic is rs::fuzz::runImport (ImportFuzz.cpp), shared with tst_fuzzregressions.
#include "FuzzEntries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return rs::fuzz::fuzzImport(data, size);
}
