// See BlasSetup.h.
#include "util/BlasSetup.h"

#include <cctype>
#include <cstdlib>
#include <dlfcn.h>
#include <map>

namespace rs {

std::string blasCoreName() {
    // Looked up at run time so that a LibTorch built against another BLAS still links and runs.
    using CoreName = char* (*)();
    auto fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    const char* name = fn ? fn() : nullptr;
    return name ? name : "";
}

int blasThreads() {
    using NumThreads = int (*)();
    auto fn = reinterpret_cast<NumThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    return fn ? fn() : 0;
}

std::string bestBlasCoreType() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    if (__builtin_cpu_supports("avx"))
        return "Sandybridge";
#endif
    return "";
}

bool blasCoreFallsShort(const std::string& current, const std::string& best) {
    // OpenBLAS's x86-64 kernel families by the instruction set they need; names OpenBLAS prints in any case.
    static const std::map<std::string, int> tier = {
        {"prescott", 0},    {"core2", 0},         {"penryn", 0},      {"dunnington", 0}, {"nehalem", 0},
        {"atom", 0},        {"barcelona", 0},     {"sandybridge", 1}, {"bulldozer", 1},  {"piledriver", 1},
        {"steamroller", 1}, {"excavator", 1},     {"haswell", 2},     {"zen", 2},        {"skylakex", 3},
        {"cooperlake", 3},  {"sapphirerapids", 3}};
    auto lower = [](std::string s) {
        for (char& c : s)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    const auto c = tier.find(lower(current));
    const auto b = tier.find(lower(best));
    return c != tier.end() && b != tier.end() && c->second < b->second;
}

void configureBlas() {
    // NOLINTBEGIN(concurrency-mt-unsafe): called before any thread exists
    bool threads = false, core = false;
    if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
        threads = true;
    }
    if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
        const std::string best = bestBlasCoreType();
        if (blasCoreFallsShort(blasCoreName(), best)) {
            setenv("OPENBLAS_CORETYPE", best.c_str(), 1);
            core = true;
        }
    }
    // NOLINTEND(concurrency-mt-unsafe)
    // Looked up at run time: a LibTorch built against another BLAS has neither, and needs neither.
    using Fn = void (*)();
    using SetThreads = void (*)(int);
    if (core) {
        // Only the kernel choice starts over: gotoblas_dynamic_quit forgets the kernel table and
        // gotoblas_dynamic_init picks one again, reading the environment. No BLAS call has run yet, so no
        // buffer was carved for the old kernels. (gotoblas_quit/gotoblas_init would also free OpenBLAS's
        // buffers, and 0.3.21 frees them again at exit: it unmapped whatever had been mapped there since.)
        auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
        auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
        if (quit && init) {
            quit();
            init();
        }
    }
    if (threads) // gotoblas_init keeps the thread count it counted the first time
        if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
            set(1);
}

} // namespace rs
