// File dialogs sized to show their columns (see FileDialogs.h).
#include "panels/FileDialogs.h"

#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QScreen>
#include <QSettings>
#include <QSplitter>
#include <QTimer>
#include <QTreeView>
#include <algorithm>

namespace rs::filedialogs {
namespace {

const QString kSizeKey = QStringLiteral("fileDialogSize");

QSize availableSize(const QWidget* widget) {
    const QScreen* screen = widget && widget->screen() ? widget->screen() : QGuiApplication::primaryScreen();
    return screen ? screen->availableGeometry().size() : QSize(1280, 800);
}

// Qt sizes the columns for ~26 characters of name and cuts the type ("HDF...ent") and the date
// ("5 Dec ...:36:23"), and gives the places sidebar ~80 px ("Com..."). The sidebar gets room for its
// entries, size, type and date what their contents need, and the name the rest.
void fitColumns(QFileDialog* dialog) {
    auto* tree = dialog->findChild<QTreeView*>(QStringLiteral("treeView"));
    if (!tree)
        return; // a native dialog: its own layout
    QHeaderView* header = tree->header();
    int others = 0;
    for (int i = 1; i < header->count(); ++i) {
        if (header->isSectionHidden(i))
            continue;
        header->resizeSection(i, std::max({header->sectionSize(i),
                                           static_cast<QAbstractItemView*>(tree)->sizeHintForColumn(i) + 8,
                                           header->sectionSizeHint(i)}));
        others += header->sectionSize(i);
    }
    header->resizeSection(0, std::max(160, tree->viewport()->width() - others - 2)); // no scroll bar
}

void fitSidebar(QFileDialog* dialog) {
    auto* split = dialog->findChild<QSplitter*>(QStringLiteral("splitter"));
    if (!split || split->count() != 2)
        return;
    const int side = std::min(180, split->width() / 5);
    if (split->sizes().constFirst() < side)
        split->setSizes({side, split->width() - side});
}

} // namespace

QSize preferredSize(const QSize& available) {
    // The sidebar (~170 px), the name (~320), size, type and date (~330 together), frames and buttons.
    const QSize wanted(940, 580);
    return wanted.boundedTo(QSize(available.width() * 9 / 10, available.height() * 9 / 10));
}

void prepare(QFileDialog& dialog) {
    dialog.setViewMode(QFileDialog::Detail);
    const QSize available = availableSize(dialog.parentWidget());
    QSize size = preferredSize(available);
    // The size the user left the last dialog at, when it still fits this screen.
    if (const QSize last = QSettings().value(kSizeKey).toSize();
        last.isValid() && last.width() <= available.width() && last.height() <= available.height())
        size = last.expandedTo(QSize(480, 320));
    dialog.resize(size);
    // Once the dialog is laid out: the sidebar, then (when the view has taken its new width) the columns.
    QTimer::singleShot(0, &dialog, [d = &dialog] {
        fitSidebar(d);
        QTimer::singleShot(0, d, [d] { fitColumns(d); });
    });
}

bool exec(QFileDialog& dialog) {
    prepare(dialog);
    const bool accepted = dialog.exec() == QDialog::Accepted && !dialog.selectedFiles().isEmpty();
    QSettings().setValue(kSizeKey, dialog.size());
    return accepted;
}

QString openFile(QWidget* parent, const QString& title, const QString& dir, const QString& filter) {
    QFileDialog dialog(parent, title, dir, filter);
    dialog.setAcceptMode(QFileDialog::AcceptOpen);
    dialog.setFileMode(QFileDialog::ExistingFile);
    return exec(dialog) ? dialog.selectedFiles().constFirst() : QString();
}

QString saveFile(QWidget* parent, const QString& title, const QString& suggestedPath, const QString& filter,
                 QString* selectedFilter, QFileDialog::Options options) {
    QFileDialog dialog(parent, title, QFileInfo(suggestedPath).absolutePath(), filter);
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.setFileMode(QFileDialog::AnyFile);
    dialog.setOptions(options);
    if (selectedFilter && !selectedFilter->isEmpty())
        dialog.selectNameFilter(*selectedFilter);
    dialog.selectFile(suggestedPath);
    if (!exec(dialog))
        return {};
    if (selectedFilter)
        *selectedFilter = dialog.selectedNameFilter();
    return dialog.selectedFiles().constFirst();
}

QString existingDirectory(QWidget* parent, const QString& title, const QString& dir) {
    QFileDialog dialog(parent, title, dir);
    dialog.setFileMode(QFileDialog::Directory);
    dialog.setOption(QFileDialog::ShowDirsOnly);
    return exec(dialog) ? dialog.selectedFiles().constFirst() : QString();
}

QString exportStartDir(const QString& runPath, const QString& lastDir, const QString& lastDirRun) {
    const bool lastExists = !lastDir.isEmpty() && QFileInfo(lastDir).isDir();
    // The same run exported again: where its first export went (the user chose that folder for it).
    if (lastExists && !runPath.isEmpty() && lastDirRun == runPath)
        return lastDir;
    // A new run: beside it, where a user looks for what belongs to it, unless that folder is read-only (an
    // example installed under /usr/share).
    if (!runPath.isEmpty()) {
        const QFileInfo runDir(QFileInfo(runPath).absolutePath());
        if (runDir.isDir() && runDir.isWritable())
            return runDir.absoluteFilePath();
    }
    return lastExists ? lastDir : QDir::homePath();
}

QString exportStartDir(const QString& key, const QString& runPath) {
    const QSettings s;
    return exportStartDir(runPath, s.value(key).toString(), s.value(key + QStringLiteral("Run")).toString());
}

void rememberExport(const QString& key, const QString& runPath, const QString& chosenDir) {
    QSettings s;
    s.setValue(key, chosenDir);
    s.setValue(key + QStringLiteral("Run"), runPath);
}

} // namespace rs::filedialogs
