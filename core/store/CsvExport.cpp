#include "store/CsvExport.h"

#include "store/RunReader.h"
#include "store/RunSchema.h"

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <string_view>
#include <type_traits>

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

namespace {

namespace rsc = runschema;

// The dataset's name: a CSV column's header.
std::string_view datasetName(rsc::StepCol c) {
    const std::string_view path = rsc::kStepColumns[c].path;
    return path.substr(path.rfind('/') + 1);
}

// Calls f(value) with a rank's value of a per-rank step column, typed as the record holds it.
template <class F> void visitRankValue(const RankStep& s, rsc::StepCol column, F&& f) {
    rsc::forEachColumn(rsc::kStepTable, [&](const auto& col) {
        using Field = std::remove_cvref_t<decltype(col.field)>;
        if constexpr (!rsc::ownField<StepRecord, Field>())
            if (col.id == column)
                f(s.*col.field);
    });
}

} // namespace

std::string stepsCsvHeader() {
    std::string h = "step,rank";
    for (const CsvColumn& c : kStepsCsvColumns)
        h += fmt::format(",{}", datasetName(c.column));
    return h + "\n";
}

StepsCsvRecorded stepsCsvRecorded(const RunMeta& meta) {
    StepsCsvRecorded recorded{};
    for (size_t i = 0; i < kStepsCsvValues; ++i)
        recorded[i] = meta.recorded(rsc::kStepColumns[kStepsCsvColumns[i].column].path);
    return recorded;
}

void appendCsvRow(std::string& out, const StepsCsvRow& r, const StepsCsvRecorded& recorded) {
    auto it = std::back_inserter(out);
    fmt::format_to(it, "{},{}", r.step, r.rank);
    for (size_t i = 0; i < kStepsCsvValues; ++i) {
        out += ',';
        if (!recorded[i])
            continue;
        if (kStepsCsvColumns[i].decimals < 0)
            fmt::format_to(it, "{}", r.values[i]);
        else
            fmt::format_to(it, "{:.{}f}", r.values[i], kStepsCsvColumns[i].decimals);
    }
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

using GradRecorded = std::array<bool, std::size(kGradientsCsvColumns)>;

GradRecorded gradientsRecorded(const RunMeta& meta) {
    GradRecorded out{};
    auto slot = out.begin();
    for (const rsc::StepCol c : kGradientsCsvColumns)
        *slot++ = meta.recorded(rsc::kStepColumns[c].path);
    return out;
}

// Rank r's row of steps.csv.
void stepsRow(std::string& row, const StepRecord& s, size_t r, const StepsCsvRecorded& recorded) {
    StepsCsvRow csv{s.step, int(r), {}};
    for (size_t i = 0; i < kStepsCsvValues; ++i)
        visitRankValue(s.ranks[r], kStepsCsvColumns[i].column, [&](const auto& v) {
            if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(v)>>)
                csv.values[i] = static_cast<float>(v);
        });
    row.clear();
    appendCsvRow(row, csv, recorded);
}

// Rank r's row of gradients.csv for parameter p.
void gradientsRow(std::string& row, const RunMeta& meta, const StepRecord& s, size_t r, size_t p,
                  const GradRecorded& gradRecorded) {
    const RankStep& rs = s.ranks[r];
    row.clear();
    fmt::format_to(std::back_inserter(row), "{},{},{}", s.step, r, csvField(meta.params[p].name));
    // A NaN norm always has a non-finite element, so a count of 0 beside one is a count nobody took (an
    // msprobe rank the monitor did not watch): empty, not "0".
    const bool countless = p < rs.localNorm.size() && std::isnan(rs.localNorm[p]) &&
                           p < rs.nonfinite.size() && rs.nonfinite[p] == 0;
    for (size_t k = 0; k < gradRecorded.size(); ++k) {
        row += ',';
        if (countless && kGradientsCsvColumns[k] == rsc::kNonfinite)
            continue;
        visitRankValue(rs, kGradientsCsvColumns[k], [&](const auto& v) {
            if constexpr (fields::kIsVector<std::remove_cvref_t<decltype(v)>>)
                if (gradRecorded[k] && p < v.size())
                    fmt::format_to(std::back_inserter(row), "{}", v[p]);
        });
    }
    row += '\n';
}

void writeStepRows(const RunReader& reader, std::ofstream& steps, std::ofstream& grads) {
    const auto& meta = reader.meta();
    const StepsCsvRecorded recorded = stepsCsvRecorded(meta);
    const GradRecorded gradRecorded = gradientsRecorded(meta);
    const int64_t n = reader.stepCount();
    const int64_t block = stepsPerRead(meta, 1024);
    std::string row;
    for (int64_t b = 0; b < n; b += block) {
        for (const auto& s : reader.readSteps(b, std::min(n, b + block), true)) {
            for (size_t r = 0; r < s.ranks.size(); ++r) {
                stepsRow(row, s, r, recorded);
                steps << row;
                for (size_t p = 0; p < meta.params.size(); ++p) {
                    gradientsRow(row, meta, s, r, p, gradRecorded);
                    grads << row;
                }
            }
        }
    }
}

} // namespace

std::vector<std::string> exportCsv(const RunReader& reader, const std::string& dir, bool overwrite) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error(fmt::format("{}: cannot create the folder: {}", dir, ec.message()));
    const fs::path stepsPath = fs::path(dir) / "steps.csv";
    const fs::path gradsPath = fs::path(dir) / "gradients.csv";
    const fs::path eventsPath = fs::path(dir) / "events.csv";
    auto steps = openOut(stepsPath, overwrite);
    auto grads = openOut(gradsPath, overwrite);
    auto events = openOut(eventsPath, overwrite);

    steps << stepsCsvHeader();
    grads << "step,rank,parameter";
    for (rsc::StepCol c : kGradientsCsvColumns)
        grads << ',' << datasetName(c);
    grads << '\n';
    writeStepRows(reader, steps, grads);
    events << kEventsCsvHeader;
    std::string row;
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
