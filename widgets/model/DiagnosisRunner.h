// Runs the diagnosis rules (core/diagnose) over the run the window shows, in the background: once when a
// file has loaded, and again at most every few seconds while a live run grows, so findings appear as the run
// goes. Each pass after the first reads only the rows the run added (one reader and one incremental
// Diagnoser per run), so a long live run costs the same every few seconds instead of more each time. A new
// run cancels a diagnosis in progress. The rules read only the run file, so a replayed file is diagnosed
// exactly like the live run was.
#pragma once

#include "diagnose/Finding.h"

#include <QFutureWatcher>
#include <QObject>
#include <QThreadPool>
#include <QTimer>
#include <atomic>
#include <memory>
#include <vector>

namespace rs {

class RunModel;
struct RunComparison;

class DiagnosisRunner : public QObject {
    Q_OBJECT
public:
    explicit DiagnosisRunner(RunModel* model, QObject* parent = nullptr);
    ~DiagnosisRunner() override;

    const std::vector<Finding>& findings() const { return m_findings; }
    // The checks that could not run on this run's file (what its source did not record).
    const std::vector<CheckNotRun>& checksNotRun() const { return m_notRun; }
    bool isRunning() const { return m_watcher.isRunning(); }
    bool hasResult() const { return m_hasResult; } // at least one diagnosis of this run finished
    QString error() const { return m_error; }      // why the last diagnosis failed ("" if it did not)
    void setLiveInterval(int ms);                  // how often a growing run is diagnosed again
    // The run compared with a reference run (File > Compare With Reference…): diagnosis also names the causes
    // every rank shares. Null: none (a new run drops it). Diagnoses again.
    void setReference(std::shared_ptr<const RunComparison> comparison);
    const RunComparison* reference() const { return m_reference.get(); }

signals:
    void findingsChanged();
    void progress(int percent);
    void runningChanged(bool running);

private:
    struct Result {
        std::vector<Finding> findings;
        std::vector<CheckNotRun> notRun;
        QString error;
        bool cancelled = false;
    };
    struct Session; // the run's reader, Diagnoser and cursor, used by one background pass at a time
    void schedule();
    void start();
    void onFinished();
    void cancel();

    RunModel* m_model;
    QTimer m_throttle;
    QThreadPool m_pool; // one thread at a lower CPU priority than the GUI's (nice +10 on Linux)
    QFutureWatcher<Result> m_watcher;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::shared_ptr<Session> m_session;
    std::shared_ptr<const RunComparison> m_reference;
    std::vector<Finding> m_findings;
    std::vector<CheckNotRun> m_notRun;
    QString m_error;
    bool m_hasResult = false;
    bool m_pending = false; // new rows arrived while a diagnosis was running
    uint64_t m_generation = 0, m_runningGeneration = 0;
};

} // namespace rs
