// OpenBench: see OpenBench.h. Each phase waits in a QEventLoop with a timeout, so a broken build reports a
// failure instead of hanging; files this bench creates on its own are removed at the end.
#include "OpenBench.h"

#include "SyntheticRun.h"
#include "charts/LossChart.h"
#include "charts/OverflowTimeline.h"
#include "charts/ParamRankHeatmap.h"
#include "charts/RankHeatmap.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/CardsModel.h"
#include "panels/CardsPanel.h"
#include "store/RunReader.h"
#include "store/RunWriter.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QGridLayout>
#include <QTimer>
#include <QWidget>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <malloc.h>
#include <nlohmann/json.hpp>
#include <pthread.h>
#include <qcustomplot.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace rs::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kTickMs = 5;
constexpr int kWindowWidth = 1600, kWindowHeight = 1000;

double msSince(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// CPU time of the calling thread.
double threadCpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

// Resident memory of this process. Freed heap is handed back first (malloc_trim) so the figure is what is in
// use, not what an earlier phase left in glibc's free lists.
double rssMiB() {
    malloc_trim(0);
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stod(line.substr(6)) / 1024.0; // kB
    return 0;
}

// Runs the event loop until done() holds (checked after every signal that quits the loop) or timeoutS passes.
template <typename Signal, typename Done>
bool waitFor(const RunModel* model, Signal signal, Done done, double timeoutS) {
    if (done())
        return true;
    QEventLoop loop;
    QObject::connect(model, signal, &loop, [&] {
        if (done())
            loop.quit();
    });
    QObject::connect(model, &RunModel::openFailed, &loop, &QEventLoop::quit);
    QTimer::singleShot(int(timeoutS * 1000), &loop, &QEventLoop::quit);
    loop.exec();
    return done();
}

// Keeps the cursor on the latest step, as the main window does for a live run.
void followModel(RunModel* model, StepCursor* cursor) {
    QObject::connect(model, &RunModel::stepsAppended, cursor, [model, cursor] {
        if (cursor->following())
            cursor->advanceTo(model->lastStep(), double(model->firstStep()), double(model->lastStep()));
    });
    QObject::connect(model, &RunModel::runReset, cursor, &StepCursor::reset);
}

void generate(const OpenBenchOptions& o, OpenBenchResult& r,
              const std::function<void(const std::string&)>& log) {
    const auto start = Clock::now();
    const RunMeta meta = resnet50Meta(o.ranks, o.steps, o.sketchDim);
    SyntheticRun gen(meta);
    auto writer = RunWriter::create(r.file, meta);
    auto lastLog = start;
    for (int64_t s = 0; s < o.steps; ++s) {
        writer->appendStep(gen.step(s));
        if (gen.wantsWeights(s))
            writer->appendWeights(gen.weights(s));
        if (gen.wantsEval(s))
            writer->appendEval(gen.eval(s));
        for (const Event& e : gen.events(s))
            writer->appendEvent(e);
        if (Clock::now() - lastLog > std::chrono::seconds(10)) {
            lastLog = Clock::now();
            log(fmt::format("  generating: {}/{} steps, {:.0f} s", s + 1, o.steps, msSince(start) / 1000));
        }
    }
    writer->close("completed");
    r.generated = true;
    r.generateS = msSince(start) / 1000;
}

// Writes the file's dirty pages out, then asks the kernel to forget the file's cached pages, so the open
// reads from disk like the first one after a reboot (only this file is evicted, nothing else on the machine).
bool evictFromPageCache(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0)
        return false;
    const bool ok = ::fdatasync(fd) == 0 && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    ::close(fd);
    return ok;
}

