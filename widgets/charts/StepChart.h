// Base of the charts whose x axis is the training step (loss, overflow timeline): a vertical cursor line at
// the shared StepCursor's step, a left click that moves the cursor to the nearest step, and horizontal-only
// pan and zoom linked through the cursor's range, so every step chart shows the same steps. While the cursor
// follows a live run, the charts show the whole run.
#pragma once

#include "charts/ChartBase.h"

#include <cstdint>
#include <utility>
#include <vector>

class QCPAxis;
class QCPAxisRect;
class QCPItemLine;
class QCPRange;

namespace rs {

class StepChart : public ChartBase {
    Q_OBJECT
public:
    StepChart(RunModel* model, StepCursor* cursor, const QString& id, const QString& title,
              QWidget* parent = nullptr);

    // The model's step nearest to x (in steps); -1 when the run has no steps.
    int64_t nearestStep(double x) const;
    // The step axis the others follow (the bottom axis of the first step rect).
    QCPAxis* stepAxis() const;

protected:
    // What rebuild() draws: rows [begin, end) of the model cover the x range [lower, upper]; buckets is the
    // axis rect's width in pixels (the decimation target).
    struct View {
        int64_t begin = 0, end = 0;
        double lower = 0, upper = 1;
        int buckets = 0;
    };
    // Sets the x range (the whole run while following, else the cursor's range) and returns what to draw.
    View prepareView();
    // Makes rect's bottom axis a step axis: horizontal drag and zoom, a cursor line, linked range.
    void addStepRect(QCPAxisRect* rect);
    void clicked(const QPointF& pos) override;
    bool layoutChanged() const override;
    // Places an item line at x = step spanning the rect's full height, whatever its y scale.
    static void placeVerticalLine(QCPItemLine* line, QCPAxisRect* rect, double step);

private:
    void onAxisRange(const QCPRange& range);
    void onCursorRange(double lower, double upper);
    void onFollowingChanged(bool following);
    void applyRange(double lower, double upper);
    std::pair<double, double> wholeRun() const; // the x range that shows every step
    void placeCursorLines();

    std::vector<QCPAxisRect*> m_rects;
    std::vector<QCPItemLine*> m_cursorLines; // one per step rect
    bool m_settingRange = false;
    int m_buckets = 0; // the data area width the last rebuild decimated for             // our own setRange
                       // calls must not feed back into the cursor
};

} // namespace rs
