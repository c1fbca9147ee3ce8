#include "store/CsvExport.h"

#include "store/RunReader.h"
#include "store/RunSchema.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>

namespace rs {
namespace fs = std::filesystem;

std::string csvField(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos)
        return text;
    std::string out = "\"";
    for (char c : text) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

StepsCsvRecorded stepsCsvRecorded(const RunMeta& meta) {
    namespace rsc = runschema;
    auto rec = [&](rsc::StepCol c) { return meta.recorded(rsc::kStepColumns[c].path); };
    return {rec(rsc::kLoss),    rec(rsc::kAccuracy), rec(rsc::kLossScale), rec(rsc::kOverflow),
            rec(rsc::kSkipped), rec(rsc::kStepMs),   rec(rsc::kCommMs)};
}

void appendCsvRow(std::string& out, const StepsCsvRow& r, const StepsCsvRecorded& rec) {
    auto it = std::back_inserter(out);
    fmt::format_to(it, "{},{}", r.step, r.rank);
    auto value = [&](bool recorded, auto v, const char* spec) {
        out += ',';
        if (recorded)
            fmt::format_to(it, fmt::runtime(spec), v);
    };
    value(rec.loss, r.loss, "{}");
    value(rec.accuracy, r.accuracy, "{}");
    value(rec.lossScale, r.lossScale, "{}");
    value(rec.overflow, int(r.overflow), "{}");
    value(rec.skipped, int(r.skipped), "{}");
    value(rec.stepMs, r.stepMs, "{:.3f}");
    value(rec.commMs, r.commMs, "{:.3f}");
    out += '\n';
}

void appendCsvRow(std::string& out, const Event& e) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{}\n", e.step, e.rank, severityName(e.severity),
                   csvField(e.code), csvField(e.message));
}

namespace {

std::ofstream openOut(const fs::path& path, bool overwrite) {
    if (!overwrite && fs::exists(path))
        throw std::runtime_error(fmt::format("{}: already exists (refusing to overwrite)", path.string()));
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        throw std::runtime_error(fmt::format("{}: cannot open for writing", path.string()));
    return out;
}

void check(std::ofstream& out, const fs::path& path) {
    out.flush();
    if (!out)
        throw std::runtime_error(fmt::format("{}: write failed (disk full?)", path.string()));
}

} // namespace

std::vector<std::string> exportCsv(const RunReader& reader, const std::string& dir, bool overwrite) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error(fmt::format("{}: cannot create the folder: {}", dir, ec.message()));
    const auto& meta = reader.meta();
    const fs::path stepsPath = fs::path(dir) / "steps.csv";
    const fs::path gradsPath = fs::path(dir) / "gradients.csv";
    const fs::path eventsPath = fs::path(dir) / "events.csv";
    auto steps = openOut(stepsPath, overwrite);
    auto grads = openOut(gradsPath, overwrite);
    auto events = openOut(eventsPath, overwrite);

    steps << kStepsCsvHeader;
    grads << "step,rank,parameter,local_norm,synced_norm,nonfinite\n";
    const StepsCsvRecorded recorded = stepsCsvRecorded(meta);
    namespace rsc = runschema;
    const bool localNorm = meta.recorded(rsc::kStepColumns[rsc::kLocalNorm].path);
    const bool syncedNorm = meta.recorded(rsc::kStepColumns[rsc::kSyncedNorm].path);
    const bool nonfinite = meta.recorded(rsc::kStepColumns[rsc::kNonfinite].path);
    auto cellOf = [](bool rec, auto v) { return rec ? fmt::format("{}", v) : std::string(); };
    const int64_t n = reader.stepCount();
    constexpr int64_t kBlock = 1024;
    std::string row;
    for (int64_t b = 0; b < n; b += kBlock) {
        for (const auto& s : reader.readSteps(b, std::min(n, b + kBlock), true)) {
            for (size_t r = 0; r < s.ranks.size(); ++r) {
                const auto& rs = s.ranks[r];
                row.clear();
                appendCsvRow(row,
                             StepsCsvRow{s.step, int(r), rs.loss, rs.accuracy, rs.lossScale, rs.overflow != 0,
                                         rs.skipped != 0, rs.stepMs, rs.commMs},
                             recorded);
                steps << row;
                for (size_t p = 0; p < rs.localNorm.size() && p < meta.params.size(); ++p)
                    grads << fmt::format("{},{},{},{},{},{}\n", s.step, r, csvField(meta.params[p].name),
                                         cellOf(localNorm, rs.localNorm[p]),
                                         cellOf(syncedNorm && p < rs.syncedNorm.size(),
                                                p < rs.syncedNorm.size() ? rs.syncedNorm[p] : 0.f),
                                         cellOf(nonfinite && p < rs.nonfinite.size(),
                                                p < rs.nonfinite.size() ? rs.nonfinite[p] : 0u));
            }
        }
    }
    events << kEventsCsvHeader;
    for (const auto& e : reader.readEvents()) {
        row.clear();
        appendCsvRow(row, e);
        events << row;
    }
    check(steps, stepsPath);
    check(grads, gradsPath);
    check(events, eventsPath);
    return {stepsPath.string(), gradsPath.string(), eventsPath.string()};
}

} // namespace rs
