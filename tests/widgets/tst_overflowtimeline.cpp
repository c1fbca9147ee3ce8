// The overflow timeline, offscreen: the raster's categories per rank and step, its layout at the sizes it has
// in 1280x800 and 1600x1000 windows (legend inside the chart, scale lines named, tick labels apart), and the
// worst cell per column on a long run.
#include "ChartFixtures.h"
#include "charts/ChartPalette.h"
#include "charts/OverflowTimeline.h"
#include "model/StepCursor.h"

#include <QtTest>
#include <qcustomplot.h>

using namespace rs;
using namespace rs::chart_fixtures;

class TestOverflowTimeline : public QObject {
    Q_OBJECT
private slots:
    void overflowRasterHoldsTheCategories() {
        RunModel model;
        StepCursor cursor;
        OverflowTimeline chart(&model, &cursor);
        QCOMPARE(chart.chartId(), QString("overflow"));
        model.applyDelta(makeDelta(4, 0, 300, [](int64_t s, int r) {
            Cell c;
            c.lossScale = s < 20 ? 65536.0f : 32768.0f;
            c.overflow = (s == 10 && r == 1) || (s == 20 && r == 2);
            c.skipped = s == 20 && r == 2;
            if (s == 30 && r == 3)
                c.loss = std::numeric_limits<float>::infinity();
            return c;
        }));
        show(&chart, 1000, 500);
        chart.refreshNow();
        const OverflowRaster& raster = chart.raster();
        QCOMPARE(raster.ranks, 4);
        QCOMPARE(raster.columns, 300); // one column per step: they fit the width
        QCOMPARE(int(raster.at(10, 1)), 1);
        QCOMPARE(int(raster.at(20, 2)), 2); // skipped wins over overflow
        QCOMPARE(int(raster.at(30, 3)), 3);
        QCOMPARE(int(raster.at(10, 0)), 0);
        QCOMPARE(int(raster.at(299, 3)), 0);
        QCPColorMapData* cells = chart.rasterMap()->data();
        QCOMPARE(cells->keySize(), 300);
        QCOMPARE(cells->valueSize(), 4);
        QCOMPARE(cells->cell(10, 1), 1.0);
        QCOMPARE(cells->cell(20, 2), 2.0);
        QCOMPARE(cells->cell(30, 3), 3.0);
        QCOMPARE(cells->cell(31, 3), 0.0);
        QCOMPARE(cells->data(20, 2), 2.0); // cell centers sit on the step numbers
        // The loss scale curve (mean over ranks) halves at step 20, where the skip is marked.
        QCOMPARE(valueAt(chart.scaleGraph(), 19), 65536.0);
        QCOMPARE(valueAt(chart.scaleGraph(), 25), 32768.0);
        QCOMPARE(valueAt(chart.skippedGraph(), 20), 32768.0);
        QVERIFY(std::isnan(valueAt(chart.skippedGraph(), 21)));
        QCOMPARE(chart.scaleRect()->axis(QCPAxis::atLeft)->scaleType(), QCPAxis::stLogarithmic);

        // Bucketed: ten steps a column, each column keeps its worst cell.
        const OverflowRaster b = overflowRaster(model, 0, 300, 30);
        QCOMPARE(b.columns, 30);
        QCOMPARE(int(b.at(1, 1)), 1);
        QCOMPARE(int(b.at(2, 2)), 2);
        QCOMPARE(int(b.at(3, 3)), 3);
        QCOMPARE(int(b.at(0, 1)), 0);
        QCOMPARE(b.rowBegin[3], int64_t(30));
        QCOMPARE(b.rowEnd[3], int64_t(40));

        const QPointF cell(chart.plot()->xAxis->coordToPixel(20), chart.plot()->yAxis->coordToPixel(2));
        QVERIFY2(chart.toolTipAt(cell).contains("skipped update"), qPrintable(chart.toolTipAt(cell)));
        // A click on the raster selects a step too.
        QTest::mouseClick(chart.plot(), Qt::LeftButton, {}, cell.toPoint());
        QCOMPARE(cursor.step(), int64_t(20));
        keepPicture(&chart);
    }

    // The overflow timeline at the size it has in a 1280x800 window (and in a 1600x1000 one), on the seed
    // story: every legend entry inside the chart (the legend's row ran off the bottom, cut in half), rank 1's
    // scale line named, and no tick label touching another (the loss-scale labels overlapped each other and
    // the raster's rank labels).
    void overflowTimelineFitsTheWindow_data() {
        QTest::addColumn<QSize>("size");
        QTest::addRow("1280x800") << QSize(347, 175);
        QTest::addRow("1600x1000") << QSize(647, 233);
        QTest::addRow("tall") << QSize(900, 500);
    }

