// Plain CSV views of a run for spreadsheets and bug tickets: steps.csv, gradients.csv, events.csv. A value
// the source did not record (RunMeta::absent) is an empty cell.
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rs {

class RunReader;

// Writes the three files into dir (created if missing). Refuses to replace existing files unless overwrite.
// Returns the paths written. Throws std::runtime_error naming the file on failure.
std::vector<std::string> exportCsv(const RunReader& reader, const std::string& dir, bool overwrite = false);

// One CSV field: quoted when it holds a comma, quote or newline.
std::string csvField(const std::string& text);

// steps.csv and events.csv, row by row: one layout for `export-csv` (from the file) and the bug report
// (from the window's model).
inline constexpr const char* kStepsCsvHeader =
    "step,rank,loss,accuracy,loss_scale,overflow,skipped,step_ms,comm_ms\n";
struct StepsCsvRow {
    int64_t step = 0;
    int rank = 0;
    float loss = 0, accuracy = 0, lossScale = 0;
    bool overflow = false, skipped = false;
    float stepMs = 0, commMs = 0;
};
// Which of steps.csv's value columns the run's source recorded: a column it did not record is written as an
// empty cell on every row, never as the file's fill (0, 1, NaN).
struct StepsCsvRecorded {
    bool loss = true, accuracy = true, lossScale = true, overflow = true, skipped = true, stepMs = true,
         commMs = true;
};
StepsCsvRecorded stepsCsvRecorded(const RunMeta& meta);
void appendCsvRow(std::string& out, const StepsCsvRow& row, const StepsCsvRecorded& recorded = {});
inline constexpr const char* kEventsCsvHeader = "step,rank,severity,code,message\n";
void appendCsvRow(std::string& out, const Event& event);

} // namespace rs
