// Runs a training job in the background for the window: rs::Trainer::run() on its own thread (which starts
// the card threads and the writer thread), while the window watches the run file grow through RunModel.
// Results cross back as queued signals named as events. stop() returns at once; the trainer's cards stop
// within a second and the file is closed complete. The destructor stops and joins, so closing the window
// mid-run keeps the file complete.
//
// A run of N nodes (TrainConfig::nodes > 1) runs on this host as it would on N servers: node 0 is the
// trainer in this process (it writes the file the window follows), nodes 1..N-1 are `ranksight-cli train`
// processes started next to this program's binary, all joined through a free port on 127.0.0.1.
#pragma once

#include "train/TrainConfig.h"
#include "train/TrainObserver.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

class QProcess;

namespace rs {

class Trainer;

class TrainController : public QObject {
    Q_OBJECT
public:
    explicit TrainController(QObject* parent = nullptr);
    ~TrainController() override;

    bool isRunning() const { return m_running; }
    QString runPath() const { return m_path; }

    // Starts a run; false (and *error) if one is running or the output cannot be used. Setup problems found
    // later (a bad rank table, unreadable data) arrive as runFailed.
    bool start(const TrainConfig& config, QString* error);
    void stop();
    // Stops and waits for the run to end (the file is then complete). Returns milliseconds waited.
    int64_t stopAndWait();

signals:
    void runStarted(const QString& path); // the run file exists and holds its meta: open it
    void runFinished(const QString& path, const QString& stopReason, double imagesPerSecond);
    void runFailed(const QString& path, const QString& message); // before the first step
    void runningChanged(bool running);
    // A node process of a multi-node run ended with an error: its last line, for the window to show.
    void nodeFailed(int node, const QString& message);

private:
    class Observer;
    void join();
    bool startNodes(TrainConfig& config, QString* error);
    void stopNodes();          // SIGTERM: they stop like a Ctrl-C'd ranksight-cli train
    void waitForNodes(int ms); // then SIGKILL whatever is left
    void removeNodeConfig();

    std::unique_ptr<Trainer> m_trainer;
    std::unique_ptr<Observer> m_observer;
    std::thread m_thread;
    bool m_running = false;
    QString m_path;
    std::vector<QProcess*> m_nodes; // nodes 1..N-1 of a multi-node run, children of this controller
    QString m_nodeConfig;           // the configuration file they start from
    int m_nodeGrace = 0;            // how long a node may outlive node 0: its timeout, and a margin
};

} // namespace rs
