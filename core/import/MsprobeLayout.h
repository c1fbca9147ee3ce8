// Where an msprobe monitor tree keeps its csv files, for the two layouts msprobe writes:
//
// Monitor V1 (TrainerMon): monitor_output/<%b%d_%H-%M-%S>-rank<N>-<8 hex>/<prefix>_<start>-<end>.csv, one
//   prefix per statistic kind (grad_unreduced, grad_reduced, param_origin, param_updated, actv, ...), header
//   `vpp_stage,name,step[,micro_step],<ops>,shape,dtype` (1.2.2-1.3: no shape and dtype; 1.2.0-1.2.1:
//   `[vpp_stage,]param_name,step,<ops>`, and `param_` for param_origin). msprobe <= 1.2 names a process
//   that is not distributed `<%b%d_%H-%M-%S>-<8 hex>` (rank 0). A write of more than a million rows goes to
//   <prefix>_<start>-<end>_part_<k>.csv files without a header, the header staying in the first file.
//   Alerts: monitor_output/anomaly_detected/ (MsprobeAnomalies.h); a tree may hold only those.
// Monitor V2 (TrainerMonitorV2, format=csv): <output_dir>/rank_<N>/<monitor>_step<start>-<end>.csv, one file
//   per monitor (module, weight_grad, optimizer, param, cc), header
//   `vpp_stage,step,module_name,scope[,micro_step],<ops among min,max,mean,norm,nans>`; the scope tells a
//   weight_grad row's phase (unreduced, reduced) and a param row's (param_origin, param_updated).
//
// The layout is detected from the folder names; a folder holding both is refused. Both monitors can be told
// to monitor some ranks only (V1 `module_ranks`, V2 `rank`): a rank without a folder is not recorded.
#pragma once

#include "import/MsprobeTree.h"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace rs::msprobe {

enum class Layout { MonitorV1, MonitorV2 };

struct MonitorTree {
    Layout layout = Layout::MonitorV1;
    fs::path monitorDir;               // the folder holding the rank folders
    std::vector<fs::path> rankFolders; // index = rank, up to the highest; empty: the rank has no folder
    std::vector<StatFile> files;       // the csv files a run-file column can hold, by rank then name
    std::set<std::string> ignored;     // V1 prefixes or V2 monitors no run-file column holds, in words
    std::vector<std::string> strayCsv; // csv files whose names are not a monitor's, not read
    bool singleProcess = false;        // a V1 <time>-<8 hex> folder: a process that was not distributed
    bool alertsOnly = false;           // no rank folders, only anomaly_detected/

    std::vector<int> ranksWithoutFolder() const;
};

// dir: the folder holding the rank folders, or the folder holding monitor_output/ (V1) or monitor_v2_out/
// (V2, its documented example's output_dir), or anomaly_detected/ itself. Throws ImportError naming the
// folder when it holds no monitor tree (nor alerts) or two folders claim a rank.
MonitorTree findMonitorTree(const fs::path& dir);

const char* layoutName(Layout layout); // "Monitor V1", "Monitor V2"

} // namespace rs::msprobe
