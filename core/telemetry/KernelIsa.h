// Which vector instructions the statistics and fingerprint kernels (GradStats.cpp, Fingerprint.cpp) run on.
// Every choice gives the same bits: the kernels keep the same lanes, add in the same order and never fuse a
// multiply with an add, so wider vectors only do the same arithmetic in fewer instructions. Runs recorded on
// machines of either kind compare bit for bit. The widest the CPU has is chosen at start.
#pragma once

namespace rs {

enum class KernelIsa { Baseline, Avx2 };

KernelIsa kernelIsa();
bool kernelIsaSupported(KernelIsa isa);
// Tests and benchmarks compare the paths: false (nothing changed) when this CPU cannot run isa.
bool setKernelIsa(KernelIsa isa);
const char* kernelIsaName(KernelIsa isa); // "x86-64 baseline (SSE2)", "AVX2", or the other architecture's

} // namespace rs
