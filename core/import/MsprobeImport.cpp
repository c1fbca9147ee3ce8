// importMsprobe: see MsprobeImport.h. Two passes: read and check every csv of every rank folder into per-step
// tables (nothing written yet), then write the run file under a temporary name and rename it into place, so a
// failure at any point leaves no file.
#include "import/MsprobeImport.h"

#include "store/RunSchema.h"
#include "store/RunWriter.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <unistd.h>
#include <unordered_map>

namespace rs {
namespace {

namespace fs = std::filesystem;
namespace rsc = runschema;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Names are matched by hand rather than with std::regex, whose matcher recurses once per character and so
// can overflow the stack on a long enough file name.

bool allOf(std::string_view s, int (*is)(int)) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [is](char c) { return is(static_cast<unsigned char>(c)); });
}

// Digits only, as a number; nullopt for anything else, or one too large for int64.
std::optional<int64_t> decimal(std::string_view s) {
    int64_t v = 0;
    if (!allOf(s, isdigit) || std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc())
        return std::nullopt;
    return v;
}

int isPrefixChar(int c) {
    return c == '_' || std::isalpha(c);
}

// The rank digits of a monitor rank folder's name, <%b%d_%H-%M-%S>-rank<N>-<8 hex> (the time part is not
// checked: locales differ in the month name); nullopt for any other name.
std::optional<std::string_view> rankFolderDigits(std::string_view name) {
    constexpr size_t kHex = 8;
    if (name.size() < kHex + 1 || name[name.size() - kHex - 1] != '-' ||
        !allOf(name.substr(name.size() - kHex), isxdigit))
        return std::nullopt;
    const std::string_view head = name.substr(0, name.size() - kHex - 1); // <time>-rank<N>
    const size_t at = head.rfind("-rank");
    if (at == std::string_view::npos || at == 0 || !allOf(head.substr(at + 5), isdigit))
        return std::nullopt;
    return head.substr(at + 5);
}

// <prefix>_<start>-<end>.csv, the prefix letters and underscores.
struct CsvName {
    std::string prefix;
    int64_t first = 0;
    int64_t last = 0;
};
std::optional<CsvName> csvName(std::string_view name) {
    constexpr std::string_view kExt = ".csv";
    if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt)
        return std::nullopt;
    const std::string_view stem = name.substr(0, name.size() - kExt.size());
    const size_t dash = stem.rfind('-');
    const size_t under = dash == std::string_view::npos ? dash : stem.rfind('_', dash);
    if (under == std::string_view::npos)
        return std::nullopt;
    const std::string_view prefix = stem.substr(0, under);
    const auto first = decimal(stem.substr(under + 1, dash - under - 1));
    const auto last = decimal(stem.substr(dash + 1));
    if (!first || !last || !allOf(prefix, isPrefixChar))
        return std::nullopt;
    return CsvName{std::string(prefix), *first, *last};
}

enum Kind : int { kUnreduced, kReduced, kParamOrigin, kParamUpdated, kKindCount };

std::optional<Kind> kindOf(const std::string& prefix) {
    if (prefix == "grad_unreduced")
        return kUnreduced;
    if (prefix == "grad_reduced")
        return kReduced;
    if (prefix == "param_origin" || prefix == "param")
        return kParamOrigin;
    if (prefix == "param_updated")
        return kParamUpdated;
    return std::nullopt;
}

// One (rank, step, parameter) row's statistics; NaN where the csv has no such column or printed nan.
struct Stat {
    float norm = kNaN, min = kNaN, max = kNaN, mean = kNaN, nans = kNaN;
    int64_t microStep = -1;
    bool present = false;
};

struct Ops {
    int name = -1, step = -1, micro = -1, vpp = -1;
    int norm = -1, min = -1, max = -1, mean = -1, nans = -1, shape = -1;
};

// What a rank folder's csv files hold, per kind: step -> the parameters' rows, indexed by parameter.
using Table = std::map<int64_t, std::vector<Stat>>;

