// Runs the diagnosis rules (core/diagnose) over the run the window shows, in the background: once when a
// file has loaded, and again at most every few seconds while a live run grows, so findings appear as the run
// goes. Each pass after the first reads only the rows the run added (one reader and one incremental
// Diagnoser per run), so a long live run costs the same every few seconds instead of more each time. A new
// run cancels a diagnosis in progress. The rules read only the run file, so a replayed file is diagnosed
// exactly like the live run was.
//
// Evidence does not wait for the interval: an error event (GRADIENT_SYNC, WEIGHT_SYNC, SKIP_MISMATCH,
// NONFINITE_LOSS) or a step whose synced-gradient fingerprints differ across ranks, newer than the last step
// diagnosed, starts a diagnosis at once, and until that diagnosis has read its step evidenceStep() names it,
// so the Findings panel says "diagnosing step N…" instead of reassuring beside the evidence.
#pragma once

#include "diagnose/Finding.h"
#include "store/RunRecords.h"

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
    // The step of the newest evidence of disagreement the last diagnosis has not read yet (-1: none), and
    // the last step the last diagnosis read (-1: none yet).
    int64_t evidenceStep() const { return m_evidenceStep; }
    int64_t diagnosedThrough() const { return m_diagnosedThrough; }
    // Evidence seen at `step` (an error event, a mismatched heatmap cell): diagnose at once.
    void noteEvidence(int64_t step);
    // Events that say ranks already disagree: a diagnosis is asked at once, and no view may call the ranks
    // in agreement beside them.
    static bool isDisagreement(const Event& e);

signals:
    void findingsChanged();
    void evidenceChanged(); // evidenceStep() changed
    void progress(int percent);
    void runningChanged(bool running);

private:
    struct Result {
        std::vector<Finding> findings;
        std::vector<CheckNotRun> notRun;
        QString error;
        bool cancelled = false;
        int64_t through = -1; // the last step read
    };
    struct Session; // the run's reader, Diagnoser and cursor, used by one background pass at a time
    void schedule();
    void start();
    void onFinished();
    void cancel();
    void onEventsAppended(int first, int count);
    void onDetailReady(int64_t step);

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
    bool m_urgent = false;  // ... and among them evidence: the next pass starts at once
    int64_t m_evidenceStep = -1, m_diagnosedThrough = -1;
    uint64_t m_generation = 0, m_runningGeneration = 0;
};

} // namespace rs
