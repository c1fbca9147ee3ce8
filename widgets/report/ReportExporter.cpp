// ReportExporter: see ReportExporter.h. Diagnosis runs first, so the report can open on the first finding.
// The charts are the window's own chart classes, built offscreen on the same RunModel with a private cursor
// at that step, so the report shows exactly what the app shows there. Every file is created new
// (QIODevice::NewOnly, exportChart without overwrite, sliceRun without overwrite) inside a folder this call
// created; if anything fails, that folder is removed again so a retry starts clean.
#include "report/ReportExporter.h"

#include "charts/ChartExport.h"
#include "charts/LossChart.h"
#include "charts/OverflowTimeline.h"
#include "charts/ParamRankHeatmap.h"
#include "charts/RankHeatmap.h"
#include "charts/ReferenceChart.h"
#include "compare/ComparisonText.h"
#include "diagnose/Advice.h"
#include "diagnose/Diagnoser.h"
#include "diagnose/EvidenceView.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "reader/OpenRunFile.h"
#include "report/ReportMarkdown.h"
#include "store/CsvExport.h"
#include "store/RunReader.h"
#include "store/RunSlice.h"
#include "store/RunSource.h"

#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QTimer>
#include <QtConcurrent>
#include <fmt/format.h>
#include <memory>
#include <optional>

