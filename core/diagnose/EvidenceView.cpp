// EvidenceView: see EvidenceView.h.
#include "diagnose/EvidenceView.h"

#include "diagnose/Cause.h"

namespace rs {

EvidenceView evidenceView(const Finding& f, const RunMeta& meta) {
    EvidenceView v;
    const CauseInfo& cause = f.info();
    v.metric = cause.metric;
    if (cause.showsParameter && !f.parameters.empty())
        for (size_t p = 0; p < meta.params.size(); ++p)
            if (meta.params[p].name == f.parameters.front()) {
                v.param = int(p);
                break;
            }
    return v;
}

} // namespace rs
