// DiagnosisRunner: see DiagnosisRunner.h.
#include "model/DiagnosisRunner.h"

#include "compare/RunComparison.h"
#include "diagnose/Diagnoser.h"
#include "model/RunModel.h"
#include "reader/OpenRunFile.h"
#include "store/RunReader.h"
#include "store/RunSchema.h"

#include <QtConcurrent>
#include <algorithm>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rs {

namespace {
constexpr int kDefaultLiveIntervalMs = 2000;
struct Cancelled {};

// A step whose synced-gradient fingerprints differ between two ranks for some parameter (a mismatched cell
// of the rank x rank heatmap).
bool syncedFingerprintsDiffer(const StepRecord& rec) {
    const RankStep* first = nullptr;
    for (const RankStep& r : rec.ranks) {
        if (r.syncedFp.empty())
            continue;
        if (!first)
            first = &r;
        else if (r.syncedFp != first->syncedFp)
            return true;
    }
    return false;
}

// Diagnosis is background work: on 2 cores shared with a live run's writer (or its training), a pass at the
// GUI's priority makes the window stall while it waits for a core. Lowered once per pool thread (an
// unprivileged thread cannot raise it back, so the pool keeps its thread); the reader process the first pass
// starts inherits it.
void lowerThisThreadsPriority() {
#ifdef __linux__
    thread_local bool lowered = false;
    if (!lowered) {
        const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
        ::setpriority(PRIO_PROCESS, tid, ::getpriority(PRIO_PROCESS, tid) + 10);
        lowered = true;
    }
#endif
}
} // namespace

struct DiagnosisRunner::Session {
    std::string path;
    std::unique_ptr<RunReader> reader;
    std::unique_ptr<Diagnoser> diagnoser;
    DiagnosisCursor at;
};

DiagnosisRunner::DiagnosisRunner(RunModel* model, QObject* parent)
    : QObject(parent)
    , m_model(model) {
    m_pool.setMaxThreadCount(1);
    m_pool.setExpiryTimeout(-1);
    m_throttle.setSingleShot(true);
    m_throttle.setInterval(kDefaultLiveIntervalMs);
    connect(&m_throttle, &QTimer::timeout, this, &DiagnosisRunner::start);
    connect(&m_watcher, &QFutureWatcher<Result>::finished, this, &DiagnosisRunner::onFinished);
    connect(model, &RunModel::runReset, this, [this] {
        cancel();
        ++m_generation;
        m_throttle.stop();
        m_pending = false;
        m_session.reset(); // a pass still running keeps its own reference
        m_reference.reset();
        m_urgent = false;
        m_evidenceStep = m_diagnosedThrough = -1;
        m_findings.clear();
        m_notRun.clear();
        m_error.clear();
        m_hasResult = false;
        emit findingsChanged();
    });
    // A replay is diagnosed once it has loaded; a live run again as it grows, and once more when it ends.
    connect(model, &RunModel::statusChanged, this, [this] {
        if (m_model->hasRun() && !m_model->isLoading())
            schedule();
    });
    connect(model, &RunModel::stepsAppended, this, [this] {
        if (!m_model->isLoading())
            schedule();
    });
    connect(model, &RunModel::eventsAppended, this, &DiagnosisRunner::onEventsAppended);
    connect(model, &RunModel::detailReady, this, &DiagnosisRunner::onDetailReady);
}

void DiagnosisRunner::onEventsAppended(int first, int count) {
    const auto& events = m_model->events();
    int64_t newest = -1;
    for (int i = first; i < first + count && i < int(events.size()); ++i)
        if (isDisagreement(events[size_t(i)]))
            newest = std::max(newest, events[size_t(i)].step);
    if (newest >= 0)
        noteEvidence(newest);
}

void DiagnosisRunner::onDetailReady(int64_t step) {
    if (step <= m_diagnosedThrough ||
        !m_model->meta().recorded(runschema::kStepColumns[runschema::kSyncedFp].path))
        return;
    if (const auto detail = m_model->cachedDetail(step); detail && syncedFingerprintsDiffer(detail->record))
        noteEvidence(step);
}

void DiagnosisRunner::noteEvidence(int64_t step) {
    // Before the first result the first pass is on its way anyway, and reads everything there is.
    if (!m_model->hasRun() || step <= m_diagnosedThrough || step <= m_evidenceStep)
        return;
    m_evidenceStep = step;
    emit evidenceChanged(); // the panel says "diagnosing step N…"
    if (m_model->isLoading())
        return;
    if (m_watcher.isRunning()) {
        m_pending = m_urgent = true;
        return;
    }
    m_throttle.stop();
    QTimer::singleShot(0, this, &DiagnosisRunner::start);
}

