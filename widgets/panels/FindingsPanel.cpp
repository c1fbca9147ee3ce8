// FindingsPanel: see FindingsPanel.h.
#include "panels/FindingsPanel.h"

#include "diagnose/Advice.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/FindingsModel.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <cmath>

namespace rs {

FindingsPanel::FindingsPanel(RunModel* model, StepCursor* cursor, QWidget* parent)
    : QWidget(parent)
    , m_model(model)
    , m_cursor(cursor)
    , m_runner(new DiagnosisRunner(model, this))
    , m_findings(new FindingsModel(this))
    , m_view(new QTableView)
    , m_detail(new QTextBrowser)
    , m_status(new QLabel)
    , m_notRun(new QLabel)
    , m_advice(new QLabel) {
    m_advice->setWordWrap(true);
    m_advice->setTextFormat(Qt::PlainText);
    m_advice->setToolTip(tr("Settings of this run that make such jobs fragile or their diagnosis weaker. "
                            "Advice is read from the configuration; findings above rest on what the training "
                            "did."));
    m_advice->hide();
    m_notRun->setWordWrap(true);
    m_notRun->setTextFormat(Qt::PlainText);
    m_notRun->setToolTip(tr("This file's source did not record what these checks read (or the run lacks it), "
                            "so the causes they name were not looked for."));
    m_notRun->hide();
    m_view->setModel(m_findings);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setWordWrap(false);
    m_view->setToolTip(tr("Likely causes of cross-rank disagreement, most certain first. Click one to go to "
                          "its first step."));
    m_detail->setOpenLinks(false);
    m_detail->setPlaceholderText(tr("Select a finding to read its evidence and the fix."));

    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(m_view);
    split->addWidget(m_detail);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addWidget(m_status);
    layout->addWidget(split, 1);
    layout->addWidget(m_notRun); // below the findings: what was found comes first
    layout->addWidget(m_advice);

    // After the runner's own reset (connected first), which reports the emptied findings.
    connect(model, &RunModel::runReset, this, [this] { m_diagnosedOnce = false; });
    connect(m_runner, &DiagnosisRunner::findingsChanged, this, [this] {
        m_progress = -1;
        m_findings->setFindings(m_runner->findings());
        const bool opened = !m_diagnosedOnce && m_model->isComplete() && m_cursor->following();
        m_diagnosedOnce = true;
        if (m_findings->rowCount() > 0) {
            m_view->selectRow(0);
            if (opened)
                activate(0);
            else
                showDetail(0);
        } else {
            m_detail->clear();
        }
        update();
    });
    connect(m_runner, &DiagnosisRunner::progress, this, [this](int p) {
        m_progress = p;
        update();
    });
    connect(m_runner, &DiagnosisRunner::runningChanged, this, &FindingsPanel::update);
    connect(m_view, &QTableView::clicked, this, [this](const QModelIndex& i) { activate(i.row()); });
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& i) { activate(i.row()); });
    update();
}

QString FindingsPanel::statusText() const {
    return m_status->text();
}

QString FindingsPanel::adviceText() const {
    return m_advice->isHidden() ? QString() : m_advice->text();
}

QString FindingsPanel::notRunText() const {
    return m_notRun->isHidden() ? QString() : m_notRun->text();
}

QString FindingsPanel::detailText() const {
    return m_detail->toPlainText();
}

void FindingsPanel::update() {
    const int n = m_findings->rowCount();
    QString text;
    if (!m_model->hasRun())
        text = tr("No run.");
    else if (!m_runner->error().isEmpty())
        text = tr("Diagnosis failed: %1").arg(m_runner->error());
    else if (m_runner->isRunning() && !m_runner->hasResult())
        text = m_progress >= 0 ? tr("Diagnosing… %1 %").arg(m_progress) : tr("Diagnosing…");
    else if (!m_runner->hasResult())
        text = tr("Waiting for the run to load.");
    else if (n == 0)
        text = m_model->isLive() ? tr("No findings so far: the ranks agree.")
               : !m_runner->checksNotRun().empty()
                   ? tr("No findings in what this file records: the ranks agree.")
                   : tr("No findings: the ranks agree and nothing points to a "
                        "known cause.");
    else
        text = tr("%n finding(s), most certain first.", nullptr, n);
    m_status->setText(text);

    QStringList lines;
    if (m_model->hasRun() && m_runner->hasResult())
        for (const CheckNotRun& c : m_runner->checksNotRun())
            lines << QStringLiteral("• ") + QString::fromStdString(checkNotRunLine(c));
    m_notRun->setText(lines.isEmpty() ? QString()
                                      : tr("Could not run on this file:") + "\n" + lines.join("\n"));
    m_notRun->setVisible(!lines.isEmpty());

    QStringList advice;
    if (m_model->hasRun())
        for (const Advice& a : configAdvice(m_model->meta()))
            advice << QStringLiteral("• ") + QString::fromStdString(adviceLine(a));
    m_advice->setText(advice.isEmpty()
                          ? QString()
                          : tr("Advice (the configuration, not findings):") + "\n" + advice.join("\n"));
    m_advice->setVisible(!advice.isEmpty());
}

void FindingsPanel::showDetail(int row) {
    const Finding* f = m_findings->findingAt(row);
    if (!f) {
        m_detail->clear();
        return;
    }
    const QString step = f->firstStep >= 0 ? QString::number(f->firstStep) : tr("—");
    m_detail->setHtml(tr("<h3>%1 <small>(%2, %3 %)</small></h3>"
                         "<p><b>First step:</b> %4 &nbsp; <b>Ranks:</b> %5 &nbsp; <b>Parameters:</b> %6</p>"
                         "<p><b>Evidence:</b> %7</p><p><b>Fix:</b> %8</p>")
                          .arg(QString::fromStdString(f->cause).toHtmlEscaped(),
                               QString::fromStdString(f->dimension).toHtmlEscaped())
                          .arg(int(std::lround(f->confidence * 100)))
                          .arg(step, FindingsModel::ranksText(*f).toHtmlEscaped(),
                               FindingsModel::paramsText(*f).toHtmlEscaped(),
                               QString::fromStdString(f->evidence).toHtmlEscaped(),
                               QString::fromStdString(f->fix).toHtmlEscaped()));
}

void FindingsPanel::activate(int row) {
    const Finding* f = m_findings->findingAt(row);
    if (!f)
        return;
    showDetail(row);
    if (f->firstStep >= 0)
        m_cursor->setStep(f->firstStep);
    emit findingActivated(*f);
}

} // namespace rs
