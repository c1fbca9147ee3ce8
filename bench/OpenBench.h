// `ranksight-cli bench-open`: does the GUI open a big run fast, with memory bounded, and does the event loop
// stay responsive while a live run streams in? Three phases, each bounded:
//  (a) generate a synthetic ResNet-50 run file (SyntheticRun: R ranks x 161 tensors, sketch 16, weight rows
//      every 10 steps, evals every 1000, a few events) with RunWriter, or reuse an existing file;
//  (b) open it with RunModel under a shown LossChart: time to the first rows and the first picture (LossChart
//      refreshNow), to the fully loaded index, to one step's per-parameter detail; RSS before and after
//      against the file size;
//  (c) live: a writer thread appends steps to a new file at full speed while a RunModel follows it with the
//      four charts alive in a shown window; a 5 ms timer records every gap of the GUI event loop.
// Needs a QApplication (offscreen is fine). Figures are wall-clock on a shared machine: read them as orders
// of magnitude and against the targets (first picture < 1 s, no stall > 50 ms).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace rs::bench {

struct OpenBenchOptions {
    int64_t steps = 100000;
    int ranks = 8;
    int sketchDim = 16;
    std::string file;          // the run to open; generated if missing (kept); empty: a temporary file
    int64_t liveSteps = 20000; // phase (c): a live run of this many steps (0: no phase (c))
    double liveSeconds = 600;  // phase (c) gives up after this long
    bool cold = false; // drop the file from the page cache before opening (like a first open after boot)
    double openTimeoutS = 600; // each wait of phase (b)
};

struct OpenBenchResult {
    // (a)
    std::string file;
    bool generated = false;
    double generateS = 0; // 0 when the file was reused
    int64_t fileBytes = 0;
    bool cold = false; // the open started with none of the file in the page cache
    int64_t steps = 0;
    int ranks = 0, params = 0;
    // (b)
    double firstRowsMs = 0;    // RunModel::open -> first stepsAppended
    double firstPictureMs = 0; // ... -> LossChart::refreshNow() done
    double fullLoadMs = 0;     // ... -> every step's scalars in the model
    double detailMs = 0;       // one step's per-parameter detail (what the heatmaps wait for)
    // Each panel a cursor move redraws, drawn for that step on the GUI thread (name, ms).
    std::vector<std::pair<std::string, double>> panels;
    double rankMapReadyMs = 0; // the rank x rank map drawn for that step (its matrix may be computed apart)
    double rssBeforeMiB = 0, rssFirstMiB = 0, rssLoadedMiB = 0;
    double modelMiB = 0; // what RunModel holds per step: step numbers + scalar columns
    // (c)
    double liveS = 0;
    int64_t liveStepsWritten = 0, liveStepsShown = 0;
    double writerStepMs = 0; // mean time per appended step (8 x 161 rows at full speed)
    int64_t ticks = 0;       // 5 ms timer ticks seen
    double maxGapMs = 0, p99GapMs = 0, meanGapMs = 0;
    int64_t gapsOver50Ms = 0;
    // The same 5 ms tick while the large file opens and loads (file open to fully loaded).
    double loadMaxGapMs = 0;
    int64_t loadTicks = 0, loadGapsOver50Ms = 0;
    double guiCpuShare = 0; // GUI thread CPU time / wall time over phase (c)
    // Phase (c) in quarters of the steps written: is the GUI's cost flat as the run grows?
    struct Quarter {
        int64_t toStep = 0;
        double seconds = 0, guiCpuShare = 0, maxGapMs = 0;
        int64_t diagnosisPasses = 0;
        double diagnosisMaxMs = 0; // the longest background diagnosis pass that ended in this quarter
    };
    std::vector<Quarter> quarters;
    bool liveTimedOut = false; // liveSeconds passed before the model showed liveSteps
    double loadAverage = 0;    // 1-minute load average when phase (c) started: other work on the machine
                               // inflates wall-clock gaps (2 cores: the writer thread alone takes one)
    // Where the GUI thread's time goes: each chart's QCustomPlot::replot (beforeReplot -> afterReplot).
    struct ChartCost {
        std::string id;
        int64_t replots = 0;
        double totalMs = 0, maxMs = 0; // wall clock
        double cpuTotalMs = 0,
               cpuMaxMs = 0; // the GUI thread's CPU time: the work itself, without waiting for a core
    };
    std::vector<ChartCost> replots;
};

// Runs the three phases; log gets one line per phase for a human (stderr). Throws std::runtime_error.
OpenBenchResult runOpenBench(const OpenBenchOptions& options,
                             const std::function<void(const std::string&)>& log);

std::string toJson(const OpenBenchResult& r);
std::string toTable(const OpenBenchResult& r);

} // namespace rs::bench