namespace rs {
namespace {

constexpr int kChartWidth = 1400, kChartHeight = 800;
constexpr int kDetailTimeoutMs = 30000; // a step's per-parameter detail: one HDF5 row read, normally < 100 ms
constexpr int64_t kSliceHalfWidth = 50;

// A failure inside write(): the message already names the path and what failed.
struct ReportError {
    QString message;
};

// Writes text produced in pieces to a file that must not exist yet.
class NewFile {
public:
    explicit NewFile(const QString& path)
        : m_file(path) {
        if (!m_file.open(QIODevice::WriteOnly | QIODevice::NewOnly))
            throw ReportError{QStringLiteral("%1: cannot create: %2").arg(path, m_file.errorString())};
    }
    void write(std::string_view text) {
        if (m_file.write(text.data(), qint64(text.size())) != qint64(text.size()))
            throw ReportError{
                QStringLiteral("%1: write failed: %2").arg(m_file.fileName(), m_file.errorString())};
    }
    void close() {
        m_file.close();
        if (m_file.error() != QFileDevice::NoError)
            throw ReportError{
                QStringLiteral("%1: write failed: %2").arg(m_file.fileName(), m_file.errorString())};
    }

private:
    QFile m_file;
};

// Waits (running the event loop) until the model has the per-parameter detail of step, so the heatmaps draw
// it instead of "loading step N". False on timeout (the heatmaps then say they were loading; the report goes
// on).
bool waitForDetail(RunModel* model, int64_t step) {
    if (model->detail(step))
        return true;
    QEventLoop loop;
    QTimer timeout;
    timeout.setSingleShot(true);
    QObject::connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
    QObject::connect(model, &RunModel::detailReady, &loop, [&](int64_t s) {
        if (s == step)
            loop.quit();
    });
    timeout.start(kDetailTimeoutMs);
    // detail() may have been answered between the check above and connecting: ask again inside the loop.
    QTimer::singleShot(0, &loop, [&] {
        if (model->cachedDetail(step))
            loop.quit();
    });
    loop.exec();
    return model->cachedDetail(step) != nullptr;
}

// steps.csv in the layout of `ranksight-cli export-csv` (one row per step and rank), from the columns the
// model already holds: no second read of the file.
void writeStepsCsv(const RunModel& model, const QString& path) {
    NewFile out(path);
    std::string buf = stepsCsvHeader();
    auto flush = [&] {
        out.write(buf);
        buf.clear();
    };
    const int R = model.worldSize();
    const StepsCsvRecorded recorded = stepsCsvRecorded(model.meta());
    for (int64_t row = 0; row < model.stepCount(); ++row) {
        for (int r = 0; r < R; ++r) {
            StepsCsvRow csv{model.stepAt(row), r, {}};
            for (size_t i = 0; i < kStepsCsvValues; ++i)
                csv.values[i] = model.value(StepColumn(kStepsCsvColumns[i].column), row, r);
            appendCsvRow(buf, csv, recorded);
        }
        if (buf.size() > (1 << 20))
            flush();
    }
    flush();
    out.close();
}

void writeEventsCsv(const RunModel& model, const QString& path) {
    NewFile out(path);
    std::string text = kEventsCsvHeader;
    for (const Event& e : model.events())
        appendCsvRow(text, e);
    out.write(text);
    out.close();
}

// What diagnosis said of the file: findings (most certain first), the checks that could not run, advice.
struct Diagnosis {
    std::vector<Finding> findings;
    std::vector<CheckNotRun> notRun;
    std::vector<Advice> advice;
    std::vector<int> unrecorded; // ranks the source holds no record of (ranksNotRecorded)
    bool noneRecorded = false;   // ... every rank
    std::string error;           // diagnosis could not read the run
};

// The report's lines for the Findings section.
std::vector<std::string> findingLines(const Diagnosis& d) {
    std::vector<std::string> lines;
    if (!d.error.empty())
        return {"Diagnosis could not read the run: " + d.error};
    for (const Finding& f : d.findings)
        lines.push_back(fmt::format(
            "**{}** ({}, confidence {:.2f}{}): {}. Fix: {}", f.key(), f.dimension(), f.confidence,
            f.firstStep >= 0 ? fmt::format(", from step {}", f.firstStep) : "", f.evidence, f.fix));
    // Ranks with no record were compared with nothing: they are not said to agree.
    if (lines.empty() && d.unrecorded.empty())
        lines.emplace_back(d.notRun.empty()
                               ? "No findings: every diagnosis rule found the ranks in agreement."
                               : "No findings in what this file records: the rules that ran found "
                                 "the ranks in agreement.");
    else if (lines.empty() && d.noneRecorded)
        lines.emplace_back("No findings: no rank's statistics were recorded, so none were compared.");
    else if (lines.empty())
        lines.emplace_back(fmt::format("No findings in what this file records: the rules that ran found the "
                                       "recorded ranks in agreement ({} not recorded, not compared).",
                                       ranksNotRecordedText(d.unrecorded)));
    for (const CheckNotRun& c : d.notRun)
        lines.push_back("*Could not run:* " + checkNotRunLine(c));
    for (const Advice& a : d.advice)
        lines.push_back("*Advice (configuration, not a finding):* `" + a.key + "=" + a.value +
                        "`: " + a.text);
    return lines;
}

// The rest of write(), throwing ReportError.
class ReportJob {
public:
    ReportJob(RunModel* model, const QDir& dir, ReportExporter* exporter, const ReportExporter::View& view,
              std::shared_ptr<const RunComparison> reference, QString referencePath)
        : m_model(model)
        , m_dir(dir)
        , m_exporter(exporter)
        , m_view(view)
        , m_reference(std::move(reference))
        , m_referencePath(std::move(referencePath)) {}

