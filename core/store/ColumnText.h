// Strings for the run file's fixed-length string columns.
#pragma once

#include <cstddef>
#include <string>

namespace rs {

// A string for a fixed-length run-file column of `limit` bytes (31, 255): cut at a UTF-8 boundary, and when
// cut, ending in a hash of the whole, so that two long values that differ past the cut still differ.
std::string columnText(const std::string& s, size_t limit);

} // namespace rs
