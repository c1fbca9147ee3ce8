// RunModel's worker: a thread that owns the RunReader, so HDF5 reads (a large file's index, a step's
// per-parameter detail, polling a file that is still being written) never block the GUI thread. Results go
// back as RunDelta / StepDetail values through queued calls, tagged with the generation of the open() that
// asked for them so results of a replaced file are dropped (hotspot's jobtracker pattern).
#pragma once

#include "model/RunDelta.h"
#include "model/StepDetail.h"

#include <QObject>
#include <QString>
#include <QThread>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

class QTimer;

namespace rs {

class RunReader;

class RunLoader : public QObject {
    Q_OBJECT
public:
    struct Callbacks { // called in the GUI thread (queued)
        std::function<void(std::shared_ptr<RunDelta>)> delta;
        std::function<void(uint64_t generation, std::shared_ptr<const StepDetail>)> detail;
        std::function<void(uint64_t generation, int64_t step)> detailDropped;
        std::function<void(uint64_t generation, QString message)> failed;
        std::function<void(uint64_t generation, int percent)> progress;
    };

    // context: the GUI-thread object the callbacks run on (their lifetime is bound to it).
    RunLoader(QObject* context, Callbacks callbacks);
    ~RunLoader() override; // stops the thread; waits for at most one read in progress

    // All asynchronous; thread-safe to call from the GUI thread.
    void open(uint64_t generation, const QString& path, int pollMs);
    void close(uint64_t generation);
    void setPollInterval(int ms);
    // Reads the detail of one step (row = its row in the file). Requests pile up while the user scrubs:
    // only the newest few are read, older ones are reported through detailDropped.
    void requestDetail(uint64_t generation, int64_t step, int64_t row);

    // Rows read per chunk while loading: each chunk becomes one delta. The first chunk is small so the first
    // picture comes quickly (2k rows read in ~70 ms cold, 16k in ~400 ms); later ones are larger, for
    // throughput.
    static constexpr int64_t kFirstChunkRows = 2048;
    static constexpr int64_t kChunkRows = 16384;

private:
    // Worker-thread side.
    void doOpen(uint64_t generation, const QString& path);
    void doClose();
    void poll();
    void readNewRows(bool firstLoad);
    void serveDetails();
    void fail(const QString& message);
    void post(std::function<void()> f); // to the GUI thread

    QObject* m_context;
    Callbacks m_cb;
    QThread m_thread;
    QObject* m_worker = nullptr; // lives in m_thread; owns the poll timer
    QTimer* m_poll = nullptr;
    int m_pollMs = 200;

    // Worker-thread state.
    std::unique_ptr<RunReader> m_reader;
    uint64_t m_generation = 0;
    QString m_path;
    bool m_sentFirst = false;
    int64_t m_stepsRead = 0, m_eventsRead = 0, m_evalsRead = 0, m_weightsRead = 0, m_collectivesRead = 0,
            m_tensorsRead = 0;
    std::vector<int64_t> m_weightSteps;

    // Detail requests, shared by both threads.
    struct DetailRequest {
        uint64_t generation;
        int64_t step, row;
    };
    std::mutex m_requestMutex;
    std::vector<DetailRequest> m_requests;
    static constexpr size_t kMaxQueuedDetails = 3;

    // Back-pressure while a large file loads: the reader makes a 16k-row delta in a few ms, far faster than
    // the GUI thread applies it, and Qt delivers every queued call before the next timer, so a flood of
    // deltas stalled the event loop for ~100 ms. The worker waits while this many deltas are not yet
    // applied (two: reading the next chunk overlaps applying the last one). The counter is shared with the
    // queued calls, which may run after the loader is gone; m_stopping ends the wait when it goes.
    static constexpr int kMaxDeltasInFlight = 2;
    std::shared_ptr<std::atomic<int>> m_deltasInFlight = std::make_shared<std::atomic<int>>(0);
    std::atomic<bool> m_stopping{false};
};

} // namespace rs
