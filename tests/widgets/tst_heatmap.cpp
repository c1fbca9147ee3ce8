// The heatmaps over a real run file, offscreen: a 5-rank run written with RunWriter in which rank 2 diverges
// (another synced fingerprint and norm on one parameter, a negated sketch, other weights from step 20 on,
// one sample id shared with rank 0) is opened with RunModel::open; the RankHeatmap's matrix is checked
// for every metric, all parameters and one, and the ParamRankHeatmap's norm ratios, tooltip and click; both
// say in a legend entry what their grey cells mean.
#include "charts/ChartPalette.h"
#include "charts/ColorScaleLabel.h"
#include "charts/ParamRankHeatmap.h"
#include "charts/RankHeatmap.h"
#include "core/RunFileFixtures.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "store/RunWriter.h"

#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <qcustomplot.h>

using namespace rs;
using view::RankMetric;

namespace {

constexpr int R = 5, P = 3, K = 4, B = 8, kSteps = 30, kOdd = 2;
constexpr int kTimeoutMs = 15000;

RankStep rankStep(int r) {
    RankStep x;
    x.loss = 1.0f;
    x.accuracy = 0.5f;
    x.lossScale = 65536;
    for (int b = 0; b < B; ++b)
        x.sampleIds.push_back(r * 100 + b);
    if (r == kOdd)
        x.sampleIds[0] = 0; // also in rank 0's batch
    if (r == 1 || r == 3)
        x.sampleIds.back() = -1; // padding: never counts as shared
    const float localNorms[P][R] = {{1, 1, 4, 1, 1}, {1, 2, 3, 4, 5}, {0, 0, 0, 0, 0}};
    for (int p = 0; p < P; ++p) {
        x.localNorm.push_back(localNorms[p][r]);
        x.localMax.push_back(1);
        x.localSum.push_back(1);
        x.nonfinite.push_back(0);
        x.overflowCount.push_back(0);
        x.underflowCount.push_back(0);
        for (int k = 0; k < K; ++k)
            x.sketch.push_back((r == kOdd ? -1.0f : 1.0f) * float(p + 1) * (k % 2 ? -1.5f : 1.0f));
        const bool odd = r == kOdd && p == 1;
        x.syncedNorm.push_back(odd ? 3.0f : 2.0f);
        x.syncedSum.push_back(1);
        x.syncedFp.push_back(odd ? 0xbad0000000000001ull : 0x1000ull + uint64_t(p));
    }
    return x;
}

WeightRecord weights(int64_t step) {
    WeightRecord w;
    w.step = step;
    for (int r = 0; r < R; ++r) {
        std::vector<uint64_t> fp;
        for (int p = 0; p < P; ++p)
            fp.push_back(step >= 20 && r == kOdd && p != 1 ? 0xdead00ull + uint64_t(p)
                                                           : 0x5000ull + uint64_t(p));
        w.fp.push_back(fp);
        w.norm.push_back(std::vector<float>(P, 1.0f));
        w.bufferFp.push_back(7);
        w.bufferDrift.push_back(0);
    }
    return w;
}

void writeDivergingRun(const QString& path) {
    const RunMeta meta = runfile_fixtures::makeMeta(R, P, K, B);
    auto w = RunWriter::create(path.toStdString(), meta, true);
    for (int s = 0; s < kSteps; ++s) {
        StepRecord rec;
        rec.step = s;
        for (int r = 0; r < R; ++r)
            rec.ranks.push_back(rankStep(r));
        w->appendStep(rec);
        if (s % meta.weightEvery == 0)
            w->appendWeights(weights(s));
    }
    w->close("completed");
}

bool near(double a, double b) {
    return std::abs(a - b) < 1e-6;
}

// The expected R x R matrix of one metric: `odd` in rank kOdd's row and column, `same` elsewhere off the
// diagonal, `diagonal` on it.
void checkOddRank(const view::Matrix& m, double odd, double same, double diagonal) {
    QCOMPARE(m.rows, R);
    QCOMPARE(m.cols, R);
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < R; ++j) {
            const double want = i == j ? diagonal : (i == kOdd || j == kOdd) ? odd : same;
            QVERIFY2(
                near(m.at(i, j), want),
                qPrintable(QString("cell (%1,%2) = %3, want %4").arg(i).arg(j).arg(m.at(i, j)).arg(want)));
        }
}

