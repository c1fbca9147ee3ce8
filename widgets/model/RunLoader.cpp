// RunLoader: see RunLoader.h. Everything named do*/poll/read*/serve* runs in m_thread.
#include "model/RunLoader.h"

#include "reader/OpenRunFile.h"
#include "store/RunReader.h"

#include <QTimer>
#include <algorithm>

namespace rs {

RunLoader::RunLoader(QObject* context, Callbacks callbacks)
    : m_context(context)
    , m_cb(std::move(callbacks)) {
    m_thread.setObjectName(QStringLiteral("RunLoader"));
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    m_thread.start();
    QMetaObject::invokeMethod(m_worker, [this] {
        m_poll = new QTimer(m_worker);
        connect(m_poll, &QTimer::timeout, m_worker, [this] { poll(); });
    });
}

RunLoader::~RunLoader() {
    m_stopping = true; // a worker waiting for the GUI thread to apply its deltas gives up
    // Close the reader in its own thread (HDF5 objects are not thread-bound, but the order is then clear).
    QMetaObject::invokeMethod(
        m_worker,
        [this] {
            doClose();
            delete m_poll;
            m_poll = nullptr;
        },
        Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
    delete m_worker;
}

void RunLoader::open(uint64_t generation, const QString& path, int pollMs) {
    QMetaObject::invokeMethod(m_worker, [this, generation, path, pollMs] {
        m_pollMs = pollMs;
        doOpen(generation, path);
    });
}

void RunLoader::close(uint64_t generation) {
    QMetaObject::invokeMethod(m_worker, [this, generation] {
        m_generation = generation;
        doClose();
    });
}

void RunLoader::setPollInterval(int ms) {
    QMetaObject::invokeMethod(m_worker, [this, ms] {
        m_pollMs = ms;
        if (m_poll->isActive())
            m_poll->start(ms);
    });
}

void RunLoader::requestDetail(uint64_t generation, int64_t step, int64_t row) {
    std::vector<DetailRequest> dropped;
    {
        std::lock_guard lock(m_requestMutex);
        m_requests.push_back({generation, step, row});
        while (m_requests.size() > kMaxQueuedDetails) {
            dropped.push_back(m_requests.front());
            m_requests.erase(m_requests.begin());
        }
    }
    for (const auto& r : dropped)
        m_cb.detailDropped(r.generation, r.step);
    QMetaObject::invokeMethod(m_worker, [this] { serveDetails(); });
}

void RunLoader::post(std::function<void()> f) {
    QMetaObject::invokeMethod(m_context, std::move(f), Qt::QueuedConnection);
}

void RunLoader::doClose() {
    if (m_poll)
        m_poll->stop();
    m_reader.reset();
    m_path.clear();
    m_sentFirst = false;
    m_stepsRead = m_eventsRead = m_evalsRead = m_weightsRead = m_collectivesRead = m_tensorsRead = 0;
    m_weightSteps.clear();
}

void RunLoader::doOpen(uint64_t generation, const QString& path) {
    doClose();
    m_generation = generation;
    m_path = path;
    try {
        m_reader = openRunFile(path.toStdString());
        readNewRows(true);
    } catch (const std::exception& e) {
        fail(QString::fromStdString(e.what()));
        return;
    }
    if (!m_reader->complete())
        m_poll->start(m_pollMs);
}

void RunLoader::poll() {
    if (!m_reader)
        return;
    try {
        if (m_reader->refresh())
            readNewRows(false);
    } catch (const std::exception& e) {
        fail(QString::fromStdString(e.what()));
        return;
    }
    if (m_reader->complete())
        m_poll->stop();
}

void RunLoader::fail(const QString& message) {
    m_poll->stop();
    m_reader.reset();
    const uint64_t g = m_generation;
    post([cb = m_cb.failed, g, message] { cb(g, message); });
}

// Reads every row that appeared since the last call, in chunks: one delta per chunk, the events, evals and
// weight steps with the first one (they are small and the charts want the markers at once), the status with
// the last one.
void RunLoader::readNewRows(bool firstLoad) {
    const RunReader& r = *m_reader;
    const int64_t total = r.stepCount();
    const int64_t start = m_stepsRead;
    bool firstChunk = true;
    do {
        auto d = std::make_shared<RunDelta>();
        d->generation = m_generation;
        if (!m_sentFirst) {
            d->first = true;
            d->path = m_path;
            d->meta = r.meta();
            d->formatVersion = r.formatVersion();
            m_sentFirst = true;
        }
        const int64_t end = std::min(total, m_stepsRead + (m_stepsRead == 0 ? kFirstChunkRows : kChunkRows));
        d->firstRow = m_stepsRead;
        d->fileRows = total;
        if (end > m_stepsRead) {
            d->stepNumbers = r.readStepNumbers(m_stepsRead, end);
            for (int c = 0; c < kStepColumnCount; ++c)
                d->columns[size_t(c)] = r.readStepScalar(schemaColumn(stepColumnAt(c)), m_stepsRead, end);
        }
        if (firstChunk) {
            const int64_t events = r.eventCount(), evals = r.evalCount(), weights = r.weightCount();
            if (events > m_eventsRead)
                d->events = r.readEvents(m_eventsRead, events);
            if (evals > m_evalsRead) // only the new rows: a live run must not re-read its history each poll
                d->evals = r.readEvals(m_evalsRead, evals);
            if (weights > m_weightsRead) {
                d->weightSteps = r.readWeightSteps(m_weightsRead, weights);
                m_weightSteps.insert(m_weightSteps.end(), d->weightSteps.begin(), d->weightSteps.end());
            }
            m_eventsRead = events;
            m_evalsRead = evals;
            m_weightsRead = weights;
            // Imports: written whole before the file is opened, a few MB at most.
            if (const int64_t n = r.collectiveCount(); n > m_collectivesRead) {
                d->collectives = r.readCollectives(m_collectivesRead, n);
                m_collectivesRead = n;
            }
            if (const int64_t n = r.tensorStatCount(); n > m_tensorsRead) {
                d->tensorStats = r.readTensorStats(m_tensorsRead, n);
                m_tensorsRead = n;
            }
            firstChunk = false;
        }
        m_stepsRead = end;
        d->complete = r.complete();
        d->stopReason = r.stopReason();
        d->loadDone = m_stepsRead >= total;
        while (m_deltasInFlight->load() >= kMaxDeltasInFlight && !m_stopping.load())
            QThread::msleep(1);
        ++*m_deltasInFlight;
        post([cb = m_cb.delta, d, inFlight = m_deltasInFlight] {
            cb(d);
            --*inFlight;
        });
        if (firstLoad && total > 0) {
            const int percent = int(100 * (m_stepsRead - start) / total);
            const uint64_t g = m_generation;
            post([cb = m_cb.progress, g, percent] { cb(g, percent); });
        }
    } while (m_stepsRead < total);
}

void RunLoader::serveDetails() {
    for (;;) {
        DetailRequest req;
        {
            std::lock_guard lock(m_requestMutex);
            if (m_requests.empty())
                return;
            req = m_requests.front();
            m_requests.erase(m_requests.begin());
        }
        std::shared_ptr<StepDetail> d;
        if (req.generation == m_generation && m_reader && req.row >= 0 && req.row < m_reader->stepCount()) {
            try {
                d = std::make_shared<StepDetail>();
                d->record = std::move(m_reader->readSteps(req.row, req.row + 1, true).front());
                d->step = d->record.step;
                // The last weight row at or before the step.
                const auto it = std::upper_bound(m_weightSteps.begin(), m_weightSteps.end(), d->step);
                if (it != m_weightSteps.begin()) {
                    const int64_t w = int64_t(it - m_weightSteps.begin()) - 1;
                    auto rows = m_reader->readWeights(w, w + 1);
                    d->weights = std::make_shared<WeightRecord>(std::move(rows.front()));
                }
            } catch (const ReaderDiedError& e) {
                // The reader process crashed or hung on this step: the file is damaged and the reader gone,
                // so the run cannot stay open; the window says why.
                post([cb = m_cb.detailDropped, g = req.generation, s = req.step] { cb(g, s); });
                fail(QString::fromStdString(e.what()));
                return;
            } catch (const std::exception&) {
                d.reset(); // a step that cannot be read is reported as dropped; the run stays open
            }
        }
        if (d && d->step == req.step)
            post([cb = m_cb.detail, g = req.generation, d] { cb(g, d); });
        else
            post([cb = m_cb.detailDropped, g = req.generation, s = req.step] { cb(g, s); });
    }
}

} // namespace rs
