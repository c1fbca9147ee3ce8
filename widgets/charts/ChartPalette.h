// Colors and color scales shared by every chart, so a rank has the same color in each one and the heatmaps
// read alike: a qualitative palette that stays distinguishable up to 16 ranks, the overflow categories, and
// the gradients of the heatmaps (NaN cells, meaning "not recorded", are always light gray).
#pragma once

#include <QColor>

class QCPColorGradient;

namespace rs::palette {

QColor rankColor(int rank); // 16 distinct colors, then hue steps by the golden angle; never a marker's hue
QColor meanColor();         // the thick mean-over-ranks line
QColor accuracyColor();
QColor markerColor();         // event markers (loss fluctuation), dashed
QColor mismatchMarkerColor(); // rank-mismatch event markers, solid
QColor cursorColor();
QColor nanColor();

// Overflow timeline cells: 0 clean, 1 overflow, 2 skipped update, 3 non-finite loss.
QColor overflowCategoryColor(int category);
QCPColorGradient overflowGradient(); // 4 levels over the data range 0..3

// White at the low end to a strong red at the high end: counts and differences where 0 is healthy.
QCPColorGradient sequentialGradient();
// Blue below the middle, white at it, red above: cosines (-1..1) and log2 ratios around 0.
QCPColorGradient divergingGradient();
// A run against its reference, over log10(difference / tolerance) in [-3, 6.5]: white to pale grey within the
// tolerance (<= 0), then yellow through red past it, and near-black at the top (bits that should be equal
// differ).
QCPColorGradient divergenceGradient();

// Black or white, whichever reads better on the background.
QColor textColorOn(const QColor& background);

} // namespace rs::palette
