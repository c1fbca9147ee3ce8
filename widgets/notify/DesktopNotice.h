// How this desktop shows a notice outside the window: the freedesktop notification service on the session
// bus (GNOME, KDE, dunst, mako, xfce4-notifyd: registered or started on demand), else a balloon from the
// system tray, else nothing (the window's status bar is then the only place the notice shows). The backend
// is looked up again on every send, so a notification daemon started after the window is used.
#pragma once

#include <QObject>
#include <QSet>
#include <QString>

class QSystemTrayIcon;

namespace rs {

class DesktopNotice : public QObject {
    Q_OBJECT
public:
    enum class Backend { Freedesktop, Tray, None };

    explicit DesktopNotice(QObject* parent = nullptr);

    Backend backend() const;               // what a send() would use now (asks the session bus: a round trip)
    static QString backendName(Backend b); // "freedesktop notifications", "system tray", "none"
    // Shows the notice through backend(); the backend used, None when this desktop has no way to show it.
    Backend send(const QString& summary, const QString& body);

signals:
    void clicked(); // the user clicked the notice (the freedesktop "default" action, the tray's balloon)

private slots:
    void onActionInvoked(uint id, const QString& action); // org.freedesktop.Notifications.ActionInvoked

private:
    bool sendFreedesktop(const QString& summary, const QString& body);
    void sendTray(const QString& summary, const QString& body);

    QSystemTrayIcon* m_tray = nullptr; // made at the first tray notice, shown until it is clicked
    QSet<uint> m_ids;                  // the notifications this process sent (ActionInvoked names any)
    bool m_listening = false;          // connected to ActionInvoked
};

} // namespace rs
