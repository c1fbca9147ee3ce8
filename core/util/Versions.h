// Versions of RankSight and the libraries it runs on, for --version, the About box and the run file's
// environment record (a bug ticket needs them).
#pragma once

#include <string>

namespace rs {

std::string ranksightVersion(); // the project's version (CMake's PROJECT_VERSION)
std::string hdf5Version();      // of the libhdf5 loaded, not the headers
std::string torchVersion();     // LibTorch's (defined in train/Replica.cpp, the LibTorch side)
// "OpenBLAS with SkylakeX kernels", or "OpenBLAS with Prescott kernels (this CPU supports SkylakeX)" when
// they fall short; "not OpenBLAS" otherwise.
std::string blasDescription();

} // namespace rs
