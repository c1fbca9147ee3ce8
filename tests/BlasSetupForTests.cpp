// Test executables configure OpenBLAS the way ranksight and ranksight-cli do (util/BlasSetup.h), so that what
// a test computes in process matches, bit for bit, what the programs it starts compute, and the suite does
// not run on OpenBLAS's generic kernels where the library does not know the CPU.
#include "util/BlasSetup.h"

RANKSIGHT_CONFIGURE_BLAS
