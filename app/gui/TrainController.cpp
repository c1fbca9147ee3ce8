// TrainController: see TrainController.h.
#include "TrainController.h"

#include "cluster/NodeGroup.h"
#include "train/Trainer.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QPointer>
#include <QProcess>
#include <QTemporaryFile>
#include <QTimer>
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
    TrainConfig cfg = config;
    if (cfg.nodes > 1 && !startNodes(cfg, error))
        return false;
    m_trainer = std::make_unique<Trainer>(cfg);
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
                // Node 0 is done, so the other nodes are finishing or timing out: the file they read goes,
                // and any node still there after its timeout is ended.
                self->removeNodeConfig();
                for (QProcess* p : self->m_nodes)
                    QTimer::singleShot(self->m_nodeGrace, p, [p] {
                        if (p->state() != QProcess::NotRunning)
                            p->kill();
                    });
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
    stopNodes();
}

bool TrainController::startNodes(TrainConfig& config, QString* error) {
    const QString cli = QCoreApplication::applicationDirPath() + QStringLiteral("/ranksight-cli");
    if (!QFileInfo(cli).isExecutable()) {
        *error = tr("A run of %1 nodes starts nodes 1..%2 as ranksight-cli processes, but %3 is missing. "
                    "Reinstall RankSight, or run with 1 node.")
                     .arg(config.nodes)
                     .arg(config.nodes - 1)
                     .arg(QDir::toNativeSeparators(cli));
        return false;
    }
    const int port = freeLoopbackPort();
    if (port == 0) {
        *error = tr("No free TCP port on 127.0.0.1 for the nodes to meet on.");
        return false;
    }
    config.nodeRank = 0;
    m_nodeGrace = config.timeoutMs + 3000;
    config.master = "127.0.0.1:" + std::to_string(port);
    // The other nodes get this configuration as a file (faults as flags: they are not a config-file key),
    // so what they compare at rendezvous is what the form says.
    QTemporaryFile file(QDir::temp().filePath(QStringLiteral("ranksight-nodes-XXXXXX.json")));
    file.setAutoRemove(false);
    if (!file.open() || file.write(QByteArray::fromStdString(config.toJson())) < 0 || !file.flush()) {
        *error =
            tr("Cannot write the nodes' configuration to %1: %2").arg(file.fileName(), file.errorString());
        return false;
    }
    file.close();
    const QString configPath = file.fileName();
    for (int k = 1; k < config.nodes; ++k) {
        QStringList args{
            QStringLiteral("train"),   QStringLiteral("--config"),    configPath,
            QStringLiteral("--nodes"), QString::number(config.nodes), QStringLiteral("--node-rank"),
            QString::number(k),        QStringLiteral("--master"),    QString::fromStdString(config.master),
            QStringLiteral("--quiet")};
        for (const std::string& f : config.faults)
            args << QStringLiteral("--fault") << QString::fromStdString(f);
        auto* p = new QProcess(this);
        p->setProcessChannelMode(QProcess::SeparateChannels);
        connect(p, &QProcess::finished, this, [this, p, k](int code, QProcess::ExitStatus status) {
            const QStringList lines =
                QString::fromUtf8(p->readAllStandardError()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
            if (status != QProcess::NormalExit)
                emit nodeFailed(k, tr("node %1 was killed").arg(k));
            else if (code != 0)
                emit nodeFailed(k, lines.isEmpty() ? tr("node %1 exited with code %2").arg(k).arg(code)
                                                   : lines.constLast());
        });
        p->start(cli, args);
        m_nodes.push_back(p);
    }
    m_nodeConfig = configPath; // read by the nodes at start-up, removed when the run ends
    return true;
}

void TrainController::stopNodes() {
    for (QProcess* p : m_nodes)
        if (p->state() != QProcess::NotRunning)
            p->terminate();
}

void TrainController::waitForNodes(int ms) {
    for (QProcess* p : m_nodes) {
        if (p->state() != QProcess::NotRunning && !p->waitForFinished(ms)) {
            p->kill();
            p->waitForFinished(2000);
        }
        p->deleteLater();
    }
    m_nodes.clear();
    removeNodeConfig();
}

void TrainController::removeNodeConfig() {
    if (!m_nodeConfig.isEmpty())
        QFile::remove(m_nodeConfig);
    m_nodeConfig.clear();
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
    waitForNodes(m_nodeGrace);
    m_trainer.reset();
    m_observer.reset();
}

} // namespace rs
