// The run file's layout (RunSchema.h) as JSON, printed by `ranksight-cli schema`: the format name and
// version, the fixed string lengths, the groups, the root attributes in order (name, type, required), and
// every table's columns in order (path, dtype, row dims, compression, flags). Writers in other languages
// check their copy of the layout against it (tests/python/test_schema.py for python/ranksight/runfile.py).
#pragma once

#include <string>

namespace rs {

std::string runSchemaJson();

} // namespace rs
