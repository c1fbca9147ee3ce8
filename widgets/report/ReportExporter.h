// File > Export bug report and `ranksight-cli report`: a folder with report.md (environment and config, rank
// table, summary figures, first mismatch, findings, events), every chart as PNG and SVG, steps.csv, and
// slice.h5. The report opens on the evidence: its cursor, heatmaps and slice are at the first finding's step,
// metric and parameter (else the first anomaly; else the last step, the slice then the whole run), or where
// the window's user had them when exported from the window (setView).
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <memory>

namespace rs {

class RunModel;
struct RunComparison;

class ReportExporter : public QObject {
    Q_OBJECT
public:
    // model: a run that finished loading (its path is the source file).
    explicit ReportExporter(RunModel* model, QObject* parent = nullptr);
    struct View {
        int64_t step = -1; // -1: from the findings
        int rankMetric = -1;
        int param = -1;
    };
    // What the window shows, to report from there instead of from the first finding: the cursor's step, the
    // rank x rank heatmap's metric (view::RankMetric as int) and parameter (-1: all).
    void setView(int64_t step, int rankMetric, int param);
    // The run compared with a reference run (File > Compare With Reference…, report --reference): the
    // diagnosis names the causes every rank shares too, and the report carries the comparison.
    void setReference(std::shared_ptr<const RunComparison> comparison, const QString& referencePath);
    // dir must not exist (it is created; nothing is ever overwritten). False with *error naming what failed.
    bool write(const QString& dir, QString* error);

signals:
    void progress(int percent);

private:
    RunModel* m_model;
    View m_view;
    std::shared_ptr<const RunComparison> m_reference;
    QString m_referencePath;
};

} // namespace rs
