// What an msprobe monitor tree holds once read, whichever monitor version wrote it: per rank and statistic
// kind, step -> one row of statistics per parameter. The layouts (MsprobeLayout.h) say where the csv files
// are and how a row's kind is known; readStatCsv reads one file into the tree; importMsprobe
// (MsprobeImport.cpp) turns the tree into a run file.
#pragma once

#include "import/CsvTable.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rs::msprobe {

namespace fs = std::filesystem;

// The statistics a run file has a place for: the local (unreduced) and synced (reduced) gradient, the
// weights before and after the optimizer step.
enum Kind : int { kUnreduced, kReduced, kParamOrigin, kParamUpdated, kKindCount };

// One (rank, step, parameter) row's statistics; NaN where the csv has no such column or printed nan.
struct Stat {
    static constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    float norm = kNaN, min = kNaN, max = kNaN, mean = kNaN, nans = kNaN;
    int64_t microStep = -1;
    bool present = false;
};

using Table = std::map<int64_t, std::vector<Stat>>;

// One csv file of statistics: whose, which steps its name promises (both ends inclusive), and how a row's
// kind is known: from the file name (Monitor V1: grad_reduced_0-4.csv) or from the row's `scope` column
// within the monitor the file name gives (Monitor V2: weight_grad_step0-4.csv holds unreduced and reduced
// rows).
struct StatFile {
    int rank = 0;
    fs::path path;
    int64_t first = 0, last = 0;
    std::optional<Kind> kind; // V1
    std::string monitor;      // V2: weight_grad, param
    // A V1 part file (grad_reduced_0-4_part_2.csv: msprobe splits a write of more than a million rows) has
    // no header row; its columns are the header of the file it continues (grad_reduced_0-4.csv).
    fs::path headerFrom;
};

// The statistics a csv row may hold, as columns of the tree's flags.
enum Op : int { kNorm, kMin, kMax, kMean, kNans, kOpCount };
const char* opName(Op op); // the csv column: "norm", "min", ...

struct Tree {
    std::vector<std::array<Table, kKindCount>> tables; // index = rank
    std::unordered_map<std::string, int> paramIndex;
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes; // [] unknown
    std::vector<int64_t> numel;               // -1 unknown
    std::array<bool, kKindCount> seen{};      // any row of the kind
    // Per kind and statistic: the csv had the column, and some row of it held a number (not nan). msprobe
    // Monitor V2 writes a column of nan when any row lacked the statistic: such a column is not recorded.
    std::array<std::array<bool, kOpCount>, kKindCount> column{}, valued{};
    bool microSteps = false; // a step had more than one micro step's rows: the last one stands for it
    std::vector<bool> reducedOnRank;
    std::set<std::string> ignoredScopes; // "<monitor> scope <scope>" rows no run-file column holds
    int64_t files = 0;

    explicit Tree(size_t ranks)
        : tables(ranks)
        , reducedOnRank(ranks, false) {}

    // A statistic of the kind that some row recorded.
    bool recorded(Kind kind, Op op) const { return valued[kind][op]; }
};

// Reads one csv of statistics into the tree. Throws ImportError "FILE:LINE: what" for a missing column, a
// value that is not a number, a row outside the file's steps or a second row for the same parameter and step.
void readStatCsv(Tree& t, const StatFile& file);

// Digits only, as a number; nullopt for anything else, or one too large for int64.
std::optional<int64_t> decimal(std::string_view s);

} // namespace rs::msprobe
