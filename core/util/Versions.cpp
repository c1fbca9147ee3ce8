// See Versions.h.
#include "util/Versions.h"

#include "util/BlasSetup.h"

#include <fmt/format.h>
#include <hdf5.h>

namespace rs {

std::string ranksightVersion() {
    return RANKSIGHT_VERSION;
}

std::string hdf5Version() {
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    return fmt::format("{}.{}.{}", maj, min, rel);
}

std::string blasDescription() {
    const std::string core = blasCoreName();
    if (core.empty())
        return "not OpenBLAS";
    const int n = blasThreads();
    const std::string threads = fmt::format("{} thread{}", n, n == 1 ? "" : "s");
    const std::string best = bestBlasCoreType();
    if (blasCoreFallsShort(core, best))
        return fmt::format("OpenBLAS with {} kernels, {} (this CPU supports {}: set OPENBLAS_CORETYPE={})",
                           core, threads, best, best);
    return fmt::format("OpenBLAS with {} kernels, {}", core, threads);
}

} // namespace rs