    void overflowTimelineFitsTheWindow() {
        QFETCH(QSize, size);
        RunModel model;
        StepCursor cursor;
        OverflowTimeline chart(&model, &cursor);
        model.applyDelta(makeDelta(4, 0, 1400, seedStoryCell));
        show(&chart, size.width(), size.height());
        chart.refreshNow();
        chart.plot()->replot();
        QCOMPARE(chart.standoutRanks(), std::vector<int>{1});
        const QRect viewport = chart.plot()->viewport();

        QCPLegend* legend = chart.plot()->legend;
        QVERIFY(legend->visible());
        QVERIFY(legend->itemCount() >= 4); // the raster's colours at least
        QList<QRect> entries;
        bool rankEntry = false;
        for (int i = 0; i < legend->itemCount(); ++i) {
            QCPAbstractLegendItem* item = legend->item(i);
            if (!item)
                continue; // an empty cell of the wrapped grid
            QVERIFY2(viewport.contains(item->outerRect()),
                     qPrintable(QStringLiteral("entry %1 at %2, chart %3")
                                    .arg(i)
                                    .arg(describe(item->outerRect()), describe(viewport))));
            QVERIFY(item->outerRect().width() >= item->minimumOuterSizeHint().width());
            QVERIFY(item->outerRect().height() >= item->minimumOuterSizeHint().height());
            entries << item->outerRect();
            if (auto* p = qobject_cast<QCPPlottableLegendItem*>(item))
                rankEntry = rankEntry || p->plottable() == chart.rankScaleGraph(0);
        }
        checkApart(entries, "legend");
        QCOMPARE(rankEntry, !chart.compactLegend());

        // Rank 1's line is named at its end, inside the chart, apart from the common line's name.
        QList<QRect> names;
        bool rank1 = false;
        for (QCPItemText* label : chart.lineLabels()) {
            const QFontMetrics fm(label->font());
            QRect r(QPoint(0, 0), fm.boundingRect(label->text()).size());
            const QPointF at = label->position->pixelPosition();
            r.moveTopLeft(QPoint(int(at.x()) + label->padding().left(), int(at.y()) - r.height() / 2));
            QVERIFY2(viewport.contains(r), qPrintable(label->text() + " at " + describe(r)));
            names << r.adjusted(0, 1, 0, -1); // labels a line apart may touch, not overlap
            rank1 = rank1 || label->text() == "rank 1";
        }
        QVERIFY(rank1);
        checkApart(names, "line names");

        // Tick labels: the loss-scale ones within their strip, none touching another or the rank labels.
        QCPAxis* scaleAxis = chart.scaleRect()->axis(QCPAxis::atLeft);
        const QList<QRect> scaleTicks = tickLabelRects(scaleAxis);
        QVERIFY(!scaleTicks.isEmpty());
        for (const QRect& r : scaleTicks)
            QVERIFY2(r.top() >= chart.scaleRect()->top() - 1 && r.bottom() <= chart.scaleRect()->bottom() + 1,
                     qPrintable(describe(r) + " outside the strip " + describe(chart.scaleRect()->rect())));
        checkApart(scaleTicks + tickLabelRects(chart.plot()->yAxis), "rank and loss-scale labels");
        checkApart(tickLabelRects(chart.scaleRect()->axis(QCPAxis::atBottom)), "step labels");
        keepPicture(&chart);
    }

    void longOverflowRunsKeepTheWorstCellPerColumn() {
        RunModel model;
        StepCursor cursor;
        OverflowTimeline chart(&model, &cursor);
        model.applyDelta(makeDelta(2, 0, 100000, [](int64_t s, int r) {
            Cell c;
            c.overflow = s == 77777 && r == 1;
            return c;
        }));
        show(&chart, 800, 400);
        chart.refreshNow();
        const OverflowRaster& raster = chart.raster();
        QVERIFY(raster.columns <= chart.plot()->axisRect()->width() + 4);
        QVERIFY(raster.columns > 100);
        int overflowCells = 0;
        for (int c = 0; c < raster.columns; ++c)
            overflowCells += raster.at(c, 1) == 1;
        QCOMPARE(overflowCells, 1); // one step in 100k still shows
        QVERIFY(chart.scaleGraph()->data()->size() <= 2 * (chart.plot()->axisRect()->width() + 4));
    }
};

QTEST_MAIN(TestOverflowTimeline)
#include "tst_overflowtimeline.moc"