bool DiagnosisRunner::isDisagreement(const Event& e) {
    using namespace eventcode;
    for (const char* code : {kGradientSync, kWeightSync, kSkipMismatch, kNonfiniteLoss})
        if (e.code == code)
            return true;
    return false;
}

DiagnosisRunner::~DiagnosisRunner() {
    cancel();
    m_watcher.waitForFinished();
}

void DiagnosisRunner::setReference(std::shared_ptr<const RunComparison> comparison) {
    m_reference = std::move(comparison);
    if (!m_model->hasRun() || m_model->isLoading())
        return;
    if (m_watcher.isRunning())
        m_pending = true;
    else
        QTimer::singleShot(0, this, &DiagnosisRunner::start); // at once: the user asked for it
}

void DiagnosisRunner::setLiveInterval(int ms) {
    m_throttle.setInterval(ms);
}

void DiagnosisRunner::schedule() {
    if (m_watcher.isRunning()) {
        m_pending = true;
        return;
    }
    // The first diagnosis of a run starts at once; later ones wait for the interval so a fast live run is
    // not re-read continuously.
    if (!m_hasResult && !m_throttle.isActive())
        QTimer::singleShot(0, this, &DiagnosisRunner::start);
    else if (!m_throttle.isActive())
        m_throttle.start();
}

void DiagnosisRunner::start() {
    if (m_watcher.isRunning() || !m_model->hasRun() || m_model->path().isEmpty())
        return;
    m_pending = false;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_runningGeneration = m_generation;
    const std::string path = m_model->path().toStdString();
    if (!m_session || m_session->path != path) {
        m_session = std::make_shared<Session>();
        m_session->path = path;
    }
    auto session = m_session;
    auto cancelFlag = m_cancel;
    auto reference = m_reference;
    QPointer<DiagnosisRunner> self(this);
    m_watcher.setFuture(QtConcurrent::run(&m_pool, [session, cancelFlag, self, reference]() -> Result {
        lowerThisThreadsPriority();
        Result r;
        try {
            if (!session->reader) {
                session->reader = openRunFile(session->path);
                session->diagnoser = std::make_unique<Diagnoser>(session->reader->meta());
            } else {
                session->reader->refresh();
            }
            diagnoseMore(*session->reader, *session->diagnoser, session->at, [&](int percent) {
                if (cancelFlag->load())
                    throw Cancelled{};
                if (self)
                    QMetaObject::invokeMethod(self.data(), [self, percent] {
                        if (self)
                            emit self->progress(percent);
                    });
            });
            if (reference) // again on each pass: the checks keep only its latest conclusion
                session->diagnoser->addReference(*reference);
            if (session->at.steps > 0)
                r.through =
                    session->reader->readStepNumbers(session->at.steps - 1, session->at.steps).front();
            r.findings = session->diagnoser->findings();
            r.notRun = session->diagnoser->checksNotRun();
        } catch (const Cancelled&) {
            r.cancelled = true;
        } catch (const std::exception& e) {
            r.error = QString::fromStdString(e.what());
            session->reader.reset(); // the next pass starts over from a fresh reader
            session->diagnoser.reset();
            session->at = {};
        }
        return r;
    }));
    emit runningChanged(true);
}

void DiagnosisRunner::cancel() {
    if (m_cancel)
        m_cancel->store(true);
}

void DiagnosisRunner::onFinished() {
    Result r = m_watcher.result();
    emit runningChanged(false);
    if (m_runningGeneration != m_generation || r.cancelled)
        return; // a run that was replaced meanwhile
    m_error = r.error;
    const int64_t before = m_diagnosedThrough;
    if (r.error.isEmpty()) {
        m_findings = std::move(r.findings);
        m_notRun = std::move(r.notRun);
        m_hasResult = true;
        m_diagnosedThrough = std::max(m_diagnosedThrough, r.through);
        if (m_evidenceStep <= m_diagnosedThrough)
            m_evidenceStep = -1;
    }
    // Again at once for evidence still unread, unless this pass read nothing new (the file has not shown
    // that step to this reader yet): then at the interval, not in a loop.
    const bool urgent = m_urgent || (m_evidenceStep >= 0 && m_diagnosedThrough > before);
    m_urgent = false;
    emit findingsChanged();
    if (urgent && r.error.isEmpty()) {
        m_throttle.stop();
        QTimer::singleShot(0, this, &DiagnosisRunner::start);
    } else if (m_pending || m_model->isLive()) {
        schedule();
    }
}

} // namespace rs
