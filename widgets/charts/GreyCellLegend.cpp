// GreyCellLegend: see GreyCellLegend.h.
#include "charts/GreyCellLegend.h"

#include "charts/ChartPalette.h"

#include <QFontMetrics>
#include <qcustomplot.h>

namespace rs {

GreyCellLegend::GreyCellLegend(QCustomPlot* plot)
    : m_plot(plot)
    , m_swatch(plot->addGraph()) {
    m_swatch->setLineStyle(QCPGraph::lsNone);
    m_swatch->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssSquare, QColor(150, 150, 150), palette::nanColor(), 10));
    m_swatch->setSelectable(QCP::stNone);
}

void GreyCellLegend::setText(const QString& text) {
    m_text = text;
    fit();
}

QString GreyCellLegend::shownText() const {
    return m_swatch->name();
}

void GreyCellLegend::setShown(bool shown) {
    if (shown == isShown())
        return;
    if (shown)
        m_swatch->addToLegend();
    else
        m_swatch->removeFromLegend();
    fit();
}

bool GreyCellLegend::isShown() const {
    return m_plot->legend->hasItemWithPlottable(m_swatch);
}

void GreyCellLegend::fit() {
    const QCPLegend* legend = m_plot->legend;
    const QFontMetrics fm(legend->font());
    // The viewport, not the widget: an export lays the plot out at its own size first.
    const int room = m_plot->viewport().width() - legend->margins().left() - legend->margins().right() -
                     legend->iconSize().width() - legend->iconTextPadding() - 16;
    m_swatch->setName(fm.elidedText(m_text, Qt::ElideRight, std::max(room, 40)));
}

QString GreyCellLegend::toolTipAt(const QPointF& pos) const {
    QCPPlottableLegendItem* item = m_plot->legend->itemWithPlottable(m_swatch);
    return item && item->visible() && m_plot->legend->visible() && item->outerRect().contains(pos.toPoint())
               ? m_text
               : QString();
}

} // namespace rs
