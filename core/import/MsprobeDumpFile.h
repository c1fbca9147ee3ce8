// One dump.json of msprobe's dump tool (PrecisionDebugger, task "statistics"; step<N>/rank<R>/dump.json):
// per API or module call, forward and backward, the statistics (Max, Min, Mean, Norm) of each input and
// output tensor, the module's parameters at its forward, and each parameter's gradient (parameters_grad).
// Read with a streaming parser, one entry at a time, so a dump of any size is read in the memory of its
// largest entry. msprobe writes NaN and infinities as the bare tokens NaN, Infinity and -Infinity (Python's
// json.dump), which strict JSON has not: they are read as the numbers they stand for.
#pragma once

#include "import/CsvTable.h" // ImportError
#include "store/RunRecords.h"

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace rs::msprobe {

// A tensor's statistics as the dump gives them; TensorStat::recorded says which it has.
struct DumpTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    bool shapeKnown = false;
    // NaN where not recorded (recorded says which: a tensor holding NaN has NaN statistics too).
    float max = std::numeric_limits<float>::quiet_NaN(), min = max, mean = max, norm = max;
    uint8_t recorded = 0; // bits: 1 max, 2 min, 4 mean, 8 norm
};

struct DumpFile {
    std::string task, level, framework;
    // By the parameter's full name ("conv1.weight"): its gradient (parameters_grad; the last one if the
    // hook fired more than once in the step) and its value at the module's first forward of the step.
    std::map<std::string, DumpTensor> grads, weights;
    std::vector<TensorStat> tensors; // every input and output tensor, in the file's order (rank, step unset)
    int64_t entries = 0;
    // Statistics written as text that is no number (MindSpore's graph-mode dump copies its csv cells, "-"
    // and all): read as not recorded, counted here, the first one described for the import's notes.
    int64_t textStats = 0;
    std::string firstTextStat; // "'Max' of Cell.net.Dense.forward.0 is \"-\""
    // Tensors whose shape is no list of dimensions: their statistics are read, the shape is not recorded.
    int64_t badShapes = 0;
    std::string firstBadShape; // "'shape' of Functional.conv2d.0.forward is \"[4, x]\""
};

// What to keep: the parameters only (the import's first pass: the other tensors are read and checked, not
// kept), or everything.
enum class DumpPart { Parameters, Everything };

// Throws ImportError "FILE: entry 'NAME': what was wrong" (or "FILE: byte N: ..." for broken JSON).
DumpFile readDumpFile(const std::filesystem::path& file, DumpPart part);

} // namespace rs::msprobe
