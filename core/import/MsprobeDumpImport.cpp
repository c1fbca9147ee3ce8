// importMsprobeDump: see MsprobeDumpImport.h. Folder rules follow msprobe's core/dump/service.py and
// hook_manager.py: step<N> folders of rank<R> folders, each with dump.json; where the rank was unknown, a
// bare `rank` folder (before 2026-02) or proc<pid> (since; renamed rank<R> when the rank turns up in the
// step).
#include "import/MsprobeDumpImport.h"

#include "import/ImportTarget.h"
#include "import/MsprobeDumpFile.h"
#include "import/MsprobeTree.h"
#include "store/RunSchema.h"
#include "store/RunWriter.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

namespace rs {
namespace {

namespace fs = std::filesystem;
using msprobe::DumpFile;
using msprobe::DumpTensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The dump.json files the import reads, by step and rank, and what the folders said on the way.
struct DumpTree {
    fs::path root;
    std::vector<int64_t> steps;                         // ascending; each has at least one rank's file
    int worldSize = 0;                                  // the highest rank found + 1
    std::map<int64_t, std::map<int, fs::path>> files;   // step -> rank -> dump.json
    std::vector<std::optional<std::string>> rankFolder; // index = rank: its folder's name, if any
    std::vector<std::string> notes;                     // in words, for the user
    int64_t fileCount() const {
        int64_t n = 0;
        for (const auto& [step, ranks] : files)
            n += int64_t(ranks.size());
        return n;
    }
};

// "step12" -> 12; nullopt for any other name.
std::optional<int64_t> stepOf(const std::string& name) {
    if (name.rfind("step", 0) != 0)
        return std::nullopt;
    return msprobe::decimal(std::string_view(name).substr(4));
}

// A rank folder as msprobe names it (core/dump/service.py _create_default_dirs): rank<R> once the process
// knows its rank; before that (torch.distributed / MindSpore communication not initialised) proc<pid> since
// 2026-02, which it renames rank<R> when the rank turns up during the step, and a bare `rank` before (and in
// MindSpore's graph-mode cell dump on a single card).
struct RankFolder {
    enum Kind { Numbered, Bare, Proc } kind = Numbered;
    int64_t id = 0; // the rank (Numbered), the pid (Proc)
    std::string name;
    fs::path dir;
};

std::optional<RankFolder> rankFolderOf(const fs::path& dir) {
    RankFolder f;
    f.name = dir.filename().string();
    f.dir = dir;
    if (f.name == "rank") {
        f.kind = RankFolder::Bare;
        return f;
    }
    for (const auto& [prefix, kind] : {std::pair{"rank", RankFolder::Numbered}, {"proc", RankFolder::Proc}})
        if (f.name.rfind(prefix, 0) == 0)
            if (const auto n = msprobe::decimal(std::string_view(f.name).substr(4))) {
                if (kind == RankFolder::Numbered && *n >= runschema::kMaxWorldSize)
                    return std::nullopt;
                f.kind = kind;
                f.id = *n;
                return f;
            }
    return std::nullopt;
}

// "step1/rank0/dump.json": a file's path under the dump's folder, as a user finds it there.
std::string relativeName(const fs::path& file, const fs::path& root) {
    std::error_code ec;
    const fs::path rel = fs::relative(file, root, ec);
    return ec || rel.empty() ? file.string() : rel.string();
}

fs::path dumpRoot(const fs::path& dir) {
    std::error_code ec;
    for (const fs::path& d : {dir, dir / "pynative"})
        for (const auto& e : fs::directory_iterator(d, ec))
            if (e.is_directory(ec) && stepOf(e.path().filename().string()) && fs::is_directory(e.path(), ec))
                for (const auto& r : fs::directory_iterator(e.path(), ec))
                    if (fs::exists(r.path() / "dump.json", ec))
                        return d;
    return {};
}

// "0, 2-5, 9": a sorted list of numbers in words a user reads.
template <typename T> std::string ranges(const std::vector<T>& v) {
    std::string s;
    for (size_t i = 0; i < v.size();) {
        size_t j = i;
        while (j + 1 < v.size() && v[j + 1] == v[j] + 1)
            ++j;
        s += fmt::format("{}{}", s.empty() ? "" : ", ", v[i]);
        if (j > i)
            s += fmt::format("{}{}", j == i + 1 ? ", " : "-", v[j]);
        i = j + 1;
    }
    return s;
}

// The folders of one step: rank folders with their dump.json; anything else is left out and said.
struct StepFolders {
    std::vector<RankFolder> numbered, unnumbered;
};

StepFolders foldersIn(const fs::path& stepDir, int64_t step, std::vector<std::string>& notes) {
    StepFolders out;
    std::error_code ec;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(stepDir, ec))
        if (e.is_directory(ec))
            dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) {
        const auto f = rankFolderOf(d);
        const bool hasDump = fs::exists(d / "dump.json", ec);
        if (!f) {
            if (hasDump)
                notes.push_back(fmt::format("step {}: folder '{}' is not a rank folder (rank<N>, rank or "
                                            "proc<pid>): its dump was left out",
                                            step, d.filename().string()));
            continue;
        }
        if (!hasDump) {
            notes.push_back(
                fmt::format("step {}: folder '{}' holds no dump.json: not recorded there", step, f->name));
            continue;
        }
        (f->kind == RankFolder::Numbered ? out.numbered : out.unnumbered).push_back(*f);
    }
    return out;
}

