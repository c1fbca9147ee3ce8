// importMsprobe: see MsprobeImport.h. Two passes over the csv files, so memory holds one window of steps
// (the files that cover the same steps, every rank's) however long the run: the first reads and checks every
// file and keeps only the parameters, their shapes and which statistics exist (nothing written yet); the
// second reads one window at a time and writes its steps into the run file, under a temporary name renamed
// into place at the end, so a failure at any point leaves no file.
#include "import/MsprobeImport.h"

#include "import/ImportTarget.h"
#include "import/MsprobeAnomalies.h"
#include "import/MsprobeDumpImport.h"
#include "import/MsprobeLayout.h"
#include "import/MsprobeTree.h"
#include "store/RunSchema.h"
#include "store/RunWriter.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

namespace rs {
namespace {

namespace fs = std::filesystem;
using msprobe::Kind;
using msprobe::Stat;
using msprobe::Table;
using msprobe::Tree;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Pass 1: every file read and checked; the statistics are dropped after each file, what they tell about
// the tree (parameters, shapes, columns, steps) is kept.
std::set<int64_t> scanTree(Tree& t, const msprobe::MonitorTree& layout,
                           const std::function<void(int)>& progress) {
    std::set<int64_t> steps;
    for (size_t i = 0; i < layout.files.size(); ++i) {
        msprobe::readStatCsv(t, layout.files[i]);
        for (auto& kinds : t.tables)
            for (Table& table : kinds) {
                for (const auto& [step, row] : table)
                    steps.insert(step);
                table.clear();
            }
        if (progress)
            progress(int(40 * (i + 1) / layout.files.size()));
    }
    return steps;
}

// The files in windows of steps: files whose step ranges overlap are in one window (msprobe writes every
// rank's and kind's files over the same ranges, so a window is one range of every file).
std::vector<std::vector<const msprobe::StatFile*>> windows(const msprobe::MonitorTree& layout) {
    std::vector<const msprobe::StatFile*> files;
    for (const auto& f : layout.files)
        files.push_back(&f);
    std::sort(files.begin(), files.end(), [](auto* a, auto* b) { return a->first < b->first; });
    std::vector<std::vector<const msprobe::StatFile*>> out;
    int64_t end = std::numeric_limits<int64_t>::min();
    for (const msprobe::StatFile* f : files) {
        if (out.empty() || f->first > end)
            out.emplace_back();
        out.back().push_back(f);
        end = std::max(end, f->last);
    }
    return out;
}

// A window's tables, with the whole tree's parameter numbering.
Tree windowTree(const Tree& whole, const std::vector<const msprobe::StatFile*>& files) {
    Tree w(whole.tables.size());
    w.paramIndex = whole.paramIndex;
    w.names = whole.names;
    w.shapes = whole.shapes;
    w.numel = whole.numel;
    for (const msprobe::StatFile* f : files)
        msprobe::readStatCsv(w, *f);
    return w;
}

// The run's ranks: every rank a folder or an alert names, up to the highest; the others have no folder.
int worldOf(const msprobe::MonitorTree& layout, const msprobe::MonitorAlerts& alerts) {
    return std::max(int(layout.rankFolders.size()), alerts.ranks);
}

std::string rankList(const std::vector<int>& ranks) {
    std::string s;
    for (int r : ranks)
        s += (s.empty() ? "" : ", ") + std::to_string(r);
    return s;
}

RunMeta metaOf(const msprobe::MonitorTree& layout, const Tree& t, int R,
               const std::vector<std::string>& absent, int64_t steps, const std::vector<std::string>& notes) {
    RunMeta m;
    m.source = "msprobe";
    m.model = "msprobe import";
    m.worldSize = R;
    m.precision = "unknown";
    m.lossScale = "unknown";
    m.data = "msprobe:" + layout.monitorDir.string();
    m.weightEvery = t.seen[msprobe::kParamOrigin] || t.seen[msprobe::kParamUpdated] ? 1 : 0;
    m.plannedSteps = steps;
    m.absent = absent;
    // Index = rank; "" for a rank with no folder, whose statistics are not recorded (also listed apart, so
    // a reader need not know that convention).
    nlohmann::json folders = nlohmann::json::array(), unrecorded = nlohmann::json::array();
    for (int r = 0; r < R; ++r) {
        const bool has = size_t(r) < layout.rankFolders.size() && !layout.rankFolders[size_t(r)].empty();
        folders.push_back(has ? layout.rankFolders[size_t(r)].filename().string() : std::string());
        if (!has)
            unrecorded.push_back(r);
    }
    m.configJson = nlohmann::json{
        {"source", "msprobe"},
        {"layout", layout.alertsOnly ? "Monitor V1 alerts" : msprobe::layoutName(layout.layout)},
        {"monitor_output", layout.monitorDir.string()},
        {"rank_folders", folders},
        {"ranks_not_recorded", unrecorded},
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
    // The monitor records no device and no server: the rank folders' names are in the config's rank_folders.
    m.cards = unknownCards(m.worldSize);
    return m;
}

const Stat* statAt(const Table& table, int64_t step, int p) {
    const auto it = table.find(step);
    if (it == table.end() || size_t(p) >= it->second.size() || !it->second[size_t(p)].present)
        return nullptr;
    return &it->second[size_t(p)];
}

// What the statistics hold, in words, for the notes.
const char* kindWords(Kind kind) {
    switch (kind) {
    case msprobe::kUnreduced:
        return "local (unreduced) gradients";
    case msprobe::kReduced:
        return "synced (reduced) gradients";
    case msprobe::kParamOrigin:
        return "weights before the update";
    default:
        return "weights after the update";
    }
}

// The statistics the run file takes from each kind.
bool used(Kind kind, msprobe::Op op) {
    if (kind == msprobe::kUnreduced)
        return true;
    if (kind == msprobe::kReduced)
        return op == msprobe::kNorm || op == msprobe::kMean;
    return op == msprobe::kNorm;
}

bool numelKnown(const Tree& t) {
    return std::all_of(t.numel.begin(), t.numel.end(), [](int64_t n) { return n >= 0; });
}

// What the monitor cannot give, then what this tree did not record.
std::vector<std::string> absentOf(const Tree& t) {
    using msprobe::kReduced, msprobe::kUnreduced;
    std::vector<std::string> absent = msprobeNeverRecorded();
    const bool sums = numelKnown(t) && !t.names.empty();
    if (!t.recorded(kUnreduced, msprobe::kNorm))
        absent.emplace_back("/grads/local_norm");
    if (!(t.recorded(kUnreduced, msprobe::kMin) && t.recorded(kUnreduced, msprobe::kMax)))
        absent.emplace_back("/grads/local_max");
    if (!t.recorded(kUnreduced, msprobe::kNans))
        absent.emplace_back("/grads/nonfinite");
    if (!(t.recorded(kUnreduced, msprobe::kMean) && sums))
        absent.emplace_back("/grads/local_sum");
    if (!t.recorded(kReduced, msprobe::kNorm))
        absent.emplace_back("/grads/synced_norm");
    if (!(t.recorded(kReduced, msprobe::kMean) && sums))
        absent.emplace_back("/grads/synced_sum");
    if (!t.recorded(msprobe::kParamOrigin, msprobe::kNorm) &&
        !t.recorded(msprobe::kParamUpdated, msprobe::kNorm))
        absent.emplace_back("/weights/norm");
    return absent;
}

// Ranks the monitor was not told to watch, in words.
void noteRanksWithoutFolder(const msprobe::MonitorTree& layout, int R, std::vector<std::string>& notes) {
    std::vector<int> missing = layout.ranksWithoutFolder();
    for (int r = int(layout.rankFolders.size()); r < R; ++r)
        missing.push_back(r);
    if (missing.empty() || layout.alertsOnly)
        return;
    notes.emplace_back(fmt::format(
        "rank{} {} of {} {} no folder ({} limits which ranks write): {} gradient and weight statistics are "
        "not recorded, and no check compares {}",
        missing.size() > 1 ? "s" : "", rankList(missing), R, missing.size() > 1 ? "have" : "has",
        layout.layout == msprobe::Layout::MonitorV2 ? "the monitor's `rank` setting"
                                                    : "the monitor's `module_ranks` setting",
        missing.size() > 1 ? "their" : "its", missing.size() > 1 ? "them" : "it"));
}

void noteGradients(const msprobe::MonitorTree& layout, const Tree& t, std::vector<std::string>& notes) {
    const bool v2 = layout.layout == msprobe::Layout::MonitorV2;
    const bool haveUnreduced = t.seen[msprobe::kUnreduced], haveReduced = t.seen[msprobe::kReduced];
    const int present = int(std::count_if(layout.rankFolders.begin(), layout.rankFolders.end(),
                                          [](const fs::path& f) { return !f.empty(); }));
    const int reducedRanks = int(std::count(t.reducedOnRank.begin(), t.reducedOnRank.end(), true));
    if (haveReduced && reducedRanks == 1 && present > 1 && t.reducedOnRank[0])
        notes.emplace_back("only rank 0 wrote reduced gradients (dp_group is set in the monitor's config): "
                           "cross-rank checks of the synced gradients need a run with dp_group unset");
    else if (haveReduced && reducedRanks < present)
        notes.emplace_back(fmt::format("{} of {} ranks wrote reduced gradients", reducedRanks, present));
    if (!haveReduced)
        notes.emplace_back(v2 ? "no weight_grad rows of scope reduced: synced gradients were not recorded"
                              : "no grad_reduced files: synced gradients were not recorded");
    if (!haveUnreduced)
        notes.emplace_back(v2 ? "no weight_grad rows of scope unreduced: local gradients were not recorded"
                              : "no grad_unreduced files: local gradients were not recorded");
    if (t.microSteps)
        notes.emplace_back("gradient accumulation: each step's last micro step is imported");
}

// A statistic whose every value is nan: msprobe Monitor V2 fills a column with nan when any row lacked it.
void noteNanColumns(const Tree& t, std::vector<std::string>& notes) {
    for (int k = 0; k < msprobe::kKindCount; ++k)
        for (int op = 0; op < msprobe::kOpCount; ++op)
            if (t.column[size_t(k)][size_t(op)] && !t.valued[size_t(k)][size_t(op)] &&
                used(Kind(k), msprobe::Op(op)))
                notes.emplace_back(fmt::format("every '{}' of the {} is nan (msprobe writes a column of nan "
                                               "when a statistic was missing "
                                               "from some rows): not recorded",
                                               msprobe::opName(msprobe::Op(op)), kindWords(Kind(k))));
}

std::vector<std::string> notesOf(const msprobe::MonitorTree& layout, const Tree& t, int R,
                                 const msprobe::MonitorAlerts& alerts) {
    const bool v2 = layout.layout == msprobe::Layout::MonitorV2;
    std::vector<std::string> notes;
    if (layout.singleProcess)
        notes.emplace_back("a process that was not distributed (its folder <time>-<id> names no rank): "
                           "imported as rank 0");
    noteRanksWithoutFolder(layout, R, notes);
    if (!alerts.events.empty())
        notes.emplace_back(fmt::format("{} alerts of the monitor (anomaly_detected/) imported as {} events{}",
                                       alerts.events.size(), eventcode::kMonitorAnomaly,
                                       alerts.fromAnalysis
                                           ? " (from anomaly_analyse.json, msprobe's list of the earliest: "
                                             "no rank's anomaly.json is there)"
                                           : ""));
    noteGradients(layout, t, notes);
    noteNanColumns(t, notes);
    std::set<std::string> ignored = layout.ignored;
    ignored.insert(t.ignoredScopes.begin(), t.ignoredScopes.end());
    if (!ignored.empty()) {
        std::string list;
        for (const auto& p : ignored)
            list += (list.empty() ? "" : ", ") + p;
        notes.emplace_back("not imported (no run-file column holds them): " + list);
    }
    if (!layout.strayCsv.empty())
        notes.emplace_back(fmt::format(
            "{} csv file{} not named as the monitor names its files, not read (the "
            "first: {})",
            layout.strayCsv.size(), layout.strayCsv.size() > 1 ? "s" : "", layout.strayCsv.front()));
    if (!numelKnown(t) &&
        (t.recorded(msprobe::kUnreduced, msprobe::kMean) || t.recorded(msprobe::kReduced, msprobe::kMean)))
        notes.emplace_back(
            v2 ? "Monitor V2 prints no tensor shapes: gradient sums (mean x size) are not recorded"
               : "a parameter's shape is not printed: gradient sums (mean x size) are not "
                 "recorded");
    notes.emplace_back("no fingerprints in msprobe's csv: ranks are compared on the statistics as printed "
                       "(equal to the csv's rounding)");
    return notes;
}

// One rank's statistics at a step; not recorded (nan) where the window has none, a rank without a folder
// included. A non-finite count has no "not recorded": 0 there, the norms saying the rest.
RankStep rankStepOf(const Tree& t, const Tree& win, int r, int64_t step, bool localSum, bool syncedSum) {
    const size_t P = t.names.size();
    RankStep x = unrecordedRankStep(P);
    if (size_t(r) >= win.tables.size())
        return x;
    const auto& tables = win.tables[size_t(r)];
    for (size_t p = 0; p < P; ++p) {
        const double numel = double(std::max<int64_t>(0, t.numel[p]));
        if (const Stat* s = statAt(tables[msprobe::kUnreduced], step, int(p))) {
            x.localNorm[p] = s->norm;
            x.localMax[p] = std::isnan(s->min) || std::isnan(s->max)
                                ? kNaN
                                : std::max(std::fabs(s->min), std::fabs(s->max));
            if (localSum)
                x.localSum[p] = double(s->mean) * numel;
            // nans counts NaN elements; an infinite min or max is one more non-finite element.
            const float nans = std::isfinite(s->nans) ? std::max(0.f, s->nans) : 0.f;
            x.nonfinite[p] =
                uint32_t(std::min<double>(nans + (std::isinf(s->min) || std::isinf(s->max)), 4e9));
        }
        if (const Stat* s = statAt(tables[msprobe::kReduced], step, int(p))) {
            x.syncedNorm[p] = s->norm;
            if (syncedSum)
                x.syncedSum[p] = double(s->mean) * numel;
        }
    }
    return x;
}

// The weight norms at a step; nullopt when no rank recorded any.
std::optional<WeightRecord> weightsOf(const Tree& t, const Tree& win, int R, int64_t step, Kind kind) {
    const size_t P = t.names.size();
    bool any = false;
    WeightRecord wr;
    wr.step = step;
    wr.fp.assign(size_t(R), {});
    wr.norm.assign(size_t(R), std::vector<float>(P, kNaN));
    wr.bufferFp.assign(size_t(R), 0);
    wr.bufferDrift.assign(size_t(R), kNaN);
    for (size_t r = 0; r < win.tables.size() && r < size_t(R); ++r)
        for (size_t p = 0; p < P; ++p)
            if (const Stat* s = statAt(win.tables[r][kind], step, int(p))) {
                wr.norm[r][p] = s->norm;
                any = true;
            }
    return any ? std::optional<WeightRecord>(std::move(wr)) : std::nullopt;
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
            "/steps/cpu_wait_ms",
            "/steps/optimizer_lr",
            "/grads/overflow_count",
            "/grads/underflow_count",
            "/grads/sketch",
            "/grads/synced_fp",
            "/grads/local_fp",
            "/steps/end_ns",
            "/weights/fp",
            "/weights/buffer_fp",
            "/weights/buffer_drift",
            "model",
            "batch_per_rank",
            "precision",
            "loss_scale",
            "seed"};
}

namespace {

// A tree holding only the monitor's alerts: a run of events, every statistic not recorded.
MsprobeImportResult importAlertsOnly(const msprobe::MonitorTree& layout, const msprobe::MonitorAlerts& alerts,
                                     const std::string& out, const std::function<void(int)>& progress) {
    const fs::path root = layout.monitorDir / "anomaly_detected";
    if (alerts.ranks == 0)
        throw ImportError(fmt::format("{}: holds no rank<R>/anomaly.json (nor anomaly_analyse.json), and "
                                      "there are no monitor rank folders beside it",
                                      root.string()));
    const Tree t(size_t(alerts.ranks));
    MsprobeImportResult res;
    res.monitorDir = layout.monitorDir.string();
    res.layout = "Monitor V1 alerts";
    res.ranks = alerts.ranks;
    res.events = int64_t(alerts.events.size());
    res.notes = notesOf(layout, t, alerts.ranks, alerts);
    res.notes.insert(res.notes.begin(),
                     alerts.events.empty()
                         ? "only the monitor's alert files (anomaly_detected/), which hold no alert: no "
                           "gradient or weight statistics were recorded"
                         : "only the monitor's alerts (anomaly_detected/): no gradient or weight statistics "
                           "were recorded");
    // No csv was read: the notes about gradient files and fingerprints do not apply.
    res.notes.erase(std::remove_if(res.notes.begin(), res.notes.end(),
                                   [](const std::string& n) {
                                       return n.rfind("no grad_", 0) == 0 ||
                                              n.rfind("no fingerprints", 0) == 0;
                                   }),
                    res.notes.end());
    res.absent = absentOf(t);
    const RunMeta meta = metaOf(layout, t, alerts.ranks, res.absent, 0, res.notes);
    writeImport(out, meta, "imported from msprobe", [&](RunWriter& w) {
        for (const Event& e : alerts.events)
            w.appendEvent(e);
    });
    if (progress)
        progress(100);
    return res;
}

} // namespace

MsprobeImportResult importMsprobe(const std::string& dir, const std::string& out, bool overwrite,
                                  const std::function<void(int)>& progress) {
    if (isMsprobeDumpTree(dir))
        return importMsprobeDump(dir, out, overwrite, progress);
    checkImportTarget(out, overwrite);
    const msprobe::MonitorTree layout = msprobe::findMonitorTree(dir);
    const bool v2 = layout.layout == msprobe::Layout::MonitorV2;
    // Monitor V1's alerts; V2 writes none.
    const msprobe::MonitorAlerts alerts =
        v2 ? msprobe::MonitorAlerts{} : msprobe::readMonitorAlerts(layout.monitorDir);
    if (layout.alertsOnly)
        return importAlertsOnly(layout, alerts, out, progress);
    const int R = worldOf(layout, alerts);
    Tree t(static_cast<size_t>(R));
    const std::set<int64_t> stepSet = scanTree(t, layout, progress);
    const int P = int(t.names.size());
    if (P == 0)
        throw ImportError(fmt::format("{}: no gradient or parameter statistics ({}) in the rank folders",
                                      layout.monitorDir.string(),
                                      v2 ? "weight_grad_step*.csv or param_step*.csv"
                                         : "grad_unreduced_*.csv, grad_reduced_*.csv or param_*.csv"));
    const std::vector<int64_t> steps(stepSet.begin(), stepSet.end());

    MsprobeImportResult res;
    res.monitorDir = layout.monitorDir.string();
    res.layout = msprobe::layoutName(layout.layout);
    res.ranks = R;
    res.params = P;
    res.steps = int64_t(steps.size());
    res.files = t.files;
    res.events = int64_t(alerts.events.size());
    res.notes = notesOf(layout, t, R, alerts);
    res.absent = absentOf(t);
    const RunMeta meta = metaOf(layout, t, R, res.absent, res.steps, res.notes);
    auto has = [&](const char* path) { return meta.recorded(path); };
    const bool localSum = has("/grads/local_sum"), syncedSum = has("/grads/synced_sum");
    const Kind paramKind =
        t.recorded(msprobe::kParamUpdated, msprobe::kNorm) ? msprobe::kParamUpdated : msprobe::kParamOrigin;
    const bool weights = has("/weights/norm");

    writeImport(out, meta, "imported from msprobe", [&](RunWriter& w) {
        auto nextEvent = alerts.events.begin();
        size_t written = 0;
        for (const auto& files : windows(layout)) {
            const Tree win = windowTree(t, files);
            std::set<int64_t> winSteps;
            for (const auto& kinds : win.tables)
                for (const Table& table : kinds)
                    for (const auto& [step, row] : table)
                        winSteps.insert(step);
            for (const int64_t step : winSteps) {
                StepRecord st;
                st.step = step;
                st.lr = kNaN;
                for (int r = 0; r < R; ++r)
                    st.ranks.push_back(rankStepOf(t, win, r, step, localSum, syncedSum));
                w.appendStep(st);
                for (; nextEvent != alerts.events.end() && nextEvent->step <= step; ++nextEvent)
                    w.appendEvent(*nextEvent);
                if (weights)
                    if (auto wr = weightsOf(t, win, R, step, paramKind))
                        w.appendWeights(*wr);
                if (progress)
                    progress(40 + int(60 * ++written / steps.size()));
            }
        }
        for (; nextEvent != alerts.events.end(); ++nextEvent)
            w.appendEvent(*nextEvent);
    });
    return res;
}

} // namespace rs
