// File > Export bug report and `ranksight-cli report`: a folder with report.md (environment and config, rank
// table, summary figures, first mismatch, events, findings once diagnosis exists), every chart as PNG and
// SVG, steps.csv, and slice.h5 (the run cut to +-50 steps around the first anomaly; the whole run if none).
#pragma once

#include <QObject>
#include <QString>

namespace rs {

class RunModel;

class ReportExporter : public QObject {
    Q_OBJECT
public:
    // model: a run that finished loading (its path is the source file).
    explicit ReportExporter(RunModel* model, QObject* parent = nullptr);
    // dir must not exist (it is created; nothing is ever overwritten). False with *error naming what failed.
    bool write(const QString& dir, QString* error);

signals:
    void progress(int percent);

private:
    RunModel* m_model;
};

} // namespace rs