// Which rank each `rank` / proc<pid> folder stands for. A job without a distributed rank is one process per
// folder: with one such folder per step it is rank 0; with several (processes without a process group) they
// are numbered in order of process id, the same id being the same process at every step. In a job that has
// rank<R> folders too, such a folder is a process that had not yet learnt its rank: rank 0 when rank 0 is
// the job's only rank, otherwise unknown, and its dump is left out.
std::map<std::string, int> ranksOfUnnumbered(const std::map<int64_t, StepFolders>& steps,
                                             std::vector<std::string>& notes) {
    std::set<int64_t> numbered;
    std::set<std::tuple<int, int64_t, std::string>> ids; // (bare first, pid, folder name)
    size_t perStep = 0;
    bool besideRank0 = false;
    for (const auto& [step, f] : steps) {
        for (const RankFolder& r : f.numbered)
            numbered.insert(r.id);
        for (const RankFolder& r : f.unnumbered)
            ids.emplace(r.kind == RankFolder::Bare ? 0 : 1, r.id, r.name);
        perStep = std::max(perStep, f.unnumbered.size());
        besideRank0 |= !f.unnumbered.empty() && !f.numbered.empty();
    }
    std::map<std::string, int> rankOf;
    auto key = [](const auto& id) { return std::get<2>(id); };
    if (ids.empty())
        return rankOf;
    const bool onlyRank0 = numbered.empty() || (numbered == std::set<int64_t>{0} && !besideRank0);
    if (onlyRank0 && perStep <= 1) {
        for (const auto& id : ids)
            rankOf[key(id)] = 0;
        if (!numbered.empty())
            for (const auto& [step, f] : steps)
                for (const RankFolder& r : f.unnumbered)
                    notes.push_back(fmt::format("step {}: folder '{}' was written before the process had its "
                                                "rank: read as rank 0, the job's only rank",
                                                step, r.name));
        return rankOf;
    }
    if (numbered.empty()) {
        int r = 0;
        for (const auto& id : ids)
            rankOf[key(id)] = r++;
        notes.push_back(
            fmt::format("{} processes dumped without a distributed rank (proc<pid> folders): they "
                        "are numbered 0-{} in order of process id; their ranks in the job are not "
                        "recorded",
                        ids.size(), ids.size() - 1));
        return rankOf;
    }
    for (const auto& [step, f] : steps)
        for (const RankFolder& r : f.unnumbered)
            notes.push_back(fmt::format("step {}: folder '{}' was written before the process had its rank: "
                                        "which rank it was is not recorded, its dump was left out",
                                        step, r.name));
    return rankOf;
}

