// See BlasThreads.h.
#include "util/BlasThreads.h"

#include <cstdlib>
#include <unistd.h>

namespace rs {

void pinBlasThreadsByReexec(char** argv) {
    if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr)
        return;
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
    // If re-executing fails the program still runs, just possibly oversubscribed.
}

} // namespace rs
