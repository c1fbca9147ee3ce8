// Where an msprobe monitor tree keeps its csv files, for the two layouts msprobe writes:
//
// Monitor V1 (TrainerMon): monitor_output/<%b%d_%H-%M-%S>-rank<N>-<8 hex>/<prefix>_<start>-<end>.csv, one
//   prefix per statistic kind (grad_unreduced, grad_reduced, param_origin, param_updated, actv, ...), header
//   `vpp_stage,name,step[,micro_step],<ops>,shape,dtype` (older: `param_name,step,<ops>`).
// Monitor V2 (TrainerMonitorV2, format=csv): <output_dir>/rank_<N>/<monitor>_step<start>-<end>.csv, one file
//   per monitor (module, weight_grad, optimizer, param, cc), header
//   `vpp_stage,step,module_name,scope[,micro_step],<ops among min,max,mean,norm,nans>`; the scope tells a
//   weight_grad row's phase (unreduced, reduced) and a param row's (param_origin, param_updated).
//
// The layout is detected from the folder names; a folder holding both is refused.
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
    std::vector<fs::path> rankFolders; // index = rank
    std::vector<StatFile> files;       // the csv files a run-file column can hold, by rank then name
    std::set<std::string> ignored;     // V1 prefixes or V2 monitors no run-file column holds
};

// dir: the folder holding the rank folders, or the folder holding monitor_output/ (V1) or monitor_v2_out/
// (V2, its documented example's output_dir). Throws ImportError naming the folder when it holds no monitor
// tree, two folders claim a rank, a rank is missing or a csv is misnamed.
MonitorTree findMonitorTree(const fs::path& dir);

const char* layoutName(Layout layout); // "Monitor V1", "Monitor V2"

} // namespace rs::msprobe
