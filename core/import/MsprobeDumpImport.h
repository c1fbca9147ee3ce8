// Imports what msprobe's dump tool (PrecisionDebugger, task "statistics") wrote, <dump_path>/step<N>/rank<R>/
// dump.json (MsprobeDumpFile.h), into a run file: each parameter's gradient as the rank's local gradient
// (norm, max |g| from Max and Min, sum = Mean x size, non-finite when a statistic is), each parameter's value
// at its module's forward as the weights of that step, and every API's and module's input and output
// tensors, forward and backward, as rows of /tensors, so ranks can be compared on each of them. Synced
// gradients, loss, timing and fingerprints are not in a dump: the file lists them absent.
//
// Rank folders are rank<R>, or `rank` / proc<pid> where the process had no distributed rank (read as rank 0
// of a one-process job). A step need not hold every rank: a rank without a dump at a step is not recorded
// there (NaN), and the notes say where; ranks no step holds (msprobe's rank list) are not recorded at all.
// The tree is checked whole first (folders, one task, every file's parameters), then written one step at a
// time: memory holds one step of all ranks, whatever the number of steps.
#pragma once

#include "import/MsprobeImport.h"

#include <filesystem>

namespace rs {

// Whether `dir` is (or holds, in pynative/) a dump tree: step<N> folders of rank folders with dump.json.
bool isMsprobeDumpTree(const std::filesystem::path& dir);

MsprobeImportResult importMsprobeDump(const std::string& dir, const std::string& out, bool overwrite,
                                      const std::function<void(int percent)>& progress);

} // namespace rs
