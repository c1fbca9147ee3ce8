// The alerts msprobe's Monitor V1 raised while the job ran (alert rules with `dump: true`), as run-file
// events: <monitor_output>/anomaly_detected/rank<R>/anomaly.json, one JSON object per rank keyed
// "<tag_name>_step_<s>_call_<c>", each value {rank, step, micro_step, pp_stage, vpp_stage, call_id, tag_name,
// message, group_mates}. Each entry becomes one MONITOR_ANOMALY event at its step and rank, its message the
// monitor's own ("Rule AnomalyNan reports anomaly signal in ('0:fc1.weight/rank1/post_grad', 'norm') at step
// 12, ..."). Monitor V2 has no alert output.
#pragma once

#include "store/RunRecords.h"

#include <filesystem>
#include <vector>

namespace rs::msprobe {

// The events of every rank's anomaly.json under monitorDir, sorted by step then rank; none if the folder is
// absent. Throws ImportError "FILE: ..." for a file that is not such a JSON object, or an entry whose rank is
// not one of the tree's `ranks` or whose step is not a whole number.
std::vector<Event> readMonitorAnomalies(const std::filesystem::path& monitorDir, int ranks);

} // namespace rs::msprobe
