// RunSlice: copies the rows of a step window from one run file into a new one through the public reader and
// writer, so the slice is exactly as valid as any run the trainer writes. Rows are selected by their step
// number (not by row index), and read in bounded spans of consecutive rows.
#include "store/RunSlice.h"

#include "store/RunReader.h"
#include "store/RunSchema.h"
#include "store/RunWriter.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <stdexcept>
#include <string_view>

namespace rs {

namespace {

constexpr int64_t kStepChunk = 256;    // step rows per read at most (stepsPerRead: fewer on a large run)
constexpr int64_t kWeightChunk = 256;  // weight rows per read
constexpr int64_t kEventChunk = 4096;  // event rows per read (~300 B each)
constexpr int64_t kKeyChunk = 1 << 16; // step numbers per read when indexing the step table

using Span = std::pair<int64_t, int64_t>; // rows [first, second)

// Spans of consecutive rows whose key is in [first, last], none longer than maxRows. Step numbers grow with
// the row index in every run the trainer writes, so this is normally one span cut into chunks.
std::vector<Span> rowSpans(const std::vector<int64_t>& keys, int64_t first, int64_t last, int64_t maxRows) {
    std::vector<Span> spans;
    const int64_t n = int64_t(keys.size());
    for (int64_t i = 0; i < n;) {
        if (keys[size_t(i)] < first || keys[size_t(i)] > last) {
            ++i;
            continue;
        }
        const int64_t begin = i;
        while (i < n && i - begin < maxRows && keys[size_t(i)] >= first && keys[size_t(i)] <= last)
            ++i;
        spans.emplace_back(begin, i);
    }
    return spans;
}

std::vector<int64_t> allStepNumbers(const RunReader& reader) {
    const int64_t n = reader.stepCount();
    std::vector<int64_t> keys;
    keys.reserve(size_t(n));
    for (int64_t b = 0; b < n; b += kKeyChunk) {
        const auto part = reader.readStepNumbers(b, std::min(n, b + kKeyChunk));
        keys.insert(keys.end(), part.begin(), part.end());
    }
    return keys;
}

void copySteps(const RunReader& in, RunWriter& out, int64_t first, int64_t last) {
    for (const auto& [b, e] : rowSpans(allStepNumbers(in), first, last, stepsPerRead(in.meta(), kStepChunk)))
        for (const StepRecord& s : in.readSteps(b, e, true))
            out.appendStep(s);
}

void copyWeights(const RunReader& in, RunWriter& out, int64_t first, int64_t last) {
    for (const auto& [b, e] : rowSpans(in.readWeightSteps(), first, last, kWeightChunk))
        for (const WeightRecord& w : in.readWeights(b, e))
            out.appendWeights(w);
}

void copyEvals(const RunReader& in, RunWriter& out, int64_t first, int64_t last) {
    for (const EvalRecord& e : in.readEvals()) // R floats per row: small even for long runs
        if (e.step >= first && e.step <= last)
            out.appendEval(e);
}

void copyEvents(const RunReader& in, RunWriter& out, int64_t first, int64_t last) {
    const int64_t n = in.eventCount();
    for (int64_t b = 0; b < n; b += kEventChunk)
        for (const Event& e : in.readEvents(b, std::min(n, b + kEventChunk)))
            if (e.step >= first && e.step <= last)
                out.appendEvent(e);
}

void copyFlightDumps(const RunReader& in, RunWriter& out, int64_t first, int64_t last) {
    if (in.flightDumpCount() == 0)
        return; // skip reading the entry table at all
    for (const FlightDump& d : in.readFlightDumps())
        if (d.triggerStep >= first && d.triggerStep <= last)
            out.appendFlightDump(d);
}

// Collectives of an imported flight-recorder dump are not tied to a step unless joined with a run (step -1):
// a slice keeps those, and the ones of its steps.
void copyCollectives(const RunReader& in, RunWriter& out, int64_t first, int64_t last) {
    const int64_t n = in.collectiveCount();
    for (int64_t b = 0; b < n; b += kEventChunk) {
        std::vector<Collective> rows = in.readCollectives(b, std::min(n, b + kEventChunk));
        std::erase_if(rows,
                      [&](const Collective& c) { return c.step >= 0 && (c.step < first || c.step > last); });
        out.appendCollectives(rows);
    }
}

void copyTensorStats(const RunReader& in, RunWriter& out, int64_t first, int64_t last) {
    const int64_t n = in.tensorStatCount();
    for (int64_t b = 0; b < n; b += kEventChunk) {
        std::vector<TensorStat> rows = in.readTensorStats(b, std::min(n, b + kEventChunk));
        std::erase_if(rows, [&](const TensorStat& t) { return t.step < first || t.step > last; });
        out.appendTensorStats(rows);
    }
}

bool sameFile(const std::string& a, const std::string& b) {
    std::error_code ec;
    return std::filesystem::equivalent(a, b, ec) && !ec;
}

} // namespace

void sliceRun(const RunReader& source, const std::string& dst, int64_t firstStep, int64_t lastStep,
              bool overwrite) {
    const std::string& src = source.path();
    if (firstStep > lastStep)
        throw std::invalid_argument(
            fmt::format("slice: the first step ({}) is after the last step ({})", firstStep, lastStep));
    // Checked before the writer truncates dst: with overwrite, slicing a file onto itself would destroy it.
    if (sameFile(src, dst))
        throw std::invalid_argument(fmt::format("slice: {} is the source file itself", dst));

    const RunReader* in = &source;
    // A table the source's killed writer left unreadable has no rows to copy: the slice says it is not
    // there (absent) rather than hold an empty table that reads as "nothing happened".
    RunMeta meta = in->meta();
    for (const std::string& u : meta.unreadable)
        if (runschema::mayBeAbsent(u) &&
            std::find(meta.absent.begin(), meta.absent.end(), u) == meta.absent.end())
            meta.absent.push_back(u);
    meta.unreadable.clear();
    meta.unreadableWhy.clear();
    auto out = RunWriter::create(dst, meta, overwrite);
    try {
        copyRunRows(*in, *out, firstStep, lastStep);
        out->close(in->complete() ? in->stopReason() : "incomplete: " + in->stopReason());
    } catch (...) {
        // A half-copied slice would look like a valid, killed run: remove it rather than leave it around.
        out.reset();
        std::error_code ec;
        std::filesystem::remove(dst, ec);
        throw;
    }
}

void copyRunRows(const RunReader& in, RunWriter& out, int64_t firstStep, int64_t lastStep) {
    copySteps(in, out, firstStep, lastStep);
    copyWeights(in, out, firstStep, lastStep);
    copyEvals(in, out, firstStep, lastStep);
    copyEvents(in, out, firstStep, lastStep);
    copyFlightDumps(in, out, firstStep, lastStep);
    copyCollectives(in, out, firstStep, lastStep);
    copyTensorStats(in, out, firstStep, lastStep);
}

int64_t firstAnomalyStep(const std::vector<Event>& events) {
    static constexpr std::string_view kAnomalyCodes[] = {
        eventcode::kGradientSync,  eventcode::kWeightSync,      eventcode::kSkipMismatch,
        eventcode::kNonfiniteLoss, eventcode::kLossFluctuation, eventcode::kTimeout};
    int64_t first = -1;
    for (const Event& e : events) {
        const bool anomaly =
            e.severity == Severity::Warning || e.severity == Severity::Error ||
            std::find(std::begin(kAnomalyCodes), std::end(kAnomalyCodes), e.code) != std::end(kAnomalyCodes);
        // The smallest step, not the first row: events of one step may be appended out of step order.
        if (anomaly && e.step >= 0 && (first < 0 || e.step < first))
            first = e.step;
    }
    return first;
}

std::pair<int64_t, int64_t> sliceWindow(int64_t anomalyStep, int64_t firstStep, int64_t lastStep,
                                        int64_t halfWidth) {
    if (anomalyStep < 0 || lastStep < firstStep)
        return {firstStep, lastStep};
    halfWidth = std::max<int64_t>(halfWidth, 0);
    // Compare distances instead of adding halfWidth, so huge widths cannot overflow; the distances are taken
    // in 128 bits, since step numbers come from files and a damaged one can sit at either end of int64.
    using Wide = __int128;
    const int64_t lo = Wide(anomalyStep) - firstStep > halfWidth ? anomalyStep - halfWidth : firstStep;
    const int64_t hi = Wide(lastStep) - anomalyStep > halfWidth ? anomalyStep + halfWidth : lastStep;
    // An anomaly outside the run still yields steps of the run (its nearest edge).
    return {std::clamp(lo, firstStep, lastStep), std::clamp(hi, firstStep, lastStep)};
}

} // namespace rs