void addFile(DumpTree& t, int64_t step, int rank, const RankFolder& f) {
    if (const auto [it, fresh] = t.files[step].emplace(rank, f.dir / "dump.json"); !fresh)
        throw ImportError(fmt::format("{}: folders '{}' and '{}' both hold rank {}",
                                      f.dir.parent_path().string(),
                                      it->second.parent_path().filename().string(), f.name, rank));
    if (size_t(rank) >= t.rankFolder.size())
        t.rankFolder.resize(size_t(rank) + 1);
    if (!t.rankFolder[size_t(rank)])
        t.rankFolder[size_t(rank)] = f.name;
}

// Says which ranks are missing where: never recorded at all, or absent from some steps.
void noteMissingRanks(DumpTree& t) {
    std::vector<int> never;
    for (int r = 0; r < t.worldSize; ++r) {
        std::vector<int64_t> missing;
        for (int64_t step : t.steps)
            if (!t.files[step].count(r))
                missing.push_back(step);
        if (missing.size() == t.steps.size())
            never.push_back(r);
        else if (!missing.empty())
            t.notes.push_back(fmt::format("rank {} is not recorded at step{} {} (no dump of it there)", r,
                                          missing.size() > 1 ? "s" : "", ranges(missing)));
    }
    if (!never.empty())
        t.notes.push_back(
            fmt::format("rank{} {} {} no dump at any step (msprobe's rank list, or the job's): not "
                        "recorded",
                        never.size() > 1 ? "s" : "", ranges(never), never.size() > 1 ? "have" : "has"));
}

DumpTree findDumpTree(const fs::path& dir) {
    DumpTree t;
    t.root = dumpRoot(dir);
    if (t.root.empty())
        throw ImportError(fmt::format("{}: no msprobe dump here (step<N>/rank<R>/dump.json)", dir.string()));
    std::error_code ec;
    std::map<int64_t, StepFolders> steps;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(t.root, ec))
        if (e.is_directory(ec))
            dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) {
        const std::string name = d.filename().string();
        if (const auto step = stepOf(name))
            steps[*step] = foldersIn(d, *step, t.notes);
        else if (name.rfind("step", 0) == 0)
            t.notes.push_back(fmt::format("folder '{}' is not step<N>: left out", name));
        // anything else is not the dump's (a user's notes, a tensor folder elsewhere)
    }
    const auto unnumbered = ranksOfUnnumbered(steps, t.notes);
    for (const auto& [step, f] : steps) {
        for (const RankFolder& r : f.numbered)
            addFile(t, step, int(r.id), r);
        for (const RankFolder& r : f.unnumbered)
            if (const auto it = unnumbered.find(r.name); it != unnumbered.end())
                addFile(t, step, it->second, r);
    }
    std::vector<int64_t> empty;
    for (const auto& [step, f] : steps)
        if (t.files.count(step))
            t.steps.push_back(step);
        else
            empty.push_back(step);
    if (t.steps.empty())
        throw ImportError(
            fmt::format("{}: no dump.json of a known rank in any step folder", t.root.string()));
    if (!empty.empty())
        t.notes.push_back(fmt::format("step{} {}: no dump of a known rank, not imported",
                                      empty.size() > 1 ? "s" : "", ranges(empty)));
    t.worldSize = int(t.rankFolder.size());
    noteMissingRanks(t);
    return t;
}

int64_t numelOf(const DumpTensor& d) {
    int64_t n = 1;
    for (int64_t x : d.shape)
        if (__builtin_mul_overflow(n, x, &n))
            return -1;
    return n;
}

