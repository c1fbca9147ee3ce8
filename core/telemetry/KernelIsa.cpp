#include "telemetry/KernelIsa.h"

#include <atomic>

namespace rs {
namespace {

bool cpuHasAvx2() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

std::atomic<KernelIsa>& current() {
    static std::atomic<KernelIsa> isa{cpuHasAvx2() ? KernelIsa::Avx2 : KernelIsa::Baseline};
    return isa;
}

} // namespace

KernelIsa kernelIsa() {
    return current().load(std::memory_order_relaxed);
}

bool kernelIsaSupported(KernelIsa isa) {
    return isa == KernelIsa::Baseline || cpuHasAvx2();
}

bool setKernelIsa(KernelIsa isa) {
    if (!kernelIsaSupported(isa))
        return false;
    current().store(isa, std::memory_order_relaxed);
    return true;
}

const char* kernelIsaName(KernelIsa isa) {
    if (isa == KernelIsa::Avx2)
        return "AVX2";
#if defined(__x86_64__)
    return "x86-64 baseline (SSE2)";
#else
    return "baseline";
#endif
}

} // namespace rs
