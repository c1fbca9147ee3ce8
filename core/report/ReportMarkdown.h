// The text of a bug report's report.md (Qt-free): the run's environment, configuration and rank table, the
// summary figures per rank, the first gradient or weight mismatch, the event log, findings, and the charts
// and files that sit next to report.md. Everything per parameter stays out: the input holds per-rank
// figures computed from the per-step scalar columns, so a 100k-step run costs a few megabytes here.
#pragma once

#include "diagnose/Finding.h"
#include "report/StepFigures.h"
#include "store/RunRecords.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rs {

class RunReader;

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