void measureOpen(const OpenBenchOptions& o, OpenBenchResult& r) {
    r.cold = o.cold && evictFromPageCache(r.file);
    r.rssBeforeMiB = rssMiB();
    RunModel model;
    StepCursor cursor;
    followModel(&model, &cursor);
    QWidget window;
    auto* layout = new QGridLayout(&window);
    auto* chart = new LossChart(&model, &cursor);
    layout->addWidget(chart);
    window.resize(kWindowWidth, kWindowHeight / 2);
    window.show();
    // The window is up and painted before the file opens, as it is when a user opens a file in a running
    // app (File > Open, drag and drop): the window's own first paint (QCustomPlot's first replot, font
    // set-up: 35-50 ms) is not part of loading the file.
    chart->refreshNow();
    for (int i = 0; i < 10; ++i)
        QCoreApplication::processEvents();

    // The first picture: the first rows in the model, then the loss chart drawn from them.
    bool first = false;
    Clock::time_point start;
    QObject::connect(&model, &RunModel::stepsAppended, &window, [&] {
        if (first)
            return;
        first = true;
        r.firstRowsMs = msSince(start);
        chart->refreshNow();
        r.firstPictureMs = msSince(start);
    });
    QString failure;
    QObject::connect(&model, &RunModel::openFailed, &window,
                     [&](const QString&, const QString& message) { failure = message; });
    // Event-loop gaps while the loader thread streams the file into the model: the GUI must stay
    // responsive while a large file loads, not only once it has.
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    Clock::time_point lastTick;
    QObject::connect(&tick, &QTimer::timeout, &window, [&] {
        const auto now = Clock::now();
        const double gap = std::chrono::duration<double, std::milli>(now - lastTick).count();
        r.loadMaxGapMs = std::max(r.loadMaxGapMs, gap);
        r.loadGapsOver50Ms += gap > 50;
        ++r.loadTicks;
        lastTick = now;
    });
    start = Clock::now();
    lastTick = start;
    tick.start(kTickMs);
    model.open(QString::fromStdString(r.file));
    if (!waitFor(
            &model, &RunModel::stepsAppended, [&] { return first || !failure.isEmpty(); }, o.openTimeoutS) ||
        !failure.isEmpty())
        throw std::runtime_error(
            fmt::format("{}: open failed: {}", r.file,
                        failure.isEmpty() ? "no rows within the timeout" : failure.toStdString()));
    r.rssFirstMiB = rssMiB();
    if (!waitFor(
            &model, &RunModel::statusChanged, [&] { return !model.isLoading(); }, o.openTimeoutS))
        throw std::runtime_error(fmt::format("{}: still loading after {:.0f} s", r.file, o.openTimeoutS));
    r.fullLoadMs = msSince(start);
    tick.stop();
    r.steps = model.stepCount();
    r.ranks = model.worldSize();
    r.params = model.paramCount();
    r.modelMiB = double(model.stepCount()) * (8.0 + 4.0 * kStepColumnCount * model.worldSize()) / (1 << 20);
    r.rssLoadedMiB = rssMiB();

    const auto detailStart = Clock::now();
    const int64_t step = model.lastStep();
    model.detail(step);
    if (!waitFor(
            &model, &RunModel::detailReady, [&] { return model.cachedDetail(step) != nullptr; }, 60))
        throw std::runtime_error(fmt::format("{}: the detail of step {} did not arrive", r.file, step));
    r.detailMs = msSince(detailStart);

    // The panels a cursor move redraws, on the GUI thread, for that step: each one's time is a stall the
    // user feels when the cursor moves (past 64 ranks the maps pool by server and the cards group).
    cursor.setStep(step);
    auto* ranks = new RankHeatmap(&model, &cursor);
    auto* params = new ParamRankHeatmap(&model, &cursor);
    auto* cards = new CardsPanel(&model, &cursor);
    layout->addWidget(ranks);
    layout->addWidget(params);
    layout->addWidget(cards);
    for (int i = 0; i < 10; ++i)
        QCoreApplication::processEvents();
    const auto timed = [&](const char* name, const std::function<void()>& draw) {
        const auto t = Clock::now();
        draw();
        r.panels.push_back({name, msSince(t)});
    };
    // Past 64 ranks its matrix is computed on a worker thread: the stall is the GUI thread's part, and the
    // map is ready (wall clock) when the worker's result is drawn.
    const auto asked = Clock::now();
    timed("rank x rank heatmap", [&] {
        ranks->refreshNow();
        ranks->plot()->replot();
    });
    QElapsedTimer ready;
    ready.start();
    while ((ranks->matrix().rows != r.ranks || ranks->caption().contains(QLatin1String("computing"))) &&
           ready.elapsed() < 120000) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        ranks->refreshNow();
    }
    r.rankMapReadyMs = msSince(asked);
    timed("layers x ranks heatmap", [&] {
        params->refreshNow();
        params->plot()->replot();
    });
    timed("cards panel", [&] {
        cards->cardsModel()->refreshNow();
        cards->repaint();
    });
    model.close();
}

