// importMsprobeDump: see MsprobeDumpImport.h. Folder rules follow msprobe's core/dump/service.py: step<N>
// folders, rank<R> (older msprobe: a single `rank` folder when the rank was unknown; the newest: proc<pid>
// until it is known), each with dump.json.
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

namespace rs {
namespace {

namespace fs = std::filesystem;
using msprobe::DumpFile;
using msprobe::DumpTensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct DumpTree {
    fs::path root;
    std::vector<int64_t> steps;             // ascending
    std::vector<std::string> rankFolders;   // index = rank
    std::map<int64_t, fs::path> stepFolder; // step -> folder
};

// "step12" -> 12; nullopt for any other name.
std::optional<int64_t> stepOf(const std::string& name) {
    if (name.rfind("step", 0) != 0)
        return std::nullopt;
    return msprobe::decimal(std::string_view(name).substr(4));
}

// The rank of a rank folder: rank<R>; `rank` and proc<pid> stand for one unknown rank (0).
std::optional<int> rankOf(const std::string& name) {
    if (name == "rank")
        return 0;
    if (name.rfind("proc", 0) == 0 && msprobe::decimal(std::string_view(name).substr(4)))
        return 0;
    if (name.rfind("rank", 0) == 0)
        if (const auto r = msprobe::decimal(std::string_view(name).substr(4)); r && *r < (1 << 20))
            return int(*r);
    return std::nullopt;
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

// The ranks of one step folder, by rank.
std::map<int, std::string> ranksIn(const fs::path& stepDir) {
    std::map<int, std::string> ranks;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(stepDir, ec)) {
        if (!e.is_directory(ec))
            continue;
        const std::string name = e.path().filename().string();
        const auto r = rankOf(name);
        if (!r)
            throw ImportError(fmt::format("{}: folder '{}' is not rank<N>", stepDir.string(), name));
        if (!fs::exists(e.path() / "dump.json", ec))
            throw ImportError(fmt::format("{}: no dump.json", e.path().string()));
        if (const auto [it, fresh] = ranks.emplace(*r, name); !fresh)
            throw ImportError(fmt::format("{}: folders '{}' and '{}' both hold rank {}", stepDir.string(),
                                          it->second, name, *r));
    }
    return ranks;
}

DumpTree findDumpTree(const fs::path& dir) {
    DumpTree t;
    t.root = dumpRoot(dir);
    if (t.root.empty())
        throw ImportError(fmt::format("{}: no msprobe dump here (step<N>/rank<R>/dump.json)", dir.string()));
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(t.root, ec)) {
        if (!e.is_directory(ec))
            continue;
        const std::string name = e.path().filename().string();
        const auto step = stepOf(name);
        if (!step) {
            if (name.rfind("step", 0) == 0)
                throw ImportError(fmt::format("{}: folder '{}' is not step<N>", t.root.string(), name));
            continue; // not the dump's (a user's notes, a tensor folder elsewhere)
        }
        t.stepFolder[*step] = e.path();
    }
    std::map<int, std::string> ranks;
    for (const auto& [step, folder] : t.stepFolder) {
        const auto here = ranksIn(folder);
        if (t.steps.empty())
            ranks = here;
        else if (here != ranks) {
            for (const auto& [r, name] : ranks)
                if (!here.count(r))
                    throw ImportError(
                        fmt::format("{}: no {} folder, which step{} has (every step folder holds "
                                    "the same ranks)",
                                    folder.string(), name, t.steps.front()));
            throw ImportError(
                fmt::format("{}: rank folders other than step{}'s", folder.string(), t.steps.front()));
        }
        t.steps.push_back(step);
    }
    for (const auto& [r, name] : ranks) {
        if (r != int(t.rankFolders.size()))
            throw ImportError(fmt::format("{}: rank {} is missing (ranks 0..{} must all be there)",
                                          t.stepFolder.begin()->second.string(), t.rankFolders.size(),
                                          ranks.rbegin()->first));
        t.rankFolders.push_back(name);
    }
    return t;
}

fs::path fileOf(const DumpTree& t, int64_t step, int rank) {
    return t.stepFolder.at(step) / t.rankFolders[size_t(rank)] / "dump.json";
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

    void add(const std::map<std::string, DumpTensor>& m, const fs::path& file) {
        for (const auto& [name, d] : m)
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
    // A parameter pass 1 saw; a new one means the file changed between the passes.
    size_t at(const std::string& name, const fs::path& file) const {
        const auto it = index.find(name);
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
    RunMeta m;
    m.source = "msprobe";
    m.model = "msprobe import";
    m.worldSize = int(t.rankFolders.size());
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
                                  {"rank_folders", t.rankFolders},
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

RankStep rankStepOf(const DumpFile& f, const ParamSet& ps, const fs::path& file) {
    const size_t P = ps.names.size();
    RankStep x;
    x.loss = x.accuracy = x.lossScale = x.stepMs = x.computeMs = x.commMs = kNaN;
    x.localNorm.assign(P, kNaN);
    x.localMax.assign(P, kNaN);
    x.localSum.assign(P, std::nan(""));
    x.nonfinite.assign(P, 0);
    x.syncedNorm.assign(P, kNaN);
    x.syncedSum.assign(P, std::nan(""));
    for (const auto& [name, d] : f.grads) {
        const size_t p = ps.at(name, file);
        if (d.recorded & 8)
            x.localNorm[p] = d.norm;
        if ((d.recorded & 3) == 3)
            x.localMax[p] = std::max(std::fabs(d.max), std::fabs(d.min));
        if ((d.recorded & 4) && numelOf(d) >= 0)
            x.localSum[p] = double(d.mean) * double(numelOf(d));
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
    const int R = int(t.rankFolders.size());
    const int64_t files = int64_t(t.steps.size()) * R;

    // Pass 1: every file is read and checked; the parameters and their shapes are collected.
    ParamSet ps;
    const fs::path first = fileOf(t, t.steps.front(), 0);
    int64_t done = 0;
    for (int64_t step : t.steps)
        for (int r = 0; r < R; ++r) {
            const fs::path file = fileOf(t, step, r);
            const DumpFile f = msprobe::readDumpFile(file, msprobe::DumpPart::Parameters);
            checkTask(ps, f, file, first);
            ps.anyGrad |= !f.grads.empty();
            ps.anyWeight |= !f.weights.empty();
            ps.add(f.grads, file);
            ps.add(f.weights, file);
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
    if (!ps.anyGrad)
        res.notes.emplace_back(ps.level == "L1" ? "level L1 records no parameter gradients (L0 or mix does)"
                                                : "no parameter gradients (parameters_grad) in the dump");
    res.notes.emplace_back(
        "parameter gradients are each rank's own, as the gradient hook saw them before the "
        "all-reduce: synced gradients are not recorded");
    res.notes.emplace_back(
        "a non-finite statistic marks a gradient as holding non-finite values (at least one; "
        "the dump does not count them)");
    std::vector<std::string> absent = msprobeNeverRecorded();
    absent.insert(absent.end(), {"/grads/synced_norm", "/grads/synced_sum"});
    if (!ps.anyGrad)
        absent.insert(absent.end(),
                      {"/grads/local_norm", "/grads/local_max", "/grads/local_sum", "/grads/nonfinite"});
    if (!ps.anyWeight)
        absent.emplace_back("/weights/norm");
    res.absent = absent;
    const RunMeta meta = metaOf(t, ps, absent, res.notes);

    // Pass 2: one step of all ranks at a time.
    writeImport(out, meta, "imported from msprobe", [&](RunWriter& w) {
        done = 0;
        for (int64_t step : t.steps) {
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
                const fs::path file = fileOf(t, step, r);
                DumpFile f = msprobe::readDumpFile(file, msprobe::DumpPart::Everything);
                st.ranks.push_back(rankStepOf(f, ps, file));
                for (const auto& [name, d] : f.weights)
                    if (d.recorded & 8)
                        wr.norm[size_t(r)][ps.at(name, file)] = d.norm;
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
