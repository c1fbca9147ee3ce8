// ranksight: the desktop app. `ranksight [RUN.h5]` opens a run (also one still being written);
// `ranksight --start [--config FILE.json]` starts a run at launch (demos, scripts).
#include "MainWindow.h"
#include "panels/RunPanel.h"
#include "train/TrainConfig.h"
#include "util/BlasThreads.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv) {
    rs::pinBlasThreadsByReexec(argv);
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("RankSight"));
    QApplication::setOrganizationName(QStringLiteral("RankSight"));
    QApplication::setApplicationVersion(QStringLiteral(RANKSIGHT_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Watch data-parallel training rank against rank; replay and explain run files."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("run"), QStringLiteral("A run file (.h5) to open."), QStringLiteral("[RUN.h5]"));
    QCommandLineOption start(QStringLiteral("start"), QStringLiteral("Start a run at launch (the run panel's settings, or --config)."));
    QCommandLineOption config(QStringLiteral("config"), QStringLiteral("Run settings (JSON, the keys of ranksight-cli train --config)."),
                              QStringLiteral("FILE.json"));
    QCommandLineOption runsDir(QStringLiteral("runs-dir"), QStringLiteral("Folder for new run files (default: ./runs)."),
                               QStringLiteral("DIR"));
    parser.addOptions({start, config, runsDir});
    parser.process(app);

    rs::MainWindow window;
    if (parser.isSet(runsDir))
        window.setRunsDir(parser.value(runsDir));
    if (parser.isSet(config)) {
        try {
            window.runPanel()->setConfig(rs::TrainConfig::fromFile(parser.value(config).toStdString()));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "ranksight: %s\n", e.what());
            return 2;
        }
    }
    window.show();
    const QStringList positional = parser.positionalArguments();
    if (!positional.isEmpty())
        window.openRun(positional.front());
    else if (parser.isSet(start))
        QTimer::singleShot(0, &window, &rs::MainWindow::startFromPanel);
    return app.exec();
}
