// The inputs in a fuzz regression or corpus folder: every file but the FILE.expect notes, sorted by name.
#pragma once

#include <QDir>
#include <QStringList>

inline QStringList fuzzInputs(const QString& dir) {
    QStringList out;
    const QDir d(dir);
    for (const QString& f : d.entryList(QDir::Files, QDir::Name))
        if (!f.endsWith(QLatin1String(".expect")))
            out << d.filePath(f);
    return out;
}
