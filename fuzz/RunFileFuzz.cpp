// fuzz_runfile's one-input logic (FuzzEntries.h): structure-aware. The input is a small program: which seed
// run file to start from (fuzz/seeds/*.h5, written by ranksight-cli train), then either a sequence of
// mutations applied with the HDF5 C API (extents claiming billions of rows, datasets recreated with another
// dtype, rank or dims, deleted datasets, groups and attributes, attributes of the wrong type or with absurd
// string sizes, values overwritten with NaN, Inf or extreme integers, meta changed consistently across all
// tables, the superblock flagged as still open by a writer, a cut tail), or raw byte flips in the file image
// (anywhere, or only inside the datasets' stored data). The result is opened with RunReader and read the way
// the CLI and the GUI read it: meta, every table over the full range and odd sub-ranges (per-parameter
// columns both ways), key columns, step scalars, flight dumps, readAll, refresh, inspectRun, exportCsv and
// sliceRun (whose output must read back).
#include "FuzzCommon.h"
#include "FuzzEntries.h"
#include "FuzzInput.h"
#include "RunFileMutation.h"
#include "store/CsvExport.h"
#include "store/Hdf5Lock.h"
#include "store/Hdf5RunReader.h"
#include "store/Hdf5Types.h"
#include "store/RunInspection.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"
#include "store/RunSlice.h"

#include <H5Cpp.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <hdf5.h>
#include <limits>
#include <optional>
#include <unistd.h>

