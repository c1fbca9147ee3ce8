// Who wrote a run and what it could not record, in the words every view uses. A run is named by its source
// ("4 emulated Ascend 910 cards on 2 servers", "a PyTorch DDP job: 4 processes (gloo) on host h", "an msprobe
// Monitor tree: 8 ranks") wherever it is named, and a value its source did not record is shown as
// kNotRecorded: never a zero, a default or "clean" (docs/run-file.md, "absent").
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rs {

inline constexpr const char* kNotRecorded = "not recorded";

enum class SourceKind { Engine, PytorchDdp, Msprobe, FlightRecorder, Other };
SourceKind sourceKind(const RunMeta& meta);

// "4 emulated Ascend 910 cards on 2 servers", "a PyTorch DDP job: 4 processes (gloo) on host h",
// "an msprobe Monitor tree: 8 ranks".
std::string describeRun(const RunMeta& meta);
// What an importer noted about the files it read (msprobe's layout and version, files it skipped, ranks no
// file covered, a flight-recorder join's clock): the `notes` of the run's config JSON, for the run panel and
// the report. Empty for runs RankSight recorded itself.
std::vector<std::string> importNotes(const RunMeta& meta);
// Ranks the run's source holds no record of (an msprobe monitor told to watch some ranks only): their
// statistics are not recorded (NaN), and nothing may call them in agreement. The config JSON's
// `ranks_not_recorded`; empty when every rank was recorded.
std::vector<int> ranksNotRecorded(const RunMeta& meta);
// Those ranks in words, for every line that must not call them in agreement: "rank 2", "ranks 0, 1, 3";
// "" when every rank was recorded.
std::string ranksNotRecordedText(const std::vector<int>& ranks);
// The model's parameter count (elements), or nullopt when a tensor's size was not recorded (an msprobe tree
// that printed no shapes, an L1 dump): a sum over unknown sizes would read as a model of 0 parameters.
std::optional<int64_t> parameterCount(const RunMeta& meta);
// What the rank is called in this source's words: "card", "process", "rank".
std::string rankNoun(const RunMeta& meta);
// The number of distinct servers (hosts) the card table names; 0 without a card table.
int serverCount(const RunMeta& meta);
// The node process that hosted each rank, for an engine run over several node processes (each holding the
// same whole number of the rank table's servers, in order); empty for a one-process run, a source that
// records no nodes, or servers that do not split evenly over the nodes.
std::vector<int> nodeOfRank(const RunMeta& meta);

// The step column (runschema::StepCol) or weight column path the source recorded.
bool stepColumnRecorded(const RunMeta& meta, int stepCol);
// A root attribute the source knew (runschema::kAbsentAttributes may be declared absent).
bool attributeRecorded(const RunMeta& meta, const char* attribute);

// Files written before their source listed all it could not record: an msprobe import never knew the model,
// batch, precision, loss scale or seed; a PyTorch DDP job without a GradScaler (loss_scale "none") recorded
// no loss scale and no skipped updates (its 1 and 0 were fill), and such a job names no data. Adds those
// names to meta.absent (the reader calls it on every file; a no-op for files that list them).
void addImpliedAbsences(RunMeta& meta);

} // namespace rs
