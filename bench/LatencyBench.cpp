// runLatencyBench: see LatencyBench.h.
#include "LatencyBench.h"

#include "WatchProcesses.h"
#include "diagnose/Diagnoser.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"
#include "store/RunWriter.h"

#include <QCoreApplication>
#include <QDir>
#include <QTemporaryDir>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace rs::bench {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Everything a run holds, in memory, so that the timed replay reads nothing (fault-lab runs are small).
struct Records {
    RunMeta meta;
    std::string stopReason;
    std::vector<StepRecord> steps;
    std::vector<WeightRecord> weights;
    std::vector<EvalRecord> evals;
    std::vector<Event> events;
};

Records readAll(const RunReader& r) {
    Records x{r.meta(), r.stopReason(), {}, r.readWeights(), r.readEvals(), r.readEvents()};
    const int64_t n = r.stepCount();
    for (int64_t b = 0; b < n; b += 256)
        for (StepRecord& s : r.readSteps(b, std::min(n, b + 256), true))
            x.steps.push_back(std::move(s));
    return x;
}

// The recorded pace: the median gap between steps' end times, when the source recorded them.
double recordedStepMs(const Records& x) {
    if (!x.meta.recorded(runschema::kStepColumns[runschema::kEndNs].path) || x.steps.size() < 2)
        return 0;
    std::vector<double> gaps;
    for (size_t i = 1; i < x.steps.size(); ++i)
        if (x.steps[i].endNs > x.steps[i - 1].endNs && x.steps[i - 1].endNs > 0)
            gaps.push_back(double(x.steps[i].endNs - x.steps[i - 1].endNs) / 1e6);
    if (gaps.empty())
        return 0;
    std::nth_element(gaps.begin(), gaps.begin() + ptrdiff_t(gaps.size() / 2), gaps.end());
    return gaps[gaps.size() / 2];
}

// Writes x into path step by step at stepMs a step, each step with its weight rows, evaluations and events;
// writtenS[i] is when step row i (and its rows) had been flushed.
void replay(const Records& x, const std::string& path, double stepMs, Clock::time_point t0,
            std::vector<double>& writtenS, std::atomic<int64_t>& written, std::mutex& m, double& closedS) {
    auto w = RunWriter::create(path, x.meta);
    size_t wi = 0, ei = 0, vi = 0;
    for (size_t i = 0; i < x.steps.size(); ++i) {
        std::this_thread::sleep_until(t0 + std::chrono::microseconds(int64_t(double(i) * stepMs * 1000)));
        const int64_t step = x.steps[i].step;
        w->appendStep(x.steps[i]);
        for (; wi < x.weights.size() && x.weights[wi].step <= step; ++wi)
            w->appendWeights(x.weights[wi]);
        for (; vi < x.evals.size() && x.evals[vi].step <= step; ++vi)
            w->appendEval(x.evals[vi]);
        for (; ei < x.events.size() && x.events[ei].step <= step; ++ei)
            w->appendEvent(x.events[ei]);
        w->flush();
        {
            const std::lock_guard lock(m);
            writtenS[i] = secondsSince(t0);
        }
        written = int64_t(i) + 1;
    }
    for (; wi < x.weights.size(); ++wi)
        w->appendWeights(x.weights[wi]);
    for (; ei < x.events.size(); ++ei)
        w->appendEvent(x.events[ei]);
    w->close(x.stopReason.empty() ? "completed" : x.stopReason);
    const std::lock_guard lock(m);
    closedS = secondsSince(t0);
}

} // namespace

