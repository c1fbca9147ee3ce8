// Plain CSV views of a run for spreadsheets and bug tickets: steps.csv, gradients.csv, events.csv. Their
// columns are rows of the run file's step table (RunSchema.h), picked below and named as the datasets are.
// A value the source did not record (RunMeta::absent) is an empty cell.
#pragma once

#include "store/RunRecords.h"
#include "store/RunSchema.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace rs {

class RunReader;

// Writes the three files into dir (created if missing). Refuses to replace existing files unless overwrite.
// Returns the paths written. Throws std::runtime_error naming the file on failure.
std::vector<std::string> exportCsv(const RunReader& reader, const std::string& dir, bool overwrite = false);

// One CSV field: quoted when it holds a comma, quote or newline.
std::string csvField(const std::string& text);

// steps.csv's value columns, in order: per-rank scalar step columns (RunSchema.h, isRankScalar), each headed
// by its dataset's name and written with `decimals` digits after the point (-1: the shortest exact form).
struct CsvColumn {
    runschema::StepCol column;
    int decimals = -1;
};
inline constexpr CsvColumn kStepsCsvColumns[] = {
    {runschema::kLoss},    {runschema::kAccuracy},  {runschema::kLossScale}, {runschema::kOverflow},
    {runschema::kSkipped}, {runschema::kStepMs, 3}, {runschema::kCommMs, 3},
};
inline constexpr size_t kStepsCsvValues = std::size(kStepsCsvColumns);
// gradients.csv's value columns, one row per step, rank and parameter: per-rank vectors of P entries.
inline constexpr runschema::StepCol kGradientsCsvColumns[] = {runschema::kLocalNorm, runschema::kSyncedNorm,
                                                              runschema::kNonfinite};

// steps.csv and events.csv, row by row: one layout for `export-csv` (from the file) and the bug report
// (from the window's model). "step,rank,loss,...\n"
std::string stepsCsvHeader();
struct StepsCsvRow {
    int64_t step = 0;
    int rank = 0;
    std::array<float, kStepsCsvValues> values{}; // kStepsCsvColumns' values, as RunReader::readStepScalar
};
// Which of steps.csv's value columns the run's source recorded: a column it did not record is written as an
// empty cell on every row, never as the file's fill (0, 1, NaN).
using StepsCsvRecorded = std::array<bool, kStepsCsvValues>;
StepsCsvRecorded stepsCsvRecorded(const RunMeta& meta);
void appendCsvRow(std::string& out, const StepsCsvRow& row, const StepsCsvRecorded& recorded);
inline constexpr const char* kEventsCsvHeader = "step,rank,severity,code,message\n";
void appendCsvRow(std::string& out, const Event& event);

} // namespace rs
