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

RunMeta metaOf(const msprobe::MonitorTree& layout, const Tree& t, const std::vector<std::string>& absent,
               int64_t steps, const std::vector<std::string>& notes) {
    RunMeta m;
    m.source = "msprobe";
    m.model = "msprobe import";
    m.worldSize = int(layout.rankFolders.size());
    m.precision = "unknown";
    m.lossScale = "unknown";
    m.data = "msprobe:" + layout.monitorDir.string();
    m.weightEvery = t.seen[msprobe::kParamOrigin] || t.seen[msprobe::kParamUpdated] ? 1 : 0;
    m.plannedSteps = steps;
    m.absent = absent;
    nlohmann::json folders = nlohmann::json::array();
    for (const auto& f : layout.rankFolders)
        folders.push_back(f.filename().string());
    m.configJson = nlohmann::json{
        {"source", "msprobe"},
        {"layout", msprobe::layoutName(layout.layout)},
        {"monitor_output", layout.monitorDir.string()},
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

MsprobeImportResult importMsprobe(const std::string& dir, const std::string& out, bool overwrite,
                                  const std::function<void(int)>& progress) {
    if (isMsprobeDumpTree(dir))
        return importMsprobeDump(dir, out, overwrite, progress);
    checkImportTarget(out, overwrite);
    const msprobe::MonitorTree layout = msprobe::findMonitorTree(dir);
    const bool v2 = layout.layout == msprobe::Layout::MonitorV2;
    Tree t(layout.rankFolders.size());
    const std::set<int64_t> stepSet = scanTree(t, layout, progress);
    const int R = int(layout.rankFolders.size()), P = int(t.names.size());
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
    // Monitor V1's alerts; V2 writes none.
    const std::vector<Event> events =
        v2 ? std::vector<Event>{} : msprobe::readMonitorAnomalies(layout.monitorDir, R);
    res.events = int64_t(events.size());
    if (!events.empty())
        res.notes.emplace_back(
            fmt::format("{} alerts of the monitor (anomaly_detected/) imported as {} events", events.size(),
                        eventcode::kMonitorAnomaly));
    const bool haveUnreduced = t.seen[msprobe::kUnreduced], haveReduced = t.seen[msprobe::kReduced];
    const int reducedRanks = int(std::count(t.reducedOnRank.begin(), t.reducedOnRank.end(), true));
    if (haveReduced && reducedRanks == 1 && R > 1 && t.reducedOnRank[0])
        res.notes.emplace_back(
            "only rank 0 wrote reduced gradients (dp_group is set in the monitor's config): "
            "cross-rank checks of the synced gradients need a run with dp_group unset");
    else if (haveReduced && reducedRanks < R)
        res.notes.emplace_back(fmt::format("{} of {} ranks wrote reduced gradients", reducedRanks, R));
    if (!haveReduced)
        res.notes.emplace_back(v2 ? "no weight_grad rows of scope reduced: synced gradients were not recorded"
                                  : "no grad_reduced files: synced gradients were not recorded");
    if (!haveUnreduced)
        res.notes.emplace_back(
            v2 ? "no weight_grad rows of scope unreduced: local gradients were not recorded"
               : "no grad_unreduced files: local gradients were not recorded");
    if (t.microSteps)
        res.notes.emplace_back("gradient accumulation: each step's last micro step is imported");
    std::set<std::string> ignored = layout.ignored;
    ignored.insert(t.ignoredScopes.begin(), t.ignoredScopes.end());
    if (!ignored.empty()) {
        std::string list;
        for (const auto& p : ignored)
            list += (list.empty() ? "" : ", ") + p;
        res.notes.emplace_back("not imported (no run-file column holds them): " + list);
    }
    bool numelKnown = true;
    for (int64_t n : t.numel)
        numelKnown = numelKnown && n >= 0;
    if (!numelKnown && (t.anyMeanUnreduced || t.anyMeanReduced))
        res.notes.emplace_back(
            v2 ? "Monitor V2 prints no tensor shapes: gradient sums (mean x size) are not recorded"
               : "a parameter's shape is not printed: gradient sums (mean x size) are not recorded");
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
    if (!t.seen[msprobe::kParamOrigin] && !t.seen[msprobe::kParamUpdated])
        absent.emplace_back("/weights/norm");
    res.absent = absent;

    const RunMeta meta = metaOf(layout, t, absent, res.steps, res.notes);
    auto has = [&](const char* path) {
        return std::find(absent.begin(), absent.end(), path) == absent.end();
    };
    const bool localSum = has("/grads/local_sum"), syncedSum = has("/grads/synced_sum");
    const Kind paramKind = t.seen[msprobe::kParamUpdated] ? msprobe::kParamUpdated : msprobe::kParamOrigin;
    const bool weights = t.seen[msprobe::kParamOrigin] || t.seen[msprobe::kParamUpdated];

    writeImport(out, meta, "imported from msprobe", [&](RunWriter& w) {
        auto nextEvent = events.begin();
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
                    const auto& tables = win.tables[size_t(r)];
                    for (int p = 0; p < P; ++p) {
                        const double numel = double(std::max<int64_t>(0, t.numel[size_t(p)]));
                        if (const Stat* s = statAt(tables[msprobe::kUnreduced], step, p)) {
                            x.localNorm[size_t(p)] = s->norm;
                            x.localMax[size_t(p)] = std::max(std::fabs(s->min), std::fabs(s->max));
                            if (std::isnan(s->min) || std::isnan(s->max))
                                x.localMax[size_t(p)] = kNaN;
                            if (localSum)
                                x.localSum[size_t(p)] = double(s->mean) * numel;
                            // nans counts NaN elements; an infinite min or max is one more non-finite
                            // element.
                            const float nans = std::isfinite(s->nans) ? std::max(0.f, s->nans) : 0.f;
                            x.nonfinite[size_t(p)] = uint32_t(
                                std::min<double>(nans + (std::isinf(s->min) || std::isinf(s->max)), 4e9));
                        }
                        if (const Stat* s = statAt(tables[msprobe::kReduced], step, p)) {
                            x.syncedNorm[size_t(p)] = s->norm;
                            if (syncedSum)
                                x.syncedSum[size_t(p)] = double(s->mean) * numel;
                        }
                    }
                }
                w.appendStep(st);
                for (; nextEvent != events.end() && nextEvent->step <= step; ++nextEvent)
                    w.appendEvent(*nextEvent);
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
                            if (const Stat* s = statAt(win.tables[size_t(r)][paramKind], step, p)) {
                                wr.norm[size_t(r)][size_t(p)] = s->norm;
                                any = true;
                            }
                    if (any)
                        w.appendWeights(wr);
                }
                if (progress)
                    progress(40 + int(60 * ++written / steps.size()));
            }
        }
        for (; nextEvent != events.end(); ++nextEvent)
            w.appendEvent(*nextEvent);
    });
    return res;
}

} // namespace rs
