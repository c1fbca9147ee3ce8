// Configuration advice: settings that make a job fragile or its diagnosis weaker, read from the run's
// configuration alone. Advice is not a finding: a finding rests on what the training did (the recorded
// data), advice on how it was set up, so a clean run may carry advice and a run with findings none.
#pragma once

#include "diagnose/Finding.h"
#include "store/RunRecords.h"

#include <string>
#include <vector>

namespace rs {

// The advice for a run, from its metadata (precision, loss scale, the config JSON). Keys a source did not
// record give no advice.
std::vector<Advice> configAdvice(const RunMeta& meta);

// "loss_scale=none: ..." for text output and the bug report.
std::string adviceLine(const Advice& a);

} // namespace rs
