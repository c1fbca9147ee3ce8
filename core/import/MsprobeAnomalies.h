// The alerts msprobe's Monitor V1 raised while the job ran (alert rules with `dump: true`), as run-file
// events: <monitor_output>/anomaly_detected/rank<R>/anomaly.json, one JSON object per rank (json.dump, indent
// 1) keyed "<tag_name>_step_<s>_call_<c>", each value {rank, step, micro_step, pp_stage, vpp_stage, call_id
// (-1 when the tag had none), tag_name, message, group_mates}. Each entry becomes one MONITOR_ANOMALY event
// at its step and rank, its message the monitor's own ("Rule AnomalyNan reports anomaly signal in
// ('0:fc1.weight/rank1/post_grad', 'norm') at step 12, current value nan, history mean 0.43."). msprobe's
// analysis (`python -m msprobe.core.monitor.anomaly_processor`) writes the earliest of them again into
// anomaly_detected/anomaly_analyse.json: read only where no rank's anomaly.json is left, so no alert counts
// twice. Monitor V2 has no alert output.
#pragma once

#include "store/RunRecords.h"

#include <filesystem>
#include <vector>

namespace rs::msprobe {

struct MonitorAlerts {
    std::vector<Event> events; // by step, then rank
    int ranks = 0;             // the highest rank a rank<R> folder or an entry names, plus one
    bool fromAnalysis = false; // read from anomaly_analyse.json
};

// The alerts under monitorDir/anomaly_detected; none if the folder is absent. Throws ImportError "FILE: ..."
// for a file that is not such a JSON object, or an entry whose rank or step is not a whole number.
MonitorAlerts readMonitorAlerts(const std::filesystem::path& monitorDir);

} // namespace rs::msprobe
