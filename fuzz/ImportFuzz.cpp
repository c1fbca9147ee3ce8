// fuzz_import's one-input logic (see FuzzEntries.h): the input is a tree program. Its first byte picks the
// importer (msprobe monitor, msprobe dump, flight recorder); then each file is a name template, the rank and
// step numbers the template takes, and the file's bytes. The templates are the folder and file names each
// format uses (and near misses: a rank that is not a number, a step folder that is not step<N>, two layouts
// at once), so the fuzzer explores the tree's structure and each file's content together; the seed corpus
// (make_corpus.py) holds real trees written by the tests' generators. The tree is imported into a run file,
// which must then open and read back whole; a refusal must be an ImportError with a message naming a file,
// and must leave no file behind.
#include "FuzzCommon.h"
#include "FuzzEntries.h"
#include "FuzzInput.h"
#include "import/FlightRecorderImport.h"
#include "import/MsprobeImport.h"
#include "store/Hdf5RunReader.h"
#include "store/RunSchema.h"

#include <filesystem>
#include <fmt/format.h>

namespace rs::fuzz {
namespace {

namespace fs = std::filesystem;

// {r}: the rank byte, {s}: the step byte, {t}: the step byte + 4 (a file's last step).
constexpr const char* kMonitorNames[] = {
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/grad_unreduced_{s}-{t}.csv",
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/grad_reduced_{s}-{t}.csv",
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/param_origin_{s}-{t}.csv",
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/param_updated_{s}-{t}.csv",
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/actv_{s}-{t}.csv",
    "monitor_output/anomaly_detected/rank{r}/anomaly.json",
    "monitor_v2_out/rank_{r}/weight_grad_step{s}-{t}.csv",
    "monitor_v2_out/rank_{r}/param_step{s}-{t}.csv",
    "monitor_v2_out/rank_{r}/optimizer_step{s}-{t}.csv",
    "monitor_output/Dec03_10-00-00-rankx{r}-0123abcd/grad_unreduced_{s}-{t}.csv",
    "monitor_v2_out/rank_{r}/weight_grad_step{s}.csv",
    // Added later (appended, so that older inputs keep their names): what real writers leave besides.
    "monitor_output/Dec03_10-00-00-0123abcd/grad_unreduced_{s}-{t}.csv", // <= 1.2 single process
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/grad_unreduced_{s}-{t}_part_1.csv",
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/param_{s}-{t}.csv",
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/linear_hook_{s}-{t}.csv",
    "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/exp_avg_{s}-{t}.csv",
    "monitor_output/anomaly_detected/anomaly_analyse.json",
    "monitor_v2_out/rank_{r}/cc_step{s}-{t}.csv",
};
constexpr const char* kDumpNames[] = {
    "step{s}/rank{r}/dump.json",  "step{s}/rank{r}/stack.json",         "step{s}/rank{r}/construct.json",
    "step{s}/rank/dump.json",     "step{s}/proc{r}/dump.json",          "stepx{s}/rank{r}/dump.json",
    "step{s}/rank{r}x/dump.json", "pynative/step{s}/rank{r}/dump.json",
};
constexpr const char* kFlightNames[] = {
    "nccl_trace_rank_{r}",
    "hccl_trace_rank_{r}",
    "nccl_trace_rank_{r}.pipe",
    "nccl_trace_rank_x{r}",
    "other_{r}",
    // Added later: torch_npu's and the analyser tests' names, tracebacks beside, bare numbers, host names.
    "trace_{r}",
    "trace_{r}_py_traceback",
    "{r}",
    "node0.nccl_trace_rank_{r}",
    "comm_lib_trace_rank_{r}",
};

std::string expand(std::string name, int rank, int step) {
    for (auto [key, value] : {std::pair{"{r}", rank}, std::pair{"{s}", step}, std::pair{"{t}", step + 4}})
        for (size_t at; (at = name.find(key)) != std::string::npos;)
            name.replace(at, 3, std::to_string(value));
    return name;
}

template <size_t N> void writeTree(FuzzInput& in, const fs::path& root, const char* const (&names)[N]) {
    for (int files = 0; !in.empty() && files < 64; ++files) {
        const char* name = names[in.range(0, N - 1)];
        const int rank = int(in.range(0, 7)), step = int(in.range(0, 15));
        const std::string content = in.bytes(1 << 20);
        const fs::path file = root / expand(name, rank, step);
        std::error_code ec;
        fs::create_directories(file.parent_path(), ec);
        writeFile(file.string(), content);
    }
}

// A written run file must open and read back whole, and be what the import said.
void readBack(const std::string& path, int ranks) {
    const auto r = Hdf5RunReader::open(path);
    if (r->meta().worldSize != ranks)
        fuzzBug(fmt::format("import: {} ranks reported, the file has {}", ranks, r->meta().worldSize));
    const RunData all = r->readAll();
    for (const Collective& c : all.collectives)
        if (c.rank < 0 || c.rank >= ranks)
            fuzzBug(fmt::format("import: a collective of rank {} in a {}-rank file", c.rank, ranks));
    for (const TensorStat& t : all.tensorStats)
        if (t.rank < 0 || t.rank >= ranks)
            fuzzBug(fmt::format("import: a tensor statistic of rank {} in a {}-rank file", t.rank, ranks));
}

} // namespace

FuzzOutcome runImport(std::span<const uint8_t> data) {
    FuzzInput in(data);
    const int mode = int(in.byte() % 3);
    const fs::path root = fs::path(scratchDir()) / "import";
    const std::string out = scratchDir() + "/import.h5";
    std::error_code ec;
    fs::remove_all(root, ec);
    fs::remove(out, ec);
    fs::create_directories(root, ec);
    if (mode == 0)
        writeTree(in, root, kMonitorNames);
    else if (mode == 1)
        writeTree(in, root, kDumpNames);
    else
        writeTree(in, root, kFlightNames);
    const FuzzOutcome o = guarded<ImportError>("import", [&]() -> FuzzOutcome {
        int ranks = 0;
        if (mode == 2)
            ranks = importFlightRecorder(root.string(), out).worldSize;
        else
            ranks = importMsprobe(root.string(), out).ranks;
        readBack(out, ranks);
        return {false, fmt::format("{} ranks", ranks)};
    });
    if (o.rejected && fs::exists(out, ec))
        fuzzBug(fmt::format("import refused the tree ({}) but left {} behind", o.message, out));
    if (o.rejected && o.message.find(root.string()) == std::string::npos)
        fuzzBug(fmt::format("import: the refusal names no file of the tree: {}", o.message));
    return o;
}

int fuzzImport(const uint8_t* data, size_t size) {
    runImport({data, size});
    return 0;
}

} // namespace rs::fuzz
