// See InstalledData.h.
#include "InstalledData.h"

#include "CliArgs.h"

#include <filesystem>
#include <fmt/format.h>
#include <vector>

namespace rs::cli {

namespace fs = std::filesystem;

std::string findBundled(const std::string& arg, const char* kind) {
    std::error_code ec;
    if (arg.find('/') != std::string::npos || fs::is_regular_file(arg, ec))
        return arg;
    std::vector<fs::path> dirs;
    if (const fs::path self = selfPath(); self.is_absolute()) {
        dirs.push_back((self.parent_path() / "../share/ranksight" / kind).lexically_normal()); // from bin/
        // from libexec/ranksight/, where ranksight-engine (which runs train) is installed
        dirs.push_back((self.parent_path() / "../../share/ranksight" / kind).lexically_normal());
    }
#ifdef RANKSIGHT_SOURCE_DIR
    dirs.push_back(fs::path(RANKSIGHT_SOURCE_DIR) / "resources" / kind);
#endif
    std::string looked;
    for (const fs::path& d : dirs) {
        for (const fs::path& p : {d / arg, d / (arg + ".json")})
            if (fs::is_regular_file(p, ec))
                return p.string();
        looked += (looked.empty() ? "" : ", ") + d.string();
    }
    throw UsageError(fmt::format("'{}' is not a file, nor one of the {} in {}", arg, kind,
                                 looked.empty() ? "(no folder found)" : looked));
}

std::string selfPath() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("ranksight-cli") : self.string();
}

} // namespace rs::cli