    void run() {
        diagnose();
        emit m_exporter->progress(5);
        chooseFocus();
        renderCharts();
        m_input.files.push_back({"steps.csv", "per-step, per-rank scalars (loss, accuracy, loss scale, "
                                              "overflow, skipped, step and communication time; an empty "
                                              "cell: not recorded by the source)"});
        writeStepsCsv(*m_model, m_dir.filePath(QStringLiteral("steps.csv")));
        m_input.files.push_back({"events.csv", "the whole event log"});
        writeEventsCsv(*m_model, m_dir.filePath(QStringLiteral("events.csv")));
        writeRankTable();
        emit m_exporter->progress(65);
        writeSlice();
        emit m_exporter->progress(95);
        writeMarkdown();
        emit m_exporter->progress(100);
    }

private:
    // Diagnosis reads the whole file's per-parameter data: in a worker, like the slice, so the event loop
    // (and a progress dialog) stays alive on a large run.
    void diagnose() {
        QFutureWatcher<Diagnosis> watcher;
        QEventLoop loop;
        QObject::connect(&watcher, &QFutureWatcher<Diagnosis>::finished, &loop, &QEventLoop::quit);
        watcher.setFuture(QtConcurrent::run([src = m_model->path().toStdString(), reference = m_reference] {
            Diagnosis d;
            try {
                const auto reader = openRunFile(src);
                d.findings = diagnoseRun(*reader, {}, nullptr, &d.notRun, reference.get());
                d.advice = configAdvice(reader->meta());
                d.unrecorded = ranksNotRecorded(reader->meta());
                d.noneRecorded =
                    !d.unrecorded.empty() && int(d.unrecorded.size()) == reader->meta().worldSize;
            } catch (const std::exception& e) {
                d.error = e.what();
            }
            return d;
        }));
        if (!watcher.isFinished())
            loop.exec();
        m_diagnosis = watcher.result();
    }

    // Where the report looks: the window's view when exported from there, else the first finding's step and
    // evidence, else the first anomaly, else the last step.
    void chooseFocus() {
        const Finding* first = m_diagnosis.findings.empty() ? nullptr : &m_diagnosis.findings.front();
        if (first) {
            const EvidenceView evidence = evidenceView(*first, m_model->meta());
            m_metric = evidence.metric;
            m_param = evidence.param;
        }
        const int64_t anomaly = firstAnomalyStep(m_model->events());
        int64_t wanted = m_model->lastStep();
        if (m_view.step >= 0) {
            wanted = m_view.step;
            m_focus = m_view.step;
            m_input.chartStepReason = "the window's cursor";
            m_metric =
                m_view.rankMetric >= 0 ? std::optional(view::RankMetric(m_view.rankMetric)) : std::nullopt;
            m_param = m_view.param;
        } else if (first && first->firstStep >= 0) {
            wanted = m_focus = first->firstStep;
            m_input.chartStepReason = "the first finding, " + first->key();
        } else if (anomaly >= 0) {
            wanted = m_focus = anomaly;
            m_input.chartStepReason = "the first anomaly";
        } else {
            m_input.chartStepReason = "the last step: no finding and no anomaly";
        }
        m_chartStep =
            m_model->stepCount() ? m_model->stepAt(std::max<int64_t>(0, m_model->rowOf(wanted))) : -1;
    }

