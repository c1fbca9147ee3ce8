// Presets and example rank tables by name: `--config quick` and `--rank-table hccl_4p` find the files that
// come with RankSight, from the install prefix (share/ranksight beside bin/ and libexec/) or, for a
// build-tree binary, from the source tree's resources/. A path that exists is used as given.
#pragma once

#include <string>

namespace rs::cli {

// kind: "presets" or "ranktables". Returns arg when it names an existing file or looks like a path (has a
// '/'); otherwise the bundled file NAME or NAME.json; throws UsageError naming the folders looked in.
std::string findBundled(const std::string& arg, const char* kind);

// This program's own path (/proc/self/exe); "ranksight-cli" if it cannot be read.
std::string selfPath();

} // namespace rs::cli
