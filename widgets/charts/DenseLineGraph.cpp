// Envelope-filled lines for dense series (see DenseLineGraph.h).
#include "charts/DenseLineGraph.h"

#include <cmath>
#include <qcustomplot.h>

namespace rs {
namespace {

class DenseLineGraph : public QCPGraph {
public:
    using QCPGraph::QCPGraph;

protected:
    void drawLinePlot(QCPPainter* painter, const QVector<QPointF>& lines) const override {
        if (lines.size() < 2 || std::abs(lines.back().x() - lines.front().x()) >= double(lines.size()))
            return QCPGraph::drawLinePlot(painter, lines); // at most a point per pixel: a plain line
        if (painter->pen().style() == Qt::NoPen || painter->pen().color().alpha() == 0)
            return;
        const QVector<QRectF> columns = envelope(lines, std::max(0.5, painter->pen().widthF() / 2));
        const QColor color = painter->pen().color(); // the graph's pen, as QCPGraph::draw set it
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing, false); // pixel-aligned rectangles need none
        painter->setPen(Qt::NoPen);
        painter->setBrush(color);
        painter->drawRects(columns);
        painter->restore();
    }

    // One rectangle per pixel column from the highest to the lowest point the line reaches in it, grown by
    // half the pen width. A column takes in the line from the previous point, and reaches back over columns
    // without points of their own. NaN points are gaps.
    static QVector<QRectF> envelope(const QVector<QPointF>& lines, double half) {
        QVector<QRectF> columns;
        double left = 0, column = std::nan(""), top = 0, bottom = 0, lastY = std::nan("");
        auto flush = [&] {
            if (!std::isnan(column))
                columns << QRectF(QPointF(left, std::floor(top - half)),
                                  QPointF(column + 1, std::ceil(bottom + half)));
        };
        for (const QPointF& p : lines) {
            if (qIsNaN(p.x()) || qIsNaN(p.y())) {
                flush();
                column = lastY = std::nan("");
                continue;
            }
            const double x = std::floor(p.x());
            if (x != column) {
                const bool joined = !std::isnan(column) && x > column;
                flush();
                left = joined ? column + 1 : x;
                column = x;
                top = bottom = qIsNaN(lastY) ? p.y() : lastY;
            }
            top = std::min(top, p.y());
            bottom = std::max(bottom, p.y());
            lastY = p.y();
        }
        flush();
        return columns;
    }
};

} // namespace

QCPGraph* addDenseLineGraph(QCPAxis* keyAxis, QCPAxis* valueAxis) {
    return new DenseLineGraph(keyAxis, valueAxis); // registers itself with the axes' plot
}

} // namespace rs
