// Imports a run that msprobe's training-state monitor recorded (MindSpore >= 2.4.10 and PyTorch) into a
// RankSight run file, so an Ascend job's ranks can be put side by side, heatmapped and diagnosed like an
// emulated run. Both layouts msprobe writes are read, detected from the tree (MsprobeLayout.h): Monitor V1
// (TrainerMon: monitor_output/<time>-rank<N>-<8 hex>/<prefix>_<start>-<end>.csv) and Monitor V2
// (TrainerMonitorV2: <output_dir>/rank_<N>/<monitor>_step<start>-<end>.csv).
//
// What maps: the unreduced gradient -> the local gradient (norm, max |g| from min and max, non-finite from
// nans, sum = mean x numel where the shape is printed), the reduced gradient -> the synced gradient (norm,
// sum), param_origin / param_updated -> weight norms. Everything else a RankSight file holds (fingerprints,
// sketches, sample ids, loss, timing) the monitor does not record: the file lists it in its `absent`
// attribute and diagnosis says which checks could not run. A rank the monitor was not told to watch (no rank
// folder below the highest) stays in the run with every statistic NaN, listed in the config JSON's
// `ranks_not_recorded` (ranksNotRecorded, RunSource.h); a folder holding only the monitor's alerts
// (anomaly_detected/) becomes a run of events with no statistics. The whole tree is read and checked before
// anything is written; a broken tree throws ImportError with "FILE:LINE: what was wrong" and leaves no file
// behind. The notes (MsprobeImportResult::notes, also the config JSON's `notes`) are read by people: they say
// what was not recorded in words, never as dataset paths.
#pragma once

#include "import/CsvTable.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rs {

struct MsprobeImportResult {
    std::string monitorDir; // the folder holding the rank folders
    std::string layout;     // "Monitor V1", "Monitor V2" or "Monitor V1 alerts" (anomaly_detected/ alone)
    int ranks = 0; // up to the highest rank a folder or an alert names, those without a folder not recorded
    int64_t steps = 0;
    int params = 0;
    int64_t files = 0;
    int64_t events = 0;              // the monitor's alerts (V1 anomaly_detected/), as MONITOR_ANOMALY events
    std::vector<std::string> notes;  // what the user should know (dp_group, micro steps, ignored files)
    std::vector<std::string> absent; // the run file's absent columns
};

// dir: monitor_output/ itself, or a folder that holds it. out: the run file to write (refused if it exists
// unless overwrite). progress gets 0..100.
// What msprobe's monitor never records, whatever the tree: every import's `absent` list starts with these
// (the columns and attributes it has no source for); a tree may lack more (its statistics' files).
std::vector<std::string> msprobeNeverRecorded();

MsprobeImportResult importMsprobe(const std::string& dir, const std::string& out, bool overwrite = false,
                                  const std::function<void(int percent)>& progress = {});

} // namespace rs
