// Base of the charts that show one step's per-parameter detail (the heatmaps): they draw the cursor's step
// from RunModel::detail(), which is read in the background on first use. While the next step loads, the
// last step drawn stays on screen with a "loading step N…" note (a live run moves the cursor every step; a
// blank flash each time would be unreadable); detailReady() brings the new one in.
#pragma once

#include "charts/ChartBase.h"

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

class QCPColorMap;
class QCPColorScale;
class QCPItemLine;
class QCPItemText;
class QCPTextElement;

namespace rs {

struct StepDetail;

class DetailChart : public ChartBase {
    Q_OBJECT
public:
    DetailChart(RunModel* model, StepCursor* cursor, const QString& id, const QString& title,
                QWidget* parent = nullptr);

    int64_t shownStep() const { return m_shownStep; } // the step drawn; -1 when nothing is
    bool isLoading() const { return m_waiting >= 0; }
    QString caption() const;          // the line above the map: what is shown, at which step (in full)
    QString displayedCaption() const; // as shown: elided to the chart's width
    QFont captionFont() const;

protected:
    void rebuild() final;
    // Draws detail (the cursor's step, or the last step loaded while the cursor's step loads).
    virtual void draw(const StepDetail& detail) = 0;
    virtual void clear() = 0; // shows nothing: no run or no step loaded yet

    const std::shared_ptr<const StepDetail>& detail() const { return m_detail; }
    // Sets the caption; while another step loads, a note saying so is appended.
    void setCaption(const QString& text);
    // A color map over the plot's main axis rect, with a color scale on its right.
    void setupColorMap(QCPColorMap** map, QCPColorScale** scale);
    // Thin lines between the cells of a cols x rows map with cells at integer coordinates (an all-white map
    // of a healthy run would otherwise look empty); rows only when asked (deep models have thin rows).
    void drawCellGrid(int cols, int rows, bool rowLines);
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitCaption();
    void showEmptyState(bool empty);

    std::shared_ptr<const StepDetail> m_detail;
    int64_t m_shownStep = -1;
    int64_t m_waiting = -1; // the step asked of the model and not yet back
    QCPTextElement* m_caption;
    QCPItemText* m_emptyNote = nullptr;
    QCPColorScale* m_scale = nullptr;
    QString m_captionText, m_captionSuffix; // in full; the element shows them elided to the chart's width
    std::vector<QCPItemLine*> m_grid;
    std::tuple<int, int, bool> m_gridKey{-1, -1, false}; // what m_grid was drawn for
};

} // namespace rs
