// See RunEstimate.h.
#include "panels/RunEstimate.h"

#include "train/Dataset.h"

#include <QSettings>
#include <algorithm>

namespace rs {

namespace {

// Cluster images per second with telemetry on and the run file written, measured on a 2-core VM, 4 cards x
// batch 8: ResNets from `tools/bench-report` on commit be66add, SmallCNN and MLP
// from `ranksight-cli bench --model M --ranks 4 --batch 8 --steps 40 --repeat 3 --precision P` on the same
// commit. On 2 shared cores the cluster's rate barely depends on the number of cards.
double builtInImagesPerSecond(ModelKind model, Precision precision) {
    const bool half = precision != Precision::O0;
    switch (model) {
    case ModelKind::ResNet50:
        return half ? 13.7 : 14.8;
    case ModelKind::ResNet18:
        return half ? 42.2 : 45.0;
    case ModelKind::SmallCnn:
        return half ? 1005.2 : 898.9;
    case ModelKind::Mlp:
        return half ? 1584.2 : 1881.1;
    }
    return 0;
}

QString key(ModelKind model, Precision precision) {
    return QStringLiteral("throughput/%1-%2")
        .arg(QString::fromStdString(modelKindName(model)), QString::fromStdString(precisionName(precision)));
}

QString duration(double s) {
    if (s < 1)
        return QObject::tr("%1 ms").arg(s * 1000, 0, 'f', 0);
    if (s < 90)
        return QObject::tr("%1 s").arg(s, 0, 'f', s < 10 ? 1 : 0);
    if (s < 90 * 60)
        return QObject::tr("%1 min").arg(s / 60, 0, 'f', 0);
    return QObject::tr("%1 h").arg(s / 3600, 0, 'f', 1);
}

} // namespace

RunEstimate estimateRun(const TrainConfig& config, QSettings& settings) {
    RunEstimate e;
    const double measured = settings.value(key(config.model, config.precision)).toDouble();
    e.measuredHere = measured > 0;
    e.imagesPerSecond = e.measuredHere ? measured : builtInImagesPerSecond(config.model, config.precision);
    if (e.imagesPerSecond <= 0)
        return e;
    e.secondsPerStep = double(config.ranks) * config.batchPerRank / e.imagesPerSecond;
    const int64_t steps = config.epochs > 0
                              ? config.epochs * stepsPerEpoch(trainSizeOf(config.data), config.ranks,
                                                              std::max(config.batchPerRank, 1))
                              : config.steps;
    e.seconds = e.secondsPerStep * double(steps);
    return e;
}

void rememberThroughput(QSettings& settings, ModelKind model, Precision precision, double imagesPerSecond) {
    if (imagesPerSecond > 0)
        settings.setValue(key(model, precision), imagesPerSecond);
}

QString RunEstimate::text() const {
    if (imagesPerSecond <= 0)
        return {};
    return QObject::tr("About %1 a step, %2 in all (%3 images/s, %4)")
        .arg(duration(secondsPerStep), duration(seconds))
        .arg(imagesPerSecond, 0, 'f', imagesPerSecond < 100 ? 1 : 0)
        .arg(measuredHere ? QObject::tr("measured by the last such run here")
                          : QObject::tr("measured on a 2-core VM; your first run here measures yours"));
}

} // namespace rs
