// Driving the window's dialogs from a test (tst_mainwindow, tst_referencepage): answering a modal file
// dialog once it is up, typing into it, finding a menu action by its text.
#pragma once

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QLineEdit>
#include <QTimer>
#include <QWidget>
#include <QtTest>
#include <functional>

namespace rs::dialog_driving {

// Once a file dialog is up (the bug report's, inside its exec()), hands it to answer, which accepts or
// rejects it.
inline void answerReportDialog(const std::function<void(QFileDialog*)>& answer) {
    auto* poll = new QTimer;
    QObject::connect(poll, &QTimer::timeout, poll, [poll, answer] {
        auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
        if (!dialog || !dialog->isVisible())
            return;
        poll->stop();
        poll->deleteLater();
        answer(dialog);
    });
    poll->start(20);
}

// What a user types into the dialog's name field (a name, or a path).
inline void type(QFileDialog* dialog, const QString& text) {
    auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
    QVERIFY(name);
    name->setText(text);
}

inline QAction* actionNamed(QWidget& w, const QString& text) {
    for (QAction* a : w.findChildren<QAction*>())
        if (a->text() == text)
            return a;
    return nullptr;
}

} // namespace rs::dialog_driving
