// A reference run and its spread references, opened by path for a comparison (compare/CompareRuns.h), each
// in the reader process like every file from outside (OpenRunFile.h). Errors name the file and its role
// ("reference: ...", "spread reference: ...") so that a message says which of the files was at fault. The
// comparison itself opens nothing: its callers (compare, diagnose --reference, report, the window) open
// the files here.
#pragma once

#include "store/RunReader.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rs {

// Opens one file as a reference; errors are prefixed with role.
std::unique_ptr<RunReader> openReference(const std::string& path, const char* role = "reference");

struct ReferenceRuns {
    std::unique_ptr<RunReader> reference;
    std::vector<std::unique_ptr<RunReader>> spreadReaders;
    // (path, reader) of each spread reference, in the order given: compareRuns' `spread`.
    std::vector<std::pair<std::string, const RunReader*>> spreads;
};

// Opens the reference, then each spread reference, in that order.
ReferenceRuns openReferences(const std::string& referencePath, const std::vector<std::string>& spreadPaths);

} // namespace rs
