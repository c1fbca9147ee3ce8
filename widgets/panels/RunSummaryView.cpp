// See RunSummaryView.h.
#include "panels/RunSummaryView.h"

#include "store/ColumnWords.h"
#include "store/RunSchema.h"
#include "store/RunSource.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace rs {

namespace {

QString notRecorded() {
    return QString::fromLatin1(kNotRecorded);
}

// An attribute's text, or "not recorded" when the source did not know it (or left it empty).
QString attr(const RunMeta& meta, const char* name, const std::string& text) {
    return attributeRecorded(meta, name) && !text.empty() ? QString::fromStdString(text) : notRecorded();
}

} // namespace

RunSummaryView::RunSummaryView(QWidget* parent)
    : QWidget(parent) {
    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("summaryTitle"));
    m_title->setWordWrap(true);
    auto* box = new QWidget(this);
    m_form = new QFormLayout(box);
    m_form->setContentsMargins(0, 0, 0, 0);
    auto* newRun = new QPushButton(tr("New Run"), this);
    newRun->setObjectName(QStringLiteral("newRun"));
    newRun->setToolTip(tr("Back to the run form to set up and start a new run (Ctrl+N); the open run stays "
                          "shown until Start"));
    connect(newRun, &QPushButton::clicked, this, &RunSummaryView::newRunRequested);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(newRun);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_title);
    layout->addWidget(box);
    layout->addLayout(buttons);
    layout->addStretch(1);
}

void RunSummaryView::addRow(const QString& label, const QString& value, const QString& tip) {
    auto* v = new QLabel(value);
    v->setObjectName(label);
    v->setWordWrap(true);
    v->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->setToolTip(tip);
    m_form->addRow(label + QLatin1Char(':'), v);
}

void RunSummaryView::showRun(const RunMeta& meta, const QString& path) {
    while (m_form->rowCount() > 0)
        m_form->removeRow(0);
    m_title->setText(tr("<b>%1</b><br>The settings this run was recorded with (read-only).")
                         .arg(QFileInfo(path).fileName().toHtmlEscaped()));
    m_title->setToolTip(path);
    namespace rsc = runschema;
    addRow(tr("Source"), QString::fromStdString(describeRun(meta)), QString::fromStdString(meta.source));
    addRow(tr("Model"), attr(meta, rsc::kAttrModel, meta.model));
    const QString noun = QString::fromStdString(rankNoun(meta));
    addRow(tr("Ranks"), QString::number(meta.worldSize), tr("Ranks in the run (one per %1)").arg(noun));
    addRow(tr("Batch per rank"), attr(meta, rsc::kAttrBatchPerRank,
                                      meta.batchPerRank > 0 ? std::to_string(meta.batchPerRank) : ""));
    addRow(tr("Steps planned"), meta.plannedSteps > 0 ? QString::number(meta.plannedSteps) : notRecorded());
    addRow(tr("Precision"), attr(meta, rsc::kAttrPrecision, meta.precision), tr("amp_level"));
    addRow(tr("Loss scale"), attr(meta, rsc::kAttrLossScale, meta.lossScale));
    addRow(tr("Data"), attr(meta, rsc::kAttrData, meta.data));
    addRow(tr("Seed"), attr(meta, rsc::kAttrSeed, std::to_string(meta.seed)));
    if (!meta.absent.empty()) {
        QStringList paths;
        for (const std::string& a : meta.absent)
            paths << QString::fromStdString(a);
        addRow(tr("Not recorded"), QString::fromStdString(columnWordsList(meta.absent)),
               tr("What this run's source could not record: every view shows \"not recorded\" there.\n"
                  "In the run file: %1")
                   .arg(paths.join(QStringLiteral(", "))));
    }
    if (!meta.unreadableWhy.empty())
        addRow(tr("Unreadable"), QString::fromStdString(meta.unreadableWhy),
               tr("Recorded, but its writer was killed while writing it and left it torn: every view shows "
                  "\"not recorded\" there.\nIn the run file: %1")
                   .arg(QString::fromStdString(columnWordsList(meta.unreadable))));
    if (const auto notes = importNotes(meta); !notes.empty()) {
        QStringList lines;
        for (const std::string& n : notes)
            lines << QStringLiteral("• ") + QString::fromStdString(n);
        addRow(tr("Import notes"), lines.join(QLatin1Char('\n')),
               tr("What the import noted about the files it read"));
    }
    addRow(tr("Recorded"), meta.createdUtc.empty() ? notRecorded() : QString::fromStdString(meta.createdUtc));
}

QString RunSummaryView::fieldText(const QString& name) const {
    const auto* l = findChild<QLabel*>(name);
    return l ? l->text() : QString();
}

} // namespace rs
