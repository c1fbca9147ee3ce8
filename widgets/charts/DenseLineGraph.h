// A QCPGraph for long, noisy series. Min/max decimation leaves up to two points per pixel, and a noisy loss
// then becomes a full-height zigzag: QPainter strokes that with an antialiased pen (exports: always, since
// toPainter turns cosmetic pens off) by building one huge self-overlapping outline, seconds per frame for a
// 3 px line over 3000 points. Where there is more than a point per pixel this graph fills the min..max
// envelope of each pixel column instead (a pixel-wide rectangle per column, what the zigzag looks like
// anyway, drawn in milliseconds); sparse data keeps the ordinary line.
#pragma once

class QCPAxis;
class QCPGraph;

namespace rs {

// Adds such a graph to the axes' plot (like QCustomPlot::addGraph).
QCPGraph* addDenseLineGraph(QCPAxis* keyAxis, QCPAxis* valueAxis);

} // namespace rs
