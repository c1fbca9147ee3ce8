// Colour-scale titles broken to fit their bar (see ColorScaleLabel.h).
#include "charts/ColorScaleLabel.h"

#include <QFontMetrics>
#include <QStringList>
#include <qcustomplot.h>

namespace rs {
namespace {

int barLength(const QCPColorScale* scale) {
    const QRect r = scale->axis()->axisRect()->rect();
    return scale->type() == QCPAxis::atLeft || scale->type() == QCPAxis::atRight ? r.height() : r.width();
}

} // namespace

QString ColorScaleLabel::breakLines(const QString& text, const QFont& font, int length, int maxLines,
                                    bool* shortened) {
    const QFontMetrics fm(font);
    // A '\n' in the text marks where it breaks best ("norm / median\n(log2 scale)"): there first, when the
    // whole does not fit one line.
    const QString oneLine = QString(text).replace(QLatin1Char('\n'), QLatin1Char(' '));
    if (fm.horizontalAdvance(oneLine) <= length || !text.contains(QLatin1Char('\n'))) {
        if (text.contains(QLatin1Char('\n')))
            return breakLines(oneLine, font, length, maxLines, shortened);
    } else {
        const qsizetype at = text.indexOf(QLatin1Char('\n'));
        bool cutHead = false, cutTail = false;
        const QString head = breakLines(text.left(at), font, length, 1, &cutHead);
        const QString tail = breakLines(text.mid(at + 1), font, length, std::max(1, maxLines - 1), &cutTail);
        if (shortened)
            *shortened = cutHead || cutTail;
        return head + QLatin1Char('\n') + tail;
    }
    const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    QStringList lines;
    QString line;
    int used = 0;
    bool cut = false;
    auto elide = [&](const QString& l) {
        QString e = fm.elidedText(l, Qt::ElideRight, std::max(length, 1));
        cut = cut || e != l;
        return e;
    };
    for (; used < words.size(); ++used) {
        const QString longer = line.isEmpty() ? words[used] : line + QLatin1Char(' ') + words[used];
        if (line.isEmpty() || fm.horizontalAdvance(longer) <= length) {
            line = longer;
            continue;
        }
        if (lines.size() + 1 == maxLines)
            break;            // the last line takes the rest, elided below
        lines << elide(line); // a word wider than the bar loses its end
        line = words[used];
    }
    // The last line: the words that did not fit, shortened with an ellipsis to the length.
    QString rest = line;
    for (int i = used; i < words.size(); ++i)
        rest += QLatin1Char(' ') + words[i];
    lines << elide(rest);
    if (shortened)
        *shortened = cut;
    return lines.join(QLatin1Char('\n'));
}

void ColorScaleLabel::fit(QCPColorScale* scale) {
    m_length = barLength(scale);
    // Before the first layout the bar has no length: the full title, fitted once there is one.
    const QString label =
        m_length > 0 ? breakLines(m_text, scale->axis()->labelFont(), m_length, kMaxLines, &m_shortened)
                     : m_text;
    if (m_length <= 0)
        m_shortened = false;
    scale->axis()->setLabel(label);
}

bool ColorScaleLabel::needsFit(const QCPColorScale* scale) const {
    return std::abs(barLength(scale) - m_length) > 2;
}

} // namespace rs
