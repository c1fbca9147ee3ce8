// See BlasThreads.h.
#include "util/BlasThreads.h"

#include <cstdlib>
#include <unistd.h>

namespace rs {

void pinBlasThreadsByReexec(char** argv) {
    // NOLINTBEGIN(concurrency-mt-unsafe): main() calls this first, before any thread exists
    if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr)
        return;
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    // NOLINTEND(concurrency-mt-unsafe)
    execv("/proc/self/exe", argv);
    // If re-executing fails the program still runs, just possibly oversubscribed.
}

} // namespace rs