struct Tree {
    fs::path monitorDir;
    std::vector<fs::path> rankFolders; // index = rank
    std::vector<std::array<Table, kKindCount>> tables;
    std::unordered_map<std::string, int> paramIndex;
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes; // [] unknown
    std::vector<int64_t> numel;               // -1 unknown
    std::array<bool, kKindCount> seen{};      // any file of the kind
    bool anyMin = false, anyMax = false, anyNans = false, anyMeanUnreduced = false, anyMeanReduced = false,
         anyNormUnreduced = false, anyNormReduced = false, anyMicro = false;
    std::vector<bool> reducedOnRank;
    std::set<std::string> ignoredPrefixes;
    int64_t files = 0;
};

// "[4096, 4096]", "(4096, 4096)", "torch.Size([4096, 4096])", "4096x4096", "[]" -> dims; nullopt if
// unparsable.
std::optional<std::vector<int64_t>> parseShape(const std::string& text) {
    std::vector<int64_t> dims;
    int64_t cur = -1;
    bool any = false;
    for (char c : text) {
        if (std::isdigit(static_cast<unsigned char>(c))) {
            if (cur > (int64_t(1) << 40))
                return std::nullopt;
            cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
            any = true;
        } else {
            if (cur >= 0)
                dims.push_back(cur);
            cur = -1;
            if (!(c == '[' || c == ']' || c == '(' || c == ')' || c == ',' || c == ' ' || c == 'x' ||
                  std::isalpha(static_cast<unsigned char>(c)) || c == '.'))
                return std::nullopt;
        }
    }
    if (cur >= 0)
        dims.push_back(cur);
    if (!any && text.find('[') == std::string::npos && text.find('(') == std::string::npos)
        return std::nullopt;
    return dims;
}

int64_t product(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims)
        if (__builtin_mul_overflow(n, d, &n))
            return -1;
    return n;
}

fs::path findMonitorDir(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw ImportError(fmt::format("{}: not a folder", dir.string()));
    auto hasRankFolders = [](const fs::path& d) {
        std::error_code e;
        for (const auto& entry : fs::directory_iterator(d, e))
            if (entry.is_directory(e) && rankFolderDigits(entry.path().filename().string()))
                return true;
        return false;
    };
    if (hasRankFolders(dir))
        return dir;
    if (fs::is_directory(dir / "monitor_output", ec) && hasRankFolders(dir / "monitor_output"))
        return dir / "monitor_output";
    throw ImportError(fmt::format("{}: no msprobe monitor rank folders (<time>-rank<N>-<8 hex>) here or in "
                                  "{}/monitor_output",
                                  dir.string(), dir.string()));
}

void findRankFolders(Tree& t) {
    std::map<int, fs::path> byRank;
    for (const auto& entry : fs::directory_iterator(t.monitorDir)) {
        const std::string name = entry.path().filename().string();
        const auto digits = rankFolderDigits(name);
        if (!entry.is_directory() || !digits)
            continue;
        const auto rank = decimal(*digits);
        if (!rank || *rank >= rsc::kMaxWorldSize)
            throw ImportError(fmt::format("{}: rank {} is out of range", entry.path().string(), *digits));
        auto [it, inserted] = byRank.emplace(int(*rank), entry.path());
        if (!inserted) {
            const std::string first = it->second.filename().string();
            const std::string& a = std::min(first, name);
            const std::string& b = std::max(first, name);
            throw ImportError(fmt::format("{}: two folders for rank {}: {} and {} (two runs in one "
                                          "monitor_output? move one of them out and import again)",
                                          t.monitorDir.string(), *rank, a, b));
        }
    }
    int expect = 0;
    for (const auto& [rank, path] : byRank) {
        if (rank != expect) {
            std::string found;
            for (const auto& [r, p] : byRank)
                found += (found.empty() ? "" : ", ") + std::to_string(r);
            throw ImportError(fmt::format("{}: no folder for rank {} (rank folders found: {})",
                                          t.monitorDir.string(), expect, found));
        }
        t.rankFolders.push_back(path);
        ++expect;
    }
}

