// A line edit for a file path that stays readable in a narrow form: while it is not being edited, a path
// wider than the field is shown as its file name and the folders above it that fit, after an ellipsis
// ("…/runs/quick-20250101-093000.h5"); the tooltip gives the full path and what the field is for. Editing
// shows the text itself, as a QLineEdit does.
#pragma once

#include <QLineEdit>

class QFontMetrics;

namespace rs {

class PathEdit : public QLineEdit {
    Q_OBJECT
public:
    explicit PathEdit(QWidget* parent = nullptr);

    void setExplanation(const QString& text); // the tooltip's second part, below the full path
    QString shownText() const;                // what the field shows now

    // path as it fits width pixels: whole, else "…/" and the last folders and file name that fit, else (a
    // file name wider than width alone) elided in the middle.
    static QString elidePath(const QString& path, const QFontMetrics& metrics, int width);

protected:
    void paintEvent(QPaintEvent* event) override;
    void focusInEvent(QFocusEvent* event) override;
    void focusOutEvent(QFocusEvent* event) override;

private:
    QRect textRect() const;
    void updateToolTip();

    QString m_explanation;
};

} // namespace rs
