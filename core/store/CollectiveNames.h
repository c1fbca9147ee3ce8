// How the run file names a recorded collective's process group and step (Collective::group, ::step): the
// flight-recorder import writes them, the collective-progress view reads them.
#pragma once

#include <cstdint>
#include <string>

namespace rs {

// Collective::step of a collective enqueued before the first step of the run it was joined with: "before the
// run", never a step of it (-1 stays "not joined").
inline constexpr int64_t kCollectiveBeforeRun = -2;

// Collective::group of a process group: "0 (default_pg)", or the name alone when the group has no
// description; cut to the column's 255 bytes.
std::string collectiveGroupLabel(const std::string& name, const std::string& desc);

} // namespace rs
