// OpenBLAS reads its thread count once, when the library loads; the emulated cards each want one BLAS thread
// (one card per core, see ComputeSlots). Executables call this first thing in main(): it sets
// OPENBLAS_NUM_THREADS=1 and re-executes the program once so the setting is in place before the load.
#pragma once

namespace rs {

void pinBlasThreadsByReexec(char** argv);

} // namespace rs