// The legend entry of the grey cells, or null.
QCPPlottableLegendItem* greyEntry(QCustomPlot* plot) {
    for (int i = 0; i < plot->legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i)))
            if (item->plottable()->name().startsWith("grey"))
                return item;
    return nullptr;
}

// The entry is drawn inside the chart, with the color maps' grey as its swatch, and names its full text in
// a tooltip.
void checkGreyEntry(ChartBase& chart, const QString& full) {
    chart.plot()->replot();
    QCPPlottableLegendItem* entry = greyEntry(chart.plot());
    QVERIFY(entry);
    QVERIFY(chart.plot()->legend->visible());
    QVERIFY2(chart.plot()->viewport().contains(entry->outerRect()),
             qPrintable(QString("entry at %1,%2 %3x%4")
                            .arg(entry->outerRect().x())
                            .arg(entry->outerRect().y())
                            .arg(entry->outerRect().width())
                            .arg(entry->outerRect().height())));
    auto* swatch = qobject_cast<QCPGraph*>(entry->plottable());
    QVERIFY(swatch);
    QCOMPARE(swatch->scatterStyle().brush().color(), palette::nanColor());
    QCOMPARE(swatch->dataCount(), 0);
    QCOMPARE(chart.toolTipAt(QPointF(entry->outerRect().center())), full);
}

// The header's title is drawn whole, and nothing in the header runs past the chart's right edge.
void checkHeaderFits(ChartBase& chart, int width) {
    QLabel* title = nullptr;
    for (QLabel* l : chart.findChildren<QLabel*>())
        if (l->text() == chart.chartTitle())
            title = l;
    QVERIFY(title && title->isVisible());
    // The header (title and boxes) asks no more width than the dock MainWindow makes (420 px), whatever the
    // parameters are called: wider, it widened the dock or was cut at its right edge.
    QLayout* header = chart.layout()->itemAt(0)->layout();
    QVERIFY(header);
    QVERIFY2(header->minimumSize().width() + 4 <= 420,
             qPrintable(QStringLiteral("the header needs %1 px").arg(header->minimumSize().width())));
    QVERIFY(chart.width() <= std::max(width, 420));
    for (QWidget* w : chart.findChildren<QComboBox*>())
        QVERIFY2(w->geometry().right() < chart.width(), qPrintable(QStringLiteral("%1 ends at %2 of %3")
                                                                       .arg(w->objectName())
                                                                       .arg(w->geometry().right())
                                                                       .arg(chart.width())));
}

// A colour bar's title: whole words (no ellipsis), each line no longer than the bar, inside the chart.
void checkScaleTitleFits(QCPColorScale* scale, QCustomPlot* plot) {
    plot->replot();
    const QString label = scale->axis()->label();
    QVERIFY2(!label.isEmpty() && !label.contains(QChar(0x2026)), qPrintable(label));
    const QFontMetrics fm(scale->axis()->labelFont());
    const int bar = scale->axis()->axisRect()->height();
    for (const QString& line : label.split('\n'))
        QVERIFY2(fm.horizontalAdvance(line) <= bar, qPrintable(QStringLiteral("'%1' is %2 px, the bar %3")
                                                                   .arg(line)
                                                                   .arg(fm.horizontalAdvance(line))
                                                                   .arg(bar)));
    QVERIFY(plot->viewport().contains(scale->outerRect()));
}

} // namespace

