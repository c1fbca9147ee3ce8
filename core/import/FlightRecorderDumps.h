// The dump files a communication library's flight recorder leaves when a job hangs or times out: PyTorch's
// ProcessGroupNCCL (TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE, default prefix
// ~/.cache/torch/comm_lib_trace_rank_ or /tmp/nccl_trace_rank_) and torch_npu's ProcessGroupHCCL
// (TORCH_HCCL_DEBUG_INFO_TEMP_FILE, /tmp/hccl_trace_rank_). One file per rank, named <prefix><rank>: the rank
// is known only from the name. The prefix is whatever the job set (trace_, rank_, nothing at all), and a job
// whose hosts write to one shared folder often puts the host name in front of it (node3.nccl_trace_rank_12):
// PyTorch's analyser looks for the prefix anywhere in a name, and so does this. torch_npu also writes each
// rank's Python stacks beside its dump, as text, in <prefix><rank>_py_traceback.
//
// A file is a pickle (what the library writes on a timeout) or the JSON the same library returns on request
// (_dump_nccl_trace_json), under the same names; both are read, the pickle through PickleData.h, which
// refuses anything but plain data. Versions "2.x" (2.2 onwards; torch_npu writes 2.4, PyTorch 2.10 now).
// Entries are read as every writer writes them and as PyTorch's own analyser tests build them: sequence ids
// and times as integers or digit strings, dtypes as a list or one name, profiling_name "" (torch_npu: the op
// is then the innermost frame's function), process_group a tuple or a list, record_id and duration_ms
// optional.
#pragma once

#include "import/CsvTable.h" // ImportError
#include "store/RunRecords.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rs::flightrec {

namespace fs = std::filesystem;

struct GroupConfig {
    std::string name, desc;
    std::vector<int> ranks;
    std::string
        label; // Collective::group; set by the importer (collectiveGroupLabel, ranks added when names repeat)
};

struct RankDump {
    int rank = 0;
    fs::path path;
    std::string format;  // "pickle" or "json"
    std::string version; // "2.10"
    std::string backend; // "nccl", "hccl" (from the profiling names; "" if none)
    std::string commLib; // comm_lib_version (2.8+) or nccl_version (2.5-2.7): "2.21.5"; "" not recorded
    std::vector<GroupConfig> groups;
    // In the dump's order (oldest first); step -1. Collective::group holds the entry's process-group name
    // until the importer labels it; entryDescs[i] is entry i's group description.
    std::vector<Collective> collectives;
    std::vector<std::string> entryDescs;
};

struct DumpSet {
    fs::path dir;
    std::string prefix;
    std::vector<fs::path> files; // <host><prefix><rank>, by rank
    std::vector<int> ranks;
    std::vector<std::string> hosts;     // per file, what precedes the prefix ("" for none)
    std::map<int, fs::path> tracebacks; // torch_npu's <host><prefix><rank>_py_traceback, by rank
};

// The dump files of `path`: a folder holding <prefix><rank> files (the prefix found from the names unless
// given: exactly one must fit, once host names in front of it are set aside), or one dump file (its siblings
// with the same prefix come along). Names that end in digits but are plainly something else (run.h5) are
// not dumps. Throws ImportError naming the folder and what was wrong (no dumps, several prefixes, a name
// whose rank is not a number, two files for one rank).
DumpSet findDumps(const fs::path& path, const std::string& prefix = {});

// One rank's file. Throws ImportError "FILE: key K of entry N: what was wrong" (or the byte, for a pickle).
RankDump readDump(const fs::path& file, int rank);

// A Python traceback file as text, at most `limit` bytes (cut at a line end, the cut said in a last line).
// Throws ImportError when it cannot be read.
std::string readTraceback(const fs::path& file, size_t limit);

} // namespace rs::flightrec
