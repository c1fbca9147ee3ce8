// "Rank × rank": how every pair of ranks compares at the cursor step, for one metric of
// rs::view::RankMetric (synced gradient mismatch, synced norm difference, local gradient cosine from the
// sketches, weight fingerprint mismatch, shard overlap), over all parameters or one. A healthy data-parallel
// run has identical synced gradients and weights on every rank, so any colored off-diagonal cell in those
// modes is a bug; the text in each cell (up to 8 ranks) gives the number. Grey cells are pairs the metric
// cannot compare at this step; the legend below the map says why, in the metric's terms.
// Past kMaxCellRanks ranks a cell is a pair of servers (several servers, past 64 of them), holding the worst
// value of its block, and the worst pair of ranks is marked on the map; the wheel zooms, and at 64 ranks or
// fewer in view the cells are single ranks again. There the matrix (ranks^2 x parameters) is computed on a
// worker thread, so that a cursor move does not stall the window; the last map stays until it is ready.
#pragma once

#include "charts/ColorScaleLabel.h"
#include "charts/DetailChart.h"
#include "view/RankGroups.h"
#include "view/RankMatrix.h"

#include <QFutureWatcher>
#include <memory>
#include <vector>

class QComboBox;
class QCPColorMap;
class QCPColorScale;
class QCPItemText;

namespace rs {

class GreyCellLegend;

class RankHeatmap : public DetailChart {
    Q_OBJECT
public:
    RankHeatmap(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);
    ~RankHeatmap() override;

    const view::Matrix& matrix() const { return m_matrix; } // R x R at shownStep(); empty before
    view::RankMetric rankMetric() const { return m_metric; }
    int param() const { return m_param; } // -1: all parameters
    QCPColorMap* colorMap() const { return m_map; }
    QCPColorScale* colorScale() const { return m_scale; }
    int cellTextCount() const { return int(m_texts.size()); }
    QString greyLegendText() const; // what grey cells mean, in full, as the legend says; "" while hidden
    QString toolTipAt(const QPointF& pos) const override;
    static constexpr int kMaxTextRanks = 8;  // cell values are written into the cells up to this many ranks
    static constexpr int kMaxCellRanks = 64; // past this many ranks in view, a cell is a group of ranks
    bool pooled() const { return m_groups.size() > 0; } // the cells shown are groups of ranks
    const view::RankGroups& groups() const { return m_groups; }
    const view::Matrix& shownCells() const { return m_pooled; } // groups x groups while pooled()
    QString worstPairText() const; // "worst: rank 517 vs rank 3 (1)" while pooled; "" otherwise
    const ColorScaleLabel& scaleTitle() const { return m_scaleTitle; }

public slots:
    void setMetric(rs::view::RankMetric metric);
    void setParam(int param); // -1: all parameters; out of range: all

protected:
    void draw(const StepDetail& detail) override;
    void clear() override;
    bool layoutChanged() const override; // the colour bar's length, which its title is fitted to

private:
    void syncParamBox();
    void applyMetricStyle();
    void drawCellTexts();
    QString cellText(double v) const;
    bool cellAt(const QPointF& pos, int* row, int* col) const;
    void drawCells(); // the cells for the ranks in view: single ranks, or groups of them
    int ranksInView() const;
    QString poolNote() const; // what a cell is while pooled(), for the caption

    QComboBox* m_metricBox;
    QComboBox* m_paramBox;
    QCPColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    ColorScaleLabel m_scaleTitle;
    std::vector<QCPItemText*> m_texts;
    std::unique_ptr<GreyCellLegend> m_grey;
    view::RankMetric m_metric = view::RankMetric::SyncedMismatch;
    int m_param = -1;
    view::Matrix m_matrix;
    view::RankGroups m_groups; // empty while single ranks are shown
    view::Matrix m_pooled;
    int m_worstRow = -1, m_worstCol = -1;
    QCPItemText* m_worstMark = nullptr;
    bool m_redrawQueued = false;
    // Past kMaxCellRanks: the matrix of (step, metric, param) computed in the background.
    struct MatrixKey {
        int64_t step = -1;
        int metric = -1, param = -2;
        uint64_t run = 0; // m_run when asked: a result of the run before never shows
        bool operator==(const MatrixKey&) const = default;
    };
    void computeInBackground(const MatrixKey& key);
    MatrixKey m_readyKey, m_wantedKey, m_runningKey;
    view::Matrix m_ready;
    QFutureWatcher<view::Matrix>* m_watcher = nullptr;
    uint64_t m_run = 0;    // counts run resets
    int m_shownRanks = 0;  // the ranks of the map drawn last (a zoom is kept while they stay)
    QString m_captionBase; // the caption without poolNote()
};

} // namespace rs
