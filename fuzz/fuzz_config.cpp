// libFuzzer target: the entry logic is rs::fuzz::runConfig (FuzzEntries.h), shared with tst_fuzzregressions.
#include "FuzzEntries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return rs::fuzz::fuzzConfig(data, size);
}
