#include "store/CsvExport.h"

#include "store/RunReader.h"

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

void appendCsvRow(std::string& out, const StepsCsvRow& r) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{:.3f},{:.3f}\n", r.step, r.rank, r.loss,
                   r.accuracy, r.lossScale, int(r.overflow), int(r.skipped), r.stepMs, r.commMs);
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
    const int64_t n = reader.stepCount();
    constexpr int64_t kBlock = 1024;
    std::string row;
    for (int64_t b = 0; b < n; b += kBlock) {
        for (const auto& s : reader.readSteps(b, std::min(n, b + kBlock), true)) {
            for (size_t r = 0; r < s.ranks.size(); ++r) {
                const auto& rs = s.ranks[r];
                row.clear();
                appendCsvRow(row, StepsCsvRow{s.step, int(r), rs.loss, rs.accuracy, rs.lossScale,
                                              rs.overflow != 0, rs.skipped != 0, rs.stepMs, rs.commMs});
                steps << row;
                for (size_t p = 0; p < rs.localNorm.size() && p < meta.params.size(); ++p)
                    grads << fmt::format("{},{},{},{},{},{}\n", s.step, r, csvField(meta.params[p].name),
                                         rs.localNorm[p], p < rs.syncedNorm.size() ? rs.syncedNorm[p] : 0.f,
                                         p < rs.nonfinite.size() ? rs.nonfinite[p] : 0u);
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
