// The QApplication that `report` and `bench-open` need for the GUI's model and charts, without a display: the
// offscreen platform unless QT_QPA_PLATFORM says otherwise, and without the warnings that platform prints for
// every window it cannot show (they say nothing to a command-line user).
#pragma once

#ifdef RANKSIGHT_HAVE_WIDGETS

#include <QApplication>
#include <QString>
#include <memory>

namespace rs::cli {

inline void quietQtMessages(QtMsgType type, const QMessageLogContext&, const QString& message) {
    if (type == QtDebugMsg || type == QtInfoMsg || message.contains(QLatin1String("propagateSizeHints")) ||
        message.startsWith(QLatin1String("QStandardPaths:")))
        return;
    fprintf(stderr, "%s\n", message.toLocal8Bit().constData());
}

inline std::unique_ptr<QApplication> makeHeadlessApp() {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    qInstallMessageHandler(quietQtMessages);
    static int argc = 1;
    static char arg0[] = "ranksight-cli";
    static char* argv[] = {arg0, nullptr};
    return std::make_unique<QApplication>(argc, argv);
}

} // namespace rs::cli

#endif
