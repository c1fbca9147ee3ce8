// EvidenceView: see EvidenceView.h.
#include "view/EvidenceView.h"

namespace rs::view {

EvidenceView evidenceView(const Finding& f, const RunMeta& meta) {
    EvidenceView v;
    const std::string& c = f.cause;
    if (c == "init-mismatch")
        v.metric = RankMetric::WeightMismatch;
    else if (c == "shard-overlap" || c == "duplicate-rank-id")
        v.metric = RankMetric::ShardOverlap;
    else if (c == "param-not-synced" || c == "sdc-after" || c == "overflow-not-synced" ||
             c == "loss-scale-not-restored")
        v.metric = RankMetric::SyncedMismatch;
    else if (c == "eval-mode" || c == "sdc-before")
        v.metric = RankMetric::SketchCosine;
    if (!f.parameters.empty())
        for (size_t p = 0; p < meta.params.size(); ++p)
            if (meta.params[p].name == f.parameters.front()) {
                v.param = int(p);
                break;
            }
    return v;
}

} // namespace rs::view
