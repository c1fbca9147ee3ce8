// DesktopNotice: see DesktopNotice.h.
#include "notify/DesktopNotice.h"

#include <QApplication>
#include <QIcon>
#include <QSystemTrayIcon>
#include <QVariantMap>

#ifdef RANKSIGHT_HAVE_DBUS
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusMessage>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QDBusReply>
#endif

namespace rs {

namespace {
const QString kService = QStringLiteral("org.freedesktop.Notifications");
const QString kPath = QStringLiteral("/org/freedesktop/Notifications");
const QString kInterface = QStringLiteral("org.freedesktop.Notifications");
const QString kDesktopEntry = QStringLiteral("org.ranksight.RankSight"); // the .desktop file and icon name
constexpr int kTrayMs = 15000; // how long a tray balloon stays (a notification daemon decides its own)

#ifdef RANKSIGHT_HAVE_DBUS
// A daemon started on demand (D-Bus activation, as dunst and mako install themselves) is not registered
// until the first call, yet it is what the desktop shows notices with.
bool freedesktopAvailable() {
    const QDBusConnection bus = QDBusConnection::sessionBus();
    const QDBusConnectionInterface* names = bus.isConnected() ? bus.interface() : nullptr;
    if (!names)
        return false;
    if (names->isServiceRegistered(kService).value())
        return true;
    const QDBusReply<QStringList> activatable = names->activatableServiceNames();
    return activatable.isValid() && activatable.value().contains(kService);
}
#endif
} // namespace

DesktopNotice::DesktopNotice(QObject* parent)
    : QObject(parent) {}

DesktopNotice::Backend DesktopNotice::backend() const {
#ifdef RANKSIGHT_HAVE_DBUS
    if (freedesktopAvailable())
        return Backend::Freedesktop;
#endif
    if (QSystemTrayIcon::isSystemTrayAvailable())
        return Backend::Tray;
    return Backend::None;
}

QString DesktopNotice::backendName(Backend b) {
    switch (b) {
    case Backend::Freedesktop:
        return tr("freedesktop notifications");
    case Backend::Tray:
        return tr("system tray");
    case Backend::None:
        break;
    }
    return tr("none");
}

DesktopNotice::Backend DesktopNotice::send(const QString& summary, const QString& body) {
    const Backend b = backend();
    if (b == Backend::Freedesktop && sendFreedesktop(summary, body))
        return b;
    if (b == Backend::Tray) {
        sendTray(summary, body);
        return b;
    }
    return Backend::None;
}

bool DesktopNotice::sendFreedesktop(const QString& summary, const QString& body) {
#ifdef RANKSIGHT_HAVE_DBUS
    QDBusConnection bus = QDBusConnection::sessionBus();
    if (!m_listening) // any sender: the service's owner may change (a daemon restarted, or started by the
                      // call)
        m_listening = bus.connect(QString(), kPath, kInterface, QStringLiteral("ActionInvoked"), this,
                                  SLOT(onActionInvoked(uint, QString)));
    QDBusMessage call = QDBusMessage::createMethodCall(kService, kPath, kInterface, QStringLiteral("Notify"));
    const QVariantMap hints{{QStringLiteral("desktop-entry"), kDesktopEntry},
                            {QStringLiteral("urgency"), QVariant::fromValue(uchar(1))}}; // normal
    // app_name, replaces_id, app_icon, summary, body, actions (key, label pairs), hints, expire_timeout
    call << QApplication::applicationDisplayName() << uint(0) << kDesktopEntry << summary << body
         << QStringList{QStringLiteral("default"), tr("Show")} << hints << int(-1);
    // Asynchronous: a slow or hung daemon must not stall the window (the reply only gives the id to click).
    auto* watcher = new QDBusPendingCallWatcher(bus.asyncCall(call), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this](QDBusPendingCallWatcher* w) {
        const QDBusPendingReply<uint> reply = *w;
        if (reply.isValid())
            m_ids.insert(reply.value());
        else
            qWarning("desktop notification not shown: %s", qPrintable(reply.error().message()));
        w->deleteLater();
    });
    return bus.isConnected();
#else
    Q_UNUSED(summary);
    Q_UNUSED(body);
    return false;
#endif
}

void DesktopNotice::sendTray(const QString& summary, const QString& body) {
    if (!m_tray) {
        QIcon icon = QApplication::windowIcon();
        if (icon.isNull())
            icon = QIcon(QStringLiteral(":/desktop/org.ranksight.RankSight.svg"));
        m_tray = new QSystemTrayIcon(icon, this);
        m_tray->setToolTip(QApplication::applicationDisplayName());
        // Seen: the icon goes until the next notice (a tray keeps no clutter from a finding already read).
        auto seen = [this] {
            m_tray->hide();
            emit clicked();
        };
        connect(m_tray, &QSystemTrayIcon::messageClicked, this, seen);
        connect(m_tray, &QSystemTrayIcon::activated, this, seen);
    }
    m_tray->show();
    m_tray->showMessage(summary, body, QSystemTrayIcon::Warning, kTrayMs);
}

void DesktopNotice::onActionInvoked(uint id, const QString& action) {
    if (m_ids.contains(id) && action == QLatin1String("default"))
        emit clicked();
}

} // namespace rs
