// `report RUN.h5 --out DIR`: the bug-report folder of File > Export bug report, headless. The charts are the
// GUI's own, rendered offscreen, so this command exists only in a build with the widgets
// (RANKSIGHT_HAVE_WIDGETS). --reference REF.h5: the report carries the run's comparison with a reference run,
// and its findings the causes every rank shares.
#include "CliArgs.h"
#include "Commands.h"
#include "HeadlessApp.h"

#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <memory>

#ifdef RANKSIGHT_HAVE_WIDGETS
#include "compare/CompareRuns.h"
#include "model/RunModel.h"
#include "reader/OpenRunFile.h"
#include "reader/ReferenceRuns.h"
#include "report/ReportExporter.h"
#include "store/RunReader.h"

#include <QEventLoop>
#include <QFileInfo>
#endif

namespace rs::cli {

#ifdef RANKSIGHT_HAVE_WIDGETS

int reportCommand(const Args& argv) {
    const CliArgs args(argv, {"out", "reference", "spread"}, {});
    const auto out = args.value("out");
    if (!out)
        throw UsageError("--out DIR is required");
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one run file, got {}", args.positionals().size()));
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(*out, ec))) {
        printError(fmt::format("report: {}: already exists (a report goes into a new folder; nothing is "
                               "overwritten)",
                               *out));
        return 2;
    }
    const auto app = makeHeadlessApp();

    RunModel model;
    QString failure;
    QEventLoop loop;
    QObject::connect(&model, &RunModel::openFailed, &loop, [&](const QString&, const QString& message) {
        failure = message;
        loop.quit();
    });
    QObject::connect(&model, &RunModel::statusChanged, &loop, [&] {
        if (!model.isLoading())
            loop.quit();
    });
    model.open(QString::fromStdString(args.positionals().front()));
    if (model.isLoading())
        loop.exec();
    if (!failure.isEmpty() || !model.hasRun()) {
        printError(fmt::format("report: {}", failure.isEmpty() ? args.positionals().front() + ": cannot open"
                                                               : failure.toStdString()));
        return 2;
    }

    if (!args.value("reference") && !args.values("spread").empty())
        throw UsageError("--spread needs --reference: it measures the drift of the reference's job");
    ReportExporter exporter(&model);
    if (const auto ref = args.value("reference")) { // the report carries the comparison (and its findings)
        try {
            const auto a = openRunFile(args.positionals().front());
            const ReferenceRuns refs = openReferences(*ref, args.values("spread"));
            exporter.setReference(
                std::make_shared<RunComparison>(compareRuns(*a, *refs.reference, {}, refs.spreads)),
                QString::fromStdString(*ref));
        } catch (const std::exception& e) {
            printError(fmt::format("report: {}", e.what()));
            return 2;
        }
    }
    QString error;
    if (!exporter.write(QString::fromStdString(*out), &error)) {
        printError(fmt::format("report: {}", error.toStdString()));
        return 2;
    }
    std::printf("%s\n", QFileInfo(QString::fromStdString(*out)).absoluteFilePath().toUtf8().constData());
    return 0;
}

#else

int reportCommand(const Args&) {
    printError(
        "report: this ranksight-cli was built without the GUI (RANKSIGHT_BUILD_GUI=OFF); the report renders "
        "the GUI's charts, so it needs the GUI build");
    return 2;
}

#endif

} // namespace rs::cli
