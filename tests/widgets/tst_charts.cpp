// The step charts and chart export, offscreen: a RunModel filled directly with applyDelta (no files) drives
// LossChart and OverflowTimeline; checked are the plotted values, the decimation on a 100k-step run, the
// coalesced redraws, clicks and linked zoom through the shared StepCursor, the overflow raster's cells, and
// PNG/SVG/PDF exports. Set RANKSIGHT_CHART_DIR to a folder to keep a PNG of each chart for a look.
#include "ChartFixtures.h"
#include "charts/ChartBase.h"
#include "charts/ChartExport.h"
#include "charts/ChartPalette.h"
#include "charts/LossChart.h"
#include "charts/OverflowTimeline.h"
#include "model/RunDelta.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"

#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTimer>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtTest>
#include <cmath>
#include <functional>
#include <limits>
#include <qcustomplot.h>

using namespace rs;

using namespace rs::chart_fixtures;

class TestCharts : public QObject {
    Q_OBJECT
private slots:
    void lossChartPlotsRanksAndTheirMean() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        model.applyDelta(makeDelta(3, 0, 200, knownCell));
        show(&chart);
        chart.refreshNow();

        QCOMPARE(chart.chartId(), QString("loss"));
        QCOMPARE(chart.rankGraphCount(), 3);
        QCOMPARE(chart.meanGraph()->data()->size(), 200); // 200 steps fit the width: nothing decimated
        QVERIFY(std::abs(valueAt(chart.meanGraph(), 120) - 3.2) < 1e-5);
        QVERIFY(std::abs(valueAt(chart.rankGraph(2), 120) - 4.2) < 1e-5);
        // A NaN on one rank: the mean is over the finite ranks (0 and 2), not NaN.
        QVERIFY(std::abs(valueAt(chart.meanGraph(), 77) - (1.77 + 3.77) / 2) < 1e-5);
        QVERIFY(std::isnan(valueAt(chart.rankGraph(1), 77)));
        // Batch accuracy mean in percent on the second axis: (10 + 20 + 30) / 3.
        QVERIFY(std::abs(valueAt(chart.accuracyGraph(), 50) - 20.0) < 1e-4);
        QCOMPARE(chart.accuracyGraph()->valueAxis(), chart.plot()->yAxis2);
        // Following a run shows the whole run.
        QVERIFY(cursor.following());
        QCOMPARE(chart.stepAxis()->range().lower, 0.0);
        QCOMPARE(chart.stepAxis()->range().upper, 199.0);
        // The loss axis fits the data (1 .. 4.99).
        QVERIFY(chart.plot()->yAxis->range().lower < 1.0 && chart.plot()->yAxis->range().lower > 0.5);
        QVERIFY(chart.plot()->yAxis->range().upper > 4.99 && chart.plot()->yAxis->range().upper < 5.5);
        keepPicture(&chart);
    }

    void manyRanksAreSummarised() {
        // 64 ranks: loss 2 + a small per-rank, per-step wobble; rank 17 runs 0.5 high from step 100 on.
        auto cell = [](int64_t s, int r) {
            Cell c;
            c.loss =
                2.0f + 0.01f * float((s * 7 + r * 13) % 11) - 0.05f + (r == 17 && s >= 100 ? 0.5f : 0.0f);
            return c;
        };
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        model.applyDelta(makeDelta(64, 0, 200, cell));
        show(&chart);
        chart.refreshNow();

        QVERIFY(chart.summarised());
        QCOMPARE(chart.rankGraphCount(), 0);
        QCOMPARE(chart.standoutRanks(), std::vector<int>{17});
        QVERIFY(chart.standoutGraph(0)->visible());
        QCOMPARE(chart.standoutGraph(0)->name(), QString("rank 17 (stands out)"));
        QCOMPARE(valueAt(chart.standoutGraph(0), 150), double(cell(150, 17).loss));
        // The band spans the lowest and highest rank at each step.
        float lo = 1e9f, hi = -1e9f;
        for (int r = 0; r < 64; ++r) {
            lo = std::min(lo, cell(150, r).loss);
            hi = std::max(hi, cell(150, r).loss);
        }
        QCOMPARE(valueAt(chart.bandLowGraph(), 150), double(lo));
        QCOMPARE(valueAt(chart.bandHighGraph(), 150), double(hi));
        QCOMPARE(chart.bandHighGraph()->channelFillGraph(), chart.bandLowGraph());
        // A legend of a few entries, not 64: band, standout, mean, accuracy, eval.
        QVERIFY2(chart.plot()->legend->itemCount() <= 6,
                 qPrintable(QString::number(chart.plot()->legend->itemCount())));
        QVERIFY(chart.plot()->legend->hasItemWithPlottable(chart.bandHighGraph()));
        QVERIFY(!chart.plot()->legend->hasItemWithPlottable(chart.bandLowGraph()));
        // A rank whose loss went non-finite is named with why; it comes before the one that is only high.
        model.applyDelta(makeDelta(
            64, 200, 1,
            [&](int64_t s, int r) {
                Cell c = cell(s, r);
                if (r == 33)
                    c.loss = std::numeric_limits<float>::infinity();
                return c;
            },
            false));
        chart.refreshNow();
        QCOMPARE(chart.standoutRanks(), (std::vector<int>{33, 17}));
        QCOMPARE(chart.standoutGraph(0)->name(), QString("rank 33 (loss not finite on 1 step(s))"));
        // The longer legend entries still sit side by side without overlapping, inside the chart, at a
        // dock's width too.
        for (int width : {900, 560}) {
            chart.resize(width, 500);
            chart.refreshNow();
            chart.plot()->replot();
            QCPLegend* legend = chart.plot()->legend;
            QList<QRect> entries;
            for (int i = 0; i < legend->itemCount(); ++i)
                if (legend->item(i)) // a wrapped grid has empty cells
                    entries << legend->item(i)->outerRect();
            QVERIFY(entries.size() >= 5);
            for (int i = 0; i < entries.size(); ++i) {
                QVERIFY2(chart.plot()->viewport().contains(entries[i]), qPrintable(QString::number(i)));
                for (int j = i + 1; j < entries.size(); ++j)
                    QVERIFY2(
                        !entries[i].intersects(entries[j]),
                        qPrintable(QString("legend entries %1 and %2 at width %3").arg(i).arg(j).arg(width)));
            }
        }
        // Too short for its legend (it would take over a quarter of the height): hidden, the plot keeps the
        // room; tall enough again: back.
        chart.resize(560, 160);
        chart.refreshNow();
        chart.plot()->replot();
        QVERIFY(!chart.plot()->legend->visible());
        QVERIFY2(chart.plot()->axisRect()->height() > 60,
                 qPrintable(QString::number(chart.plot()->axisRect()->height())));
        chart.resize(900, 500);
        chart.refreshNow();
        chart.plot()->replot();
        QVERIFY(chart.plot()->legend->visible());
        // Zoomed to steps before rank 17 went high, nobody stands out.
        cursor.setRange(0, 90);
        chart.refreshNow();
        QVERIFY(chart.standoutRanks().empty());
        QVERIFY(!chart.standoutGraph(0)->visible());
        QVERIFY(!chart.plot()->legend->hasItemWithPlottable(chart.standoutGraph(0)));

        // Hover: the pointer on rank 17's line at step 60 names and draws it; elsewhere, nothing.
        cursor.setRange(0, 200);
        chart.refreshNow();
        chart.plot()->replot();
        const double x = chart.plot()->xAxis->coordToPixel(150);
        const QPointF on(x, chart.plot()->yAxis->coordToPixel(cell(150, 17).loss));
        QTest::mouseMove(chart.plot(), on.toPoint());
        QTRY_COMPARE(chart.hoveredRank(), 17);
        QVERIFY(chart.hoverGraph()->visible());
        QCOMPARE(valueAt(chart.hoverGraph(), 150), double(cell(150, 17).loss));
        const QString tip = chart.toolTipAt(on);
        QVERIFY2(tip.contains("rank 17 (under the pointer): loss 2.5"), qPrintable(tip));
        QVERIFY2(tip.contains("highest: rank 17"), qPrintable(tip));
        QVERIFY2(tip.contains("rank 17 (stands out)"), qPrintable(tip));
        QVERIFY2(tip.count('\n') < 8, qPrintable(tip)); // a few lines, not one per rank
        const QPointF above(x, chart.plot()->yAxis->coordToPixel(hi + 0.5));
        QTest::mouseMove(chart.plot(), above.toPoint());
        QTRY_COMPARE(chart.hoveredRank(), -1);
        QVERIFY(!chart.hoverGraph()->visible());
        keepPicture(&chart);

        // Eight ranks still get a line each.
        model.applyDelta(makeDelta(8, 0, 50, cell));
        chart.refreshNow();
        QVERIFY(!chart.summarised());
        QCOMPARE(chart.rankGraphCount(), 8);
        QVERIFY(!chart.bandHighGraph()->visible());
        QVERIFY(!chart.plot()->legend->hasItemWithPlottable(chart.bandHighGraph()));
    }

    // Rank axes at 64 ranks: two-digit labels need more room than one-digit ones; the step is 1, 2, 5, 10...
    void integerTicksNeverTouch_data() {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("count");
        QTest::addColumn<double>("step");
        QTest::addRow("64 ranks, narrow") << 260 << 64 << 10.0;
        QTest::addRow("64 ranks, wide") << 2200 << 64 << 1.0;
        QTest::addRow("8 ranks, narrow") << 260 << 8 << 1.0;
        QTest::addRow("512 ranks") << 600 << 512 << 50.0;
    }
    void integerTicksNeverTouch() {
        QFETCH(int, width);
        QFETCH(int, count);
        QFETCH(double, step);
        RunModel model;
        StepCursor cursor;
        TickProbe chart(&model, &cursor, QStringLiteral("probe"), QStringLiteral("probe"));
        QCPAxis* x = chart.plot()->xAxis;
        x->setTicker(TickProbe::integerTicker());
        x->setRange(-0.5, count - 0.5);
        show(&chart, width, 300);
        chart.plot()->replot();
        TickProbe::fitIntegerTicks(x, count);
        chart.plot()->replot();
        const auto ticker = x->ticker().dynamicCast<QCPAxisTickerFixed>();
        QVERIFY(ticker);
        QCOMPARE(ticker->tickStep(), step);
        const QVector<double> ticks = x->tickVector();
        QVERIFY(ticks.size() >= 2);
        const int label = QFontMetrics(x->tickLabelFont()).horizontalAdvance(QString::number(count - 1));
        for (int i = 1; i < ticks.size(); ++i)
            QVERIFY2(x->coordToPixel(ticks[i]) - x->coordToPixel(ticks[i - 1]) > label,
                     qPrintable(QString("ticks %1 and %2").arg(ticks[i - 1]).arg(ticks[i])));
    }

    void noRankColourIsAMarkerColour() {
        // Up to 64 ranks, every rank's line must read apart from both kinds of event marker, in the chart
        // and in its legend: at least 20 degrees of hue away (a gray has no hue and cannot be taken for one).
        const QColor markers[] = {palette::markerColor(), palette::mismatchMarkerColor()};
        for (const QColor& m : markers)
            QVERIFY(m.hsvHue() >= 0 && m.hsvSaturation() > 200);
        QVERIFY(std::abs(markers[0].hsvHue() - markers[1].hsvHue()) >= 20);
        for (int r = 0; r < 64; ++r) {
            const QColor c = palette::rankColor(r);
            if (c.hsvHue() < 0 || c.hsvSaturation() < 40)
                continue;
            for (const QColor& m : markers) {
                const int d = std::abs(c.hsvHue() - m.hsvHue());
                QVERIFY2(
                    std::min(d, 360 - d) >= 20,
                    qPrintable(
                        QStringLiteral("rank %1 (%2) next to marker %3").arg(r).arg(c.name(), m.name())));
            }
        }
    }

    void evalPointsAndFluctuationMarkers() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        RunDelta d = makeDelta(2, 0, 200, knownCell);
        d.events = {
            makeEvent(50, "LOSS_FLUCTUATION",
                      "Loss shows abnormal fluctuation: from 0.25 to 1.56 within 10 steps"),
            makeEvent(100, "GRADIENT_SYNC", "Rank 0 and Rank 1 parameter gradient mismatch at step 100"),
            makeEvent(120, "OVERFLOW", "not marked on the loss curve"),
            makeEvent(150, "LOSS_FLUCTUATION", "second spike")};
        d.evals = {EvalRecord{100, {0.5f, 0.7f}, {1, 1}}, EvalRecord{199, {0.8f, 0.8f}, {1, 1}}};
        model.applyDelta(std::move(d));
        show(&chart);
        chart.refreshNow();

        QCOMPARE(chart.eventMarkerCount(), 3); // two fluctuations and the mismatch, not the overflow
        QCOMPARE(chart.evalGraph()->data()->size(), 2);
        const QPointF at100(chart.plot()->xAxis->coordToPixel(100), chart.plot()->axisRect()->center().y());
        QVERIFY2(chart.toolTipAt(at100).contains("gradient mismatch"), qPrintable(chart.toolTipAt(at100)));
        QVERIFY(std::abs(valueAt(chart.evalGraph(), 100) - 60.0) < 1e-4);
        const QPointF at50(chart.plot()->xAxis->coordToPixel(50), chart.plot()->axisRect()->center().y());
        QVERIFY2(chart.toolTipAt(at50).contains("abnormal fluctuation"), qPrintable(chart.toolTipAt(at50)));
        const QPointF at120(chart.plot()->xAxis->coordToPixel(120), chart.plot()->axisRect()->center().y());
        QVERIFY2(chart.toolTipAt(at120).startsWith("step 120"), qPrintable(chart.toolTipAt(at120)));
        keepPicture(&chart);
    }

    void logToggleSwitchesTheLossAxis() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        model.applyDelta(makeDelta(3, 0, 200, knownCell));
        show(&chart);
        chart.refreshNow();
        auto* box = chart.findChild<QCheckBox*>("logScale");
        QVERIFY(box);
        QCOMPARE(chart.plot()->yAxis->scaleType(), QCPAxis::stLinear);
        QTest::mouseClick(box, Qt::LeftButton, {}, QPoint(8, box->height() / 2));
        QVERIFY(chart.logScale());
        QCOMPARE(chart.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QVERIFY(chart.plot()->yAxis->range().lower > 0);
        chart.setLogScale(false);
        QVERIFY(!box->isChecked());
        QCOMPARE(chart.plot()->yAxis->scaleType(), QCPAxis::stLinear);
    }

    void clickSelectsTheNearestStep() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        model.applyDelta(makeDelta(3, 0, 200, knownCell));
        show(&chart);
        chart.refreshNow();
        QSignalSpy steps(&cursor, &StepCursor::stepChanged);
        const int x = qRound(chart.plot()->xAxis->coordToPixel(120));
        const int y = chart.plot()->axisRect()->center().y();
        QTest::mouseClick(chart.plot(), Qt::LeftButton, {}, QPoint(x, y));
        QCOMPARE(cursor.step(), int64_t(120));
        QCOMPARE(steps.count(), 1);
        QVERIFY(!cursor.following());
        // The click stopped following; the chart keeps the whole run in view and hands it to the cursor.
        QCOMPARE(cursor.rangeLower(), 0.0);
        QCOMPARE(cursor.rangeUpper(), 199.0);
        QTRY_VERIFY(!chart.isDirty());
        QCOMPARE(chart.stepAxis()->range().upper, 199.0);
        // A click outside the data area (on the axis labels) selects nothing.
        QTest::mouseClick(chart.plot(), Qt::LeftButton, {}, QPoint(x, chart.plot()->height() - 2));
        QCOMPARE(cursor.step(), int64_t(120));
        QCOMPARE(chart.nearestStep(119.4), int64_t(119));
        QCOMPARE(chart.nearestStep(119.6), int64_t(120));
        QCOMPARE(chart.nearestStep(-50), int64_t(0));
        QCOMPARE(chart.nearestStep(1e6), int64_t(199));
    }

    void zoomAndPanAreLinkedAcrossCharts() {
        RunModel model;
        StepCursor cursor;
        LossChart loss(&model, &cursor);
        OverflowTimeline overflow(&model, &cursor);
        model.applyDelta(makeDelta(3, 0, 200, knownCell));
        show(&loss);
        show(&overflow);
        loss.refreshNow();
        overflow.refreshNow();
        const double yBefore = loss.plot()->yAxis->range().upper;

        loss.stepAxis()->setRange(50, 100); // as a drag does
        QVERIFY(!cursor.following());
        QCOMPARE(cursor.rangeLower(), 50.0);
        QCOMPARE(cursor.rangeUpper(), 100.0);
        QCOMPARE(overflow.stepAxis()->range().lower, 50.0);
        QCOMPARE(overflow.stepAxis()->range().upper, 100.0);
        // The timeline's second panel shares the step axis.
        QCOMPARE(overflow.scaleRect()->axis(QCPAxis::atBottom)->range().lower, 50.0);

        // A wheel zoom on the timeline's lower panel zooms x only, and the loss chart follows.
        const QPointF center = overflow.scaleRect()->center();
        QWheelEvent wheel(center, overflow.plot()->mapToGlobal(center), QPoint(), QPoint(0, 120),
                          Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(overflow.plot(), &wheel);
        const QCPRange zoomed = overflow.stepAxis()->range();
        QVERIFY2(zoomed.size() < 50.0, qPrintable(QString::number(zoomed.size())));
        QCOMPARE(loss.stepAxis()->range().lower, zoomed.lower);
        QCOMPARE(loss.stepAxis()->range().upper, zoomed.upper);
        QCOMPARE(overflow.plot()->axisRect()->axis(QCPAxis::atBottom)->range().upper, zoomed.upper);

        // The rebuild for the new range is coalesced; it keeps the range and fits y to the visible steps.
        QTRY_VERIFY(!loss.isDirty());
        QCOMPARE(loss.stepAxis()->range().lower, zoomed.lower);
        QVERIFY(loss.plot()->yAxis->range().upper < yBefore);

        // Following again shows the whole run.
        cursor.followLatest();
        QTRY_COMPARE(loss.stepAxis()->range().upper, 199.0);
        QTRY_COMPARE(overflow.stepAxis()->range().lower, 0.0);
    }

    void longRunsAreDecimatedToThePixelWidth() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        const int64_t n = 100000;
        model.applyDelta(makeDelta(2, 0, n, [](int64_t s, int r) {
            Cell c;
            c.loss = s == 54321 && r == 1 ? 1000.0f : 1.0f + float(s % 97) / 97.0f;
            return c;
        }));
        show(&chart, 800, 400);
        chart.refreshNow();
        const int width = chart.plot()->axisRect()->width();
        QVERIFY(width > 300);
        for (int r = 0; r < 2; ++r)
            QVERIFY2(chart.rankGraph(r)->data()->size() <= 2 * (width + 4),
                     qPrintable(QString::number(chart.rankGraph(r)->data()->size())));
        QVERIFY(chart.meanGraph()->data()->size() <= 2 * (width + 4));
        QVERIFY(chart.meanGraph()->data()->size() > width / 2);
        // The whole run is covered and the one-step spike survives.
        QCOMPARE(chart.meanGraph()->data()->constBegin()->key, 0.0);
        bool found = false;
        const QCPRange yr = chart.rankGraph(1)->getValueRange(found);
        QVERIFY(found);
        QCOMPARE(yr.upper, 1000.0);
        keepPicture(&chart);
    }

    void redrawsAreCoalesced() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        model.applyDelta(makeDelta(2, 0, 10, knownCell));
        show(&chart);
        chart.refreshNow();
        const int before = chart.rebuildCount();
        for (int i = 0; i < 50; ++i) // 50 deltas in a burst, as a fast live run sends them
            model.applyDelta(makeDelta(2, 10 + i, 1, knownCell, false));
        QVERIFY(chart.isDirty());
        QCOMPARE(chart.rebuildCount(), before);
        QTRY_VERIFY(!chart.isDirty());
        QCOMPARE(chart.rebuildCount(), before + 1);
        QCOMPARE(chart.meanGraph()->data()->size(), 60);
    }

    // Charts that go dirty together redraw in separate event-loop passes: the window answers input after
    // each.
    void chartsRedrawOnePerEventLoopPass() {
        RunModel model;
        StepCursor cursor;
        QWidget window;
        auto* layout = new QVBoxLayout(&window);
        LossChart* a = new LossChart(&model, &cursor);
        OverflowTimeline* b = new OverflowTimeline(&model, &cursor);
        layout->addWidget(a);
        layout->addWidget(b);
        model.applyDelta(makeDelta(2, 0, 10, knownCell));
        show(&window);
        a->refreshNow();
        b->refreshNow();
        int pass = 0; // a zero-interval timer fires once per event-loop pass
        QTimer counter;
        counter.setInterval(0);
        QObject::connect(&counter, &QTimer::timeout, [&] { ++pass; });
        counter.start();
        std::vector<std::pair<QString, int>> replots;
        for (ChartBase* c : {static_cast<ChartBase*>(a), static_cast<ChartBase*>(b)})
            QObject::connect(c->plot(), &QCustomPlot::afterReplot,
                             [&, c] { replots.emplace_back(c->chartId(), pass); });
        model.applyDelta(makeDelta(2, 10, 5, knownCell, false));
        QVERIFY(a->isDirty() && b->isDirty());
        QTRY_VERIFY(!a->isDirty() && !b->isDirty());
        QTRY_VERIFY(replots.size() >= 2);
        QCOMPARE(replots.size(), size_t(2));
        QVERIFY(replots[0].first != replots[1].first);
        QVERIFY2(replots[0].second != replots[1].second, "both charts redrew in one event-loop pass");
        QCOMPARE(a->meanGraph()->data()->size(), 15);
    }

    void hiddenChartsRedrawWhenShown() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        model.applyDelta(makeDelta(2, 0, 30, knownCell));
        QTest::qWait(3 * ChartBase::kRedrawDelayMs);
        QCOMPARE(chart.rebuildCount(), 0); // never shown: no work
        QVERIFY(chart.isDirty());
        show(&chart);
        QTRY_VERIFY(!chart.isDirty());
        QCOMPARE(chart.meanGraph()->data()->size(), 30);
    }

    void anotherRunReplacesEverything() {
        RunModel model;
        StepCursor cursor;
        LossChart loss(&model, &cursor);
        OverflowTimeline overflow(&model, &cursor);
        model.applyDelta(makeDelta(3, 0, 200, knownCell));
        loss.refreshNow();
        overflow.refreshNow();
        QCOMPARE(loss.rankGraphCount(), 3);
        // A smaller run with other losses: no stale means, graphs or raster rows survive.
        model.applyDelta(makeDelta(2, 0, 50, [](int64_t, int) { return Cell{7.0f}; }));
        loss.refreshNow();
        overflow.refreshNow();
        QCOMPARE(loss.rankGraphCount(), 2);
        QCOMPARE(loss.meanGraph()->data()->size(), 50);
        QCOMPARE(valueAt(loss.meanGraph(), 10), 7.0);
        QCOMPARE(overflow.raster().ranks, 2);
        QCOMPARE(overflow.raster().columns, 50);
        model.close();
        loss.refreshNow();
        overflow.refreshNow();
        QCOMPARE(loss.rankGraphCount(), 0);
        QCOMPARE(loss.meanGraph()->data()->size(), 0);
        QCOMPARE(overflow.raster().columns, 0);
        QCOMPARE(overflow.scaleGraph()->data()->size(), 0);
    }

    void exportsWriteFilesAndRefuseToOverwrite_data() {
        QTest::addColumn<int>("format");
        QTest::addColumn<QByteArray>("magic");
        QTest::addRow("png") << int(ImageFormat::Png) << QByteArray("\x89PNG\r\n\x1a\n");
        QTest::addRow("svg") << int(ImageFormat::Svg) << QByteArray("<svg");
        QTest::addRow("pdf") << int(ImageFormat::Pdf) << QByteArray("%PDF");
    }

    void exportsWriteFilesAndRefuseToOverwrite() {
        QFETCH(int, format);
        QFETCH(QByteArray, magic);
        const auto f = ImageFormat(format);
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor);
        model.applyDelta(makeDelta(3, 0, 200, knownCell));
        show(&chart);
        QTemporaryDir dir;
        const QString path = dir.filePath("loss." + imageFormatSuffix(f));
        ImageFormat guessed = ImageFormat::Png;
        QVERIFY(imageFormatFromPath(path.toUpper(), &guessed));
        QCOMPARE(int(guessed), format);

        QString error;
        QVERIFY2(exportChart(&chart, model.runName(), path, f, &error, 800, 450), qPrintable(error));
        const QByteArray bytes = readAll(path);
        QVERIFY(bytes.size() > 1000);
        if (f == ImageFormat::Svg) {
            QVERIFY(bytes.contains(magic));
            QVERIFY(bytes.contains("Loss and accuracy"));
            QVERIFY(bytes.contains("test-run"));
        } else {
            QVERIFY(bytes.startsWith(magic));
        }
        if (f == ImageFormat::Png) {
            const QImage image(path);
            QCOMPARE(image.width(), 800);
            QVERIFY(image.height() > 450); // the caption band sits above the plot
        }

        QVERIFY(!exportChart(&chart, model.runName(), path, f, &error, 800, 450));
        QVERIFY2(error.contains(path), qPrintable(error));
        QCOMPARE(readAll(path), bytes);
        QVERIFY2(exportChart(&chart, model.runName(), path, f, &error, 400, 300, true), qPrintable(error));
        QVERIFY(readAll(path) != bytes);

        const QString bad = dir.filePath("no/such/folder/x." + imageFormatSuffix(f));
        QVERIFY(!exportChart(&chart, model.runName(), bad, f, &error));
        QVERIFY2(error.contains(bad), qPrintable(error));
    }

    void exportsDecimateForTheExportSize() {
        RunModel model;
        StepCursor cursor;
        LossChart chart(&model, &cursor); // never shown: only the export gives it a size
        model.applyDelta(makeDelta(2, 0, 100000, [](int64_t s, int) { return Cell{1.0f + float(s % 97)}; }));
        QTemporaryDir dir;
        QString error;
        QVERIFY2(exportChart(&chart, "r", dir.filePath("wide.png"), ImageFormat::Png, &error, 1600, 500),
                 qPrintable(error));
        const int points = chart.meanGraph()->data()->size();
        QVERIFY2(points > 2000 && points <= 3200, qPrintable(QString::number(points)));
        QCOMPARE(QImage(dir.filePath("wide.png")).width(), 1600);
    }

    void unknownSuffixIsNoFormat() {
        ImageFormat f = ImageFormat::Svg;
        QVERIFY(!imageFormatFromPath("chart.jpg", &f));
        QVERIFY(!imageFormatFromPath("chart", &f));
        QCOMPARE(int(f), int(ImageFormat::Svg));
    }
};

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
