// Open and save dialogs that show what a user picks a file by: Qt's own dialog (the one that runs without a
// desktop's platform theme) opens at about 500 x 300 pixels in its list view, too small for the name, size,
// type and date columns; these open in the detail view at a size that shows them all (the size the user
// left it at last, within the screen). Exports start beside the open run rather than in $HOME.
#pragma once

#include <QFileDialog>
#include <QSize>
#include <QString>

namespace rs::filedialogs {

// The dialog's size on a screen whose available area is `available`: room for the sidebar and the four
// columns, at most 90% of the screen.
QSize preferredSize(const QSize& available);
// Detail view, preferredSize (or the size the user left the last dialog at), columns wide enough to read.
void prepare(QFileDialog& dialog);

// As QFileDialog's static functions, through prepare(). Empty when cancelled.
QString openFile(QWidget* parent, const QString& title, const QString& dir, const QString& filter);
QString saveFile(QWidget* parent, const QString& title, const QString& suggestedPath, const QString& filter,
                 QString* selectedFilter = nullptr, QFileDialog::Options options = {});
QString existingDirectory(QWidget* parent, const QString& title, const QString& dir);
// Runs a dialog the caller set up (labels, modes) through prepare(); remembers its size. True on accept.
bool exec(QFileDialog& dialog);

// Where an export dialog starts: the folder last exported to while this run was open; else the run's folder
// when it can be written to; else the last export folder; else home. lastDir / lastDirRun: what
// rememberExport stored for `key`.
QString exportStartDir(const QString& runPath, const QString& lastDir, const QString& lastDirRun);
QString exportStartDir(const QString& key, const QString& runPath); // from the settings under `key`
void rememberExport(const QString& key, const QString& runPath, const QString& chosenDir);

} // namespace rs::filedialogs