class TestHeatmap : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    QString m_path;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath("diverging.h5");
        writeDivergingRun(m_path);
    }

    void rankMatrixShowsTheOddRankForEveryMetric() {
        RunModel model;
        StepCursor cursor;
        RankHeatmap heat(&model, &cursor);
        heat.resize(600, 500);
        heat.show();
        QVERIFY(QTest::qWaitForWindowExposed(&heat));
        QCOMPARE(heat.chartId(), QString("rank-heatmap"));
        model.open(m_path);
        QTRY_COMPARE_WITH_TIMEOUT(model.stepCount(), int64_t(kSteps), kTimeoutMs);
        cursor.setStep(25);
        QTRY_COMPARE_WITH_TIMEOUT(heat.shownStep(), int64_t(25), kTimeoutMs);
        QVERIFY(!heat.isLoading());
        QVERIFY2(heat.caption().contains("step 25"), qPrintable(heat.caption()));
        QVERIFY2(heat.caption().contains("synced gradient mismatch"), qPrintable(heat.caption()));

        // (a) synced gradients: one parameter differs on rank 2, by 2.0 vs 3.0 in norm.
        checkOddRank(heat.matrix(), 1, 0, 0);
        QCOMPARE(heat.cellTextCount(), R * R); // R <= 8: values written into the cells
        heat.setParam(1);
        heat.refreshNow();
        checkOddRank(heat.matrix(), 1, 0, 0);
        QVERIFY(heat.caption().contains("layer1.bias"));
        heat.setParam(0);
        heat.refreshNow();
        checkOddRank(heat.matrix(), 0, 0, 0);
        heat.setParam(-1);
        heat.setMetric(RankMetric::SyncedNormDiff);
        heat.refreshNow();
        checkOddRank(heat.matrix(), 1.0 / 3.0, 0, 0);

        // (b) local gradients: rank 2's sketch points the other way.
        heat.setMetric(RankMetric::SketchCosine);
        heat.refreshNow();
        checkOddRank(heat.matrix(), -1, 1, 1);

        // (c) weights: from the row of step 20, two parameters differ on rank 2.
        heat.setMetric(RankMetric::WeightMismatch);
        heat.refreshNow();
        checkOddRank(heat.matrix(), 2, 0, 0);
        QVERIFY2(heat.caption().contains("weights of step 20"), qPrintable(heat.caption()));
        heat.setParam(1);
        heat.refreshNow();
        checkOddRank(heat.matrix(), 0, 0, 0);
        heat.setParam(-1);

        // (d) shards: rank 2 saw one of rank 0's samples; padding (-1) on ranks 1 and 3 is not shared.
        heat.setMetric(RankMetric::ShardOverlap);
        heat.refreshNow();
        const view::Matrix& m = heat.matrix();
        for (int i = 0; i < R; ++i)
            for (int j = 0; j < R; ++j) {
                double want = i == j ? 1 : 0;
                if ((i == 0 && j == kOdd) || (i == kOdd && j == 0))
                    want = 1.0 / B;
                QVERIFY2(near(m.at(i, j), want),
                         qPrintable(QString("overlap (%1,%2) = %3").arg(i).arg(j).arg(m.at(i, j))));
            }

        // Another step: the weights come from the row of step 0, where all ranks agree. The step loads in the
        // background; meanwhile the chart keeps showing step 25 and says it is loading.
        heat.setMetric(RankMetric::WeightMismatch);
        cursor.setStep(7);
        heat.refreshNow();
        QVERIFY(heat.isLoading()); // step 7 was never asked for: it cannot be cached yet
        QCOMPARE(heat.shownStep(), int64_t(25));
        QVERIFY2(heat.caption().contains("loading step 7"), qPrintable(heat.caption()));
        // In a narrow dock the caption is shortened with an ellipsis, the loading note kept whole; a centred
        // line wider than the chart would lose both ends.
        const QFontMetrics fm(heat.captionFont());
        heat.resize(heat.minimumSizeHint().width(), heat.height());
        QTRY_VERIFY(heat.plot()->width() < fm.horizontalAdvance(heat.caption()));
        const QString shown = heat.displayedCaption();
        QVERIFY2(shown.contains(QChar(0x2026)) && shown.endsWith("loading step 7…"), qPrintable(shown));
        QVERIFY2(
            fm.horizontalAdvance(shown) <= heat.plot()->width(),
            qPrintable(
                QStringLiteral("%1 px in %2").arg(fm.horizontalAdvance(shown)).arg(heat.plot()->width())));
        QTRY_COMPARE_WITH_TIMEOUT(heat.shownStep(), int64_t(7), kTimeoutMs);
        checkOddRank(heat.matrix(), 0, 0, 0);
        QVERIFY2(heat.caption().contains("weights of step 0"), qPrintable(heat.caption()));
    }

    void combosDriveMetricAndParameter() {
        RunModel model;
        StepCursor cursor;
        RankHeatmap heat(&model, &cursor);
        heat.resize(600, 500);
        heat.show();
        QVERIFY(QTest::qWaitForWindowExposed(&heat));
        model.open(m_path);
        cursor.setStep(25);
        QTRY_COMPARE_WITH_TIMEOUT(heat.shownStep(), int64_t(25), kTimeoutMs);
        auto* metric = heat.findChild<QComboBox*>("metric");
        auto* param = heat.findChild<QComboBox*>("param");
        QVERIFY(metric && param);
        QCOMPARE(metric->count(), 5);
        QCOMPARE(param->count(), P + 1); // "All parameters" and each name
        QCOMPARE(param->itemText(0), QString("All parameters"));
        QCOMPARE(param->itemText(2), QString("layer1.bias"));

        metric->setCurrentIndex(metric->findData(int(RankMetric::SketchCosine)));
        QCOMPARE(heat.rankMetric(), RankMetric::SketchCosine);
        QTRY_VERIFY(!heat.isDirty());
        checkOddRank(heat.matrix(), -1, 1, 1);
        QCOMPARE(heat.colorMap()->dataRange().lower, -1.0);

        param->setCurrentIndex(1); // layer0.weight
        QCOMPARE(heat.param(), 0);
        heat.setParam(2); // the other way round: the combo follows
        QCOMPARE(param->currentIndex(), 3);

        // The tooltip names the pair and the value.
        heat.refreshNow();
        const QPointF cell(heat.plot()->xAxis->coordToPixel(0), heat.plot()->yAxis->coordToPixel(kOdd));
        QVERIFY2(heat.toolTipAt(cell).contains("rank 2 vs rank 0"), qPrintable(heat.toolTipAt(cell)));
        QVERIFY2(heat.toolTipAt(cell).contains("-1"), qPrintable(heat.toolTipAt(cell)));
    }

    void paramHeatmapShowsNormRatios() {
        RunModel model;
        StepCursor cursor;
        ParamRankHeatmap heat(&model, &cursor);
        heat.resize(600, 500);
        heat.show();
        QVERIFY(QTest::qWaitForWindowExposed(&heat));
        QCOMPARE(heat.chartId(), QString("param-heatmap"));
        model.open(m_path);
        QTRY_COMPARE_WITH_TIMEOUT(model.stepCount(), int64_t(kSteps), kTimeoutMs);
        cursor.setStep(12);
        QTRY_COMPARE_WITH_TIMEOUT(heat.shownStep(), int64_t(12), kTimeoutMs);

        const view::Matrix& m = heat.ratios();
        QCOMPARE(m.rows, P);
        QCOMPARE(m.cols, R);
        for (int r = 0; r < R; ++r) {
            QVERIFY(near(m.at(0, r), r == kOdd ? 4.0 : 1.0)); // median 1: rank 2 has four times the norm
            QVERIFY(near(m.at(1, r), (r + 1) / 3.0));         // norms 1..5, median 3
            QVERIFY(std::isnan(m.at(2, r)));                  // median 0: no ratio
        }
        // Colors run over log2(ratio), symmetric around ratio 1.
        QCOMPARE(heat.colorMap()->dataRange().upper, 2.0);
        QCOMPARE(heat.colorMap()->dataRange().lower, -2.0);
        QVERIFY(near(heat.colorMap()->data()->cell(kOdd, 0), 2.0));
        QCOMPARE(heat.labelledParamCount(), P); // three names fit

        const QPointF cell(heat.plot()->xAxis->coordToPixel(kOdd), heat.plot()->yAxis->coordToPixel(0));
        const QString tip = heat.toolTipAt(cell);
        QVERIFY2(tip.contains("layer0.weight") && tip.contains("rank 2") &&
                     tip.contains("norm / median: 4") && tip.contains("local gradient norm: 4"),
                 qPrintable(tip));

        QSignalSpy clicked(&heat, &ParamRankHeatmap::paramClicked);
        const QPointF second(heat.plot()->xAxis->coordToPixel(3), heat.plot()->yAxis->coordToPixel(1));
        QTest::mouseClick(heat.plot(), Qt::LeftButton, {}, second.toPoint());
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.first().first().toInt(), 1);
        QTest::mouseClick(heat.plot(), Qt::LeftButton, {}, QPoint(2, 2)); // outside the cells
        QCOMPARE(clicked.count(), 1);
    }

    // Grey cells (no value the color scale can place) have a legend entry saying what grey means there: in
    // the layers x ranks map a missing ratio, in the rank x rank map each metric's own reason. No cells, no
    // entry.
    void greyCellsAreExplained() {
        RunModel model;
        StepCursor cursor;
        ParamRankHeatmap params(&model, &cursor);
        RankHeatmap ranks(&model, &cursor);
        for (QWidget* w : {static_cast<QWidget*>(&params), static_cast<QWidget*>(&ranks)}) {
            w->resize(600, 500);
            w->show();
            QVERIFY(QTest::qWaitForWindowExposed(w));
        }
        params.refreshNow();
        ranks.refreshNow();
        QCOMPARE(params.greyLegendText(), QString());
        QVERIFY(!greyEntry(params.plot()));
        QCOMPARE(ranks.greyLegendText(), QString());

        model.open(m_path);
        QTRY_COMPARE_WITH_TIMEOUT(model.stepCount(), int64_t(kSteps), kTimeoutMs);
        cursor.setStep(12);
        QTRY_COMPARE_WITH_TIMEOUT(params.shownStep(), int64_t(12), kTimeoutMs);
        QTRY_COMPARE_WITH_TIMEOUT(ranks.shownStep(), int64_t(12), kTimeoutMs);

        // The third parameter's norms are all 0 (median 0): its row is grey, and the legend says why.
        for (int r = 0; r < R; ++r)
            QVERIFY(std::isnan(params.colorMap()->data()->cell(r, 2)));
        QCOMPARE(params.colorMap()->gradient().nanColor(), palette::nanColor());
        const QString paramText = params.greyLegendText();
        QVERIFY2(paramText.startsWith("grey: no ratio") && paramText.contains("median 0") &&
                     paramText.contains("not recorded"),
                 qPrintable(paramText));
        checkGreyEntry(params, paramText);

        const QList<QPair<RankMetric, QString>> reasons = {
            {RankMetric::SyncedMismatch, "synced gradients not recorded on both ranks"},
            {RankMetric::SyncedNormDiff, "synced norms not recorded"},
            {RankMetric::SketchCosine, "sketch not recorded, zero or not finite"},
            {RankMetric::WeightMismatch, "no weight fingerprints"},
            {RankMetric::ShardOverlap, "no sample ids"}};
        for (const auto& [metric, reason] : reasons) {
            ranks.setMetric(metric);
            ranks.refreshNow();
            QVERIFY2(ranks.greyLegendText().startsWith("grey: ") && ranks.greyLegendText().contains(reason),
                     qPrintable(ranks.greyLegendText()));
            checkGreyEntry(ranks, ranks.greyLegendText());
            QCOMPARE(ranks.colorMap()->gradient().nanColor(), palette::nanColor());
        }

        // In a narrow dock the entry is shortened to the chart's width; its tooltip keeps the whole text.
        params.resize(params.minimumSizeHint().width(), params.height());
        params.refreshNow();
        params.plot()->replot();
        QCPPlottableLegendItem* entry = greyEntry(params.plot());
        QVERIFY(entry);
        QVERIFY2(entry->plottable()->name().endsWith(QChar(0x2026)), qPrintable(entry->plottable()->name()));
        QVERIFY(entry->outerRect().right() <= params.plot()->width());
        QCOMPARE(params.toolTipAt(QPointF(entry->outerRect().center())), paramText);

        model.close();
        params.refreshNow();
        QCOMPARE(params.greyLegendText(), QString());
        QVERIFY(!greyEntry(params.plot()));
    }

    // In the docks of a 1280x800 window (about 414 x 218 and 414 x 209 px) and of a 1600x1000 one, on a
    // model with long parameter names: every title is whole. The colour bars' titles ran past both ends of
    // the bar ("parameters whose synced gradient differs" on a 90 px bar).
    void titlesFitTheWindow_data() {
        QTest::addColumn<QSize>("rankSize");
        QTest::addColumn<QSize>("paramSize");
        QTest::addRow("1280x800") << QSize(414, 218) << QSize(414, 209);
        QTest::addRow("1600x1000") << QSize(414, 297) << QSize(414, 283);
    }

    void titlesFitTheWindow() {
        QFETCH(QSize, rankSize);
        QFETCH(QSize, paramSize);
        RunMeta meta = runfile_fixtures::makeMeta(4, 3, 4, 8);
        const char* names[] = {"layer4.1.downsample.0.weight", "layer4.1.downsample.1.running_mean",
                               "fc.bias"};
        for (int p = 0; p < 3; ++p)
            meta.params[size_t(p)].name = names[p];
        const QString path = m_dir.filePath("long-names.h5");
        runfile_fixtures::writeRun(path, meta, 5);
        RunModel model;
        StepCursor cursor;
        RankHeatmap ranks(&model, &cursor);
        ParamRankHeatmap params(&model, &cursor);
        ranks.resize(rankSize);
        params.resize(paramSize);
        for (QWidget* w : {static_cast<QWidget*>(&ranks), static_cast<QWidget*>(&params)}) {
            w->show();
            QVERIFY(QTest::qWaitForWindowExposed(w));
        }
        model.open(path);
        QTRY_COMPARE_WITH_TIMEOUT(model.stepCount(), int64_t(5), kTimeoutMs);
        cursor.setStep(3);
        QTRY_COMPARE_WITH_TIMEOUT(ranks.shownStep(), int64_t(3), kTimeoutMs);
        QTRY_COMPARE_WITH_TIMEOUT(params.shownStep(), int64_t(3), kTimeoutMs);
        for (RankMetric m : {RankMetric::SyncedMismatch, RankMetric::SyncedNormDiff, RankMetric::SketchCosine,
                             RankMetric::WeightMismatch, RankMetric::ShardOverlap}) {
            ranks.setMetric(m);
            ranks.refreshNow();
            checkScaleTitleFits(ranks.colorScale(), ranks.plot());
            checkHeaderFits(ranks, rankSize.width());
            // The bar's tooltip says what it measures in full.
            QVERIFY(ranks.toolTipAt(QPointF(ranks.colorScale()->outerRect().center())).size() >=
                    ranks.colorScale()->axis()->label().size() - 2);
        }
        ranks.setParam(1); // the longest name in the parameter box
        ranks.refreshNow();
        checkHeaderFits(ranks, rankSize.width());
        params.refreshNow();
        checkScaleTitleFits(params.colorScale(), params.plot());
        checkHeaderFits(params, paramSize.width());
    }

    // A colour bar's title broken to the bar: one line when it fits, else at its marked break, else between
    // words; what still does not fit ends in an ellipsis, and says so.
    void scaleTitlesBreakToTheBar() {
        const QFont font;
        const QFontMetrics fm(font);
        const QString marked = "norm / median\n(log2 scale)";
        bool cut = true;
        QCOMPARE(ColorScaleLabel::breakLines(marked, font, 1000, 3, &cut),
                 QString("norm / median (log2 scale)"));
        QVERIFY(!cut);
        const int narrow = fm.horizontalAdvance("norm / median") + 2;
        QCOMPARE(ColorScaleLabel::breakLines(marked, font, narrow, 3, &cut),
                 QString("norm / median\n(log2 scale)"));
        QVERIFY(!cut);
        const QString words = "parameters whose synced gradient differs";
        const QString two =
            ColorScaleLabel::breakLines(words, font, fm.horizontalAdvance("parameters whose"), 2, &cut);
        QCOMPARE(two.split('\n').size(), 2);
        QVERIFY(two.startsWith("parameters whose\n"));
        QVERIFY2(cut && two.endsWith(QChar(0x2026)), qPrintable(two));
        for (const QString& line : two.split('\n'))
            QVERIFY(fm.horizontalAdvance(line) <= fm.horizontalAdvance("parameters whose"));
    }

    void emptyModelShowsNothing() {
        RunModel model;
        StepCursor cursor;
        RankHeatmap heat(&model, &cursor);
        heat.refreshNow();
        QCOMPARE(heat.shownStep(), int64_t(-1));
        QCOMPARE(heat.matrix().rows, 0);
        QVERIFY(heat.caption().contains("no steps"));
        // No axes reading 0 to 5 for ranks that do not exist: an empty state saying what fills the chart.
        QVERIFY(!heat.plot()->xAxis->visible());
        QVERIFY(!heat.plot()->yAxis->visible());
        bool note = false;
        for (int i = 0; i < heat.plot()->itemCount(); ++i)
            if (auto* t = qobject_cast<QCPItemText*>(heat.plot()->item(i)))
                note = note || (t->visible() && t->text().contains("open a run file"));
        QVERIFY(note);
    }

    // 1,024 ranks on 128 servers of 8, rank 517's synced gradient and local norm off on one parameter: no
    // map lays out a cell per rank; the rank x rank map's cells are pairs of server groups with the worst
    // value of their block, the worst pair of ranks is named on the map, and zooming to 40 ranks gives single
    // ranks again. The layers x ranks map's columns are server groups with their most outlying ratio.
    void aThousandRanksPoolByServer() {
        constexpr int kRanks = 1024, kOut = 517;
        QTemporaryDir dir;
        const QString path = dir.filePath("thousand.h5");
        const RunMeta meta = runfile_fixtures::makeMeta(kRanks, 2, 0, 1);
        {
            auto w = RunWriter::create(path.toStdString(), meta, true);
            StepRecord s;
            s.step = 0;
            for (int r = 0; r < kRanks; ++r) {
                RankStep x;
                x.sampleIds = {r};
                x.localNorm = {r == kOut ? 4.0f : 1.0f, 1.0f};
                x.syncedNorm = {1.0f, 1.0f};
                x.syncedFp = {r == kOut ? 0xbadull : 0x600dull, 0x600dull};
                s.ranks.push_back(x);
            }
            w->appendStep(s);
            w->close("completed");
        }
        RunModel model;
        StepCursor cursor;
        RankHeatmap ranks(&model, &cursor);
        ParamRankHeatmap params(&model, &cursor);
        for (ChartBase* c : std::initializer_list<ChartBase*>{&ranks, &params}) {
            c->resize(600, 500);
            c->show();
        }
        model.open(path);
        QTRY_COMPARE_WITH_TIMEOUT(model.stepCount(), int64_t(1), kTimeoutMs);
        cursor.setStep(0);
        // Past 64 ranks the matrix is computed on a worker thread: the map comes when it is ready.
        QTRY_VERIFY_WITH_TIMEOUT(ranks.shownStep() == 0 && params.shownStep() == 0, kTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(ranks.pooled() && !ranks.caption().contains("computing"), kTimeoutMs);
        const view::RankGroups& g = ranks.groups();
        QCOMPARE(g.size(), 64);
        QCOMPARE(g.serversPerGroup, 2); // 128 servers, two to a cell
        QCOMPARE(ranks.shownCells().rows, 64);
        QCOMPARE(ranks.colorMap()->data()->keySize(), 64); // not 1,024 columns
        const int go = g.groupOf(kOut);
        QCOMPARE(go, kOut / 16);
        QCOMPARE(ranks.shownCells().at(go, 0), 1.0); // one parameter differs: the block's worst
        QCOMPARE(ranks.shownCells().at(0, 1), 0.0);  // two healthy groups
        QVERIFY2(ranks.worstPairText().contains(QString("rank %1").arg(kOut)),
                 qPrintable(ranks.worstPairText()));
        QVERIFY2(ranks.caption().contains("2 servers"), qPrintable(ranks.caption()));

        // The wheel's zoom to 40 ranks around it: single ranks.
        ranks.plot()->xAxis->setRange(500, 540);
        ranks.plot()->yAxis->setRange(500, 540);
        QTRY_VERIFY_WITH_TIMEOUT(!ranks.pooled(), kTimeoutMs);
        QCOMPARE(ranks.colorMap()->data()->keySize(), kRanks);
        QVERIFY2(!ranks.caption().contains("servers"), qPrintable(ranks.caption()));

        QVERIFY(params.pooled());
        QCOMPARE(params.colorMap()->data()->keySize(), 64);
        QCOMPARE(params.shownCells().at(0, go), 4.0); // rank 517's ratio stands for its column
        QCOMPARE(params.shownCells().at(0, 0), 1.0);
        QVERIFY2(params.caption().contains("2 servers"), qPrintable(params.caption()));
    }
};

QTEST_MAIN(TestHeatmap)
#include "tst_heatmap.moc"
