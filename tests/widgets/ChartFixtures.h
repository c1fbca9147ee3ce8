// Fixtures of the step-chart tests (tst_charts, tst_overflowtimeline): a RunModel filled directly with
// applyDelta (no files), the seed story's cells, and the geometry checks of tick labels.
#pragma once

#include "charts/ChartBase.h"
#include "charts/ChartExport.h"
#include "charts/ChartWidget.h"
#include "model/RunDelta.h"
#include "model/RunModel.h"
#include "store/RunRecords.h"

#include <QDir>
#include <QFile>
#include <QWidget>
#include <QtTest>
#include <cmath>
#include <functional>
#include <limits>
#include <qcustomplot.h>

namespace rs::chart_fixtures {

struct Cell {
    float loss = 1, accuracy = 0.5f, lossScale = 65536;
    bool overflow = false, skipped = false;
};
using CellFn = std::function<Cell(int64_t step, int rank)>;

inline RunDelta makeDelta(int ranks, int64_t firstStep, int64_t steps, const CellFn& cell,
                          bool first = true) {
    RunDelta d;
    d.first = first;
    d.path = QStringLiteral("/runs/test-run.h5");
    d.meta.worldSize = ranks;
    d.meta.model = "mlp";
    d.meta.params = {ParamInfo{"fc1.weight", {4, 4}, 16, 0}, ParamInfo{"fc1.bias", {4}, 4, 16}};
    d.firstRow = firstStep;
    for (int64_t s = firstStep; s < firstStep + steps; ++s) {
        d.stepNumbers.push_back(s);
        for (int r = 0; r < ranks; ++r) {
            const Cell c = cell(s, r);
            auto put = [&](StepColumn col, float v) { d.columns[columnIndex(col)].push_back(v); };
            put(StepColumn::Loss, c.loss);
            put(StepColumn::Accuracy, c.accuracy);
            put(StepColumn::LossScale, c.lossScale);
            put(StepColumn::StepMs, 10);
            put(StepColumn::ComputeMs, 8);
            put(StepColumn::CommMs, 2);
            put(StepColumn::Overflow, c.overflow ? 1 : 0);
            put(StepColumn::Skipped, c.skipped ? 1 : 0);
            put(StepColumn::State, 0);
        }
    }
    return d;
}

// Loss of rank r at step s: 1 + s/100 + r (so the mean over 3 ranks is 2 + s/100); rank 1 has a NaN at 77.
inline Cell knownCell(int64_t s, int r) {
    Cell c;
    c.loss = (r == 1 && s == 77) ? std::nanf("") : 1.0f + float(s) / 100.0f + float(r);
    c.accuracy = 0.1f * float(r + 1);
    return c;
}

inline double valueAt(QCPGraph* g, double key) {
    auto it = g->data()->findBegin(key, false);
    if (it == g->data()->constEnd() || it->key != key)
        return std::nan("");
    return it->value;
}

inline Event makeEvent(int64_t step, const char* code, const std::string& message) {
    Event e;
    e.step = step;
    e.code = code;
    e.message = message;
    e.severity = Severity::Warning;
    return e;
}

inline void show(QWidget* w, int width = 900, int height = 500) {
    w->resize(width, height);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w));
}

inline QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// For a human look at the charts (RANKSIGHT_CHART_DIR=/some/dir): nothing is checked here.
inline void keepPicture(ChartWidget* chart) {
    const QString dir = qEnvironmentVariable("RANKSIGHT_CHART_DIR");
    if (dir.isEmpty())
        return;
    QString error;
    exportChart(chart, QStringLiteral("test-run"), QDir(dir).filePath(chart->chartId() + ".png"),
                ImageFormat::Png, &error, 0, 0, true);
}

// A bare chart, to reach ChartBase's axis helpers.
class TickProbe : public ChartBase {
public:
    using ChartBase::ChartBase;
    using ChartBase::fitIntegerTicks;
    using ChartBase::integerTicker;

protected:
    void rebuild() override {}
};

// The rectangles an axis's tick labels are drawn in (plot pixels): centred on their tick along the axis,
// beside the axis rect across it.
inline QList<QRect> tickLabelRects(QCPAxis* axis) {
    QList<QRect> rects;
    if (!axis->visible() || !axis->tickLabels())
        return rects;
    const QFontMetrics fm(axis->tickLabelFont());
    const QVector<double> ticks = axis->tickVector();
    const QVector<QString> labels = axis->tickVectorLabels();
    const QRect r = axis->axisRect()->rect();
    for (int i = 0; i < ticks.size() && i < labels.size(); ++i) {
        QRect text(QPoint(0, 0), fm.boundingRect(labels[i]).size());
        const int at = int(std::lround(axis->coordToPixel(ticks[i])));
        if (axis->orientation() == Qt::Vertical)
            text.moveCenter(QPoint(r.left() - axis->tickLabelPadding() - text.width() / 2, at));
        else
            text.moveCenter(QPoint(at, r.bottom() + axis->tickLabelPadding() + text.height() / 2));
        rects << text;
    }
    return rects;
}

inline QString describe(const QRect& r) {
    return QStringLiteral("%1,%2 %3x%4").arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height());
}

// No two of the rectangles share a pixel.
inline void checkApart(const QList<QRect>& rects, const QString& what) {
    for (int i = 0; i < rects.size(); ++i)
        for (int j = i + 1; j < rects.size(); ++j)
            QVERIFY2(
                !rects[i].intersects(rects[j]),
                qPrintable(
                    QStringLiteral("%1: %2 overlaps %3").arg(what, describe(rects[i]), describe(rects[j]))));
}

// The seed story's overflow record: 4 ranks, 1,400 steps, scattered skipped updates while the dynamic loss
// scale settles, and from step 1200 rank 1 on a loss scale 2^10 times the others'.
inline Cell seedStoryCell(int64_t s, int r) {
    Cell c;
    c.lossScale = std::ldexp(1.0f, s < 20 ? 24 - int(s / 5) : 20);
    if (s >= 1200)
        c.lossScale = std::ldexp(1.0f, r == 1 ? 26 : 16);
    c.overflow = (s < 20 && s % 5 == 0) || (s == 1210 && r != 1);
    c.skipped = c.overflow;
    return c;
}

} // namespace rs::chart_fixtures
