// How long a run will take on this machine, before Start: images per second for the model and precision
// (what the last run of that kind measured here, else figures bench-report printed on a 2-core VM), turned
// into a step time and a whole-run time for the form's cards, batch and length.
#pragma once

#include "train/TrainConfig.h"

#include <QString>

class QSettings;

namespace rs {

struct RunEstimate {
    double imagesPerSecond = 0; // the whole cluster's
    double secondsPerStep = 0;
    double seconds = 0; // the whole run (training steps; evaluation and start-up not counted)
    bool measuredHere = false;
    QString text() const; // one line for the run panel
};

RunEstimate estimateRun(const TrainConfig& config, QSettings& settings);
// After a run on this machine ended: remember what it measured for its model and precision.
void rememberThroughput(QSettings& settings, ModelKind model, Precision precision, double imagesPerSecond);

} // namespace rs
