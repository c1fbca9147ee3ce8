// importFlightRecorder: see FlightRecorderImport.h. Read every dump first (nothing written yet), then write
// under a temporary name and rename into place, so a failure at any point leaves no file.
#include "import/FlightRecorderImport.h"

#include "import/FlightRecorderDumps.h"
#include "import/ImportTarget.h"
#include "store/CollectiveNames.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"
#include "store/RunSlice.h"
#include "store/RunWriter.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace rs {
namespace {

namespace fs = std::filesystem;
namespace rsc = runschema;
using flightrec::GroupConfig;
using flightrec::RankDump;

std::string joinInts(const std::vector<int>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
        s += fmt::format("{}{}", i ? ", " : "", v[i]);
    return s;
}

// The process groups of all dumps, one per name and members: split_group gives several groups one name with
// other members on other ranks (PyTorch's analyser keys them by both), and those are labelled with their
// ranks. The same group must have one description in every dump.
std::vector<GroupConfig> mergeGroups(const std::vector<RankDump>& dumps) {
    std::map<std::pair<std::string, std::vector<int>>, std::pair<GroupConfig, fs::path>> byKey;
    for (const RankDump& d : dumps)
        for (const GroupConfig& g : d.groups) {
            const auto [it, inserted] = byKey.emplace(std::pair{g.name, g.ranks}, std::pair{g, d.path});
            if (!inserted && it->second.first.desc != g.desc)
                throw ImportError(fmt::format("{}: process group '{}' is described '{}' here and '{}' in {}: "
                                              "the dumps are not of one job",
                                              d.path.string(), g.name, g.desc, it->second.first.desc,
                                              it->second.second.string()));
        }
    std::map<std::string, int> sets; // member sets per name
    for (const auto& [key, g] : byKey)
        ++sets[key.first];
    std::vector<GroupConfig> groups;
    groups.reserve(byKey.size());
    for (auto& [key, g] : byKey) {
        GroupConfig gc = std::move(g.first);
        gc.label =
            sets[gc.name] > 1
                ? collectiveGroupLabel(gc.name, fmt::format("{}{}ranks {}", gc.desc,
                                                            gc.desc.empty() ? "" : ", ", joinInts(gc.ranks)))
                : collectiveGroupLabel(gc.name, gc.desc);
        groups.push_back(std::move(gc));
    }
    return groups;
}

// Each collective's group label: the group of that name in its own rank's pg_config (the entry's own
// description may differ: PyTorch's analyser tests write "default" there and "default_pg" in pg_config). A
// name no pg_config lists (2.2 dumps) becomes a group of its own with every dumped rank as a member.
void labelCollectives(std::vector<RankDump>& dumps, std::vector<GroupConfig>& groups,
                      const std::vector<int>& ranks) {
    std::map<std::pair<std::string, std::vector<int>>, std::string> labelOf;
    std::map<std::string, std::vector<std::string>> labelsByName;
    std::set<std::string> known;
    for (const GroupConfig& g : groups) {
        labelOf[{g.name, g.ranks}] = g.label;
        labelsByName[g.name].push_back(g.label);
        known.insert(g.label);
    }
    for (RankDump& d : dumps) {
        std::map<std::string, std::string> own;
        for (const GroupConfig& g : d.groups)
            own[g.name] = labelOf[{g.name, g.ranks}];
        for (size_t i = 0; i < d.collectives.size(); ++i) {
            Collective& c = d.collectives[i];
            if (const auto it = own.find(c.group); it != own.end()) {
                c.group = it->second;
                continue;
            }
            if (const auto it = labelsByName.find(c.group);
                it != labelsByName.end() && it->second.size() == 1) {
                c.group = it->second.front();
                continue;
            }
            const std::string label = collectiveGroupLabel(c.group, d.entryDescs[i]);
            if (known.insert(label).second) {
                GroupConfig g;
                g.name = c.group;
                g.desc = d.entryDescs[i];
                g.ranks = ranks;
                g.label = label;
                groups.push_back(std::move(g));
            }
            c.group = label;
        }
    }
}

std::vector<std::string> everythingAbsent() {
    std::vector<std::string> absent;
    for (int c = 0; c < rsc::kStepColCount; ++c)
        if (c != rsc::kStep)
            absent.emplace_back(rsc::kStepColumns[size_t(c)].path);
    for (int c = 0; c < rsc::kWeightColCount; ++c)
        if (c != rsc::kWStep)
            absent.emplace_back(rsc::kWeightColumns[size_t(c)].path);
    for (const char* a : rsc::kAbsentAttributes)
        absent.emplace_back(a);
    return absent;
}

nlohmann::json recorderConfig(const flightrec::DumpSet& set, const FlightImportResult& res,
                              const std::vector<GroupConfig>& groups, const nlohmann::json& tracebacks) {
    nlohmann::json pgs = nlohmann::json::array();
    for (const GroupConfig& g : groups)
        pgs.push_back({{"name", g.name}, {"desc", g.desc}, {"ranks", g.ranks}, {"label", g.label}});
    nlohmann::json files = nlohmann::json::array();
    for (const fs::path& f : set.files)
        files.push_back(f.filename().string());
    nlohmann::json fr = {{"folder", set.dir.string()},      {"prefix", set.prefix},
                         {"version", res.version},          {"backend", res.backend},
                         {"comm_lib_version", res.commLib}, {"process_groups", pgs},
                         {"dumped_ranks", res.dumped},      {"files", files},
                         {"missing_ranks", res.missing},    {"notes", res.notes}};
    if (std::any_of(set.hosts.begin(), set.hosts.end(), [](const std::string& h) { return !h.empty(); })) {
        nlohmann::json hosts = nlohmann::json::object();
        for (size_t i = 0; i < set.ranks.size(); ++i)
            hosts[std::to_string(set.ranks[i])] = set.hosts[i];
        fr["hosts"] = hosts;
    }
    if (!tracebacks.empty())
        fr["py_tracebacks"] = tracebacks;
    if (res.joinedSteps >= 0)
        fr["join"] = {{"clock_tolerance_s", kJoinClockToleranceNs / 1'000'000'000},
                      {"before_run", res.beforeRun}};
    return fr;
}

RunMeta standaloneMeta(const FlightImportResult& res, const nlohmann::json& fr) {
    RunMeta m;
    m.source = "flight-recorder";
    m.model = "flight-recorder import";
    m.worldSize = res.worldSize;
    m.precision = m.lossScale = "unknown";
    m.data = "flight-recorder:" + res.dir;
    m.absent = everythingAbsent();
    m.configJson = nlohmann::json{{"source", "flight-recorder"}, {"flight_recorder", fr}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    m.rankTableJson = "{}";
    m.environment =
        nlohmann::json{{"source", "flight-recorder"}, {"backend", res.backend}, {"version", res.version}}
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    m.cards = unknownCards(m.worldSize);
    return m;
}

// The joined run's meta, its config holding the recorder's part too.
RunMeta joinedMeta(const RunReader& run, const nlohmann::json& fr) {
    RunMeta m = run.meta();
    auto cfg = nlohmann::json::parse(m.configJson, nullptr, false);
    if (!cfg.is_object())
        cfg = nlohmann::json::object();
    cfg["flight_recorder"] = fr;
    m.configJson = cfg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return m;
}

std::string utc(int64_t ns) {
    return fmt::format("{:%Y-%m-%d %H:%M:%S}", fmt::gmtime(std::time_t(ns / 1'000'000'000)));
}

// The run's recorded time: each step's end, and when its first step started.
struct RunTime {
    std::vector<std::pair<int64_t, int64_t>> ends; // end time, step; by time
    int64_t firstStep = 0, lastStep = 0;
    int64_t start = 0, end = 0; // the first step's start, the last step's end (ns since the epoch)
};

RunTime runTime(const RunReader& run) {
    if (!run.meta().recorded(rsc::kStepColumns[rsc::kEndNs].path))
        throw JoinRefused(
            fmt::format("{}: the run records no step times (/steps/end_ns), so collectives cannot "
                        "be placed in its steps; record the job with this version's "
                        "ranksight.ddp.Recorder, or import the dumps alone",
                        run.path()));
    RunTime t;
    float firstStepMs = 0;
    int64_t earliest = 0;
    const bool stepMs = run.meta().recorded(rsc::kStepColumns[rsc::kStepMs].path);
    for (int64_t b = 0, n = run.stepCount(); b < n; b += 4096)
        for (const StepRecord& s : run.readSteps(b, std::min(n, b + 4096), false)) {
            if (s.endNs <= 0)
                continue;
            if (t.ends.empty() || s.endNs < earliest) { // the longest rank's time of the earliest step
                earliest = s.endNs;
                firstStepMs = 0;
                for (const RankStep& r : s.ranks)
                    if (stepMs && std::isfinite(r.stepMs))
                        firstStepMs = std::max(firstStepMs, r.stepMs);
            }
            t.ends.emplace_back(s.endNs, s.step);
        }
    if (t.ends.empty())
        throw JoinRefused(fmt::format("{}: no step of the run has its end time recorded, so nothing can "
                                      "show the dumps belong to it; import the dumps alone",
                                      run.path()));
    std::sort(t.ends.begin(), t.ends.end());
    t.end = t.ends.back().first;
    t.firstStep = t.ends.front().second;
    t.lastStep = std::max_element(t.ends.begin(), t.ends.end(), [](auto& a, auto& b) {
                     return a.second < b.second;
                 })->second;
    // The first step's start: its own duration if recorded, else the next step's (steps take alike); with
    // one step and no duration, its end (what came before it is not known to be part of it).
    int64_t firstNs = int64_t(double(firstStepMs) * 1e6);
    if (firstNs <= 0 && t.ends.size() > 1)
        firstNs = t.ends[1].first - t.ends[0].first;
    t.start = t.ends.front().first - std::max<int64_t>(firstNs, 0);
    return t;
}

// Evidence that the dumps can belong to the run: their ranks are ranks of the run, and every dumped rank's
// entries overlap the run's recorded time, widened by kJoinClockToleranceNs on each side.
void checkJoin(const std::vector<RankDump>& dumps, int world, const std::string& dir, const RunReader& run,
               const RunTime& t) {
    if (run.meta().worldSize < world)
        throw JoinRefused(
            fmt::format("{}: the dumps name rank {}, but the run {} has ranks 0-{}: not the same "
                        "job; import the dumps alone",
                        dir, world - 1, run.path(), run.meta().worldSize - 1));
    const int64_t from = t.start - kJoinClockToleranceNs, to = t.end + kJoinClockToleranceNs;
    bool anyTime = false;
    for (const RankDump& d : dumps) {
        int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
        for (const Collective& c : d.collectives)
            if (c.createdNs > 0) {
                first = std::min(first, c.createdNs);
                last = std::max(last, c.createdNs);
            }
        if (last == 0)
            continue; // nothing timed on this rank: no evidence either way
        anyTime = true;
        if (last < from || first > to)
            throw JoinRefused(fmt::format(
                "{}: rank {}'s collectives were enqueued {} to {} UTC, outside the run {} ({} to {} UTC, "
                "steps {}-{}) even allowing {} s for clocks that differ: the dumps are not of this run; "
                "import them alone",
                d.path.string(), d.rank, utc(first), utc(last), run.path(), utc(t.start), utc(t.end),
                t.firstStep, t.lastStep, kJoinClockToleranceNs / 1'000'000'000));
    }
    if (!anyTime)
        throw JoinRefused(
            fmt::format("{}: the dumps record no enqueue times (time_created_ns is 0 or "
                        "missing), so nothing shows they belong to the run {}; import them alone",
                        dir, run.path()));
}

// Each collective's step: the first step that ended after its rank enqueued it; after the last, last + 1 (the
// step in progress); before the first step started, kCollectiveBeforeRun; no time recorded, -1 (not known).
void placeInSteps(std::vector<Collective>& all, const RunTime& t, FlightImportResult& res,
                  const std::string& runPath) {
    for (Collective& c : all) {
        if (c.createdNs <= 0) {
            c.step = -1;
            continue;
        }
        if (c.createdNs < t.start) {
            c.step = kCollectiveBeforeRun;
            ++res.beforeRun;
            continue;
        }
        const auto it = std::lower_bound(t.ends.begin(), t.ends.end(), std::pair{c.createdNs, int64_t(-1)});
        c.step = it == t.ends.end() ? t.lastStep + 1 : it->second;
    }
    res.notes.emplace_back(fmt::format("collectives placed in the steps of {} by time (its ranks' clocks and "
                                       "the dumps' must agree: one host, or "
                                       "hosts synchronised by NTP/PTP)",
                                       runPath));
    if (res.beforeRun > 0)
        res.notes.emplace_back(
            fmt::format("{} collectives were enqueued before the run's first recorded step "
                        "(step {}, started {} UTC): before the run, in no step of it",
                        res.beforeRun, t.firstStep, utc(t.start)));
}

// torch_npu's Python tracebacks, {"<rank>": text}, within the run file's room for them.
nlohmann::json readTracebacks(const flightrec::DumpSet& set, FlightImportResult& res) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [rank, file] : set.tracebacks) {
        std::string text = flightrec::readTraceback(file, kMaxTracebackBytes);
        // Python wrote it as text; bytes that are not UTF-8 are replaced when the config is written.
        out[std::to_string(rank)] = std::move(text);
        res.tracebacks.push_back(rank);
    }
    if (!res.tracebacks.empty())
        res.notes.emplace_back(fmt::format("Python tracebacks (torch_npu's _py_traceback files) of rank{} {}",
                                           res.tracebacks.size() > 1 ? "s" : "", joinInts(res.tracebacks)));
    return out;
}

} // namespace

FlightImportResult importFlightRecorder(const std::string& path, const std::string& out,
                                        const FlightImportOptions& o) {
    checkImportTarget(out, o.overwrite);
    const flightrec::DumpSet set = flightrec::findDumps(path, o.prefix);
    std::vector<RankDump> dumps;
    for (size_t i = 0; i < set.files.size(); ++i) {
        dumps.push_back(flightrec::readDump(set.files[i], set.ranks[i]));
        if (dumps.back().version != dumps.front().version)
            throw ImportError(
                fmt::format("{}: version {}, but {} is version {}: the dumps are not of one job "
                            "(or of one PyTorch)",
                            set.files[i].string(), dumps.back().version, set.files.front().string(),
                            dumps.front().version));
        if (o.progress)
            o.progress(int(70 * (i + 1) / set.files.size()));
    }
    FlightImportResult res;
    res.dir = set.dir.string();
    res.prefix = set.prefix;
    res.version = dumps.front().version;
    res.dumped = set.ranks;
    for (const RankDump& d : dumps) {
        if (res.backend.empty())
            res.backend = d.backend;
        if (res.commLib.empty())
            res.commLib = d.commLib;
    }
    std::vector<GroupConfig> groups = mergeGroups(dumps);
    labelCollectives(dumps, groups, set.ranks);
    res.groups = int(groups.size());
    const nlohmann::json tracebacks = readTracebacks(set, res);
    int world = set.ranks.back() + 1;
    std::set<int> members;
    for (const GroupConfig& g : groups)
        for (int r : g.ranks) {
            members.insert(r);
            world = std::max(world, r + 1);
        }
    for (int r : members)
        if (!std::binary_search(set.ranks.begin(), set.ranks.end(), r))
            res.missing.push_back(r);
    if (!res.missing.empty())
        res.notes.emplace_back(fmt::format("{} of {} ranks left no dump (their files are missing from {})",
                                           res.missing.size(), members.size(), res.dir));
    if (world > rsc::kMaxWorldSize)
        throw ImportError(fmt::format("{}: the dumps name rank {}, more than a run file holds ({} ranks)",
                                      res.dir, world - 1, rsc::kMaxWorldSize));
    RunTime t;
    if (o.run) {
        t = runTime(*o.run);
        checkJoin(dumps, world, res.dir, *o.run, t);
    }
    std::vector<Collective> all;
    for (RankDump& d : dumps)
        for (Collective& c : d.collectives)
            all.push_back(std::move(c));
    res.collectives = int64_t(all.size());
    if (o.run) {
        world = o.run->meta().worldSize;
        res.joinedSteps = o.run->stepCount();
        placeInSteps(all, t, res, o.run->path());
    }
    res.worldSize = world;
    const nlohmann::json fr = recorderConfig(set, res, groups, tracebacks);
    const RunMeta meta = o.run ? joinedMeta(*o.run, fr) : standaloneMeta(res, fr);

    writeImport(out, meta, o.run ? o.run->stopReason() : "imported from flight-recorder dumps",
                [&](RunWriter& w) {
                    if (o.run) // every row of the run, whatever its steps
                        copyRunRows(*o.run, w, std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max());
                    if (o.progress)
                        o.progress(85);
                    w.appendCollectives(all);
                });
    if (o.progress)
        o.progress(100);
    return res;
}

} // namespace rs
