// OpenBLAS reads its settings once, when the library loads, so they have to be in the environment before the
// program starts. Executables call configureBlasByReexec first thing in main(): it sets what is missing and
// re-executes the program once so the settings are in place before the load.
//  - OPENBLAS_NUM_THREADS=1: the emulated cards each want one BLAS thread (one card per core, see
//    ComputeSlots).
//  - OPENBLAS_CORETYPE: OpenBLAS picks its kernels from the CPU model, and a release older than the CPU falls
//    back to its generic SSE3 kernels (Debian 12's 0.3.21 calls a Sapphire Rapids "Prescott").
//    Single-threaded LibTorch runs 1x1 convolutions at batch < 16 and linear layers through BLAS, so on such
//    a machine a ResNet-50 card step took 3x as long. When the kernels OpenBLAS chose need less than the CPU
//    has, the kernels the CPU supports are named instead.
// A variable the user set is left alone.
#pragma once

#include <string>

namespace rs {

void configureBlasByReexec(char** argv);

// The OpenBLAS kernels in use ("SkylakeX", "Haswell", "Prescott"...); empty when the BLAS is not OpenBLAS.
std::string blasCoreName();

// The OpenBLAS core type this CPU supports best, from its instruction set extensions, and whether the kernels
// named `current` fall short of it (false for a name this does not know: no guessing).
std::string bestBlasCoreType();
bool blasCoreFallsShort(const std::string& current, const std::string& best);

} // namespace rs