// The parameters of the whole tree, in first-seen order, with their shapes: the run file's /params.
struct ParamSet {
    std::vector<std::string> names;
    std::map<std::string, int> index;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int64_t> numel;
    std::string task, level, framework;
    bool anyGrad = false, anyWeight = false;
    // The statistics any gradient (weight) had, DumpTensor::recorded bits: a dump of checksums only
    // (summary_mode md5 or xor) names its tensors without Max, Min, Mean or Norm.
    uint8_t gradStats = 0, weightStats = 0;

    // Parameters no file gave a readable shape (yet): the run file's layout needs it, so they are left out.
    std::set<std::string> shapeless;

    void add(const std::map<std::string, DumpTensor>& m, const fs::path& file) {
        for (const auto& [name, d] : m) {
            if (!d.shapeKnown) {
                if (!index.count(name))
                    shapeless.insert(name);
                continue;
            }
            shapeless.erase(name);
            if (index.emplace(name, int(names.size())).second) {
                const int64_t n = numelOf(d);
                if (n < 0 || n > runschema::kMaxTotalElements)
                    throw ImportError(
                        fmt::format("{}: parameter '{}': its shape holds more elements than a run "
                                    "file does ({})",
                                    file.string(), name, runschema::kMaxTotalElements));
                names.push_back(name);
                shapes.push_back(d.shape);
                numel.push_back(n);
            }
        }
    }
    // A parameter pass 1 saw (nullopt: one left out for its shape); a new one means the file changed between
    // the passes.
    std::optional<size_t> at(const std::string& name, const fs::path& file) const {
        const auto it = index.find(name);
        if (it == index.end() && shapeless.count(name))
            return std::nullopt;
        if (it == index.end())
            throw ImportError(
                fmt::format("{}: parameter '{}' was not there when the tree was first read: the "
                            "dump changed while it was imported",
                            file.string(), name));
        return size_t(it->second);
    }
};

void checkTask(ParamSet& ps, const DumpFile& f, const fs::path& file, const fs::path& first) {
    if (ps.task.empty()) {
        ps.task = f.task;
        ps.level = f.level;
        ps.framework = f.framework;
        if (f.task != "statistics" && f.task != "tensor" && f.task != "md5")
            throw ImportError(fmt::format("{}: task '{}' (statistics, tensor or md5 dumps hold statistics)",
                                          file.string(), f.task));
        if (f.level == "L2")
            throw ImportError(
                fmt::format("{}: level L2 dumps kernels, not tensors: nothing to import", file.string()));
    } else if (f.task != ps.task)
        throw ImportError(fmt::format("{}: task '{}', but {} is '{}': two dumps written into one folder?",
                                      file.string(), f.task, first.string(), ps.task));
}