    void renderCharts() {
        StepCursor cursor;
        cursor.setStep(std::max<int64_t>(0, m_chartStep));
        const double lo = double(m_model->firstStep()), hi = double(m_model->lastStep());
        cursor.setRange(hi > lo ? lo : lo - 0.5, hi > lo ? hi : hi + 0.5); // the whole run
        if (m_chartStep >= 0)
            waitForDetail(m_model, m_chartStep);
        emit m_exporter->progress(10);

        std::vector<std::unique_ptr<ChartWidget>> charts;
        charts.push_back(std::make_unique<LossChart>(m_model, &cursor));
        charts.push_back(std::make_unique<OverflowTimeline>(m_model, &cursor));
        auto rank = std::make_unique<RankHeatmap>(m_model, &cursor);
        if (m_metric)
            rank->setMetric(*m_metric);
        rank->setParam(m_param);
        charts.push_back(std::move(rank));
        charts.push_back(std::make_unique<ParamRankHeatmap>(m_model, &cursor));
        if (m_reference) { // the run against its reference: losses, deviations and the divergence map
            auto against = std::make_unique<ReferenceChart>(m_model, &cursor);
            against->setComparison(m_reference, QFileInfo(m_referencePath).fileName());
            charts.push_back(std::move(against));
        }
        int done = 0;
        for (const auto& chart : charts) {
            // Laid out at the export size without ever appearing on screen (the GUI's File menu calls this
            // too).
            chart->setAttribute(Qt::WA_DontShowOnScreen);
            chart->resize(kChartWidth, kChartHeight);
            chart->show();
            chart->refreshNow();
            ReportChart entry{chart->chartTitle().toStdString(), {}, {}};
            if (const auto* heatmap = dynamic_cast<const RankHeatmap*>(chart.get())) {
                const auto& params = m_model->meta().params;
                const int p = heatmap->param();
                entry.title +=
                    fmt::format(" ({}, {})", view::rankMetricName(heatmap->rankMetric()),
                                p >= 0 && size_t(p) < params.size() ? params[size_t(p)].name
                                                                    : std::string("all parameters"));
            }
            for (ImageFormat format : {ImageFormat::Png, ImageFormat::Svg}) {
                const QString name = chart->chartId() + QLatin1Char('.') + imageFormatSuffix(format);
                QString error;
                if (!exportChart(chart.get(), m_model->runName(), m_dir.filePath(name), format, &error,
                                 kChartWidth, kChartHeight, /*overwrite=*/false))
                    throw ReportError{error};
                (format == ImageFormat::Png ? entry.png : entry.svg) = name.toStdString();
                emit m_exporter->progress(10 + 50 * ++done / int(2 * charts.size()));
            }
            m_input.charts.push_back(std::move(entry));
        }
    }

    // Runs in a worker thread while this one keeps the event loop (and a progress dialog) alive: without a
    // step to cut around the slice is the whole run, which can be gigabytes.
    // Past kReportAllRanksUpTo cards the report does not inline the rank table (thousands of lines); the
    // whole table, as the run recorded it, goes beside it.
    void writeRankTable() {
        const RunMeta& meta = m_model->meta();
        if (meta.cards.size() <= kReportAllRanksUpTo || meta.rankTableJson.empty())
            return;
        NewFile out(m_dir.filePath(QString::fromUtf8(kReportRankTableFile)));
        out.write(meta.rankTableJson);
        out.close();
        m_input.files.push_back(
            {kReportRankTableFile,
             fmt::format("the rank table (hccl.json) the run recorded: {} devices", meta.cards.size())});
    }

    void writeSlice() {
        const QString path = m_dir.filePath(QStringLiteral("slice.h5"));
        const auto [first, last] =
            sliceWindow(m_focus, m_model->firstStep(), m_model->lastStep(), kSliceHalfWidth);
        const std::string src = m_model->path().toStdString(), dst = path.toStdString();
        QFutureWatcher<QString> watcher;
        QEventLoop loop;
        QObject::connect(&watcher, &QFutureWatcher<QString>::finished, &loop, &QEventLoop::quit);
        watcher.setFuture(QtConcurrent::run([src, dst, first = first, last = last]() -> QString {
            try {
                sliceRun(*openRunFile(src), dst, first, last, /*overwrite=*/false);
                return {};
            } catch (const std::exception& e) {
                return QString::fromStdString(e.what());
            }
        }));
        if (!watcher.isFinished())
            loop.exec();
        if (const QString error = watcher.result(); !error.isEmpty())
            throw ReportError{QStringLiteral("%1: cannot write the slice: %2").arg(path, error)};
        const std::string what =
            m_focus >= 0
                ? fmt::format(
                      "the run file cut to steps {} to {} (+-{} steps around step {}, {}): open it in "
                      "RankSight or h5py",
                      first, last, kSliceHalfWidth, m_focus, m_input.chartStepReason)
                : fmt::format("the whole run (steps {} to {}): it has no finding or anomaly to cut around",
                              first, last);
        m_input.files.push_back({"slice.h5", what});
    }

