// The run the window shows, in the GUI thread: one path for a live run and a replayed file. RunModel opens a
// run file through RunLoader (a worker thread that reads HDF5 and, while the file is still being written, by
// this process's trainer or by `ranksight-cli train` elsewhere, polls it for new rows: SWMR). It keeps, for
// every step, only the per-rank scalars (StepColumn: ~36 bytes per rank and step), the events, evals and
// weight-row steps; everything per parameter is read on demand for one step at a time (detail()) and kept
// in a small cache. Widgets read this model and never touch HDF5 or know whether a run is live.
#pragma once

#include "model/StepColumn.h"
#include "model/StepDetail.h"
#include "store/RunRecords.h"

#include <QObject>
#include <QString>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace rs {

class RunLoader;
struct RunDelta;

class RunModel : public QObject {
    Q_OBJECT
public:
    explicit RunModel(QObject* parent = nullptr);
    ~RunModel() override;

    // Opens a run file (asynchronously): runReset() at once, then opened() or openFailed(); steps arrive
    // through stepsAppended(). While the file is not complete it is polled every pollMs.
    void open(const QString& path);
    void close(); // shows nothing
    void setPollInterval(int ms);

    bool hasRun() const { return m_hasRun; }
    bool isLoading() const { return m_loading; }
    QString path() const { return m_path; }
    QString runName() const; // the file name without folder and extension
    const RunMeta& meta() const { return m_meta; }
    // False when the run's source did not record the column (RunMeta::absent): its values are fill, and a
    // view says "not recorded" instead of showing them.
    bool recorded(StepColumn c) const;
    int worldSize() const { return m_meta.worldSize; }
    int paramCount() const { return int(m_meta.params.size()); }
    int formatVersion() const { return m_formatVersion; }
    bool isComplete() const { return m_complete; } // the writer closed the file
    bool isLive() const { return m_hasRun && !m_complete; }
    QString stopReason() const { return m_stopReason; }

    // Steps, as rows in file order. Step numbers normally equal row indices; a slice starts later.
    int64_t stepCount() const { return int64_t(m_stepNumbers.size()); }
    int64_t stepAt(int64_t row) const { return m_stepNumbers[size_t(row)]; }
    int64_t firstStep() const { return m_stepNumbers.empty() ? 0 : m_stepNumbers.front(); }
    int64_t lastStep() const { return m_stepNumbers.empty() ? 0 : m_stepNumbers.back(); }
    // The row of the last step <= step (0 when step is before the first); -1 when there are no steps.
    int64_t rowOf(int64_t step) const;
    const std::vector<int64_t>& stepNumbers() const { return m_stepNumbers; }

    // A scalar column for every row and rank, row-major: value(c, row, rank) == column(c)[row * R + rank].
    const std::vector<float>& column(StepColumn c) const { return m_columns[columnIndex(c)]; }
    float value(StepColumn c, int64_t row, int rank) const {
        return m_columns[columnIndex(c)][size_t(row) * size_t(m_meta.worldSize) + size_t(rank)];
    }

    const std::vector<Event>& events() const { return m_events; }
    const std::vector<EvalRecord>& evals() const { return m_evals; }
    const std::vector<int64_t>& weightSteps() const { return m_weightSteps; }
    // Rows of imported records: a hung job's flight-recorder dumps, msprobe dump statistics.
    const std::vector<Collective>& collectives() const { return m_collectives; }
    const std::vector<TensorStat>& tensorStats() const { return m_tensorStats; }

    // The per-parameter detail of a step if it is cached; otherwise nullptr, and it is read in the
    // background: detailReady(step) follows. Keeps the last few steps asked for.
    std::shared_ptr<const StepDetail> detail(int64_t step);
    std::shared_ptr<const StepDetail> cachedDetail(int64_t step) const;

    // Fills the model from a delta (RunLoader's results). A delta with generation 0 is a direct fill (tests,
    // tools): its first delta replaces whatever is shown, and setDetail() supplies the per-parameter detail.
    void applyDelta(RunDelta delta);
    void setDetail(std::shared_ptr<const StepDetail> detail);

signals:
    void runReset();                  // another run, or none: drop everything shown
    void opened(const QString& path); // the first rows are in
    void openFailed(const QString& path, const QString& message);
    void loadProgress(int percent); // while a large file's index loads
    void stepsAppended(int64_t firstRow, int64_t count);
    void eventsAppended(int firstIndex, int count);
    void evalsChanged();
    void weightsChanged();
    void importsChanged(); // collectives() or tensorStats() grew
    void statusChanged();  // complete, stop reason, loading
    void detailReady(int64_t step);

private:
    void clearData();
    void onDetail(uint64_t generation, std::shared_ptr<const StepDetail> detail);
    void onDetailDropped(uint64_t generation, int64_t step);
    void onFailed(uint64_t generation, const QString& message);
    void onProgress(uint64_t generation, int percent);

    RunLoader* m_loader = nullptr;
    uint64_t m_generation = 0;
    bool m_hasRun = false, m_loading = false, m_complete = false;
    QString m_path, m_stopReason;
    RunMeta m_meta;
    int m_formatVersion = 0;
    std::vector<int64_t> m_stepNumbers;
    std::array<std::vector<float>, kStepColumnCount> m_columns;
    std::vector<Event> m_events;
    std::vector<Collective> m_collectives;
    std::vector<TensorStat> m_tensorStats;
    std::vector<EvalRecord> m_evals;
    std::vector<int64_t> m_weightSteps;
    std::deque<std::shared_ptr<const StepDetail>> m_details; // most recent last
    std::vector<int64_t> m_pendingDetails;                   // asked of the loader, not yet back
};

} // namespace rs
