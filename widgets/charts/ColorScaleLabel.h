// A heatmap colour scale's title ("parameters whose synced gradient differs") fitted to the bar beside the
// map: QCustomPlot draws it on one line centred on the bar, so a title longer than a short bar (a heatmap in
// a 1280x800 window) ran off both ends and was cut by the caption above and the legend below. It is broken
// into lines that fit the bar's length, at most kMaxLines, the last shortened with an ellipsis if need be;
// the full title stays available for the tooltip.
#pragma once

#include <QString>

class QCPColorScale;
class QFont;

namespace rs {

class ColorScaleLabel {
public:
    static constexpr int kMaxLines = 3;

    void setText(const QString& text) { m_text = text; }
    QString text() const { return m_text; }
    // Sets scale's axis label to the text broken to fit its current length (the bar's height for a vertical
    // scale); remembers that length for needsFit().
    void fit(QCPColorScale* scale);
    bool needsFit(const QCPColorScale* scale) const; // the bar's length changed since fit()
    bool shortened() const { return m_shortened; }   // the label lost words to the ellipsis

    // The lines of `text` in `font`, each at most `length` pixels wide, at most maxLines of them; a '\n' in
    // the text is where it breaks first when it does not fit one line.
    static QString breakLines(const QString& text, const QFont& font, int length, int maxLines,
                              bool* shortened = nullptr);

private:
    QString m_text;
    int m_length = -1;
    bool m_shortened = false;
};

} // namespace rs
