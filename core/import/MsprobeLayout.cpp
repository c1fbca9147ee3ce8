// findMonitorTree: see MsprobeLayout.h. Names are matched by hand rather than with std::regex, whose matcher
// recurses once per character and so can overflow the stack on a long enough file name.
#include "import/MsprobeLayout.h"

#include "store/RunSchema.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>
#include <string_view>

namespace rs::msprobe {
namespace {

bool allOf(std::string_view s, int (*is)(int)) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [is](char c) { return is(static_cast<unsigned char>(c)); });
}

int isPrefixChar(int c) {
    return c == '_' || std::isalnum(c);
}

// The time part of a V1 folder name, %b%d_%H-%M-%S (Dec01_12-00-00): the month name differs with the locale,
// the digits and separators do not.
bool isFolderTime(std::string_view s) {
    constexpr std::string_view kClock = "_00-00-00";
    if (s.size() <= kClock.size())
        return false;
    const std::string_view clock = s.substr(s.size() - kClock.size());
    for (size_t i = 0; i < kClock.size(); ++i)
        if (kClock[i] == '0' ? !std::isdigit(static_cast<unsigned char>(clock[i])) : clock[i] != kClock[i])
            return false;
    return true;
}

// The rank of a V1 rank folder, <%b%d_%H-%M-%S>-rank<N>-<8 hex> (the time part is not checked: locales differ
// in the month name), or "0" for msprobe <= 1.2's folder of a process that was not distributed,
// <%b%d_%H-%M-%S>-<8 hex>; nullopt for any other name.
std::optional<std::string_view> v1RankDigits(std::string_view name) {
    constexpr size_t kHex = 8;
    if (name.size() < kHex + 1 || name[name.size() - kHex - 1] != '-' ||
        !allOf(name.substr(name.size() - kHex), isxdigit))
        return std::nullopt;
    const std::string_view head = name.substr(0, name.size() - kHex - 1); // <time>-rank<N>
    const size_t at = head.rfind("-rank");
    if (at == std::string_view::npos)
        return isFolderTime(head) ? std::optional<std::string_view>("0") : std::nullopt;
    if (at == 0 || !allOf(head.substr(at + 5), isdigit))
        return std::nullopt;
    return head.substr(at + 5);
}

bool isSingleProcessFolder(std::string_view name) {
    return name.find("-rank") == std::string_view::npos && v1RankDigits(name);
}

// The rank of a V2 rank folder, rank_<N>.
std::optional<std::string_view> v2RankDigits(std::string_view name) {
    constexpr std::string_view kHead = "rank_";
    if (name.size() <= kHead.size() || name.substr(0, kHead.size()) != kHead ||
        !allOf(name.substr(kHead.size()), isdigit))
        return std::nullopt;
    return name.substr(kHead.size());
}

// <prefix><sep><start>-<end>[_part_<k>].csv, the prefix letters, digits and underscores; sep "_" (V1) or
// "_step" (V2). part: 0 for the file itself, k for its k-th part.
struct CsvName {
    std::string prefix;
    int64_t first = 0;
    int64_t last = 0;
    int64_t part = 0;
};
std::optional<CsvName> csvName(std::string_view name, std::string_view sep) {
    constexpr std::string_view kExt = ".csv", kPart = "_part_";
    if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt)
        return std::nullopt;
    std::string_view stem = name.substr(0, name.size() - kExt.size());
    int64_t part = 0;
    if (const size_t p = stem.rfind(kPart); p != std::string_view::npos) {
        const auto k = decimal(stem.substr(p + kPart.size()));
        if (!k || *k == 0)
            return std::nullopt;
        part = *k;
        stem = stem.substr(0, p);
    }
    const size_t dash = stem.rfind('-');
    const size_t at = dash == std::string_view::npos ? dash : stem.rfind(sep, dash);
    if (at == std::string_view::npos || at == 0)
        return std::nullopt;
    const std::string_view prefix = stem.substr(0, at);
    const auto first = decimal(stem.substr(at + sep.size(), dash - at - sep.size()));
    const auto last = decimal(stem.substr(dash + 1));
    if (!first || !last || !allOf(prefix, isPrefixChar) ||
        !std::isalpha(static_cast<unsigned char>(prefix[0])))
        return std::nullopt;
    return CsvName{std::string(prefix), *first, *last, part};
}

