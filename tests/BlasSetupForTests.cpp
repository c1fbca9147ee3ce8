// Test executables configure OpenBLAS the way ranksight and ranksight-cli do (util/BlasSetup.h), so that what
// a test computes in process matches, bit for bit, what the programs it starts compute, and the suite does
// not run on OpenBLAS's generic kernels where the library does not know the CPU. glibc passes argc, argv and
// envp to the executable's constructors; this one runs before QTest's main.
#include "util/BlasSetup.h"

namespace {

__attribute__((constructor)) void configureBlasForTests(int /*argc*/, char** argv, char** /*envp*/) {
    rs::configureBlasByReexec(argv);
}

} // namespace
