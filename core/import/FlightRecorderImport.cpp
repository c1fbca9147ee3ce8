// importFlightRecorder: see FlightRecorderImport.h. Read every dump first (nothing written yet), then write
// under a temporary name and rename into place, so a failure at any point leaves no file.
#include "import/FlightRecorderImport.h"

#include "import/FlightRecorderDumps.h"
#include "import/ImportTarget.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"
#include "store/RunSlice.h"
#include "store/RunWriter.h"

#include <algorithm>
#include <filesystem>
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

// The process groups of all dumps: a group every rank names must have the same members in each.
std::vector<GroupConfig> mergeGroups(const std::vector<RankDump>& dumps) {
    std::map<std::string, std::pair<GroupConfig, fs::path>> byName;
    for (const RankDump& d : dumps)
        for (const GroupConfig& g : d.groups) {
            const auto [it, inserted] = byName.emplace(g.name, std::pair{g, d.path});
            if (!inserted && (it->second.first.ranks != g.ranks || it->second.first.desc != g.desc))
                throw ImportError(
                    fmt::format("{}: process group '{}' has other members or another description "
                                "than in {}: the dumps are not of one job",
                                d.path.string(), g.name, it->second.second.string()));
        }
    std::vector<GroupConfig> groups;
    groups.reserve(byName.size());
    for (auto& [name, g] : byName)
        groups.push_back(std::move(g.first));
    return groups;
}

// Groups the entries name that no pg_config lists (2.2 dumps): every dumped rank is taken as a member.
void addUnlistedGroups(std::vector<GroupConfig>& groups, const std::vector<RankDump>& dumps,
                       const std::vector<int>& ranks) {
    std::set<std::string> known;
    for (const GroupConfig& g : groups)
        known.insert(flightrec::groupLabel(g.name, g.desc));
    for (const RankDump& d : dumps)
        for (const Collective& c : d.collectives)
            if (known.insert(c.group).second) {
                GroupConfig g;
                g.name = c.group;
                g.ranks = ranks;
                groups.push_back(std::move(g));
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
                              const std::vector<GroupConfig>& groups) {
    nlohmann::json pgs = nlohmann::json::array();
    for (const GroupConfig& g : groups)
        pgs.push_back({{"name", g.name}, {"desc", g.desc}, {"ranks", g.ranks}});
    nlohmann::json files = nlohmann::json::array();
    for (const fs::path& f : set.files)
        files.push_back(f.filename().string());
    return {{"folder", set.dir.string()},
            {"prefix", set.prefix},
            {"version", res.version},
            {"backend", res.backend},
            {"process_groups", pgs},
            {"dumped_ranks", res.dumped},
            {"files", files},
            {"missing_ranks", res.missing},
            {"notes", res.notes}};
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

// Each collective's step: the first step that ended after its rank enqueued it; after the last, last + 1.
void placeInSteps(std::vector<Collective>& all, const RunReader& run, FlightImportResult& res) {
    if (!run.meta().recorded(rsc::kStepColumns[rsc::kEndNs].path))
        throw ImportError(
            fmt::format("{}: the run records no step times (/steps/end_ns), so collectives cannot "
                        "be placed in its steps; record the job with this version's "
                        "ranksight.ddp.Recorder, or import the dumps alone",
                        run.path()));
    std::vector<std::pair<int64_t, int64_t>> ends; // end time, step
    for (int64_t b = 0, n = run.stepCount(); b < n; b += 4096)
        for (const StepRecord& s : run.readSteps(b, std::min(n, b + 4096), false))
            if (s.endNs > 0)
                ends.emplace_back(s.endNs, s.step);
    std::sort(ends.begin(), ends.end());
    res.joinedSteps = run.stepCount();
    if (ends.empty())
        return;
    const int64_t last = std::max_element(ends.begin(), ends.end(), [](auto& a, auto& b) {
                             return a.second < b.second;
                         })->second;
    for (Collective& c : all) {
        const auto it = std::lower_bound(ends.begin(), ends.end(), std::pair{c.createdNs, int64_t(-1)});
        c.step = it == ends.end() ? last + 1 : it->second;
    }
    res.notes.emplace_back(fmt::format("collectives placed in the steps of {} by time (its ranks' clocks and "
                                       "the dumps' must agree: one host, or "
                                       "hosts synchronised by NTP/PTP)",
                                       run.path()));
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
    for (const RankDump& d : dumps)
        if (res.backend.empty())
            res.backend = d.backend;
    std::vector<GroupConfig> groups = mergeGroups(dumps);
    addUnlistedGroups(groups, dumps, set.ranks);
    res.groups = int(groups.size());
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
    std::vector<Collective> all;
    for (RankDump& d : dumps)
        for (Collective& c : d.collectives)
            all.push_back(std::move(c));
    res.collectives = int64_t(all.size());

    if (world > rsc::kMaxWorldSize)
        throw ImportError(fmt::format("{}: the dumps name rank {}, more than a run file holds ({} ranks)",
                                      res.dir, world - 1, rsc::kMaxWorldSize));
    if (o.run) {
        if (o.run->meta().worldSize < world)
            throw ImportError(fmt::format("{}: the dumps name {} ranks, the run {} has {}: not the same job",
                                          res.dir, world, o.run->path(), o.run->meta().worldSize));
        world = o.run->meta().worldSize;
        placeInSteps(all, *o.run, res);
    }
    res.worldSize = world;
    const nlohmann::json fr = recorderConfig(set, res, groups);
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