// Phase (c). The writer thread owns the RunWriter and writes liveSteps steps at full speed; the GUI thread
// runs the model, the charts, the tick timer and the diagnosis runner (whose passes run in the background),
// as the main window does. Measured in quarters of the steps shown, so a cost that grows with the run shows.
void measureLive(const OpenBenchOptions& o, OpenBenchResult& r, const std::string& path) {
    const RunMeta meta = resnet50Meta(o.ranks, 1000000, o.sketchDim);
    auto writer = RunWriter::create(path, meta, /*overwrite=*/true);
    std::atomic<bool> stop{false};
    std::atomic<int64_t> written{0};
    std::string writerError;
    double writerMs = 0;
    std::thread thread([&] {
        pthread_setname_np(pthread_self(), "bench-writer"); // tells it apart in perf and top
        SyntheticRun gen(meta);
        const auto start = Clock::now();
        try {
            for (int64_t s = 0; !stop.load() && s < o.liveSteps; ++s) {
                writer->appendStep(gen.step(s));
                if (gen.wantsWeights(s))
                    writer->appendWeights(gen.weights(s));
                if (gen.wantsEval(s))
                    writer->appendEval(gen.eval(s));
                for (const Event& e : gen.events(s))
                    writer->appendEvent(e);
                written.store(s + 1);
            }
            writer->close(stop.load() ? "stopped by bench-open" : "completed");
        } catch (const std::exception& e) {
            writerError = e.what();
        }
        writerMs = msSince(start);
    });

    RunModel model;
    StepCursor cursor;
    followModel(&model, &cursor);
    QWidget window;
    auto* grid = new QGridLayout(&window);
    ChartWidget* charts[] = {new LossChart(&model, &cursor), new OverflowTimeline(&model, &cursor),
                             new RankHeatmap(&model, &cursor), new ParamRankHeatmap(&model, &cursor)};
    r.replots.resize(std::size(charts));
    std::vector<Clock::time_point> replotStart(std::size(charts));
    std::vector<double> replotCpuStart(std::size(charts));
    for (size_t i = 0; i < std::size(charts); ++i) {
        grid->addWidget(charts[i], int(i / 2), int(i % 2));
        r.replots[i].id = charts[i]->chartId().toStdString();
        QObject::connect(charts[i]->plot(), &QCustomPlot::beforeReplot, [&, i] {
            replotStart[i] = Clock::now();
            replotCpuStart[i] = threadCpuMs();
        });
        QObject::connect(charts[i]->plot(), &QCustomPlot::afterReplot, [&, i] {
            const double ms = msSince(replotStart[i]), cpu = threadCpuMs() - replotCpuStart[i];
            auto& c = r.replots[i];
            ++c.replots;
            c.totalMs += ms;
            c.maxMs = std::max(c.maxMs, ms);
            c.cpuTotalMs += cpu;
            c.cpuMaxMs = std::max(c.cpuMaxMs, cpu);
        });
    }
    window.resize(kWindowWidth, kWindowHeight);
    window.show();
    DiagnosisRunner diagnosis(&model);
    Clock::time_point passStart;
    int64_t passes = 0;
    double passMaxMs = 0;
    QObject::connect(&diagnosis, &DiagnosisRunner::runningChanged, [&](bool running) {
        if (running) {
            passStart = Clock::now();
            return;
        }
        ++passes;
        passMaxMs = std::max(passMaxMs, msSince(passStart));
    });
    model.open(QString::fromStdString(path));

    std::vector<double> gaps;
    gaps.reserve(size_t(o.liveSteps) + 1024);
    OpenBenchResult::Quarter quarter;
    Clock::time_point quarterStart;
    double quarterCpu = 0;
    QEventLoop loop;
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    Clock::time_point last = Clock::now();
    bool started = false;
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const auto now = Clock::now();
        if (started) { // the first interval includes the setup above
            gaps.push_back(std::chrono::duration<double, std::milli>(now - last).count());
            quarter.maxGapMs = std::max(quarter.maxGapMs, gaps.back());
        }
        started = true;
        last = now;
        const int64_t shown = model.stepCount();
        while (r.quarters.size() < 4 && shown >= int64_t(r.quarters.size() + 1) * o.liveSteps / 4) {
            const double cpu = threadCpuMs();
            quarter.toStep = int64_t(r.quarters.size() + 1) * o.liveSteps / 4;
            quarter.seconds = msSince(quarterStart) / 1000;
            quarter.guiCpuShare = quarter.seconds > 0 ? (cpu - quarterCpu) / (quarter.seconds * 1000) : 0;
            quarter.diagnosisPasses = passes;
            quarter.diagnosisMaxMs = passMaxMs;
            r.quarters.push_back(quarter);
            quarter = {};
            passes = 0;
            passMaxMs = 0;
            quarterStart = now;
            quarterCpu = cpu;
        }
        if (r.quarters.size() == 4)
            loop.quit();
    });
    QTimer giveUp;
    giveUp.setSingleShot(true);
    QObject::connect(&giveUp, &QTimer::timeout, [&] {
        r.liveTimedOut = true;
        loop.quit();
    });
    giveUp.start(int(o.liveSeconds * 1000));
    double load[1] = {0};
    if (getloadavg(load, 1) == 1)
        r.loadAverage = load[0];
    const auto start = Clock::now();
    const double cpuStart = threadCpuMs();
    quarterStart = start;
    quarterCpu = cpuStart;
    tick.start(kTickMs);
    loop.exec();
    tick.stop();
    r.liveS = msSince(start) / 1000;
    r.guiCpuShare = (threadCpuMs() - cpuStart) / (r.liveS * 1000);
    r.liveStepsShown = model.stepCount();
    stop.store(true);
    thread.join();
    model.close();
    r.liveStepsWritten = written.load();
    if (!writerError.empty())
        throw std::runtime_error(fmt::format("{}: the live writer failed: {}", path, writerError));
    r.writerStepMs = r.liveStepsWritten ? writerMs / double(r.liveStepsWritten) : 0;
    r.ticks = int64_t(gaps.size());
    if (!gaps.empty()) {
        double sum = 0;
        for (double g : gaps) {
            sum += g;
            r.gapsOver50Ms += g > 50;
        }
        r.meanGapMs = sum / double(gaps.size());
        std::sort(gaps.begin(), gaps.end());
        r.maxGapMs = gaps.back();
        r.p99GapMs = gaps[std::min(gaps.size() - 1, size_t(double(gaps.size()) * 0.99))];
    }
}

} // namespace