int paramOf(Tree& t, const std::string& name, const std::optional<std::vector<int64_t>>& shape) {
    auto [it, inserted] = t.paramIndex.emplace(name, int(t.names.size()));
    if (inserted) {
        t.names.push_back(name);
        t.shapes.push_back(shape.value_or(std::vector<int64_t>{}));
        t.numel.push_back(shape ? product(*shape) : -1);
    } else if (shape && t.numel[size_t(it->second)] < 0) {
        t.shapes[size_t(it->second)] = *shape;
        t.numel[size_t(it->second)] = product(*shape);
    }
    return it->second;
}

void readCsv(Tree& t, int rank, Kind kind, const fs::path& file, int64_t first, int64_t last) {
    CsvTable csv(file.string());
    Ops o;
    o.name = csv.column("name") >= 0 ? csv.column("name") : csv.column("param_name");
    o.step = csv.column("step");
    o.micro = csv.column("micro_step");
    o.vpp = csv.column("vpp_stage");
    o.norm = csv.column("norm");
    o.min = csv.column("min");
    o.max = csv.column("max");
    o.mean = csv.column("mean");
    o.nans = csv.column("nans");
    o.shape = csv.column("shape");
    std::string header;
    for (const auto& h : csv.header())
        header += (header.empty() ? "" : ",") + h;
    auto missing = [&](const char* what) {
        throw ImportError(fmt::format("{}:1: no {} column (header: {})", file.string(), what, header));
    };
    if (o.name < 0)
        missing("'name' (or 'param_name')");
    if (o.step < 0)
        missing("'step'");
    if (o.norm < 0 && o.min < 0 && o.max < 0 && o.mean < 0 && o.nans < 0)
        missing("statistic (norm, min, max, mean or nans)");
    const bool grad = kind == kUnreduced || kind == kReduced;
    t.anyMin |= grad && o.min >= 0;
    t.anyMax |= grad && o.max >= 0;
    t.anyNans |= kind == kUnreduced && o.nans >= 0;
    t.anyMeanUnreduced |= kind == kUnreduced && o.mean >= 0;
    t.anyMeanReduced |= kind == kReduced && o.mean >= 0;
    t.anyNormUnreduced |= kind == kUnreduced && o.norm >= 0;
    t.anyNormReduced |= kind == kReduced && o.norm >= 0;
    t.anyMicro |= o.micro >= 0;
    t.seen[kind] = true;
    if (kind == kReduced)
        t.reducedOnRank[size_t(rank)] = true;

    Table& table = t.tables[size_t(rank)][kind];
    std::vector<std::string> f;
    auto integer = [&](int col, const char* what) -> int64_t {
        const std::string& s = f[size_t(col)];
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || end != s.c_str() + s.size() || errno || v < 0)
            csv.fail(fmt::format("{} '{}' is not a whole number", what, s));
        return v;
    };
    auto number = [&](int col) -> float {
        if (col < 0)
            return kNaN;
        try {
            const auto v = parseCsvNumber(f[size_t(col)]);
            return v ? float(*v) : kNaN;
        } catch (const std::invalid_argument&) {
            csv.fail(
                fmt::format("column '{}': '{}' is not a number", csv.header()[size_t(col)], f[size_t(col)]));
        }
    };
    while (csv.next(f)) {
        const std::string& name = f[size_t(o.name)];
        if (name.empty())
            csv.fail("the parameter name is empty");
        const int64_t step = integer(o.step, "step");
        if (step < first || step > last)
            csv.fail(fmt::format("step {} is outside the file's range {}-{} (its name says which steps it "
                                 "holds: mixed steps)",
                                 step, first, last));
        const int64_t micro = o.micro >= 0 ? integer(o.micro, "micro_step") : -1;
        std::optional<std::vector<int64_t>> shape;
        if (o.shape >= 0 && !f[size_t(o.shape)].empty() && f[size_t(o.shape)] != "nan") {
            shape = parseShape(f[size_t(o.shape)]);
            if (!shape)
                csv.fail(fmt::format("column 'shape': '{}' is not a tensor shape", f[size_t(o.shape)]));
        }
        // The vpp stage is part of a parameter's identity under virtual pipeline parallelism.
        std::string key = name;
        if (o.vpp >= 0 && !f[size_t(o.vpp)].empty() && f[size_t(o.vpp)] != "0" &&
            name.rfind(f[size_t(o.vpp)] + ":", 0) != 0)
            key = f[size_t(o.vpp)] + ":" + name;
        const int p = paramOf(t, key, shape);
        auto& row = table[step];
        if (row.size() <= size_t(p))
            row.resize(size_t(p) + 1);
        Stat& s = row[size_t(p)];
        if (s.present && (o.micro < 0 || micro == s.microStep))
            csv.fail(fmt::format("a second row for {} at step {}{}", key, step,
                                 o.micro >= 0 ? fmt::format(", micro step {}", micro) : ""));
        if (s.present && micro < s.microStep)
            continue; // gradient accumulation: the last micro step's row stands for the step
        s = Stat{number(o.norm), number(o.min), number(o.max), number(o.mean), number(o.nans), micro, true};
    }
}

