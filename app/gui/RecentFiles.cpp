// RecentFiles: see RecentFiles.h.
#include "RecentFiles.h"

#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace rs {

namespace {
const char* kKey = "recentFiles";
}

RecentFiles::RecentFiles(QMenu* menu, QObject* parent)
    : QObject(parent)
    , m_menu(menu) {
    connect(m_menu, &QMenu::aboutToShow, this, &RecentFiles::rebuild);
    rebuild();
}

QStringList RecentFiles::files() const {
    QStringList out;
    for (const QString& f : QSettings().value(kKey).toStringList())
        if (QFileInfo::exists(f))
            out << f;
    return out;
}

void RecentFiles::add(const QString& path) {
    const QString abs = QFileInfo(path).absoluteFilePath();
    QStringList list = QSettings().value(kKey).toStringList();
    list.removeAll(abs);
    list.prepend(abs);
    while (list.size() > kMax)
        list.removeLast();
    QSettings().setValue(kKey, list);
    rebuild();
}

void RecentFiles::rebuild() {
    m_menu->clear();
    const QStringList list = files();
    int i = 1;
    for (const QString& f : list) {
        const QString label = QStringLiteral("&%1 %2").arg(i++ % 10).arg(QFileInfo(f).fileName());
        QAction* a = m_menu->addAction(label, this, [this, f] { emit openRequested(f); });
        a->setToolTip(f);
        a->setStatusTip(f);
    }
    if (list.isEmpty())
        m_menu->addAction(tr("(no recent files)"))->setEnabled(false);
    m_menu->addSeparator();
    m_menu->addAction(tr("Clear list"), this, [this] {
        QSettings().remove(kKey);
        rebuild();
    });
    m_menu->setEnabled(true);
}

} // namespace rs
