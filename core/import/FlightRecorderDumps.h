// The dump files a communication library's flight recorder leaves when a job hangs or times out: PyTorch's
// ProcessGroupNCCL (TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE, default prefix
// ~/.cache/torch/comm_lib_trace_rank_ or /tmp/nccl_trace_rank_) and torch_npu's ProcessGroupHCCL
// (TORCH_HCCL_DEBUG_INFO_TEMP_FILE, /tmp/hccl_trace_rank_). One file per rank, named <prefix><rank>: the rank
// is known only from the name. A file is a pickle (what the library writes on a timeout) or the JSON the
// same library returns on request (_dump_nccl_trace_json); both are read, the pickle through PickleData.h,
// which refuses anything but plain data. Versions "2.x" (2.2 onwards; torch_npu writes 2.4).
#pragma once

#include "import/CsvTable.h" // ImportError
#include "store/RunRecords.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rs::flightrec {

namespace fs = std::filesystem;

struct GroupConfig {
    std::string name, desc;
    std::vector<int> ranks;
};

struct RankDump {
    int rank = 0;
    fs::path path;
    std::string format;  // "pickle" or "json"
    std::string version; // "2.10"
    std::string backend; // "nccl", "hccl" (from the profiling names; "" if none)
    std::vector<GroupConfig> groups;
    std::vector<Collective> collectives; // in the dump's order (oldest first); step -1
};

struct DumpSet {
    fs::path dir;
    std::string prefix;
    std::vector<fs::path> files; // <prefix><rank>, by rank
    std::vector<int> ranks;
};

// How a process group is named in the run file (Collective::group): "0 (default_pg)", or the name alone when
// the group has no description.
std::string groupLabel(const std::string& name, const std::string& desc);

// The dump files of `path`: a folder holding <prefix><rank> files (the prefix found from the names unless
// given: exactly one must fit), or one dump file (its siblings with the same prefix come along). Throws
// ImportError naming the folder and what was wrong (no dumps, several prefixes, a name whose rank is not a
// number).
DumpSet findDumps(const fs::path& path, const std::string& prefix = {});

// One rank's file. Throws ImportError "FILE: key K of entry N: what was wrong" (or the byte, for a pickle).
RankDump readDump(const fs::path& file, int rank);

} // namespace rs::flightrec
