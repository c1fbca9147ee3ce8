// See RunWatcher.h.
#include "diagnose/RunWatcher.h"

#include "diagnose/Cause.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <stdexcept>
#include <system_error>

namespace rs {
namespace {

namespace fs = std::filesystem;

// How long a file that cannot be opened yet may be one its writer is still creating (HDF5 writes the
// superblock, then the tables, then starts SWMR; the DDP recorder's h5py does the same in Python).
constexpr double kCreateGraceSeconds = 5;

// Seconds since the file was last written; 0 when that cannot be told (then it gets the grace).
double secondsSinceWritten(const std::string& path) {
    std::error_code ec;
    const auto written = fs::last_write_time(path, ec);
    if (ec)
        return 0;
    return std::chrono::duration<double>(fs::file_time_type::clock::now() - written).count();
}

std::string joined(const auto& items, size_t most) {
    std::string out;
    for (size_t i = 0; i < items.size() && i < most; ++i)
        out += fmt::format("{}{}", i ? ", " : "", items[i]);
    if (items.size() > most)
        out += fmt::format(" (+{} more)", items.size() - most);
    return out;
}

} // namespace

AlertFilter AlertFilter::parse(std::string_view spec) {
    AlertFilter f;
    f.m_spec = std::string(spec);
    size_t begin = 0;
    while (begin <= spec.size()) {
        const size_t end = std::min(spec.find(',', begin), spec.size());
        const std::string_view word = spec.substr(begin, end - begin);
        begin = end + 1;
        if (word == "any")
            f.m_any = true;
        else if (word == "numerics" || word == "parallel" || word == "environment" || word == "data-model")
            f.m_dimensions.emplace(word);
        else if (word == "data")
            f.m_dimensions.emplace("data-model");
        else if (findCause(word))
            f.m_causes.emplace(word);
        else {
            std::string known;
            for (const CauseInfo& c : causes())
                known += std::string(known.empty() ? "" : ", ") + c.key;
            throw std::invalid_argument(
                fmt::format("'{}' is neither any, a dimension (numerics, parallel, data, environment) nor a "
                            "cause ({})",
                            word, known));
        }
    }
    return f;
}

bool AlertFilter::matches(const Finding& f) const {
    return m_any || m_causes.count(f.key()) || m_dimensions.count(f.dimension());
}

RunWatcher::RunWatcher(std::string path, AlertFilter filter, double stallSeconds, double now)
    : m_path(std::move(path))
    , m_filter(std::move(filter))
    , m_stallSeconds(stallSeconds)
    , m_lastProgress(now) {}

RunWatcher::~RunWatcher() = default;

RunWatcher::Status RunWatcher::poll(double now) {
    if (m_status == Status::Alert || m_status == Status::Completed || m_status == Status::Stalled)
        return m_status;
    if (m_reader || open(now))
        readNew(now);
    if ((m_status == Status::NoFile || m_status == Status::Following) && m_stallSeconds > 0 &&
        quietSeconds(now) >= m_stallSeconds)
        m_status = Status::Stalled;
    return m_status;
}

bool RunWatcher::open(double now) {
    std::error_code ec;
    if (!fs::exists(m_path, ec))
        return false;
    try {
        m_reader = openRunFile(m_path);
    } catch (const RunFileError&) {
        // A file its writer is still creating cannot be opened for a moment; one that has not changed for a
        // while, or has failed for longer than it takes to create one, is what it is.
        if (m_firstOpenFailure < 0)
            m_firstOpenFailure = now;
        if (secondsSinceWritten(m_path) > kCreateGraceSeconds ||
            now - m_firstOpenFailure > kCreateGraceSeconds)
            throw;
        return false;
    }
    m_diagnoser = std::make_unique<Diagnoser>(m_reader->meta());
    m_status = Status::Following;
    return true;
}

void RunWatcher::readNew(double now) {
    m_reader->refresh();
    // The status before the rows: a file seen complete has every row the reads below will find.
    const bool complete = m_reader->complete();
    const int64_t before = m_at.steps;
    diagnoseMore(*m_reader, *m_diagnoser, m_at);
    if (m_at.steps > before) {
        m_lastProgress = now;
        m_lastStep = m_reader->readStepNumbers(m_at.steps - 1, m_at.steps).front();
    }
    for (const Finding& f : m_diagnoser->findings())
        if (m_filter.matches(f) && settled(f, m_lastStep, complete)) {
            m_alert = f;
            m_status = Status::Alert;
            return;
        }
    if (complete) {
        m_stopReason = m_reader->stopReason();
        m_status = Status::Completed;
    }
}

bool settled(const Finding& f, int64_t lastStep, bool runEnded) {
    return runEnded || f.firstStep < 0 || lastStep >= f.firstStep + kSettleSteps;
}

std::string alertLine(const Finding& f) {
    std::string where = f.firstStep >= 0 ? fmt::format(" at step {}", f.firstStep) : "";
    if (!f.ranks.empty())
        where += fmt::format(", rank{} {}", f.ranks.size() > 1 ? "s" : "", joined(f.ranks, 8));
    if (!f.parameters.empty())
        where += fmt::format(", parameter{} {}", f.parameters.size() > 1 ? "s" : "", joined(f.parameters, 3));
    return fmt::format("{}{} ({}, confidence {:.2f}): {}", f.key(), where, f.dimension(), f.confidence,
                       f.evidence);
}

} // namespace rs
