// Plain CSV views of a run for spreadsheets and bug tickets: steps.csv, gradients.csv, events.csv.
#pragma once

#include <string>
#include <vector>

namespace rs {

class RunReader;

// Writes the three files into dir (created if missing). Refuses to replace existing files unless overwrite.
// Returns the paths written. Throws std::runtime_error naming the file on failure.
std::vector<std::string> exportCsv(const RunReader& reader, const std::string& dir, bool overwrite = false);

// One CSV field: quoted when it holds a comma, quote or newline.
std::string csvField(const std::string& text);

} // namespace rs