void readTree(Tree& t, const std::function<void(int)>& progress) {
    std::vector<std::pair<int, fs::path>> files;
    for (size_t r = 0; r < t.rankFolders.size(); ++r) {
        std::vector<fs::path> in;
        for (const auto& entry : fs::directory_iterator(t.rankFolders[r]))
            if (entry.is_regular_file() && entry.path().extension() == ".csv")
                in.push_back(entry.path());
        std::sort(in.begin(), in.end());
        for (auto& p : in)
            files.emplace_back(int(r), std::move(p));
    }
    t.tables.resize(t.rankFolders.size());
    t.reducedOnRank.assign(t.rankFolders.size(), false);
    for (size_t i = 0; i < files.size(); ++i) {
        const auto& [rank, path] = files[i];
        const auto csv = csvName(path.filename().string());
        if (!csv)
            throw ImportError(fmt::format("{}: not a monitor csv name (expected <prefix>_<start>-<end>.csv)",
                                          path.string()));
        const auto kind = kindOf(csv->prefix);
        if (!kind) {
            t.ignoredPrefixes.insert(csv->prefix);
            continue;
        }
        const int64_t first = csv->first, last = csv->last;
        if (first > last)
            throw ImportError(
                fmt::format("{}: the step range {}-{} is backwards", path.string(), first, last));
        readCsv(t, rank, *kind, path, first, last);
        ++t.files;
        if (progress)
            progress(int(80 * (i + 1) / files.size()));
    }
}

RunMeta metaOf(const Tree& t, const std::vector<std::string>& absent, int64_t steps,
               const std::vector<std::string>& notes) {
    RunMeta m;
    m.source = "msprobe";
    m.model = "msprobe import";
    m.worldSize = int(t.rankFolders.size());
    m.precision = "unknown";
    m.lossScale = "unknown";
    m.data = "msprobe:" + t.monitorDir.string();
    m.weightEvery = t.seen[kParamOrigin] || t.seen[kParamUpdated] ? 1 : 0;
    m.plannedSteps = steps;
    m.absent = absent;
    nlohmann::json folders = nlohmann::json::array();
    for (const auto& f : t.rankFolders)
        folders.push_back(f.filename().string());
    m.configJson = nlohmann::json{
        {"source", "msprobe"},
        {"monitor_output", t.monitorDir.string()},
        {"rank_folders", folders},
        {"notes",
         notes}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    m.rankTableJson = "{}";
    m.environment = nlohmann::json{{"source", "msprobe"}}.dump();
    int64_t offset = 0;
    for (size_t p = 0; p < t.names.size(); ++p) {
        ParamInfo info;
        info.name = t.names[p];
        info.shape = t.shapes[p];
        info.numel = std::max<int64_t>(0, t.numel[p]);
        info.offset = offset;
        offset += info.numel;
        m.params.push_back(std::move(info));
    }
    for (int r = 0; r < m.worldSize; ++r) {
        CardInfo c;
        c.rank = r;
        c.deviceId = -1; // not recorded
        // The monitor records no device and no server: the rank folders' names are in the config's
        // rank_folders.
        m.cards.push_back(std::move(c));
    }
    return m;
}

const Stat* statAt(const Table& table, int64_t step, int p) {
    const auto it = table.find(step);
    if (it == table.end() || size_t(p) >= it->second.size() || !it->second[size_t(p)].present)
        return nullptr;
    return &it->second[size_t(p)];
}

} // namespace