std::optional<Kind> v1KindOf(const std::string& prefix) {
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

// What a V1 prefix no run-file column holds records, for the import's note.
std::string v1Ignored(const std::string& prefix) {
    static const std::map<std::string, const char*> kWords = {
        {"actv", "module activations"},
        {"actv_grad", "activation gradients"},
        {"exp_avg", "the optimizer's first moments"},
        {"exp_avg_sq", "the optimizer's second moments"},
        {"other", "the optimizer's update and ratio"},
        {"attention_hook", "attention entropy and softmax max"},
        {"linear_hook", "stable rank and kernel norm of linear layers"},
        {"moe_router_weight_hook", "MoE router weight similarity"},
        {"moe_router_logit_hook", "MoE router token entropy"},
    };
    const auto it = kWords.find(prefix);
    return it == kWords.end() ? prefix : fmt::format("{} ({})", prefix, it->second);
}

// V2 monitors a run-file column holds; the others are listed as not imported, with what they hold.
bool v2Imported(const std::string& monitor) {
    return monitor == "weight_grad" || monitor == "param";
}
std::string v2Ignored(const std::string& monitor) {
    if (monitor == "optimizer")
        return "optimizer (exp_avg, exp_avg_sq)";
    if (monitor == "module")
        return "module (forward and backward activations)";
    if (monitor == "cc")
        return "cc (communication operators)";
    return monitor;
}

using RankOf = std::function<std::optional<std::string_view>(std::string_view)>;

bool hasRankFolders(const fs::path& d, const RankOf& rankOf) {
    std::error_code e;
    for (const auto& entry : fs::directory_iterator(d, e))
        if (entry.is_directory(e) && rankOf(entry.path().filename().string()))
            return true;
    return false;
}

void findRankFolders(MonitorTree& t, const RankOf& rankOf) {
    std::map<int, fs::path> byRank;
    for (const auto& entry : fs::directory_iterator(t.monitorDir)) {
        const std::string name = entry.path().filename().string();
        const auto digits = rankOf(name);
        if (!entry.is_directory() || !digits)
            continue;
        const auto rank = decimal(*digits);
        if (!rank || *rank >= runschema::kMaxWorldSize)
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
        t.singleProcess = t.singleProcess || (t.layout == Layout::MonitorV1 && isSingleProcessFolder(name));
    }
    // Ranks the monitor was told to leave out have no folder: they stay, as not recorded.
    t.rankFolders.resize(byRank.empty() ? 0 : size_t(byRank.rbegin()->first) + 1);
    for (auto& [rank, path] : byRank)
        t.rankFolders[size_t(rank)] = std::move(path);
}

// One csv file of a rank folder, or nullopt when no run-file column holds it (noted in t).
std::optional<StatFile> statFile(MonitorTree& t, int rank, fs::path path) {
    const bool v2 = t.layout == Layout::MonitorV2;
    const auto name = csvName(path.filename().string(), v2 ? "_step" : "_");
    if (!name) {
        t.strayCsv.push_back(path.filename().string());
        return std::nullopt;
    }
    if (name->first > name->last)
        throw ImportError(
            fmt::format("{}: the step range {}-{} is backwards", path.string(), name->first, name->last));
    StatFile f{rank, std::move(path), name->first, name->last, std::nullopt, {}, {}};
    if (name->part > 0)
        f.headerFrom = f.path.parent_path() / fmt::format("{}{}{}-{}.csv", name->prefix, v2 ? "_step" : "_",
                                                          name->first, name->last);
    if (v2) {
        if (!v2Imported(name->prefix)) {
            t.ignored.insert(v2Ignored(name->prefix));
            return std::nullopt;
        }
        f.monitor = name->prefix;
    } else {
        f.kind = v1KindOf(name->prefix);
        if (!f.kind) {
            t.ignored.insert(v1Ignored(name->prefix));
            return std::nullopt;
        }
    }
    return f;
}

void listFiles(MonitorTree& t) {
    for (size_t r = 0; r < t.rankFolders.size(); ++r) {
        if (t.rankFolders[r].empty())
            continue;
        std::vector<fs::path> csvs;
        for (const auto& entry : fs::directory_iterator(t.rankFolders[r]))
            if (entry.is_regular_file() && entry.path().extension() == ".csv")
                csvs.push_back(entry.path());
        std::sort(csvs.begin(), csvs.end());
        for (auto& path : csvs)
            if (auto f = statFile(t, int(r), std::move(path)))
                t.files.push_back(std::move(*f));
    }
}

// The layout of the rank folders directly in d; nullopt if it has none.
std::optional<Layout> layoutIn(const fs::path& d) {
    std::error_code ec;
    if (!fs::is_directory(d, ec))
        return std::nullopt;
    const bool v1 = hasRankFolders(d, v1RankDigits), v2 = hasRankFolders(d, v2RankDigits);
    if (v1 && v2)
        throw ImportError(fmt::format("{}: holds both Monitor V1 rank folders (<time>-rank<N>-<8 hex>) and "
                                      "Monitor V2 ones (rank_<N>): move one run out and import again",
                                      d.string()));
    if (!v1 && !v2)
        return std::nullopt;
    return v2 ? Layout::MonitorV2 : Layout::MonitorV1;
}

bool hasAlerts(const fs::path& d) {
    std::error_code ec;
    return fs::is_directory(d / "anomaly_detected", ec);
}

} // namespace

