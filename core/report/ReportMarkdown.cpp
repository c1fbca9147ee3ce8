// ReportMarkdown: see ReportMarkdown.h. The report leads with what a reader of a bug ticket looks for first
// (the run in one table, the per-rank figures, the first mismatch, findings, charts) and ends with the long
// material (events, environment, configuration, rank table).
#include "report/ReportMarkdown.h"

#include "report/MarkdownText.h"
#include "report/ReportEnvironment.h"
#include "store/ColumnWords.h"
#include "store/RankMean.h"
#include "store/RunReader.h"
#include "store/RunSlice.h"
#include "store/RunSource.h"
#include "view/RankSpread.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>

namespace rs {
namespace {

using namespace markdown;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string joinRanks(const std::vector<Event>& events) {
    std::string out;
    for (const Event& e : events) {
        if (e.rank < 0)
            continue;
        out += (out.empty() ? "" : ", ") + std::to_string(e.rank);
    }
    return out;
}

// --- sections
// ------------------------------------------------------------------------------------------------

bool stepRecorded(const RunMeta& m, runschema::StepCol c) {
    return stepColumnRecorded(m, c);
}

// A root attribute's text, or "not recorded" when the source did not know it.
std::string attr(const RunMeta& m, const char* name, const std::string& text) {
    return attributeRecorded(m, name) ? text : kNotRecorded;
}

// "2^14" for powers of two (what loss scales are), else the number.
std::string scaleText(float v) {
    if (!std::isfinite(v))
        return kNotRecorded;
    const double e = std::log2(double(v));
    if (v > 0 && e == std::round(e))
        return fmt::format("2^{}", int(e));
    return fmt::format("{}", v);
}

void runSection(std::string& md, const ReportInput& in) {
    namespace rsc = runschema;
    const RunMeta& m = in.meta;
    const auto elements = parameterCount(m);
    md += "## Run\n\n| | |\n|---|---|\n";
    md += fmt::format("| source | {} |\n", cell(describeRun(m)));
    md += fmt::format("| model | {} ({} parameter tensors, {}) |\n", cell(attr(m, rsc::kAttrModel, m.model)),
                      m.params.size(),
                      elements ? fmt::format("{} parameters", *elements) : "parameter sizes not recorded");
    md += fmt::format("| ranks | {} x batch {} per rank |\n", m.worldSize,
                      attr(m, rsc::kAttrBatchPerRank, std::to_string(m.batchPerRank)));
    md += fmt::format("| precision | {}, loss scale {} |\n", cell(attr(m, rsc::kAttrPrecision, m.precision)),
                      cell(attr(m, rsc::kAttrLossScale, m.lossScale)));
    md += fmt::format("| data | {} |\n| seed | {} |\n", cell(attr(m, rsc::kAttrData, m.data)),
                      attr(m, rsc::kAttrSeed, std::to_string(m.seed)));
    if (in.stepCount > 0)
        md += fmt::format("| steps | {} recorded (steps {} to {}) of {} planned |\n", in.stepCount,
                          in.firstStep, in.lastStep, m.plannedSteps);
    else
        md += fmt::format("| steps | none recorded of {} planned |\n", m.plannedSteps);
    md += fmt::format("| status | {} |\n",
                      in.complete ? "complete: " + cell(in.stopReason)
                                  : "incomplete: the writer did not close the file (stop reason: " +
                                        cell(in.stopReason) + ")");
    const bool fp = m.recorded(rsc::kWeightColumns[rsc::kWFp].path);
    const bool norm = m.recorded(rsc::kWeightColumns[rsc::kWNorm].path);
    md += fmt::format("| weight fingerprints | {} |\n",
                      fp     ? fmt::format("step 0 and every {} steps", m.weightEvery)
                      : norm ? fmt::format("not recorded (weight norms every {} steps)", m.weightEvery)
                             : std::string(kNotRecorded));
    md +=
        fmt::format("| sketch | {} |\n", stepRecorded(m, rsc::kSketch) && m.sketchDim > 0
                                             ? fmt::format("{} components per parameter tensor", m.sketchDim)
                                             : std::string(kNotRecorded));
    if (!m.absent.empty())
        md += fmt::format("| not recorded by the source | {} |\n", cell(columnWordsList(m.absent)));
    if (!m.unreadable.empty())
        md += fmt::format("| recorded, left unreadable by the killed writer | {} ({}) |\n",
                          cell(columnWordsList(m.unreadable)), cell(m.unreadableWhy));
    md += fmt::format("| created | {} |\n", cell(m.createdUtc));
    md += fmt::format("| run file | `{}`, format version {} |\n\n", cell(in.sourcePath), in.formatVersion);
    // What the import noted (skipped files, ranks no file covered): below the table, one line each.
    if (const auto notes = importNotes(m); !notes.empty()) {
        md += "Import notes:\n\n";
        for (const std::string& n : notes)
            md += "- " + cell(n) + "\n";
        md += "\n";
    }
}

// Past kReportAllRanksUpTo ranks, the ranks worth a row of their own: named by a finding or by a warning or
// error event, or with a figure that stands out from the other ranks'.
std::vector<bool> ranksToList(const ReportInput& in) {
    const StepFigures& f = in.figures;
    const size_t R = f.ranks.size();
    std::vector<bool> listed(R, R <= kReportAllRanksUpTo);
    if (R <= kReportAllRanksUpTo)
        return listed;
    auto mark = [&](int r) {
        if (r >= 0 && size_t(r) < R)
            listed[size_t(r)] = true;
    };
    for (int r : in.findingRanks)
        mark(r);
    for (const Event& e : in.events)
        if (e.severity != Severity::Info)
            mark(e.rank);
    auto figure = [&](auto get, double minZ = 3.5) {
        std::vector<float> v(R);
        for (size_t r = 0; r < R; ++r)
            v[r] = float(get(f.ranks[r]));
        for (int r : view::outlierRanks(v, minZ))
            mark(r);
    };
    // One step's loss over one small batch is too noisy to call a rank out by its value: only a non-finite
    // one counts (the loss chart judges ranks over many steps).
    figure([](const RankFigures& x) { return x.lossLast; }, std::numeric_limits<double>::infinity());
    figure([](const RankFigures& x) { return x.stepMsMedian; });
    figure([](const RankFigures& x) { return x.commMsMedian; });
    figure([](const RankFigures& x) { return x.overflowSteps; });
    figure([](const RankFigures& x) { return x.skippedSteps; });
    if (!in.evals.empty()) {
        const auto& a = in.evals.back().accuracy;
        std::vector<float> v(R, kNaN);
        std::copy_n(a.begin(), std::min(a.size(), R), v.begin());
        for (int r : view::outlierRanks(v))
            mark(r);
    }
    return listed;
}

// Which of the summary's figures the source recorded.
struct Recorded {
    bool loss, overflow, skipped, stepMs, commMs, lossScale;
    explicit Recorded(const RunMeta& m)
        : loss(stepRecorded(m, runschema::kLoss))
        , overflow(stepRecorded(m, runschema::kOverflow))
        , skipped(stepRecorded(m, runschema::kSkipped))
        , stepMs(stepRecorded(m, runschema::kStepMs))
        , commMs(stepRecorded(m, runschema::kCommMs))
        , lossScale(stepRecorded(m, runschema::kLossScale)) {}
};

std::string orNot(bool recorded, const std::string& text) {
    return recorded ? text : kNotRecorded;
}

// The loss-scale lines: one value on every rank, or each rank that used another scale than most ranks did.
void lossScaleLines(std::string& md, const ReportInput& in) {
    const StepFigures& f = in.figures;
    std::vector<size_t> differ;
    for (size_t r = 0; r < f.ranks.size(); ++r)
        if (f.ranks[r].lossScaleDiffers > 0)
            differ.push_back(r);
    if (differ.empty()) {
        if (!f.ranks.empty())
            md += fmt::format("- Loss scale: the same on every rank at every step ({} at the last step).\n",
                              scaleText(f.ranks.front().lossScaleLast));
        return;
    }
    md += fmt::format("- **Loss scales differ across ranks** on {} rank(s):", differ.size());
    std::vector<float> lasts;
    for (const RankFigures& x : f.ranks)
        lasts.push_back(x.lossScaleLast);
    constexpr size_t kShown = 8;
    for (size_t i = 0; i < differ.size() && i < kShown; ++i) {
        const RankFigures& x = f.ranks[differ[i]];
        md += fmt::format("{} rank {} differs from most ranks at {} step(s) from step {} (last: {})",
                          i ? ";" : "", differ[i], x.lossScaleDiffers, in.firstStep + x.lossScaleFirstDiffRow,
                          scaleText(x.lossScaleLast));
    }
    if (differ.size() > kShown)
        md += fmt::format("; and {} more ranks", differ.size() - kShown);
    md += ". A rank whose loss scale differs from the others' skips and rescales on its own: ranks then "
          "apply different updates.\n";
}

void summarySection(std::string& md, const ReportInput& in) {
    const StepFigures& f = in.figures;
    const Recorded rec(in.meta);
    md += "## Summary\n\n";
    if (in.stepCount == 0) {
        md += "No steps were recorded.\n\n";
        return;
    }
    const EvalRecord* eval = in.evals.empty() ? nullptr : &in.evals.back();
    auto evalAt = [&](size_t r) { return eval && r < eval->accuracy.size() ? eval->accuracy[r] : kNaN; };
    md += "| rank | loss first | loss last | overflow steps | skipped steps | loss scale (last) | step ms "
          "(median) | comm ms (median) |";
    md += eval ? fmt::format(" eval accuracy (step {}) |\n", eval->step) : std::string("\n");
    md += eval ? "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
               : "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    const std::vector<bool> listed = ranksToList(in);
    std::vector<size_t> others;
    double evalSum = 0;
    auto count = [](int64_t v) { return fmt::format("{}", v); };
    for (size_t r = 0; r < f.ranks.size(); ++r) {
        evalSum += double(evalAt(r));
        if (!listed[r]) {
            others.push_back(r);
            continue;
        }
        const RankFigures& x = f.ranks[r];
        md += fmt::format(
            "| {} | {} | {} | {} | {} | {} | {} | {} |", r, orNot(rec.loss, fixed(x.lossFirst, 4)),
            orNot(rec.loss, fixed(x.lossLast, 4)), orNot(rec.overflow, count(x.overflowSteps)),
            orNot(rec.skipped, count(x.skippedSteps)),
            orNot(rec.lossScale, (x.lossScaleDiffers ? "**" : "") + scaleText(x.lossScaleLast) +
                                     (x.lossScaleDiffers ? "**" : "")),
            orNot(rec.stepMs, fixed(x.stepMsMedian, 1)), orNot(rec.commMs, fixed(x.commMsMedian, 1)));
        md += eval ? fmt::format(" {} |\n", percent(evalAt(r))) : std::string("\n");
    }
    if (!others.empty()) {
        // Ranges over the ranks without a row: lowest to highest, the same figure once when they agree.
        auto range = [&](bool recorded, auto get, auto text) {
            if (!recorded)
                return std::string(kNotRecorded);
            float lo = 0, hi = 0;
            bool any = false;
            for (size_t r : others) {
                const float v = float(get(r));
                if (!std::isfinite(v))
                    continue;
                lo = any ? std::min(lo, v) : v;
                hi = any ? std::max(hi, v) : v;
                any = true;
            }
            return !any ? std::string("nan") : lo == hi ? text(lo) : text(lo) + " to " + text(hi);
        };
        auto fx = [](int d) { return [d](float v) { return fixed(v, d); }; };
        auto whole = [](float v) { return fmt::format("{}", int64_t(v)); };
        const auto& x = f.ranks;
        md += fmt::format("| *the other {} ranks* | {} | {} | {} | {} | {} | {} | {} |", others.size(),
                          range(
                              rec.loss, [&](size_t r) { return x[r].lossFirst; }, fx(4)),
                          range(
                              rec.loss, [&](size_t r) { return x[r].lossLast; }, fx(4)),
                          range(
                              rec.overflow, [&](size_t r) { return x[r].overflowSteps; }, whole),
                          range(
                              rec.skipped, [&](size_t r) { return x[r].skippedSteps; }, whole),
                          range(
                              rec.lossScale, [&](size_t r) { return x[r].lossScaleLast; }, scaleText),
                          range(
                              rec.stepMs, [&](size_t r) { return x[r].stepMsMedian; }, fx(1)),
                          range(
                              rec.commMs, [&](size_t r) { return x[r].commMsMedian; }, fx(1)));
        md += eval ? fmt::format(" {} |\n", range(true, evalAt, percent)) : std::string("\n");
    }
    const float evalMean = float(evalSum / double(std::max<size_t>(1, f.ranks.size())));
    bool scalesDiffer = false;
    for (const RankFigures& x : f.ranks)
        scalesDiffer = scalesDiffer || x.lossScaleDiffers > 0;
    const std::string allScales = !rec.lossScale    ? std::string(kNotRecorded)
                                  : scalesDiffer    ? std::string("differ across ranks")
                                  : f.ranks.empty() ? std::string()
                                                    : scaleText(f.ranks.front().lossScaleLast);
    md += fmt::format("| **all** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** |",
                      orNot(rec.loss, fixed(f.lossFirstMean, 4)), orNot(rec.loss, fixed(f.lossLastMean, 4)),
                      orNot(rec.overflow, count(f.overflowSteps)), orNot(rec.skipped, count(f.skippedSteps)),
                      allScales, orNot(rec.stepMs, fixed(f.stepMsMedian, 1)),
                      orNot(rec.commMs, fixed(f.commMsMedian, 1)));
    md += eval ? fmt::format(" **{}** |\n\n", percent(evalMean)) : std::string("\n\n");
    if (!others.empty())
        md += fmt::format("- {} ranks: the table lists the {} that the findings or warning and error events "
                          "name, or whose figures stand out from the others'; the other {} are one row of "
                          "ranges (lowest to highest). `steps.csv` has every rank.\n",
                          f.ranks.size(), f.ranks.size() - others.size(), others.size());
    if (rec.loss)
        md += fmt::format("- Loss (mean over ranks): {} at the first step, {} at the last.\n",
                          fixed(f.lossFirstMean, 4), fixed(f.lossLastMean, 4));
    else
        md += "- Loss: not recorded by the source.\n";
    if (eval)
        md += fmt::format("- Final held-out accuracy (step {}, mean over ranks): {}.\n", eval->step,
                          percent(evalMean));
    else
        md += "- No held-out evaluation was recorded.\n";
    if (rec.overflow)
        md += fmt::format("- Overflow on at least one rank in {} of {} steps.\n", f.overflowSteps,
                          in.stepCount);
    else
        md += "- Overflow flags: not recorded by the source (not the same as no overflow).\n";
    if (rec.skipped)
        md += fmt::format("- Updates skipped on at least one rank in {} steps.\n", f.skippedSteps);
    else
        md += "- Skipped updates: not recorded by the source.\n";
    if (rec.lossScale)
        lossScaleLines(md, in);
    else
        md += "- Loss scale: not recorded by the source.\n";
    md += "- The \"all\" row: loss means over ranks, step counts where any rank was flagged, medians of the "
          "per-rank medians.\n\n";
}

std::string joinInts(const std::vector<int>& v) {
    std::string out;
    for (int x : v)
        out += (out.empty() ? "" : ", ") + std::to_string(x);
    return out;
}

// The earliest finding tied to a step, or null.
const Finding* earliestFinding(const std::vector<Finding>& findings) {
    const Finding* first = nullptr;
    for (const Finding& f : findings)
        if (f.firstStep >= 0 && (!first || f.firstStep < first->firstStep))
            first = &f;
    return first;
}

// No GRADIENT_SYNC or WEIGHT_SYNC event: what that does and does not mean for this file.
void noMismatchEvent(std::string& md, const ReportInput& in) {
    namespace rsc = runschema;
    if (const Finding* f = earliestFinding(in.diagnosis)) {
        md += fmt::format(
            "The event log has no GRADIENT_SYNC or WEIGHT_SYNC event, but diagnosis names **{}** "
            "on rank(s) {} from step **{}** (see Findings): a log without mismatch events does not "
            "mean the ranks agreed.\n",
            f->key(), joinInts(f->ranks), f->firstStep);
        if (in.chartStep == f->firstStep)
            md += "The charts below show this step.\n";
        md += "\n";
        return;
    }
    const bool syncedFp = in.meta.recorded(rsc::kStepColumns[rsc::kSyncedFp].path);
    const bool weightFp = in.meta.recorded(rsc::kWeightColumns[rsc::kWFp].path);
    if (!syncedFp || !weightFp) {
        md +=
            fmt::format("Not recorded: the source recorded no {}, so ranks were not compared bit for bit "
                        "there; the event log has no GRADIENT_SYNC or WEIGHT_SYNC event and diagnosis names "
                        "no cause in what was recorded.\n\n",
                        !syncedFp && !weightFp ? "synced gradient or weight fingerprints"
                        : !syncedFp            ? "synced gradient fingerprints"
                                               : "weight fingerprints");
        return;
    }
    md += "None: the event log has no GRADIENT_SYNC or WEIGHT_SYNC event (synced gradients and weight "
          "fingerprints agreed across ranks wherever they were compared).\n\n";
}

void mismatchSection(std::string& md, const ReportInput& in) {
    md += "## First mismatch\n\n";
    const auto first = firstMismatch(in.events);
    if (first.empty()) {
        noMismatchEvent(md, in);
        return;
    }
    const Event& e = first.front();
    const std::string what = e.code == eventcode::kGradientSync ? "synced gradients" : "weights";
    md += fmt::format("**{}** at step **{}**: the {} of rank 0 and rank(s) **{}** differ.\n\n", e.code,
                      e.step, what, joinRanks(first));
    for (const Event& x : first)
        md += fmt::format("> {}\n>\n", codeSpan(x.message));
    md.resize(md.size() - 2); // the last blockquote separator
    md += "\n";
    // The other kind too, since a weight mismatch without a gradient mismatch points elsewhere (the update).
    std::vector<Event> other;
    for (const Event& x : in.events)
        if ((x.code == eventcode::kGradientSync || x.code == eventcode::kWeightSync) && x.code != e.code)
            other.push_back(x);
    if (!other.empty()) {
        const auto firstOther = firstMismatch(other);
        md += fmt::format("First {} at step {} (rank(s) {}).\n", firstOther.front().code,
                          firstOther.front().step, joinRanks(firstOther));
    }
    if (const Finding* f = earliestFinding(in.diagnosis); f && f->firstStep < e.step)
        md += fmt::format("Diagnosis names an earlier step: **{}** on rank(s) {} from step {} (see "
                          "Findings).\n",
                          f->key(), joinInts(f->ranks), f->firstStep);
    if (in.chartStep == e.step)
        md += "The charts below show this step.\n";
    md += "\n";
}

void findingsSection(std::string& md, const ReportInput& in) {
    md += "## Findings\n\n";
    if (in.findings.empty()) {
        md +=
            "Automatic diagnosis is not available in this version yet: no findings were computed. The first "
            "mismatch, the charts and the events are the evidence to read.\n\n";
        return;
    }
    for (const std::string& f : in.findings)
        md += "- " + f + "\n";
    md += "\n";
}

void comparisonSection(std::string& md, const ReportInput& in) {
    if (in.comparison.empty())
        return;
    md += "## Compared with a reference\n\n";
    md += "This run " + in.comparisonLine +
          ". The comparison (`ranksight-cli compare`; what is compared and how the tolerances are derived: "
          "docs/comparing.md):\n\n```\n" +
          in.comparison + "```\n\n";
}

void chartsSection(std::string& md, const ReportInput& in) {
    if (in.charts.empty())
        return;
    md += "## Charts\n\n";
    if (in.chartStep >= 0)
        md += fmt::format("Cursor and heatmaps at step {}{}.\n\n", in.chartStep,
                          in.chartStepReason.empty() ? "" : " (" + in.chartStepReason + ")");
    for (const ReportChart& c : in.charts) {
        md += fmt::format("### {}\n\n", c.title);
        if (!c.png.empty())
            md += fmt::format("![{}]({})\n\n", cell(c.title), target(c.png));
        if (!c.svg.empty())
            md += fmt::format("Vector version: [{}]({})\n\n", c.svg, target(c.svg));
    }
}

// At most kReportMaxEvents rows: when there are more, errors and warnings are kept before info, then the
// rows are shown in log order.
void eventsSection(std::string& md, const ReportInput& in) {
    md += "## Events\n\n";
    const auto& events = in.events;
    if (events.empty()) {
        md += "The event log is empty.\n\n";
        return;
    }
    size_t counts[3] = {0, 0, 0};
    for (const Event& e : events)
        ++counts[std::min<size_t>(2, size_t(e.severity))];
    md += fmt::format("{} events: {} errors, {} warnings, {} info.\n\n", events.size(), counts[2], counts[1],
                      counts[0]);
    std::vector<size_t> shown(events.size());
    for (size_t i = 0; i < shown.size(); ++i)
        shown[i] = i;
    if (shown.size() > kReportMaxEvents) {
        std::stable_sort(shown.begin(), shown.end(),
                         [&](size_t a, size_t b) { return events[a].severity > events[b].severity; });
        shown.resize(kReportMaxEvents);
        std::sort(shown.begin(), shown.end());
    }
    md += "| step | rank | severity | code | message |\n|---:|---:|---|---|---|\n";
    size_t hidden[3] = {counts[0], counts[1], counts[2]};
    for (size_t i : shown) {
        const Event& e = events[i];
        --hidden[std::min<size_t>(2, size_t(e.severity))];
        md += fmt::format("| {} | {} | {} | {} | {} |\n", e.step,
                          e.rank < 0 ? std::string("all") : std::to_string(e.rank), severityName(e.severity),
                          cell(e.code), cell(e.message));
    }
    if (shown.size() < events.size())
        md += fmt::format(
            "\n{} more events not shown ({} errors, {} warnings, {} info); the run file's /events "
            "table holds them all.\n",
            events.size() - shown.size(), hidden[2], hidden[1], hidden[0]);
    md += "\n";
}

void filesSection(std::string& md, const ReportInput& in) {
    if (in.files.empty())
        return;
    md += "## Files\n\n";
    for (const ReportFile& f : in.files)
        md += fmt::format("- [{}]({}): {}\n", f.name, target(f.name), f.description);
    md += "\n";
}

} // namespace

ReportInput readReportInput(const RunReader& reader) {
    ReportInput in;
    in.sourcePath = reader.path();
    in.runName = std::filesystem::path(reader.path()).stem().string();
    in.meta = reader.meta();
    in.formatVersion = reader.formatVersion();
    in.complete = reader.complete();
    in.stopReason = reader.stopReason();
    in.stepCount = reader.stepCount();
    const int64_t n = in.stepCount;
    if (n > 0) {
        in.firstStep = reader.readStepNumbers(0, 1).front();
        in.lastStep = reader.readStepNumbers(n - 1, n).front();
    }
    // Blocks of rows, so only the two time columns (the medians need them) grow with the run.
    constexpr int64_t kBlock = 16384;
    StepFiguresBuilder b(in.meta.worldSize);
    for (int64_t begin = 0; begin < n; begin += kBlock) {
        const int64_t end = std::min(n, begin + kBlock);
        namespace rsc = runschema;
        b.add(reader.readStepScalar(rsc::kLoss, begin, end), reader.readStepScalar(rsc::kStepMs, begin, end),
              reader.readStepScalar(rsc::kCommMs, begin, end),
              reader.readStepScalar(rsc::kOverflow, begin, end),
              reader.readStepScalar(rsc::kSkipped, begin, end),
              reader.readStepScalar(rsc::kLossScale, begin, end));
    }
    in.figures = b.finish();
    in.evals = reader.readEvals();
    in.events = reader.readEvents();
    return in;
}

std::vector<Event> firstMismatch(const std::vector<Event>& events) {
    const Event* first = nullptr;
    for (const Event& e : events) {
        if (e.code != eventcode::kGradientSync && e.code != eventcode::kWeightSync)
            continue;
        // A gradient mismatch at the same step comes first: it is the cause a weight mismatch follows from.
        if (!first || e.step < first->step ||
            (e.step == first->step && e.code == eventcode::kGradientSync &&
             first->code != eventcode::kGradientSync))
            first = &e;
    }
    std::vector<Event> out;
    if (!first)
        return out;
    for (const Event& e : events)
        if (e.step == first->step && e.code == first->code)
            out.push_back(e);
    return out;
}

std::string buildReportMarkdown(const ReportInput& in) {
    std::string md;
    md += fmt::format("# RankSight report: {}\n\n", in.runName.empty() ? std::string("run") : in.runName);
    const std::string model = attributeRecorded(in.meta, runschema::kAttrModel) ? in.meta.model + ", " : "";
    md += fmt::format("Generated {} by RankSight from `{}`: {}{}, {} steps recorded.\n\n",
                      in.generatedUtc.empty() ? nowUtc() : in.generatedUtc, in.sourcePath, model,
                      describeRun(in.meta), in.stepCount);
    runSection(md, in);
    summarySection(md, in);
    mismatchSection(md, in);
    findingsSection(md, in);
    comparisonSection(md, in);
    chartsSection(md, in);
    eventsSection(md, in);
    environmentSection(md, in);
    filesSection(md, in);
    return md;
}

} // namespace rs