std::vector<std::string> msprobeNeverRecorded() {
    return {"/steps/epoch",
            "/steps/lr",
            "/steps/loss",
            "/steps/accuracy",
            "/steps/loss_scale",
            "/steps/step_ms",
            "/steps/compute_ms",
            "/steps/comm_ms",
            "/steps/overflow",
            "/steps/skipped",
            "/steps/state",
            "/steps/sample_fp",
            "/steps/sample_ids",
            "/steps/buffer_fp",
            "/grads/overflow_count",
            "/grads/underflow_count",
            "/grads/sketch",
            "/grads/synced_fp",
            "/weights/fp",
            "/weights/buffer_fp",
            "/weights/buffer_drift",
            "model",
            "batch_per_rank",
            "precision",
            "loss_scale",
            "seed"};
}

MsprobeImportResult importMsprobe(const std::string& dir, const std::string& out, bool overwrite,
                                  const std::function<void(int)>& progress) {
    std::error_code ec;
    if (!overwrite && fs::exists(out, ec))
        throw ImportError(fmt::format("{}: the file already exists (--force replaces it)", out));
    Tree t;
    t.monitorDir = findMonitorDir(dir);
    findRankFolders(t);
    readTree(t, progress);
    const int R = int(t.rankFolders.size()), P = int(t.names.size());
    if (P == 0)
        throw ImportError(fmt::format("{}: no gradient or parameter statistics (grad_unreduced_*.csv, "
                                      "grad_reduced_*.csv or param_*.csv) in the rank folders",
                                      t.monitorDir.string()));

    std::set<int64_t> stepSet;
    for (const auto& kinds : t.tables)
        for (const Table& table : kinds)
            for (const auto& [step, row] : table)
                stepSet.insert(step);
    const std::vector<int64_t> steps(stepSet.begin(), stepSet.end());

    MsprobeImportResult res;
    res.monitorDir = t.monitorDir.string();
    res.ranks = R;
    res.params = P;
    res.steps = int64_t(steps.size());
    res.files = t.files;
    const bool haveUnreduced = t.seen[kUnreduced], haveReduced = t.seen[kReduced];
    const int reducedRanks = int(std::count(t.reducedOnRank.begin(), t.reducedOnRank.end(), true));
    if (haveReduced && reducedRanks == 1 && R > 1 && t.reducedOnRank[0])
        res.notes.emplace_back(
            "only rank 0 wrote reduced gradients (dp_group is set in the monitor's config): "
            "cross-rank checks of the synced gradients need a run with dp_group unset");
    else if (haveReduced && reducedRanks < R)
        res.notes.emplace_back(fmt::format("{} of {} ranks wrote reduced gradients", reducedRanks, R));
    if (!haveReduced)
        res.notes.emplace_back("no grad_reduced files: synced gradients were not recorded");
    if (!haveUnreduced)
        res.notes.emplace_back("no grad_unreduced files: local gradients were not recorded");
    if (t.anyMicro)
        res.notes.emplace_back("gradient accumulation: each step's last micro step is imported");
    if (!t.ignoredPrefixes.empty()) {
        std::string list;
        for (const auto& p : t.ignoredPrefixes)
            list += (list.empty() ? "" : ", ") + p;
        res.notes.emplace_back("not imported (no run-file column holds them): " + list);
    }
    bool numelKnown = true;
    for (int64_t n : t.numel)
        numelKnown = numelKnown && n >= 0;
    res.notes.emplace_back(
        "no fingerprints in msprobe's csv: ranks are compared on the statistics as printed "
        "(equal to the csv's rounding)");

    // What the monitor cannot give, then what this tree did not record.
    std::vector<std::string> absent = msprobeNeverRecorded();
    if (!t.anyNormUnreduced)
        absent.emplace_back("/grads/local_norm");
    if (!(t.anyMin && t.anyMax))
        absent.emplace_back("/grads/local_max");
    if (!t.anyNans)
        absent.emplace_back("/grads/nonfinite");
    if (!(t.anyMeanUnreduced && numelKnown))
        absent.emplace_back("/grads/local_sum");
    if (!t.anyNormReduced)
        absent.emplace_back("/grads/synced_norm");
    if (!(t.anyMeanReduced && numelKnown))
        absent.emplace_back("/grads/synced_sum");
    if (!t.seen[kParamOrigin] && !t.seen[kParamUpdated])
        absent.emplace_back("/weights/norm");
    res.absent = absent;

    const RunMeta meta = metaOf(t, absent, res.steps, res.notes);
    auto has = [&](const char* path) {
        return std::find(absent.begin(), absent.end(), path) == absent.end();
    };
    const bool localSum = has("/grads/local_sum"), syncedSum = has("/grads/synced_sum");
    const Kind paramKind = t.seen[kParamUpdated] ? kParamUpdated : kParamOrigin;
    const bool weights = t.seen[kParamOrigin] || t.seen[kParamUpdated];

    // Written under a temporary name in the same folder, renamed into place when complete.
    const std::string tmp = fmt::format("{}.importing-{}", out, ::getpid());
    try {
        auto w = RunWriter::create(tmp, meta, true);
        for (size_t i = 0; i < steps.size(); ++i) {
            const int64_t step = steps[i];
            StepRecord st;
            st.step = step;
            st.lr = kNaN;
            st.ranks.resize(size_t(R));
            for (int r = 0; r < R; ++r) {
                RankStep& x = st.ranks[size_t(r)];
                x.loss = x.accuracy = x.lossScale = x.stepMs = x.computeMs = x.commMs = kNaN;
                x.localNorm.assign(size_t(P), kNaN);
                x.localMax.assign(size_t(P), kNaN);
                x.localSum.assign(size_t(P), std::nan(""));
                x.nonfinite.assign(size_t(P), 0);
                x.syncedNorm.assign(size_t(P), kNaN);
                x.syncedSum.assign(size_t(P), std::nan(""));
                const auto& tables = t.tables[size_t(r)];
                for (int p = 0; p < P; ++p) {
                    const double numel = double(std::max<int64_t>(0, t.numel[size_t(p)]));
                    if (const Stat* s = statAt(tables[kUnreduced], step, p)) {
                        x.localNorm[size_t(p)] = s->norm;
                        x.localMax[size_t(p)] = std::max(std::fabs(s->min), std::fabs(s->max));
                        if (std::isnan(s->min) || std::isnan(s->max))
                            x.localMax[size_t(p)] = kNaN;
                        if (localSum)
                            x.localSum[size_t(p)] = double(s->mean) * numel;
                        // nans counts NaN elements; an infinite min or max is one more non-finite element.
                        const float nans = std::isfinite(s->nans) ? std::max(0.f, s->nans) : 0.f;
                        x.nonfinite[size_t(p)] = uint32_t(
                            std::min<double>(nans + (std::isinf(s->min) || std::isinf(s->max)), 4e9));
                    }
                    if (const Stat* s = statAt(tables[kReduced], step, p)) {
                        x.syncedNorm[size_t(p)] = s->norm;
                        if (syncedSum)
                            x.syncedSum[size_t(p)] = double(s->mean) * numel;
                    }
                }
            }
            w->appendStep(st);
            if (weights) {
                bool any = false;
                WeightRecord wr;
                wr.step = step;
                wr.fp.assign(size_t(R), {});
                wr.norm.assign(size_t(R), std::vector<float>(size_t(P), kNaN));
                wr.bufferFp.assign(size_t(R), 0);
                wr.bufferDrift.assign(size_t(R), kNaN);
                for (int r = 0; r < R; ++r)
                    for (int p = 0; p < P; ++p)
                        if (const Stat* s = statAt(t.tables[size_t(r)][paramKind], step, p)) {
                            wr.norm[size_t(r)][size_t(p)] = s->norm;
                            any = true;
                        }
                if (any)
                    w->appendWeights(wr);
            }
            if (progress)
                progress(80 + int(20 * (i + 1) / steps.size()));
        }
        w->close("imported from msprobe");
        w.reset();
        fs::rename(tmp, out);
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
    return res;
}

} // namespace rs