namespace rs::fuzz {

namespace fs = std::filesystem;
namespace rsc = runschema;

namespace {

// ---------------------------------------------------------------------------------------------------------
// reading

// Runs one reader call; a RunFileError (or, for exportCsv, a std::runtime_error) with a message naming the
// file is a clean rejection; an HDF5 C++ exception escaping is a bug.
template <class Expected = RunFileError, class F> FuzzOutcome call(const char* what, F&& f) {
    return guarded<Expected>(what, [&]() -> FuzzOutcome {
        try {
            f();
            return {false, what};
        } catch (const H5::Exception& e) {
            fuzzBug(
                fmt::format("{}: H5::Exception escaped: {} ({})", what, e.getDetailMsg(), e.getFuncName()));
        }
    });
}

template <class F> void expectRejected(const char* what, F&& f) {
    const FuzzOutcome o = call(what, f);
    if (!o.rejected)
        fuzzBug(fmt::format("{} was not rejected", what));
}

void checkSteps(const RunReader& r, const std::vector<StepRecord>& steps, int64_t n, bool perParam) {
    const RunMeta& m = r.meta();
    if (int64_t(steps.size()) != n)
        fuzzBug(fmt::format("readSteps returned {} records for {} rows", steps.size(), n));
    for (const StepRecord& s : steps) {
        if (int(s.ranks.size()) != m.worldSize)
            fuzzBug(fmt::format("step {} has {} ranks, world_size {}", s.step, s.ranks.size(), m.worldSize));
        if (!perParam)
            continue;
        for (const RankStep& rk : s.ranks)
            if (rk.localNorm.size() != m.params.size() || rk.syncedFp.size() != m.params.size() ||
                rk.sketch.size() != m.params.size() * size_t(m.sketchDim) ||
                rk.sampleIds.size() != size_t(m.batchPerRank))
                fuzzBug(fmt::format("step {}: per-parameter vectors do not match the meta", s.step));
    }
}

// Returns the in-process open's outcome (Hdf5RunReader::open): rejected with its message, or accepted.
FuzzOutcome readEverything(const std::string& path, const std::string& work, bool writeBack) {
    std::unique_ptr<RunReader> reader;
    const FuzzOutcome opened = call("RunReader::open", [&] { reader = Hdf5RunReader::open(path); });
    if (opened.rejected) {
        if (opened.message.find(path) == std::string::npos)
            fuzzBug(fmt::format("RunReader::open's message does not name the file: {}", opened.message));
        return opened;
    }
    RunReader& r = *reader;
    const RunMeta& m = r.meta();
    if (m.worldSize < 1 || (!m.cards.empty() && int(m.cards.size()) != m.worldSize))
        fuzzBug(fmt::format("meta: world_size {} with {} cards", m.worldSize, m.cards.size()));
    const int64_t n = r.stepCount();
    bool allRead = true;
    auto ok = [&](const FuzzOutcome& o) { allRead = allRead && !o.rejected; };

    ok(call("readSteps(all, scalars)", [&] { checkSteps(r, r.readSteps(0, n, false), n, false); }));
    ok(call("readSteps(all, perParam)", [&] { checkSteps(r, r.readSteps(0, n, true), n, true); }));
    const std::pair<int64_t, int64_t> ranges[] = {
        {0, std::min<int64_t>(n, 1)},
        {n / 2, n},
        {std::max<int64_t>(n - 1, 0), n},
        {std::min<int64_t>(1, n), std::max<int64_t>(n - 1, std::min<int64_t>(1, n))},
        {n, n}};
    for (const auto& range : ranges)
        for (bool perParam : {false, true}) {
            const int64_t b = range.first, e = range.second;
            ok(call("readSteps(sub-range)",
                    [&] { checkSteps(r, r.readSteps(b, e, perParam), e - b, perParam); }));
        }
    expectRejected("readSteps(-1, 0)", [&] { r.readSteps(-1, 0); });
    expectRejected("readSteps(n, n + 1)", [&] { r.readSteps(n, n + 1); });
    expectRejected("readSteps(1, 0)", [&] { r.readSteps(1, 0, false); });
    ok(call("readStepNumbers", [&] {
        const auto v = r.readStepNumbers(0, n);
        if (int64_t(v.size()) != n)
            fuzzBug("readStepNumbers: wrong count");
    }));
    for (int c = runschema::kFirstRankScalar; c <= runschema::kLastRankScalar; ++c)
        ok(call("readStepScalar", [&] {
            const auto col = runschema::StepCol(c);
            const auto v = r.readStepScalar(col, 0, n);
            if (v.size() != size_t(n) * size_t(m.worldSize))
                fuzzBug(fmt::format("readStepScalar({}): {} values for {} steps x {} ranks",
                                    runschema::kStepColumns[c].path, v.size(), n, m.worldSize));
            r.readStepScalar(col, n / 2, n);
        }));
    expectRejected("readStepScalar(not a scalar)", [&] { r.readStepScalar(runschema::kSketch, 0, n); });
    expectRejected("readStepScalar(out of range)", [&] { r.readStepScalar(runschema::StepCol(999), 0, n); });

    const int64_t w = r.weightCount();
    ok(call("readWeights", [&] {
        const auto v = r.readWeights();
        if (int64_t(v.size()) != w)
            fuzzBug("readWeights: wrong count");
        r.readWeights(w / 2, w);
    }));
    ok(call("readWeightSteps", [&] { r.readWeightSteps(); }));
    ok(call("readEvals", [&] { r.readEvals(); }));
    const int64_t ne = r.eventCount();
    ok(call("readEvents", [&] {
        r.readEvents();
        r.readEvents(ne / 2, ne);
    }));
    expectRejected("readEvents(n, n + 1)", [&] { r.readEvents(ne, ne + 1); });
    ok(call("readFlightDumps", [&] {
        for (const FlightDump& d : r.readFlightDumps())
            for (const FlightEntry& e : d.entries)
                if (int64_t(e.data.size()) != r.totalElements())
                    fuzzBug("readFlightDumps: an entry's size is not totalElements()");
    }));
    ok(call("readAll", [&] { r.readAll(); }));
    ok(call("refresh", [&] {
        r.refresh();
        r.stepCount();
        r.complete();
        r.stopReason();
    }));

    // inspectRun, exportCsv and sliceRun write files (slow under ASan): half of the programs ask for them.
    const FuzzOutcome accepted{false, fmt::format("{} steps, {} events", n, ne)};
    if (!writeBack)
        return accepted;
    call("inspectRun", [&] {
        const RunInspection insp = inspectRun(r);
        insp.toJson();
        insp.toText();
    });
    const std::string csvDir = work + "/csv";
    call<std::runtime_error>("exportCsv", [&] { exportCsv(r, csvDir); });

    // A slice of a run we could read whole must itself be a readable run.
    std::vector<Event> events;
    std::vector<int64_t> stepNumbers;
    if (call("slice inputs", [&] {
            events = r.readEvents();
            stepNumbers = r.readStepNumbers(0, n);
        }).rejected)
        return accepted;
    const int64_t first = stepNumbers.empty() ? 0 : *std::min_element(stepNumbers.begin(), stepNumbers.end());
    const int64_t last = stepNumbers.empty() ? -1 : *std::max_element(stepNumbers.begin(), stepNumbers.end());
    const auto window = sliceWindow(firstAnomalyStep(events), first, last, 1);
    const int64_t lo = window.first, hi = window.second;
    const std::string slicePath = work + "/slice.h5";
    reader.reset();
    const FuzzOutcome sliced = call<std::exception>(
        "sliceRun", [&] { sliceRun(*Hdf5RunReader::open(path), slicePath, lo, std::max(lo, hi), true); });
    if (!sliced.rejected && allRead) {
        const FuzzOutcome back = call("reading the slice", [&] {
            auto s = Hdf5RunReader::open(slicePath);
            s->readAll();
            inspectRun(*s);
        });
        if (back.rejected)
            fuzzBug(fmt::format("sliceRun wrote a file that does not read back: {}", back.message));
    }
    return accepted;
}

} // namespace

FuzzOutcome runRunFile(std::span<const uint8_t> data) {
    FuzzInput in(data);
    const std::vector<Seed>& all = runFileSeeds();
    const Seed& seed = all[in.byte() % all.size()];
    const std::string work = scratchDir() + "/run";
    std::error_code ec;
    fs::remove_all(work, ec);
    fs::create_directories(work, ec);
    const std::string path = work + "/run.h5";
    const bool writeBack = mutateRunFile(seed, path, in);
    // To look at a mutated file with h5dump or the app: RANKSIGHT_FUZZ_KEEP=out.h5 fuzz_runfile INPUT
    if (const char* keep = std::getenv("RANKSIGHT_FUZZ_KEEP"); keep && *keep)
        fs::copy_file(path, keep, fs::copy_options::overwrite_existing, ec);
    FuzzOutcome outcome = readEverything(path, work, writeBack);
    // Every reader and writer is gone: nothing may still hold an HDF5 file open (a leaked id keeps the file
    // open in the library, and the next open of that path would see the old file's cached metadata).
    {
        Hdf5Guard guard;
        const ssize_t open =
            H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE | H5F_OBJ_DATASET | H5F_OBJ_GROUP | H5F_OBJ_ATTR);
        if (open != 0)
            fuzzBug(fmt::format("{} HDF5 objects still open after the input was read ({} files)", open,
                                H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE)));
    }
    outcome.message = seed.name + ": " + outcome.message;
    return outcome;
}

void writeFuzzedRunFile(std::span<const uint8_t> data, const std::string& out) {
    FuzzInput in(data);
    const std::vector<Seed>& all = runFileSeeds();
    const Seed& seed = all[in.byte() % all.size()];
    mutateRunFile(seed, out, in);
}

int fuzzRunFile(const uint8_t* data, size_t size) {
    runRunFile({data, size});
    return 0;
}

} // namespace rs::fuzz
