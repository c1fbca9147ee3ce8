// ReferenceRuns: see ReferenceRuns.h.
#include "reader/ReferenceRuns.h"

#include "reader/OpenRunFile.h"

#include <fmt/format.h>
#include <stdexcept>

namespace rs {

std::unique_ptr<RunReader> openReference(const std::string& path, const char* role) {
    try {
        return openRunFile(path);
    } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("{}: {}", role, e.what())); // e names the file
    }
}

ReferenceRuns openReferences(const std::string& referencePath, const std::vector<std::string>& spreadPaths) {
    ReferenceRuns runs;
    runs.reference = openReference(referencePath);
    for (const std::string& path : spreadPaths) {
        runs.spreadReaders.push_back(openReference(path, "spread reference"));
        runs.spreads.emplace_back(path, runs.spreadReaders.back().get());
    }
    return runs;
}

} // namespace rs
