// The one-input logic of fuzz_ranktable, fuzz_config and fuzz_cifar, and what all targets share (see
// FuzzEntries.h). fuzz_runfile's logic is in RunFileFuzz.cpp.
#include "FuzzEntries.h"

#include "FuzzCommon.h"
#include "FuzzInput.h"
#include "cluster/RankTable.h"
#include "faults/FaultSpec.h"
#include "train/Dataset.h"
#include "train/TrainConfig.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <new>
#include <stdexcept>
#include <unistd.h>

namespace rs::fuzz {

namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_throws{false};

struct ScratchDir {
    std::string path;
    ScratchDir() {
        std::string base;
        if (const char* env = std::getenv("RANKSIGHT_FUZZ_TMP"); env && *env)
            base = env;
        else if (access("/dev/shm", W_OK) == 0)
            base = "/dev/shm";
        else if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp)
            base = tmp;
        else
            base = "/tmp";
        path = fmt::format("{}/ranksight-fuzz-{}", base, getpid());
        std::error_code ec;
        fs::remove_all(path, ec);
        fs::create_directories(path, ec);
        if (ec)
            fuzzBug(fmt::format("cannot create the scratch directory {}: {}", path, ec.message()));
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

} // namespace

void setFuzzBugThrows(bool throws) {
    g_throws = throws;
}

void fuzzBug(const std::string& what) {
    if (g_throws)
        throw FuzzBug{what};
    std::fprintf(stderr, "\n==== RankSight fuzz bug: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

const std::string& scratchDir() {
    static ScratchDir dir;
    return dir.path;
}

void writeFile(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out)
        fuzzBug(fmt::format("cannot write the scratch file {}", path));
}

// ---------------------------------------------------------------------------------------------------------
// fuzz_ranktable

FuzzOutcome runRankTable(std::span<const uint8_t> data) {
    FuzzInput in(data);
    const uint8_t sel = in.byte();
    const int expectedRanks = sel == 0xFF ? -1 : sel;
    const std::string text = in.rest();
    return guarded<NoException>("parseRankTable", [&]() -> FuzzOutcome {
        const RankTableCheck check = parseRankTable(text, expectedRanks);
        if (!check.ok()) {
            if (check.problems.empty())
                fuzzBug("parseRankTable: not ok but no problems listed");
            for (const RankTableProblem& p : check.problems)
                if (p.message.empty())
                    fuzzBug(fmt::format("parseRankTable: a problem at '{}' with an empty message", p.where));
            if (check.summary().empty())
                fuzzBug("parseRankTable: empty summary for a table with problems");
            return {true, check.summary()};
        }
        const RankTable& t = *check.table;
        if (expectedRanks >= 0 && t.worldSize() != expectedRanks)
            fuzzBug(
                fmt::format("parseRankTable: accepted {} ranks, expected {}", t.worldSize(), expectedRanks));
        for (int i = 0; i < t.worldSize(); ++i)
            if (t.devices[size_t(i)].rankId != i)
                fuzzBug(
                    fmt::format("parseRankTable: device {} has rank_id {}", i, t.devices[size_t(i)].rankId));
        // A table we accept must survive its own serialisation unchanged.
        const std::string json = t.toJson();
        const RankTableCheck again = parseRankTable(json, expectedRanks);
        if (!again.ok())
            fuzzBug(fmt::format("parseRankTable: toJson() of an accepted table is refused: {}\n{}",
                                again.summary(), json));
        if (again.table->toJson() != json)
            fuzzBug("parseRankTable: toJson() does not round-trip");
        return {false, fmt::format("{} ranks on {} servers", t.worldSize(), t.serverCount())};
    });
}

// ---------------------------------------------------------------------------------------------------------
// fuzz_config

namespace {

constexpr const char* kConfigKeys[] = {
    "model",      "ranks",           "batch",          "steps",        "epochs",
    "precision",  "loss_scale",      "data",           "seed",         "lr",
    "momentum",   "weight_decay",    "lr_schedule",    "warmup_steps", "rank_table",
    "out",        "broadcast",       "gradients_mean", "telemetry",    "weight_every",
    "sketch_dim", "eval_every",      "eval_samples",   "flight_steps", "flight_budget_mb",
    "timeout_ms", "compute_threads", "faults",         "no_such_key"};

FuzzOutcome checkConfigRoundTrip(const TrainConfig& cfg) {
    const std::string json = cfg.toJson();
    TrainConfig again;
    try {
        again = TrainConfig::fromJson(json, "toJson()");
    } catch (const std::exception& e) {
        fuzzBug(
            fmt::format("TrainConfig: toJson() of an accepted config is refused: {}\n{}", e.what(), json));
    }
    if (again.toJson() != json)
        fuzzBug(fmt::format("TrainConfig: toJson() does not round-trip:\n{}\n{}", json, again.toJson()));
    return {false, "accepted"};
}

} // namespace

FuzzOutcome runConfig(std::span<const uint8_t> data) {
    FuzzInput in(data);
    const uint8_t mode = in.byte() % 4;
    switch (mode) {
    case 0: {
        const std::string text = in.rest();
        return guarded<ConfigError>("TrainConfig::fromJson", [&] {
            TrainConfig cfg = TrainConfig::fromJson(text, "fuzz.json");
            if (cfg.out.empty())
                cfg.out = "fuzz.h5"; // validate() wants a run file; --out gives it on the command line
            cfg.validate();
            for (const std::string& f : cfg.faults)
                parseFault(f);
            return checkConfigRoundTrip(cfg);
        });
    }
    case 1: {
        const std::string text = in.rest();
        return guarded<ConfigError>("parseLossScale", [&] {
            const LossScaleSpec spec = parseLossScale(text);
            const std::string name = lossScaleName(spec);
            const LossScaleSpec again = parseLossScale(name);
            if (lossScaleName(again) != name)
                fuzzBug(
                    fmt::format("parseLossScale: '{}' -> '{}' -> '{}'", text, name, lossScaleName(again)));
            return FuzzOutcome{false, name};
        });
    }
    case 2: {
        const int worldSize = int(in.range(0, 70));
        const std::string text = in.rest();
        return guarded<ConfigError>("parseFault", [&] {
            std::vector<std::string> texts;
            size_t start = 0;
            while (start <= text.size()) {
                const size_t comma = text.find(',', start);
                texts.push_back(
                    text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
                if (comma == std::string::npos)
                    break;
                start = comma + 1;
            }
            const std::vector<FaultSpec> specs = parseFaults(texts);
            checkFaults(specs, worldSize);
            TrainConfig cfg;
            for (const std::string& t : texts)
                cfg.addFault(t);
            return FuzzOutcome{false, fmt::format("{} faults", specs.size())};
        });
    }
    default: {
        const std::string key = in.pick(kConfigKeys);
        const std::string value = in.rest();
        return guarded<ConfigError>("TrainConfig::set", [&] {
            TrainConfig cfg;
            cfg.out = "fuzz.h5";
            cfg.set(key, value);
            cfg.validate();
            return checkConfigRoundTrip(cfg);
        });
    }
    }
}

// ---------------------------------------------------------------------------------------------------------
// fuzz_cifar

FuzzOutcome runCifar(std::span<const uint8_t> data) {
    FuzzInput in(data);
    const uint8_t sel = in.byte();
    const Split split = (sel & 1) ? Split::Test : Split::Train;
    const std::string dir = scratchDir() + "/cifar";
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    const std::vector<std::string> files = Cifar10Dataset::expectedFiles(split);
    // Bit 1: leave one file out (its index from the next byte); bit 2: put the files one level down, in
    // cifar-10-batches-bin/ (the usual slip the reader hints at).
    const size_t skip = (sel & 2) ? in.byte() % files.size() : files.size();
    const std::string fileDir = (sel & 4) ? dir + "/cifar-10-batches-bin" : dir;
    fs::create_directories(fileDir, ec);
    // Every file but the last takes a length from the input (whole records most of the time, so the labels
    // and pixels get fuzzed too); the last takes the rest.
    for (size_t i = 0; i < files.size(); ++i) {
        std::string content;
        if (i + 1 == files.size()) {
            content = in.rest();
        } else {
            const uint8_t lenSel = in.byte();
            size_t len = (lenSel & 0x80) ? size_t(lenSel & 0x7F) : size_t(lenSel % 4) * kCifarRecordBytes;
            content = in.bytes(len);
            if (content.size() < len && !(lenSel & 0x80))
                content.resize(len, '\0');
        }
        if (i != skip)
            writeFile(fileDir + "/" + files[i], content);
    }
    return guarded<DataError>("Cifar10Dataset", [&] {
        std::unique_ptr<Cifar10Dataset> ds = Cifar10Dataset::open(dir, split);
        int64_t bytes = 0;
        for (const std::string& f : files)
            bytes += int64_t(fs::file_size(fileDir + "/" + f));
        if (ds->size() * kCifarRecordBytes != bytes)
            fuzzBug(fmt::format("Cifar10Dataset: {} records from {} bytes", ds->size(), bytes));
        std::vector<uint8_t> chw(kImageBytes);
        std::vector<int64_t> ids;
        for (int64_t i : {int64_t(0), ds->size() / 2, ds->size() - 1})
            if (i >= 0 && i < ds->size()) {
                const int label = ds->get(i, chw.data());
                if (label < 0 || label >= kNumClasses)
                    fuzzBug(fmt::format("Cifar10Dataset::get({}) returned label {}", i, label));
                ids.push_back(i);
            }
        for (int64_t bad : {int64_t(-1), ds->size(), INT64_MAX, INT64_MIN}) {
            try {
                ds->get(bad, chw.data());
                fuzzBug(fmt::format("Cifar10Dataset::get({}) of {} images did not throw", bad, ds->size()));
            } catch (const std::out_of_range&) {
            }
        }
        if (ds->describe().empty())
            fuzzBug("Cifar10Dataset::describe() is empty");
        const std::unique_ptr<Dataset> viaSpec = openDataset("cifar10:" + dir, split, 1);
        if (viaSpec->size() != ds->size())
            fuzzBug("openDataset and Cifar10Dataset::open disagree on the size");
        std::vector<uint8_t> raw;
        std::vector<float> images;
        std::vector<int64_t> labels;
        loadNormalizedBatch(*viaSpec, ids.data(), int(ids.size()), raw, images, labels);
        if (images.size() != ids.size() * kImageBytes || labels.size() != ids.size())
            fuzzBug("loadNormalizedBatch: wrong output sizes");
        return FuzzOutcome{false, ds->describe()};
    });
}

// ---------------------------------------------------------------------------------------------------------
// libFuzzer-shaped wrappers

int fuzzRankTable(const uint8_t* data, size_t size) {
    runRankTable({data, size});
    return 0;
}
int fuzzConfig(const uint8_t* data, size_t size) {
    runConfig({data, size});
    return 0;
}
int fuzzCifar(const uint8_t* data, size_t size) {
    runCifar({data, size});
    return 0;
}
} // namespace rs::fuzz
