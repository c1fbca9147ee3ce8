// File > Open Recent: the last run files opened, kept in QSettings, newest first, missing files pruned.
#pragma once

#include <QObject>
#include <QStringList>

class QMenu;

namespace rs {

class RecentFiles : public QObject {
    Q_OBJECT
public:
    explicit RecentFiles(QMenu* menu, QObject* parent = nullptr);
    void add(const QString& path);
    QStringList files() const;

signals:
    void openRequested(const QString& path);

private:
    void rebuild();
    QMenu* m_menu;
    static constexpr int kMax = 10;
};

} // namespace rs