OpenBenchResult runOpenBench(const OpenBenchOptions& o, const std::function<void(const std::string&)>& log) {
    if (o.steps < 1 || o.ranks < 1 || o.sketchDim < 0 || o.liveSteps < 0 || o.liveSeconds <= 0)
        throw std::invalid_argument(
            "bench-open: steps and ranks must be >= 1, live steps >= 0, live seconds > 0");
    OpenBenchResult r;
    const fs::path tmp = fs::temp_directory_path();
    const std::string pid = std::to_string(::getpid());
    const bool ownFile = o.file.empty();
    r.file = ownFile ? (tmp / ("ranksight-bench-open-" + pid + ".h5")).string() : o.file;
    const std::string livePath =
        ((ownFile ? tmp : fs::absolute(r.file).parent_path()) / ("ranksight-bench-live-" + pid + ".h5"))
            .string();
    struct Cleanup { // the files this bench made for itself, also when a phase throws
        std::vector<std::string> paths;
        ~Cleanup() {
            std::error_code ec;
            for (const auto& p : paths)
                fs::remove(p, ec);
        }
    } cleanup;
    if (ownFile)
        cleanup.paths.push_back(r.file);
    cleanup.paths.push_back(livePath);

    if (!fs::exists(r.file)) {
        log(fmt::format("(a) generating {} steps x {} ranks x 161 tensors into {}", o.steps, o.ranks,
                        r.file));
        generate(o, r, log);
    } else {
        log(fmt::format("(a) reusing {}", r.file));
    }
    r.fileBytes = int64_t(fs::file_size(r.file));
    log(fmt::format("(b) opening {} ({:.2f} GiB)", r.file, double(r.fileBytes) / (1 << 30)));
    measureOpen(o, r);
    if (o.liveSteps > 0) {
        log(fmt::format("(c) live: a writer thread writes {} steps at full speed, four charts and the "
                        "diagnosis follow",
                        o.liveSteps));
        measureLive(o, r, livePath);
    }
    return r;
}

