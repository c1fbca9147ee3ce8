// The versions a bug ticket needs (RankSight, the run file format, Qt, LibTorch, HDF5, BLAS), for
// `ranksight --version` and Help > About.
#pragma once

#include <QString>

namespace rs {

// One line per item, plain text.
QString versionText();

} // namespace rs
