// Colors and gradients shared by the charts (see ChartPalette.h).
#include "charts/ChartPalette.h"

#include <array>
#include <qcustomplot.h>

namespace rs::palette {

// Magentas (hues 280-345) are kept for the event markers: no rank, at any rank count, uses them.
constexpr int kMarkerHueFrom = 280, kMarkerHueTo = 345;

QColor rankColor(int rank) {
    // Tableau 10 and six darker companions, distinct on white and in print; Tableau's pink and purple-pink
    // gave way to an olive and a periwinkle so the markers' hues stay free.
    static const std::array<QRgb, 16> colors = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b,
                                                0x8c6d31, 0x7f7f7f, 0xbcbd22, 0x17becf, 0x393b79, 0xad494a,
                                                0x637939, 0xe7ba52, 0x6b6ecf, 0x3182bd};
    if (rank < 0)
        return QColor(Qt::black);
    if (rank < int(colors.size()))
        return QColor(colors[size_t(rank)]);
    // Golden-angle hues over the circle without the markers' band.
    constexpr int span = 360 - (kMarkerHueTo - kMarkerHueFrom);
    int hue = int(rank * 137.508) % span;
    if (hue >= kMarkerHueFrom)
        hue += kMarkerHueTo - kMarkerHueFrom;
    return QColor::fromHsv(hue, 200, 190);
}

QColor meanColor() {
    return QColor(20, 20, 20);
}
QColor accuracyColor() {
    return QColor(150, 150, 150); // gray: context on the second axis, never mistaken for a rank's line
}
QColor markerColor() {
    return QColor(190, 0, 190); // magenta (hue 300): inside the band no rank colour uses
}
QColor mismatchMarkerColor() {
    return QColor(215, 0, 120); // crimson magenta (hue 327), solid and wider than the fluctuation markers
}
QColor cursorColor() {
    return QColor(0, 80, 240); // blue: stands out on the red and amber overflow cells and on rank lines
}
QColor nanColor() {
    return QColor(225, 225, 225);
}

QColor overflowCategoryColor(int category) {
    switch (category) {
    case 1:
        return QColor(255, 170, 0); // overflow: amber
    case 2:
        return QColor(214, 39, 40); // skipped update: red
    case 3:
        return QColor(90, 0, 120); // non-finite loss: dark purple
    default:
        return QColor(232, 245, 233); // clean: pale green
    }
}

QCPColorGradient overflowGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    for (int c = 0; c < 4; ++c)
        g.setColorStopAt(c / 3.0, overflowCategoryColor(c));
    g.setLevelCount(4);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(nanColor());
    return g;
}

QCPColorGradient sequentialGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(255, 255, 255));
    g.setColorStopAt(0.35, QColor(253, 187, 132));
    g.setColorStopAt(0.7, QColor(239, 101, 72));
    g.setColorStopAt(1.0, QColor(153, 0, 0));
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(nanColor());
    return g;
}

QCPColorGradient divergenceGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    const auto at = [](double log10Excess) { return (log10Excess + 3.0) / 9.5; };
    g.setColorStopAt(at(-3.0), QColor(255, 255, 255));
    g.setColorStopAt(at(0.0), QColor(199, 233, 192)); // up to the tolerance: pale green, apart from NaN grey
    g.setColorStopAt(at(0.01), QColor(254, 224, 139));
    g.setColorStopAt(at(3.0), QColor(244, 109, 67));
    g.setColorStopAt(at(6.0), QColor(165, 0, 38));
    g.setColorStopAt(at(6.5), QColor(40, 0, 10)); // bits differ
    g.setLevelCount(350);
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(nanColor());
    return g;
}

QCPColorGradient divergingGradient() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(5, 48, 97));
    g.setColorStopAt(0.25, QColor(67, 147, 195));
    g.setColorStopAt(0.5, QColor(247, 247, 247));
    g.setColorStopAt(0.75, QColor(214, 96, 77));
    g.setColorStopAt(1.0, QColor(103, 0, 31));
    g.setNanHandling(QCPColorGradient::nhNanColor);
    g.setNanColor(nanColor());
    return g;
}

QColor textColorOn(const QColor& background) {
    const double luma = 0.299 * background.redF() + 0.587 * background.greenF() + 0.114 * background.blueF();
    return luma < 0.55 ? QColor(Qt::white) : QColor(Qt::black);
}

} // namespace rs::palette
