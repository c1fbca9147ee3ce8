// Tells the user, outside the window, that diagnosis named a new cause on a live run: a desktop notice
// (DesktopNotice: freedesktop notifications, the tray, or none) and, when the window is not in front, the
// window marked in the task bar (QApplication::alert). The people it is for start a job and look elsewhere.
//
// What notifies: a finding (a cause and its ranks) that a diagnosis names for the first time while the run
// is live (this window trains it, or another process still writes the file it follows), including the pass
// that reads the run's last steps just after it completed. Each notifies once: a live run is diagnosed again
// every few seconds and names the same finding each time, or narrows it to fewer ranks as steps arrive. A
// complete file that is opened or replayed notifies nothing (it was never live here). A setting (remembered)
// turns all of it off.
#pragma once

#include "notify/DesktopNotice.h"

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QSet>
#include <QString>
#include <QWidget>

namespace rs {

class DiagnosisRunner;
class RunModel;
struct Finding;

class FindingNotifier : public QObject {
    Q_OBJECT
public:
    struct Notice {
        QString summary; // "Silent data corruption after the all-reduce at step 12, rank 1"
        QString body;    // the evidence's first sentence
    };

    // window: the one marked in the task bar (null: none).
    FindingNotifier(RunModel* model, DiagnosisRunner* runner, QWidget* window, QObject* parent = nullptr);

    static QString settingsKey(); // the QSettings key of the setting ("notifyOnFindings", default on)
    bool isEnabled() const { return m_enabled; }
    void setEnabled(bool on); // remembered in QSettings

    DesktopNotice::Backend backend() const { return m_desktop->backend(); }
    QString backendText() const; // for the setting's tooltip: which way this desktop shows notices

    // What was sent, for the status bar and for tests.
    int noticeCount() const { return m_count; }
    Notice lastNotice() const { return m_last; }
    DesktopNotice::Backend lastBackend() const { return m_lastBackend; }
    int alertCount() const { return m_alerts; } // the window was marked in the task bar

    static Notice noticeFor(const Finding& f);
    static QString firstSentence(const QString& text);

signals:
    void noticed(const QString& summary); // a notice went out (the window shows it in its status bar)
    void activated();                     // the user clicked the notice: bring the window up

private:
    void onRunReset();
    void onRunStatus();
    void onFindings();
    void notify(const Finding& f);

    RunModel* m_model;
    DiagnosisRunner* m_runner;
    QPointer<QWidget> m_window;
    DesktopNotice* m_desktop;
    bool m_enabled = true;
    bool m_sawLive = false; // this run was live after its load finished: its new findings notify
    QHash<QString, QSet<int>>
        m_known; // per cause, the ranks this run's findings named so far (-1: every rank)
    int m_count = 0, m_alerts = 0;
    Notice m_last;
    DesktopNotice::Backend m_lastBackend = DesktopNotice::Backend::None;
};

} // namespace rs