RunMeta metaOf(const DumpTree& t, const ParamSet& ps, const std::vector<std::string>& absent,
               const std::vector<std::string>& notes) {
    nlohmann::json rankFolders = nlohmann::json::array(); // index = rank; null: no folder of that rank
    for (const auto& f : t.rankFolder)
        rankFolders.push_back(f ? nlohmann::json(*f) : nlohmann::json(nullptr));
    RunMeta m;
    m.source = "msprobe";
    m.model = "msprobe import";
    m.worldSize = t.worldSize;
    m.precision = m.lossScale = "unknown";
    m.data = "msprobe:" + t.root.string();
    m.weightEvery = ps.anyWeight ? 1 : 0;
    m.plannedSteps = int64_t(t.steps.size());
    m.absent = absent;
    m.configJson = nlohmann::json{{"source", "msprobe"},
                                  {"layout", "dump"},
                                  {"dump_path", t.root.string()},
                                  {"task", ps.task},
                                  {"level", ps.level},
                                  {"framework", ps.framework},
                                  {"rank_folders", rankFolders},
                                  {"notes", notes}}
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    m.rankTableJson = "{}";
    m.environment = nlohmann::json{{"source", "msprobe"}, {"framework", ps.framework}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    int64_t offset = 0;
    for (size_t p = 0; p < ps.names.size(); ++p) {
        ParamInfo info;
        info.name = ps.names[p];
        info.shape = ps.shapes[p];
        info.numel = ps.numel[p];
        if (offset > runschema::kMaxTotalElements - info.numel)
            throw ImportError(
                fmt::format("{}: the parameters together hold more elements than a run file does ({})",
                            t.root.string(), runschema::kMaxTotalElements));
        info.offset = offset;
        offset += info.numel;
        m.params.push_back(std::move(info));
    }
    m.cards = unknownCards(m.worldSize);
    return m;
}

// What the run file cannot hold from this dump: never a monitor's, and the statistics no gradient or weight
// had.
std::vector<std::string> absentOf(const ParamSet& ps) {
    std::vector<std::string> absent = msprobeNeverRecorded();
    absent.insert(absent.end(), {"/grads/synced_norm", "/grads/synced_sum"});
    const uint8_t g = ps.gradStats;
    if (!(g & 8))
        absent.emplace_back("/grads/local_norm");
    if ((g & 3) != 3)
        absent.emplace_back("/grads/local_max");
    if (!(g & 4))
        absent.emplace_back("/grads/local_sum");
    if (g == 0)
        absent.emplace_back("/grads/nonfinite");
    if (!(ps.weightStats & 8))
        absent.emplace_back("/weights/norm");
    return absent;
}

// A rank with no dump at a step: every value NaN, every per-parameter vector empty (the writer stores NaN).
RankStep notRecorded() {
    return unrecordedRankStep(0);
}

RankStep rankStepOf(const DumpFile& f, const ParamSet& ps, const fs::path& file) {
    const size_t P = ps.names.size();
    RankStep x = unrecordedRankStep(P);
    for (const auto& [name, d] : f.grads) {
        const auto at = ps.at(name, file);
        if (!at)
            continue;
        const size_t p = *at;
        if (d.recorded & 8)
            x.localNorm[p] = d.norm;
        if ((d.recorded & 3) == 3)
            x.localMax[p] = std::max(std::fabs(d.max), std::fabs(d.min));
        if (d.recorded & 4)
            x.localSum[p] = double(d.mean) * double(ps.numel[p]);
        // A non-finite statistic means at least one non-finite element; the dump does not count them.
        const bool bad =
            ((d.recorded & 1) && !std::isfinite(d.max)) || ((d.recorded & 2) && !std::isfinite(d.min)) ||
            ((d.recorded & 4) && !std::isfinite(d.mean)) || ((d.recorded & 8) && !std::isfinite(d.norm));
        x.nonfinite[p] = bad ? 1 : 0;
    }
    return x;
}

} // namespace

bool isMsprobeDumpTree(const fs::path& dir) {
    return !dumpRoot(dir).empty();
}

