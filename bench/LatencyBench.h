// `ranksight-cli bench-latency RUN.h5...`: how long after a run writes the evidence of a cause the window's
// Findings panel names it. Each saved run (the fault sweep's, say) is written again, step by step at the pace
// it was recorded at, into a new file by a writer thread, while the window's own RunModel and
// DiagnosisRunner (with their default intervals) follow it as they follow any live run. The causes to wait
// for are the ones diagnosis names on the whole saved file; for each, the time from the moment its first
// step was written (events and weight rows of that step included) to the moment the runner first reported
// it. A cause the runner named only once the run was complete is flagged: the window could not have warned
// while the job was running. Needs a QApplication (offscreen is fine). Wall-clock figures on a shared
// machine: read them against the 1 s aim, not to the millisecond.
// With a watch program (LatencyOptions::watchCli), the same replay is also followed by one `ranksight-cli
// watch --fail-on CAUSE` process per cause (WatchProcesses.h), started before the file exists: the time to
// each one's alert is the latency a job stopped by watch would see.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rs::bench {

struct LatencyOptions {
    double stepMs = 0;      // the pace steps are written at; 0: the run's recorded pace (median step)
    double maxStepMs = 500; // ... at most this (a run recorded with long steps replays faster)
    double timeoutS = 120;  // per run: give up waiting for the end after this long
    std::string watchCli;   // ranksight-cli, to time `watch` too; empty: the window alone
};

struct LatencyRow {
    std::string cause;
    int64_t firstStep = -1;      // the cause's first step in the whole file's diagnosis (-1: no step)
    double writtenS = -1;        // when that step was written, seconds after the first step was
    double shownS = -1;          // when the runner first reported the cause (-1: never)
    int64_t shownAfterStep = -1; // the last step written by then
    bool atEnd = false;          // first reported only once the run was complete
    double latencyS() const { return shownS >= 0 && writtenS >= 0 ? shownS - writtenS : -1; }
    // `watch --fail-on CAUSE`: when it exited 3 (-1: it did not), the last step it had read, whether that
    // was only after the file was complete, and its exit code (-1: still running at the end, killed).
    double watchS = -1;
    int64_t watchAfterStep = -1;
    bool watchAtEnd = false;
    int watchExit = -1;
    double watchLatencyS() const { return watchS >= 0 && writtenS >= 0 ? watchS - writtenS : -1; }
};

struct LatencyResult {
    std::string file;
    int64_t steps = 0;
    int ranks = 0;
    double stepMs = 0;  // the pace used
    double writeS = 0;  // the whole replay
    double closedS = 0; // when the writer closed the file
    bool watched = false;
    std::vector<LatencyRow> rows;
};

LatencyResult runLatencyBench(const std::string& file, const LatencyOptions& options,
                              const std::function<void(const std::string&)>& log);

std::string toJson(const std::vector<LatencyResult>& results);
std::string toTable(const std::vector<LatencyResult>& results);

} // namespace rs::bench
