// ranksight: the desktop app. `ranksight [RUN.h5]` opens a run (also one still being written);
// `ranksight --start [--config FILE.json]` starts a run at launch (demos, scripts).
#include "MainWindow.h"
#include "VersionText.h"
#include "model/RunModel.h"
#include "panels/RunPanel.h"
#include "train/TrainConfig.h"
#include "util/BlasSetup.h"
#include "util/MallocArenas.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QIcon>
#include <QSocketNotifier>
#include <QTimer>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/socket.h>
#include <unistd.h>

namespace {

// Ctrl-C and SIGTERM close the window like the user would (a running training stops, its file stays
// complete). The handler only writes a byte to a socket pair; the event loop does the rest.
int g_signalFd[2] = {-1, -1};

void onSignal(int) {
    const char b = 1;
    [[maybe_unused]] const auto n = ::write(g_signalFd[0], &b, 1);
}

void closeOnSignals(QWidget* window) {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signalFd) != 0)
        return;
    auto* notifier = new QSocketNotifier(g_signalFd[1], QSocketNotifier::Read, window);
    QObject::connect(notifier, &QSocketNotifier::activated, window, [window] {
        char b;
        [[maybe_unused]] const auto n = ::read(g_signalFd[1], &b, 1);
        window->close();
    });
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

} // namespace

// OpenBLAS's settings, before main() (util/BlasSetup.h).
RANKSIGHT_CONFIGURE_BLAS

int main(int argc, char** argv) {
    rs::limitMallocArenas(); // the window trains in this process; before any thread starts
    // --version before QApplication: it must answer on a machine without a display (a package check, a
    // bug report from a server).
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "--version") || !std::strcmp(argv[i], "-v")) {
            std::fputs(qPrintable(rs::versionText()), stdout);
            return 0;
        }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("RankSight"));
    QApplication::setOrganizationName(QStringLiteral("RankSight"));
    QApplication::setApplicationVersion(QStringLiteral(RANKSIGHT_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("org.ranksight.RankSight")); // the installed menu entry
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/desktop/org.ranksight.RankSight.svg")));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Watch data-parallel training rank against rank; replay and explain run files."));
    parser.addHelpOption();
    parser.addOption(QCommandLineOption({QStringLiteral("v"), QStringLiteral("version")},
                                        QStringLiteral("Versions of RankSight, Qt, LibTorch, HDF5 and the "
                                                       "run file format.")));
    parser.addPositionalArgument(
        QStringLiteral("run"),
        QStringLiteral(
            "A run file (.h5) to open, or an msprobe monitor folder to import into the runs folder."),
        QStringLiteral("[RUN.h5 | MONITOR_OUTPUT_DIR]"));
    QCommandLineOption start(
        QStringLiteral("start"),
        QStringLiteral("Start a run at launch (the run panel's settings, or --config)."));
    QCommandLineOption config(
        QStringLiteral("config"),
        QStringLiteral("Run settings (JSON, the keys of ranksight-cli train --config)."),
        QStringLiteral("FILE.json"));
    QCommandLineOption runsDir(QStringLiteral("runs-dir"),
                               QStringLiteral("Folder for new run files (default: ./runs)."),
                               QStringLiteral("DIR"));
    QCommandLineOption nodes(QStringLiteral("nodes"),
                             QStringLiteral("Node processes on this host for new runs, like the rank table's "
                                            "servers (the run panel's Nodes)."),
                             QStringLiteral("N"));
    QCommandLineOption reference(QStringLiteral("reference"),
                                 QStringLiteral("Once the run is open, compare it with this reference run "
                                                "(File > Compare With Reference…)."),
                                 QStringLiteral("REF.h5"));
    QCommandLineOption spread(
        QStringLiteral("spread"),
        QStringLiteral("With --reference: the reference's job run with other arithmetic "
                       "(another layout or card count), whose drift widens the "
                       "tolerances (File > Add Spread Reference…). Repeatable."),
        QStringLiteral("REF2.h5"));
    parser.addOptions({start, config, runsDir, nodes, reference, spread});
    parser.process(app);

    if (parser.isSet(spread) && !parser.isSet(reference)) {
        std::fprintf(stderr,
                     "ranksight: --spread needs --reference: it measures the drift of the reference's "
                     "job\n");
        return 2;
    }
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
    if (parser.isSet(nodes)) {
        bool ok = false;
        const int n = parser.value(nodes).toInt(&ok);
        if (!ok || n < 1 || n > 8) {
            std::fprintf(stderr, "ranksight: --nodes '%s' is not 1..8\n", qPrintable(parser.value(nodes)));
            return 2;
        }
        window.runPanel()->setNodes(n);
    }
    closeOnSignals(&window);
    window.show();
    const QStringList positional = parser.positionalArguments();
    if (!positional.isEmpty() && QFileInfo(positional.front()).isDir()) {
        const QString& dir = positional.front(); // the lambda keeps its own copy
        QTimer::singleShot(0, &window,
                           [&window, dir] { window.importMsprobe(dir, window.importTarget(dir)); });
    } else if (!positional.isEmpty()) {
        window.openRun(positional.front());
        if (parser.isSet(reference)) { // once, when the run has loaded
            const QString ref = parser.value(reference);
            const QStringList spreads = parser.values(spread);
            auto once = std::make_shared<QMetaObject::Connection>();
            *once = QObject::connect(window.model(), &rs::RunModel::statusChanged, &window,
                                     [&window, ref, spreads, once] {
                                         if (!window.model()->hasRun() || window.model()->isLoading())
                                             return;
                                         QObject::disconnect(*once);
                                         QTimer::singleShot(0, &window, [&window, ref, spreads] {
                                             window.compareWithReference(ref, spreads);
                                         });
                                     });
        }
    } else if (parser.isSet(start))
        QTimer::singleShot(0, &window, &rs::MainWindow::startFromPanel);
    return app.exec();
}
