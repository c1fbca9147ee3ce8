// Cutting a window of steps out of a run file into a new, valid run file (to share the few hundred steps
// around an anomaly instead of a multi-gigabyte run), and choosing that window from the run's events.
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rs {

class RunReader;
class RunWriter;

// Writes dst as a run file with src's meta (plannedSteps unchanged) holding the step rows whose step number
// is in [firstStep, lastStep], with every per-parameter column, and the weight rows, evaluations, events and
// flight dumps (by trigger step) in the same range. Step rows are copied ~256 at a time, so memory stays
// bounded however long the run is (flight dumps are read whole: RunReader has no per-dump read). The slice is
// closed with src's stop reason if src is complete, else "incomplete: <src stop reason>". A range that
// matches no step still gives a valid (empty) run file. src: an open reader (openRunFile); its path is the
// source file's.
// Throws RunFileError (unreadable src, dst exists and !overwrite, write failure: a partly written dst is
// removed) and std::invalid_argument (firstStep > lastStep, dst is src).
void sliceRun(const RunReader& src, const std::string& dst, int64_t firstStep, int64_t lastStep,
              bool overwrite = false);

// sliceRun's copy alone, into a writer the caller made (with src's meta, or one that keeps its dims) and
// closes: for writers that add rows of their own (an import joined with a recorded run).
void copyRunRows(const RunReader& src, RunWriter& dst, int64_t firstStep, int64_t lastStep);

// The smallest step of an event that marks an anomaly: severity Warning or Error, or one of the codes
// GRADIENT_SYNC, WEIGHT_SYNC, SKIP_MISMATCH, NONFINITE_LOSS, LOSS_FLUCTUATION, TIMEOUT (whatever severity
// they were recorded with). -1 if there is none.
int64_t firstAnomalyStep(const std::vector<Event>& events);

// The steps to slice around anomalyStep: [anomalyStep - halfWidth, anomalyStep + halfWidth] clamped to the
// run's [firstStep, lastStep]; the whole run when anomalyStep < 0 (no anomaly) or the run is empty
// (lastStep < firstStep, returned as given). A negative halfWidth counts as 0.
std::pair<int64_t, int64_t> sliceWindow(int64_t anomalyStep, int64_t firstStep, int64_t lastStep,
                                        int64_t halfWidth = 50);

} // namespace rs