std::string toJson(const OpenBenchResult& r) {
    nlohmann::json j;
    j["file"] = r.file;
    j["generated"] = r.generated;
    j["generate_s"] = r.generateS;
    j["file_bytes"] = r.fileBytes;
    j["cold"] = r.cold;
    j["steps"] = r.steps;
    j["ranks"] = r.ranks;
    j["params"] = r.params;
    j["first_rows_ms"] = r.firstRowsMs;
    j["first_picture_ms"] = r.firstPictureMs;
    j["full_load_ms"] = r.fullLoadMs;
    j["detail_ms"] = r.detailMs;
    {
        nlohmann::json panels = nlohmann::json::object();
        for (const auto& [name, ms] : r.panels)
            panels[name] = ms;
        j["panel_draw_ms"] = panels;
        j["rank_map_ready_ms"] = r.rankMapReadyMs;
    }
    j["rss_before_mib"] = r.rssBeforeMiB;
    j["rss_first_picture_mib"] = r.rssFirstMiB;
    j["rss_loaded_mib"] = r.rssLoadedMiB;
    j["model_mib"] = r.modelMiB;
    j["live_s"] = r.liveS;
    j["live_steps_written"] = r.liveStepsWritten;
    j["live_steps_shown"] = r.liveStepsShown;
    j["live_writer_step_ms"] = r.writerStepMs;
    j["ticks"] = r.ticks;
    j["max_stall_ms"] = r.maxGapMs;
    j["p99_stall_ms"] = r.p99GapMs;
    j["mean_tick_gap_ms"] = r.meanGapMs;
    j["stalls_over_50ms"] = r.gapsOver50Ms;
    j["load_max_stall_ms"] = r.loadMaxGapMs;
    j["load_stalls_over_50ms"] = r.loadGapsOver50Ms;
    j["load_ticks"] = r.loadTicks;
    for (const auto& c : r.replots)
        j["replot"][c.id] = {{"count", c.replots},
                             {"total_ms", c.totalMs},
                             {"max_ms", c.maxMs},
                             {"cpu_total_ms", c.cpuTotalMs},
                             {"cpu_max_ms", c.cpuMaxMs}};
    j["gui_cpu_share"] = r.guiCpuShare;
    j["live_timed_out"] = r.liveTimedOut;
    j["live_quarters"] = nlohmann::json::array();
    for (const auto& q : r.quarters)
        j["live_quarters"].push_back({{"to_step", q.toStep},
                                      {"seconds", q.seconds},
                                      {"gui_cpu_share", q.guiCpuShare},
                                      {"max_stall_ms", q.maxGapMs},
                                      {"diagnosis_passes", q.diagnosisPasses},
                                      {"diagnosis_max_ms", q.diagnosisMaxMs}});
    j["load_average"] = r.loadAverage;
    return j.dump(2);
}

