// Where every importer writes: the run file is written under a temporary name in the target's folder and
// renamed into place once complete, so a failure at any point (a broken file found late, a full disk) leaves
// no file, and never a half-written one under the target's name.
#pragma once

#include "store/ColumnText.h"
#include "store/RunRecords.h"

#include <functional>
#include <string>
#include <vector>

namespace rs {

class RunWriter;

// One card per rank, with nothing recorded but the rank (device id -1): the other tools' records name no
// device, address or server.
std::vector<CardInfo> unknownCards(int ranks);

// A rank's step as another tool's records leave it before anything is filled in: every scalar and every
// per-parameter statistic of `params` tensors not recorded (NaN), the non-finite counts 0 (a count has no
// "not recorded"; the norms say the rest). Importers overwrite what their source recorded.
RankStep unrecordedRankStep(size_t params);

// Throws ImportError when `out` exists and may not be replaced.
void checkImportTarget(const std::string& out, bool overwrite);

// Creates the writer, lets `fill` append the rows, closes with `stopReason`, renames into place.
void writeImport(const std::string& out, const RunMeta& meta, const std::string& stopReason,
                 const std::function<void(RunWriter&)>& fill);

} // namespace rs
