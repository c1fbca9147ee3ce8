// Real run files for tests, trained the way users do it: `ranksight-cli train ... --out OUT`.
#pragma once

#include <QDebug>
#include <QProcess>
#include <QString>
#include <QStringList>

// Trains into `out` (replacing it); `out` on success, empty on failure (the CLI's stderr is logged).
inline QString trainWithCli(const QString& out, const QStringList& args) {
    QProcess p;
    p.start(RANKSIGHT_CLI, QStringList{"train", "--quiet", "--force", "--out", out} + args);
    if (!p.waitForFinished(120000) || p.exitCode() != 0) {
        qWarning() << p.readAllStandardError();
        return {};
    }
    return out;
}
