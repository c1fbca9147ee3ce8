// Where a finding's evidence shows: the rank x rank metric that draws its cause (the cause table's) and the
// parameter it names.
// The window's "go to evidence" and the bug report both put the heatmaps there, so a reader opening either
// sees what convinced the diagnosis.
#pragma once

#include "diagnose/Finding.h"
#include "store/RunRecords.h"
#include "view/RankMatrix.h"

#include <optional>

namespace rs {

struct EvidenceView {
    std::optional<view::RankMetric> metric; // none: no heatmap draws this cause (keep the current one)
    int param = -1;                         // index into meta.params of the first parameter named; -1: all
};

EvidenceView evidenceView(const Finding& finding, const RunMeta& meta);

} // namespace rs
