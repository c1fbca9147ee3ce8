// TrainController: see TrainController.h.
#include "TrainController.h"

#include "train/Trainer.h"

#include <QDir>
#include <QFileInfo>
#include <QPointer>
#include <chrono>

namespace rs {

// Called on the trainer's threads: only posts to the controller's thread.
class TrainController::Observer : public TrainObserver {
public:
    explicit Observer(TrainController* owner)
        : m_owner(owner) {}
    void runStarted(const RunMeta&) override {
        QMetaObject::invokeMethod(
            m_owner, [o = m_owner] { emit o->runStarted(o->m_path); }, Qt::QueuedConnection);
    }

private:
    QPointer<TrainController> m_owner;
};

TrainController::TrainController(QObject* parent)
    : QObject(parent) {}

TrainController::~TrainController() {
    stopAndWait();
}

bool TrainController::start(const TrainConfig& config, QString* error) {
    if (m_running) {
        *error = tr("A run is already in progress.");
        return false;
    }
    join();
    try {
        config.validate();
    } catch (const std::exception& e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    const QFileInfo out(QString::fromStdString(config.out));
    if (config.out.empty()) {
        *error = tr("No run file given.");
        return false;
    }
    if (out.exists() && !config.overwrite) {
        *error = tr("%1 already exists; choose another run file name.").arg(out.filePath());
        return false;
    }
    if (!QDir().mkpath(out.absolutePath())) {
        *error = tr("Cannot create the folder %1.").arg(out.absolutePath());
        return false;
    }
    m_path = out.filePath();
    m_trainer = std::make_unique<Trainer>(config);
    m_observer = std::make_unique<Observer>(this);
    m_trainer->setObserver(m_observer.get());
    m_running = true;
    emit runningChanged(true);
    QPointer<TrainController> self(this);
    Trainer* trainer = m_trainer.get();
    const QString path = m_path;
    m_thread = std::thread([self, trainer, path] {
        RunSummary summary;
        QString failure;
        try {
            summary = trainer->run();
        } catch (const std::exception& e) {
            failure = QString::fromStdString(e.what());
        }
        // The controller may be gone when the window closed; its destructor joins this thread first, so
        // a QPointer check on the queued side is enough.
        QMetaObject::invokeMethod(
            self.data(),
            [self, summary, failure, path] {
                if (!self)
                    return;
                self->m_running = false;
                if (failure.isEmpty())
                    emit self->runFinished(path, QString::fromStdString(summary.stopReason),
                                           summary.imagesPerSecond);
                else
                    emit self->runFailed(path, failure);
                emit self->runningChanged(false);
            },
            Qt::QueuedConnection);
    });
    return true;
}

void TrainController::stop() {
    if (m_trainer)
        m_trainer->stop();
}

int64_t TrainController::stopAndWait() {
    const auto t0 = std::chrono::steady_clock::now();
    stop();
    join();
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
        .count();
}

void TrainController::join() {
    if (m_thread.joinable())
        m_thread.join();
    m_trainer.reset();
    m_observer.reset();
}

} // namespace rs