LatencyResult runLatencyBench(const std::string& file, const LatencyOptions& o,
                              const std::function<void(const std::string&)>& log) {
    const auto src = openRunFile(file);
    const Records x = readAll(*src);
    if (x.steps.empty())
        throw std::runtime_error(fmt::format("{}: no steps to replay", file));
    const std::vector<Finding> truth = diagnoseRun(*src);

    LatencyResult res;
    res.file = file;
    res.steps = int64_t(x.steps.size());
    res.ranks = x.meta.worldSize;
    res.stepMs = o.stepMs > 0 ? o.stepMs : std::min(o.maxStepMs, std::max(1.0, recordedStepMs(x)));
    if (recordedStepMs(x) <= 0 && o.stepMs <= 0)
        res.stepMs = 50; // no recorded pace: the quick preset's order of magnitude
    log(fmt::format("bench-latency: {}: {} steps at {:.1f} ms a step, {} finding(s) to wait for", file,
                    res.steps, res.stepMs, truth.size()));

    QTemporaryDir dir;
    if (!dir.isValid())
        throw std::runtime_error("cannot make a temporary folder");
    const std::string live = QDir(dir.path()).filePath(QStringLiteral("live.h5")).toStdString();
    std::vector<double> writtenS(x.steps.size(), -1);
    std::atomic<int64_t> written{0};
    std::atomic<bool> done{false};
    std::mutex m;
    std::exception_ptr failed;
    std::vector<std::string> causes;
    for (const Finding& f : truth)
        if (std::find(causes.begin(), causes.end(), f.key()) == causes.end())
            causes.push_back(f.key());
    std::unique_ptr<WatchProcesses> watchers;
    if (!o.watchCli.empty())
        watchers = std::make_unique<WatchProcesses>(o.watchCli, live, causes, dir.path().toStdString());
    res.watched = watchers != nullptr;
    const auto t0 = Clock::now() + std::chrono::milliseconds(200);
    std::thread writer([&] {
        try {
            replay(x, live, res.stepMs, t0, writtenS, written, m, res.closedS);
        } catch (...) {
            failed = std::current_exception();
        }
        done = true;
    });

    // The window's objects, with their defaults.
    RunModel model;
    DiagnosisRunner runner(&model);
    std::map<std::string, LatencyRow> shown;
    QObject::connect(&runner, &DiagnosisRunner::findingsChanged, [&] {
        const double now = secondsSince(t0);
        for (const Finding& f : runner.findings())
            if (!shown.count(f.key())) {
                LatencyRow row;
                row.shownS = now;
                row.shownAfterStep = written > 0 ? x.steps[size_t(written - 1)].step : -1;
                row.atEnd = done && model.isComplete();
                shown.emplace(f.key(), row);
            }
    });
    while (written == 0 && !done)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    model.open(QString::fromStdString(live));
    // Until the run is complete, the model has all of it, and the runner's pass after completion is in.
    Clock::time_point completeAt{};
    const auto deadline =
        Clock::now() + std::chrono::duration<double>(o.timeoutS + double(x.steps.size()) * res.stepMs / 1000);
    while (Clock::now() < deadline) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        const bool watching = watchers && watchers->poll(secondsSince(t0));
        const bool settled = done && model.isComplete() && model.stepCount() == res.steps &&
                             runner.hasResult() && !runner.isRunning() && !watching;
        if (!settled)
            completeAt = {};
        else if (completeAt == Clock::time_point{})
            completeAt = Clock::now();
        else if (Clock::now() - completeAt > std::chrono::seconds(3))
            break;
    }
    writer.join();
    if (watchers)
        watchers->finish();
    if (failed)
        std::rethrow_exception(failed);
    res.writeS = writtenS.back();

    for (const Finding& f : truth) {
        LatencyRow row;
        if (auto it = shown.find(f.key()); it != shown.end())
            row = it->second;
        row.cause = f.key();
        row.firstStep = f.firstStep;
        if (watchers)
            for (const WatchProcess& w : watchers->processes())
                if (w.cause == f.key()) {
                    row.watchExit = w.exitCode;
                    row.watchS = w.exitCode == 3 ? w.exitedS : -1;
                    row.watchAfterStep = w.lastStep;
                    row.watchAtEnd = w.exitCode == 3 && w.exitedS >= res.closedS;
                }
        // The evidence's step: the first row at or after the finding's first step (a slice may start later).
        for (size_t i = 0; i < x.steps.size(); ++i)
            if (x.steps[i].step >= f.firstStep) {
                row.writtenS = f.firstStep >= 0 ? writtenS[i] : writtenS.front();
                break;
            }
        res.rows.push_back(row);
    }
    return res;
}

std::string toJson(const std::vector<LatencyResult>& results) {
    nlohmann::json all = nlohmann::json::array();
    for (const LatencyResult& r : results) {
        nlohmann::json rows = nlohmann::json::array();
        for (const LatencyRow& row : r.rows)
            rows.push_back({{"cause", row.cause},
                            {"first_step", row.firstStep},
                            {"written_s", row.writtenS},
                            {"shown_s", row.shownS},
                            {"latency_s", row.latencyS()},
                            {"shown_after_step", row.shownAfterStep},
                            {"at_end", row.atEnd},
                            {"watch_exit", row.watchExit},
                            {"watch_s", row.watchS},
                            {"watch_latency_s", row.watchLatencyS()},
                            {"watch_after_step", row.watchAfterStep},
                            {"watch_at_end", row.watchAtEnd}});
        all.push_back({{"file", r.file},
                       {"steps", r.steps},
                       {"ranks", r.ranks},
                       {"step_ms", r.stepMs},
                       {"write_s", r.writeS},
                       {"closed_s", r.closedS},
                       {"watched", r.watched},
                       {"findings", rows}});
    }
    return all.dump(2);
}

namespace {

// `watch --fail-on CAUSE`'s alert: steps and seconds after the evidence, or the miss.
std::string watchCell(const LatencyResult& r, const LatencyRow& row) {
    if (!r.watched)
        return "not run";
    if (row.watchExit == 0)
        return "no alert: the run completed without it (MISS)";
    if (row.watchExit != 3)
        return "no alert (MISS)";
    if (row.writtenS < 0)
        return "alert once the run ended, before its step was written (MISS)";
    const std::string steps = row.firstStep >= 0 && row.watchAfterStep >= 0
                                  ? fmt::format("{} steps, ", row.watchAfterStep - row.firstStep)
                                  : "";
    return fmt::format("{}{:.2f} s{}", steps, row.watchLatencyS(),
                       row.watchAtEnd ? ", only at the end (MISS)" : "");
}

} // namespace

std::string toTable(const std::vector<LatencyResult>& results) {
    std::string out = "| run | cause | first step | steps written by then | step ms | evidence to finding | "
                      "evidence to watch's alert |\n"
                      "|---|---|---:|---:|---:|---|---|\n";
    for (const LatencyResult& r : results) {
        const std::string name = std::filesystem::path(r.file).filename().string();
        if (r.rows.empty())
            out += fmt::format("| {} | (no finding) | | | {:.0f} | | |\n", name, r.stepMs);
        for (const LatencyRow& row : r.rows) {
            std::string latency =
                row.shownS < 0     ? "never named while live (MISS)"
                : row.writtenS < 0 ? "named once the run ended, before its step was written (MISS)"
                : row.atEnd        ? fmt::format("{:.2f} s, only at the end (MISS)", row.latencyS())
                                   : fmt::format("{:.2f} s", row.latencyS());
            out += fmt::format("| {} | {} | {} | {} | {:.0f} | {} | {} |\n", name, row.cause,
                               row.firstStep >= 0 ? std::to_string(row.firstStep) : "—",
                               row.shownAfterStep >= 0 ? std::to_string(row.shownAfterStep) : "—", r.stepMs,
                               latency, watchCell(r, row));
        }
    }
    return out;
}

} // namespace rs::bench
