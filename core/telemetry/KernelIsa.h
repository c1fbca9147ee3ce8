// Which vector instructions the statistics and fingerprint kernels (GradStats.cpp, Fingerprint.cpp) run on.
// Every choice gives the same bits: the kernels keep the same lanes, add in the same order and never fuse a
// multiply with an add, so wider vectors only do the same arithmetic in fewer instructions. Runs recorded on
// machines of either kind compare bit for bit. The widest the CPU has is chosen at start.
#pragma once

// Where the AVX2 kernels are compiled (as functions with __attribute__((target("avx2")))).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RS_HAVE_AVX2_KERNELS 1
#endif

namespace rs {

enum class KernelIsa { Baseline, Avx2 };

KernelIsa kernelIsa();
bool kernelIsaSupported(KernelIsa isa);
// Tests and benchmarks compare the paths: false (nothing changed) when this CPU cannot run isa.
bool setKernelIsa(KernelIsa isa);
const char* kernelIsaName(KernelIsa isa); // "x86-64 baseline (SSE2)", "AVX2", or the other architecture's

// The kernel for the ISA in use: avx2 (nullptr where none is compiled) when AVX2 is chosen, else baseline.
template <class Fn> Fn pickKernel(Fn baseline, Fn avx2) {
    return avx2 && kernelIsa() == KernelIsa::Avx2 ? avx2 : baseline;
}

} // namespace rs