const char* layoutName(Layout layout) {
    return layout == Layout::MonitorV2 ? "Monitor V2" : "Monitor V1";
}

std::vector<int> MonitorTree::ranksWithoutFolder() const {
    std::vector<int> out;
    for (size_t r = 0; r < rankFolders.size(); ++r)
        if (rankFolders[r].empty())
            out.push_back(int(r));
    return out;
}

MonitorTree findMonitorTree(const fs::path& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw ImportError(fmt::format("{}: not a folder", dir.string()));
    MonitorTree t;
    // The folder itself, or the folder holding monitor_output/ (V1's fixed name) or monitor_v2_out/ (V2's
    // output_dir is the user's choice; monitor_v2_out is the documented example's).
    const std::vector<fs::path> places = {dir, dir / "monitor_output", dir / "monitor_v2_out"};
    for (const fs::path& d : places) {
        if (const auto layout = layoutIn(d)) {
            t.layout = *layout;
            t.monitorDir = d;
            break;
        }
    }
    if (t.monitorDir.empty()) {
        // No statistics: the monitor's alerts alone (anomaly_detected/, or the folder holding it).
        fs::path full = fs::absolute(dir, ec).lexically_normal();
        if (full.filename().empty()) // a trailing slash
            full = full.parent_path();
        if (full.filename() == "anomaly_detected")
            t.monitorDir = full.parent_path();
        for (const fs::path& d : places)
            if (t.monitorDir.empty() && hasAlerts(d))
                t.monitorDir = d;
        if (t.monitorDir.empty())
            throw ImportError(fmt::format(
                "{}: no msprobe monitor rank folders here, in {}/monitor_output or in {}/monitor_v2_out "
                "(Monitor V1: <time>-rank<N>-<8 hex>; Monitor V2: rank_<N>), and no anomaly_detected/",
                dir.string(), dir.string(), dir.string()));
        t.alertsOnly = true;
        return t;
    }
    findRankFolders(t, t.layout == Layout::MonitorV2 ? RankOf(v2RankDigits) : RankOf(v1RankDigits));
    listFiles(t);
    return t;
}

} // namespace rs::msprobe
