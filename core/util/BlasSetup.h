// OpenBLAS reads its settings once, in its library constructor, before main(). configureBlas (each
// executable calls it first thing, through RANKSIGHT_CONFIGURE_BLAS below) sets what is missing in the
// environment, for this process and the processes it starts, and makes OpenBLAS choose its kernels again
// (gotoblas_dynamic_quit, gotoblas_dynamic_init) and use one thread. Setting them from a
// .preinit_array does not work (libc's constructor resets environ to the original envp after it), and a
// re-exec loads LibTorch's 300 libraries twice (0.4 s per program start).
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

// Call before any thread exists and before any BLAS call.
void configureBlas();

// An executable constructor: it runs after every library's (OpenBLAS's included) and before main(), also in
// test executables whose main() QTest writes. Put once in each executable.
#define RANKSIGHT_CONFIGURE_BLAS                                                                             \
    __attribute__((constructor)) static void rsConfigureBlas() {                                             \
        rs::configureBlas();                                                                                 \
    }

// The OpenBLAS kernels in use ("SkylakeX", "Haswell", "Prescott"...); empty when the BLAS is not OpenBLAS.
std::string blasCoreName();
// The threads OpenBLAS runs a call on; 0 when the BLAS is not OpenBLAS.
int blasThreads();

// The OpenBLAS core type this CPU supports best, from its instruction set extensions, and whether the kernels
// named `current` fall short of it (false for a name this does not know: no guessing).
std::string bestBlasCoreType();
bool blasCoreFallsShort(const std::string& current, const std::string& best);

} // namespace rs
