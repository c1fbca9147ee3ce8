// What identifies a rank's tensor when ranks are compared (diagnosis, the rank heatmaps): its 64-bit
// fingerprint, or, in a file whose source records none (RunMeta::absent: msprobe), the statistic it did
// record, bit for bit as stored. Equal norms as printed are then "equal", to the source's rounding; the
// evidence says so. 0 always means "nothing to compare" (a rank that recorded nothing, a NaN fill).
#pragma once

#include "store/RunRecords.h"
#include "store/RunSchema.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace rs {

// Which identities a file has, decided once from its meta (the per-cell functions below run per step).
struct RecordKeys {
    bool syncedFp = true, syncedNorm = true, weightFp = true, weightNorm = true;

    static RecordKeys of(const RunMeta& m) {
        namespace rsc = runschema;
        RecordKeys k;
        k.syncedFp = m.recorded(rsc::kStepColumns[rsc::kSyncedFp].path);
        k.syncedNorm = m.recorded(rsc::kStepColumns[rsc::kSyncedNorm].path);
        k.weightFp = m.recorded(rsc::kWeightColumns[rsc::kWFp].path);
        k.weightNorm = m.recorded(rsc::kWeightColumns[rsc::kWNorm].path);
        return k;
    }

    // A stored float as a key: bit 40 set so that a norm of 0 is not "nothing".
    static uint64_t ofFloat(float v) {
        if (!std::isfinite(v))
            return 0;
        uint32_t u = 0;
        std::memcpy(&u, &v, sizeof u);
        return u | (uint64_t(1) << 40);
    }

    uint64_t synced(const RankStep& x, size_t p) const {
        if (syncedFp)
            return p < x.syncedFp.size() ? x.syncedFp[p] : 0;
        return syncedNorm && p < x.syncedNorm.size() ? ofFloat(x.syncedNorm[p]) : 0;
    }

    uint64_t weight(const WeightRecord& w, size_t r, size_t p) const {
        if (weightFp)
            return r < w.fp.size() && p < w.fp[r].size() ? w.fp[r][p] : 0;
        return weightNorm && r < w.norm.size() && p < w.norm[r].size() ? ofFloat(w.norm[r][p]) : 0;
    }
};

} // namespace rs