std::string toTable(const OpenBenchResult& r) {
    const double gib = double(1 << 30);
    std::string s;
    s += fmt::format("run file            {} steps x {} ranks x {} tensors, {:.2f} GiB{}\n", r.steps, r.ranks,
                     r.params, double(r.fileBytes) / gib,
                     r.generated ? fmt::format(", generated in {:.1f} s", r.generateS)
                                 : std::string(", reused"));
    s += fmt::format("first rows          {:8.1f} ms   ({} page cache)\n", r.firstRowsMs,
                     r.cold ? "cold" : "warm");
    s += fmt::format("first picture       {:8.1f} ms   (target < 1000 ms)\n", r.firstPictureMs);
    s += fmt::format("fully loaded        {:8.1f} ms\n", r.fullLoadMs);
    s += fmt::format("one step's detail   {:8.1f} ms   ({} ranks x {} tensors)\n", r.detailMs, r.ranks,
                     r.params);
    for (const auto& [name, ms] : r.panels)
        s += fmt::format("{:<24}{:8.1f} ms   (a cursor move's stall of the GUI thread)\n", name, ms);
    s += fmt::format("{:<24}{:8.1f} ms   (wall clock, its matrix on a worker thread past 64 ranks)\n",
                     "rank x rank map ready", r.rankMapReadyMs);
    s += fmt::format("RSS                 {:.0f} MiB before, {:.0f} MiB at first picture, {:.0f} MiB loaded "
                     "(+{:.0f} MiB for a {:.2f} GiB file; the model's columns: {:.1f} MiB)\n",
                     r.rssBeforeMiB, r.rssFirstMiB, r.rssLoadedMiB, r.rssLoadedMiB - r.rssBeforeMiB,
                     double(r.fileBytes) / gib, r.modelMiB);
    s += fmt::format("event-loop gap      while loading: max {:.1f} ms over {} ticks of {} ms; {} over 50 ms "
                     "(target: none)\n",
                     r.loadMaxGapMs, r.loadTicks, kTickMs, r.loadGapsOver50Ms);
    if (r.liveS > 0) {
        s += fmt::format("live                {:.1f} s: {} steps written ({:.2f} ms/step), {} shown\n",
                         r.liveS, r.liveStepsWritten, r.writerStepMs, r.liveStepsShown);
        s += fmt::format(
            "event-loop gap      max {:.1f} ms, p99 {:.1f} ms, mean {:.2f} ms over {} ticks of {} ms; "
            "{} over 50 ms (target: none)\n",
            r.maxGapMs, r.p99GapMs, r.meanGapMs, r.ticks, kTickMs, r.gapsOver50Ms);
        s += fmt::format(
            "GUI thread          {:.0f}% of a core busy; load average {:.2f} when the phase started\n",
            r.guiCpuShare * 100, r.loadAverage);
        for (const auto& c : r.replots)
            s += fmt::format(
                "  replot {:14} {:4} times: wall {:7.1f} ms in all, max {:6.1f} ms; CPU {:7.1f} ms in "
                "all, max {:6.1f} ms\n",
                c.id, c.replots, c.totalMs, c.maxMs, c.cpuTotalMs, c.cpuMaxMs);
        s += "  quarter (steps shown)   seconds   GUI CPU   max stall   diagnosis passes, longest\n";
        for (const auto& q : r.quarters)
            s += fmt::format(
                "  to step {:>8}         {:7.1f}   {:6.0f}%   {:6.1f} ms   {:3} passes, {:7.1f} ms\n",
                q.toStep, q.seconds, q.guiCpuShare * 100, q.maxGapMs, q.diagnosisPasses, q.diagnosisMaxMs);
        if (r.liveTimedOut)
            s += fmt::format("  gave up: the model showed {} of {} steps when --live-seconds ran out\n",
                             r.liveStepsShown, r.liveStepsWritten);
    }
    return s;
}

} // namespace rs::bench