    void writeMarkdown() {
        ReportInput& in = m_input;
        in.runName = m_model->runName().toStdString();
        in.sourcePath = QFileInfo(m_model->path()).absoluteFilePath().toStdString();
        in.meta = m_model->meta();
        in.formatVersion = m_model->formatVersion();
        in.complete = m_model->isComplete();
        in.stopReason = m_model->stopReason().toStdString();
        in.stepCount = m_model->stepCount();
        in.firstStep = m_model->firstStep();
        in.lastStep = m_model->stepCount() ? m_model->lastStep() : -1;
        in.figures = summarizeSteps(
            m_model->worldSize(), m_model->column(StepColumn::Loss), m_model->column(StepColumn::StepMs),
            m_model->column(StepColumn::CommMs), m_model->column(StepColumn::Overflow),
            m_model->column(StepColumn::Skipped), m_model->column(StepColumn::LossScale));
        in.evals = m_model->evals();
        in.events = m_model->events();
        in.chartStep = m_chartStep;
        in.findings = findingLines(m_diagnosis);
        in.diagnosis = m_diagnosis.findings;
        for (const Finding& f : m_diagnosis.findings)
            in.findingRanks.insert(in.findingRanks.end(), f.ranks.begin(), f.ranks.end());
        if (m_reference) {
            in.comparison = comparisonText(*m_reference, in.sourcePath,
                                           QFileInfo(m_referencePath).absoluteFilePath().toStdString());
            in.comparisonLine = comparisonLine(*m_reference);
        }
        NewFile out(m_dir.filePath(QStringLiteral("report.md")));
        out.write(buildReportMarkdown(in));
        out.close();
    }

    RunModel* m_model;
    QDir m_dir;
    ReportExporter* m_exporter;
    ReportExporter::View m_view;
    Diagnosis m_diagnosis;
    int64_t m_chartStep = -1;
    int64_t m_focus = -1; // the step the slice is cut around; -1: the whole run
    std::optional<view::RankMetric> m_metric;
    int m_param = -1;
    ReportInput m_input;
    std::shared_ptr<const RunComparison> m_reference;
    QString m_referencePath;
};

} // namespace

ReportExporter::ReportExporter(RunModel* model, QObject* parent)
    : QObject(parent)
    , m_model(model) {}

void ReportExporter::setView(int64_t step, int rankMetric, int param) {
    m_view = View{step, rankMetric, param};
}

void ReportExporter::setReference(std::shared_ptr<const RunComparison> comparison,
                                  const QString& referencePath) {
    m_reference = std::move(comparison);
    m_referencePath = referencePath;
}

bool ReportExporter::write(const QString& dir, QString* error) {
    auto fail = [&](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    if (!m_model || !m_model->hasRun())
        return fail(QStringLiteral("%1: no run is open to report on").arg(dir));
    if (m_model->isLoading())
        return fail(
            QStringLiteral("%1: %2 is still loading; wait until it is open").arg(dir, m_model->path()));
    const QFileInfo info(dir);
    if (info.exists() || info.isSymLink())
        return fail(
            QStringLiteral("%1: already exists (a report goes into a new folder; nothing is overwritten)")
                .arg(dir));
    // mkdir (not mkpath) on the folder itself fails if it appeared in the meantime: it is ours alone.
    if (!QDir().mkpath(info.absolutePath()) || !QDir().mkdir(info.absoluteFilePath()))
        return fail(QStringLiteral("%1: cannot create the folder").arg(dir));
    emit progress(0);
    try {
        ReportJob(m_model, QDir(info.absoluteFilePath()), this, m_view, m_reference, m_referencePath).run();
    } catch (const ReportError& e) {
        QDir(info.absoluteFilePath()).removeRecursively();
        return fail(e.message);
    } catch (const std::exception& e) {
        QDir(info.absoluteFilePath()).removeRecursively();
        return fail(QStringLiteral("%1: %2").arg(dir, QString::fromStdString(e.what())));
    }
    return true;
}

} // namespace rs
