// See Engine.h.
#include "Engine.h"

#include "Commands.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>
#include <vector>

namespace rs::cli {

namespace fs = std::filesystem;

bool isEngineCommand(const char* command) {
    for (const char* c : {"train", "bench", "bench-nodes", "--version"})
        if (!std::strcmp(command, c))
            return true;
    return false;
}

std::string findEngine(std::string* looked) {
    std::vector<fs::path> candidates;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): nothing sets the environment once the program runs
    if (const char* env = std::getenv("RANKSIGHT_ENGINE"); env && *env)
        candidates.emplace_back(env);
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.push_back(self.parent_path() / "ranksight-engine");
        candidates.push_back(
            (self.parent_path() / "../libexec/ranksight/ranksight-engine").lexically_normal());
    }
#ifdef RANKSIGHT_ENGINE_BUILD_PATH
    candidates.emplace_back(RANKSIGHT_ENGINE_BUILD_PATH);
#endif
    std::string tried;
    for (const fs::path& p : candidates) {
        if (::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p, ec))
            return p.string();
        tried += (tried.empty() ? "" : ", ") + p.string();
    }
    if (looked)
        *looked = tried;
    return {};
}

int execEngine(char** argv) {
    std::string looked;
    const std::string engine = findEngine(&looked);
    if (engine.empty()) {
        printError(
            fmt::format("{}: ranksight-engine, which runs it, is not installed (looked in {}); reinstall "
                        "RankSight or set RANKSIGHT_ENGINE to its path",
                        argv[1], looked));
        return 2;
    }
    ::execv(engine.c_str(), argv);
    // NOLINTNEXTLINE(concurrency-mt-unsafe): one thread; the process ends right after
    printError(fmt::format("{}: cannot run {}: {}", argv[1], engine, std::strerror(errno)));
    return 2;
}

} // namespace rs::cli
