// See RunSummaryView.h.
#include "panels/RunSummaryView.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace rs {

namespace {

QString sourceText(const std::string& source) {
    if (source == "ranksight-engine")
        return QObject::tr("RankSight's engine (emulated cards)");
    if (source == "pytorch-ddp")
        return QObject::tr("a PyTorch DDP job (ranksight.ddp recorder)");
    if (source == "msprobe")
        return QObject::tr("msprobe monitor output (imported)");
    return QString::fromStdString(source);
}

QString orUnknown(const std::string& s) {
    return s.empty() ? QObject::tr("not recorded") : QString::fromStdString(s);
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
    addRow(tr("Source"), sourceText(meta.source));
    addRow(tr("Model"), orUnknown(meta.model));
    addRow(tr("Cards"), QString::number(meta.worldSize), tr("Ranks (devices) in the run"));
    addRow(tr("Batch per card"),
           meta.batchPerRank > 0 ? QString::number(meta.batchPerRank) : tr("not recorded"));
    addRow(tr("Steps planned"),
           meta.plannedSteps > 0 ? QString::number(meta.plannedSteps) : tr("not recorded"));
    addRow(tr("Precision"), orUnknown(meta.precision), tr("amp_level"));
    addRow(tr("Loss scale"), orUnknown(meta.lossScale));
    addRow(tr("Data"), orUnknown(meta.data));
    addRow(tr("Seed"), QString::number(meta.seed));
    addRow(tr("Recorded"), orUnknown(meta.createdUtc));
}

QString RunSummaryView::fieldText(const QString& name) const {
    const auto* l = findChild<QLabel*>(name);
    return l ? l->text() : QString();
}

} // namespace rs
