// PathEdit: see PathEdit.h.
#include "panels/PathEdit.h"

#include <QDir>
#include <QFontMetrics>
#include <QPainter>
#include <QStyle>
#include <QStyleOptionFrame>

namespace rs {

PathEdit::PathEdit(QWidget* parent)
    : QLineEdit(parent) {
    connect(this, &QLineEdit::textChanged, this, &PathEdit::updateToolTip);
}

void PathEdit::setExplanation(const QString& text) {
    m_explanation = text;
    updateToolTip();
}

void PathEdit::updateToolTip() {
    const QString path = QDir::toNativeSeparators(text());
    setToolTip(path.isEmpty()            ? m_explanation
               : m_explanation.isEmpty() ? path
                                         : path + QStringLiteral("\n\n") + m_explanation);
}

QString PathEdit::elidePath(const QString& path, const QFontMetrics& metrics, int width) {
    if (metrics.horizontalAdvance(path) <= width)
        return path;
    // Whole folders from the end, as many as fit after an ellipsis: "…/runs/quick-20250101-093000.h5".
    const QString ellipsis(QChar(0x2026));
    QString best;
    for (qsizetype slash = path.lastIndexOf(QLatin1Char('/')); slash > 0;
         slash = path.lastIndexOf(QLatin1Char('/'), slash - 1)) {
        const QString candidate = ellipsis + path.mid(slash);
        if (metrics.horizontalAdvance(candidate) > width)
            break;
        best = candidate;
    }
    return best.isEmpty() ? metrics.elidedText(path, Qt::ElideMiddle, width) : best;
}

// Where QLineEdit draws its text: the style's contents rect, less the text margins and the 2 x 1 pixels
// QLineEdit keeps around its text.
QRect PathEdit::textRect() const {
    QStyleOptionFrame option;
    initStyleOption(&option);
    const QRect contents = style()->subElementRect(QStyle::SE_LineEditContents, &option, this);
    return contents.marginsRemoved(textMargins()).adjusted(2, 1, -2, -1);
}

QString PathEdit::shownText() const {
    if (hasFocus() || echoMode() != Normal)
        return text();
    return elidePath(text(), fontMetrics(), textRect().width());
}

void PathEdit::paintEvent(QPaintEvent* event) {
    const QString shown = shownText();
    if (shown == text()) {
        QLineEdit::paintEvent(event);
        return;
    }
    QPainter painter(this);
    QStyleOptionFrame option;
    initStyleOption(&option);
    style()->drawPrimitive(QStyle::PE_PanelLineEdit, &option, &painter, this);
    painter.setPen(option.palette.color(isEnabled() ? QPalette::Active : QPalette::Disabled, QPalette::Text));
    painter.drawText(textRect(), int(Qt::AlignLeft | Qt::AlignVCenter), shown);
}

// The elided and the editable text differ: show the right one as focus comes and goes.
void PathEdit::focusInEvent(QFocusEvent* event) {
    QLineEdit::focusInEvent(event);
    update();
}

void PathEdit::focusOutEvent(QFocusEvent* event) {
    QLineEdit::focusOutEvent(event);
    update();
}

} // namespace rs