MsprobeImportResult importMsprobeDump(const std::string& dir, const std::string& out, bool overwrite,
                                      const std::function<void(int)>& progress) {
    checkImportTarget(out, overwrite);
    const DumpTree t = findDumpTree(dir);
    const int R = t.worldSize;
    const int64_t files = t.fileCount();

    // Pass 1: every file is read and checked; the parameters and their shapes are collected.
    ParamSet ps;
    const fs::path first = t.files.begin()->second.begin()->second;
    int64_t done = 0, textStats = 0, badShapes = 0;
    std::string firstTextStat, firstBadShape;
    for (const auto& [step, ranks] : t.files)
        for (const auto& [r, file] : ranks) {
            const DumpFile f = msprobe::readDumpFile(file, msprobe::DumpPart::Parameters);
            checkTask(ps, f, file, first);
            ps.anyGrad |= !f.grads.empty();
            ps.anyWeight |= !f.weights.empty();
            for (const auto& [name, d] : f.grads)
                ps.gradStats |= d.recorded;
            for (const auto& [name, d] : f.weights)
                ps.weightStats |= d.recorded;
            ps.add(f.grads, file);
            ps.add(f.weights, file);
            if (textStats == 0 && f.textStats > 0)
                firstTextStat = fmt::format("{} in {}", f.firstTextStat, relativeName(file, t.root));
            textStats += f.textStats;
            if (badShapes == 0 && f.badShapes > 0)
                firstBadShape = fmt::format("{} in {}", f.firstBadShape, relativeName(file, t.root));
            badShapes += f.badShapes;
            if (progress)
                progress(int(40 * ++done / files));
        }

    MsprobeImportResult res;
    res.monitorDir = t.root.string();
    res.layout = "dump (" + ps.task + ", level " + (ps.level.empty() ? "?" : ps.level) + ")";
    res.ranks = R;
    res.steps = int64_t(t.steps.size());
    res.params = int(ps.names.size());
    res.files = files;
    res.notes = t.notes;
    if (textStats > 0)
        res.notes.push_back(fmt::format("{} statistic{} written as text that is no number ({}): not recorded",
                                        textStats, textStats > 1 ? "s" : "", firstTextStat));
    if (badShapes > 0)
        res.notes.push_back(
            fmt::format("{} tensor{} with a shape that is no list of dimensions ({}): the shape is not "
                        "recorded, the statistics are",
                        badShapes, badShapes > 1 ? "s" : "", firstBadShape));
    for (const std::string& name : ps.shapeless)
        res.notes.push_back(fmt::format("parameter '{}' has no readable shape in any dump: left out", name));
    if (!ps.anyGrad)
        res.notes.emplace_back(ps.level == "L1" ? "level L1 records no parameter gradients (L0 or mix does)"
                                                : "no parameter gradients (parameters_grad) in the dump");
    if (ps.gradStats != 0) {
        res.notes.emplace_back(
            "parameter gradients are each rank's own, as the gradient hook saw them before the "
            "all-reduce: synced gradients are not recorded");
        res.notes.emplace_back(
            "a non-finite statistic marks a gradient as holding non-finite values (at least one; "
            "the dump does not count them)");
    }
    res.notes.emplace_back("arguments that are no tensor (numbers, None, process groups, reduce ops) have no "
                           "statistics: they are not imported");
    res.absent = absentOf(ps);
    if (ps.anyGrad && ps.gradStats == 0)
        res.notes.emplace_back(
            "the parameter gradients carry no statistics (a dump of checksums: summary_mode "
            "md5 or xor): their norms are not recorded");
    const RunMeta meta = metaOf(t, ps, res.absent, res.notes);

    // Pass 2: one step of all ranks at a time; a rank without a dump at a step is not recorded there.
    writeImport(out, meta, "imported from msprobe", [&](RunWriter& w) {
        done = 0;
        for (int64_t step : t.steps) {
            const auto& ranks = t.files.at(step);
            StepRecord st;
            st.step = step;
            st.lr = kNaN;
            WeightRecord wr;
            wr.step = step;
            wr.fp.assign(size_t(R), {});
            wr.norm.assign(size_t(R), std::vector<float>(ps.names.size(), kNaN));
            wr.bufferFp.assign(size_t(R), 0);
            wr.bufferDrift.assign(size_t(R), kNaN);
            for (int r = 0; r < R; ++r) {
                const auto it = ranks.find(r);
                if (it == ranks.end()) {
                    st.ranks.push_back(notRecorded());
                    continue;
                }
                const fs::path& file = it->second;
                DumpFile f = msprobe::readDumpFile(file, msprobe::DumpPart::Everything);
                st.ranks.push_back(rankStepOf(f, ps, file));
                for (const auto& [name, d] : f.weights)
                    if (const auto p = ps.at(name, file); p && (d.recorded & 8))
                        wr.norm[size_t(r)][*p] = d.norm;
                for (TensorStat& s : f.tensors) {
                    s.rank = r;
                    s.step = step;
                }
                w.appendTensorStats(f.tensors); // one rank's at a time: a step of many ranks may be large
                if (progress)
                    progress(40 + int(60 * ++done / files));
            }
            w.appendStep(st);
            if (ps.anyWeight)
                w.appendWeights(wr);
        }
    });
    return res;
}

} // namespace rs
