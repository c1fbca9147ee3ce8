// The text of a bug report's report.md (Qt-free): the run's environment, configuration and rank table, the
// summary figures per rank, the first gradient or weight mismatch, the event log, findings, and the charts
// and files that sit next to report.md. Everything per parameter stays out: the input holds per-rank
// figures computed from the per-step scalar columns, so a 100k-step run costs a few megabytes here.
#pragma once

#include "diagnose/Finding.h"
#include "store/RunRecords.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rs {

class RunReader;

// Summary figures of one rank over the whole run. NaN where the rank recorded nothing.
struct RankFigures {
    float lossFirst = 0, lossLast = 0;           // loss of the first and the last recorded step
    float stepMsMedian = 0, commMsMedian = 0;    // medians over the steps with a finite time
    int64_t overflowSteps = 0, skippedSteps = 0; // steps this rank flagged
    float lossScaleLast = 0;                     // the loss scale of the last recorded step (NaN: none)
    int64_t lossScaleDiffers = 0; // steps where this rank's loss scale differs from the one most ranks used
    int64_t lossScaleFirstDiffRow = -1; // the first such step's row; -1: none
};

// Figures of the whole run, from the per-rank step columns.
struct StepFigures {
    std::vector<RankFigures> ranks;              // index = rank
    int64_t overflowSteps = 0, skippedSteps = 0; // steps where any rank overflowed / skipped its update
    float lossFirstMean = 0, lossLastMean = 0;   // mean over ranks (NaN if a rank's loss is not finite)
    float stepMsMedian = 0, commMsMedian = 0;    // median over ranks of the per-rank medians
};

// Columns are row-major, rows x worldSize, as RunReader::readStepScalar and RunModel::column give them.
// Flags (overflow, skipped) count as set when nonzero. lossScale may be empty (then no loss-scale figures).
StepFigures summarizeSteps(int worldSize, std::span<const float> loss, std::span<const float> stepMs,
                           std::span<const float> commMs, std::span<const float> overflow,
                           std::span<const float> skipped, std::span<const float> lossScale = {});

struct ReportChart {
    std::string title; // "Loss and accuracy"
    std::string png;   // file names relative to report.md; an empty name is left out
    std::string svg;
};

struct ReportFile {
    std::string name;        // relative to report.md, e.g. "slice.h5"
    std::string description; // one line
};

struct ReportInput {
    std::string runName;      // the run file's name without folder and extension
    std::string sourcePath;   // where the run file was read from
    std::string generatedUtc; // ISO 8601; empty: now
    RunMeta meta;
    int formatVersion = 0;
    bool complete = false;
    std::string stopReason;
    int64_t stepCount = 0; // step rows recorded
    int64_t firstStep = 0, lastStep = -1;
    StepFigures figures;
    std::vector<EvalRecord> evals;
    std::vector<Event> events;
    int64_t chartStep = -1;      // the step the charts' cursor and heatmaps show; -1: not stated
    std::string chartStepReason; // why that step: "the first finding, eval-mode", "the window's cursor"...
    std::vector<ReportChart> charts;
    std::vector<ReportFile> files;
    // Diagnosis lines (one finding each, markdown allowed). Empty: the report says diagnosis is not there
    // yet.
    std::vector<std::string> findings;
    std::vector<int> findingRanks; // the ranks the findings name (listed in the summary at any rank count)
    // The findings themselves, most certain first: "First mismatch" agrees with them (a log without a
    // GRADIENT_SYNC event does not mean no mismatch when a finding names one).
    std::vector<Finding> diagnosis;
    // The run compared with a reference run (compare's text and its one line); empty without one.
    std::string comparison, comparisonLine;
};

// The summary lists every rank up to this many; past it, the ranks that findings or warning and error
// events name or whose figures stand out (view::outlierRanks), and the others as one row of ranges.
inline constexpr size_t kReportAllRanksUpTo = 16;
// Past kReportAllRanksUpTo, the cards table has at most this many rows (groups of servers), and the rank
// table is not inlined when the report folder holds it as this file (ReportInput::files names it).
inline constexpr size_t kReportMaxCardRows = 64;
inline constexpr const char* kReportRankTableFile = "rank_table.json";

// Reads everything a report needs from an open run: the meta, the scalar step columns (loss, step and comm
// times, overflow, skipped; one column at a time, never per-parameter data), evals and events. Charts, files
// and findings are left empty for the caller. Throws RunFileError like the reader.
ReportInput readReportInput(const RunReader& reader);

// The events table shows at most this many rows; a line says how many more there are.
inline constexpr size_t kReportMaxEvents = 200;

// The first GRADIENT_SYNC or WEIGHT_SYNC event (smallest step; gradient before weight on the same step) and
// every event of that code at that step (one per rank that differs from rank 0). Empty when there is none.
std::vector<Event> firstMismatch(const std::vector<Event>& events);

// report.md as UTF-8 markdown.
std::string buildReportMarkdown(const ReportInput& in);

} // namespace rs
