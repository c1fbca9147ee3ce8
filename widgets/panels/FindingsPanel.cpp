// FindingsPanel: see FindingsPanel.h.
#include "panels/FindingsPanel.h"

#include "compare/ComparisonText.h"
#include "compare/RunComparison.h"
#include "diagnose/Advice.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/FindingsModel.h"
#include "store/RunSource.h"

#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QTextBrowser>
#include <QTextDocument>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <memory>

namespace rs {

namespace {
constexpr int kDetailLines = 6; // the evidence box's least height, in lines of text
constexpr int kNotesLines = 1;  // the notes' least height (they scroll past it)
constexpr int kRanksChars = 16; // the Ranks column's widest (64 ranks would take the whole table)
} // namespace

FindingsPanel::FindingsPanel(RunModel* model, DiagnosisRunner* runner, StepCursor* cursor, QWidget* parent)
    : QWidget(parent)
    , m_model(model)
    , m_cursor(cursor)
    , m_runner(runner)
    , m_findings(new FindingsModel(this))
    , m_view(new QTableView)
    , m_detail(new QTextBrowser)
    , m_status(new QLabel)
    , m_notRun(new QLabel)
    , m_advice(new QLabel)
    , m_notes(new QScrollArea) {
    setupTable();
    setupDetail();
    setupNotes();
    m_split = new QSplitter(Qt::Vertical);
    m_split->setObjectName(QStringLiteral("findingsSplitter"));
    m_split->setChildrenCollapsible(false); // a pane dragged to nothing looks like a missing feature
    m_split->addWidget(m_view);
    m_split->addWidget(m_detail);
    m_split->addWidget(m_notes); // below the findings: what was found comes first
    // Until the user drags a pane, the panes follow the dock's height (the window lays its docks out after
    // the first findings may have arrived): otherwise a shrunk dock cuts the fix off.
    m_split->installEventFilter(this);
    connect(m_split, &QSplitter::splitterMoved, this, [this] { m_userSized = true; });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addWidget(m_status);
    // The line about the reference is a link: to the step where the run parts from it, on its page.
    m_status->setTextFormat(Qt::RichText);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextBrowserInteraction);
    connect(m_status, &QLabel::linkActivated, this, [this](const QString& link) {
        if (link != QLatin1String("reference:") || !m_runner->reference())
            return;
        if (const auto& first = m_runner->reference()->first)
            m_cursor->setStep(first->step);
        emit referenceActivated();
    });
    layout->addWidget(m_split, 1);
    fitPanes();

    connect(m_findings, &QAbstractItemModel::modelReset, this, [this] {
        fitColumns();
        if (m_findings->rowCount() != m_paneRows) // a live run's diagnosis repeats: keep a dragged height
            fitPanes();
    });
    // After the runner's own reset (connected first), which reports the emptied findings.
    connect(model, &RunModel::runReset, this, [this] { m_diagnosedOnce = false; });
    connect(m_runner, &DiagnosisRunner::findingsChanged, this, [this] {
        m_progress = -1;
        const int rowsBefore = m_paneRows;
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
        if (m_findings->rowCount() != rowsBefore) // the evidence just shown decides the panes' heights
            fitPanes();
    });
    connect(m_runner, &DiagnosisRunner::progress, this, [this](int p) {
        m_progress = p;
        update();
    });
    connect(m_runner, &DiagnosisRunner::runningChanged, this, &FindingsPanel::update);
    connect(m_runner, &DiagnosisRunner::evidenceChanged, this, &FindingsPanel::update);
    connect(m_view, &QTableView::clicked, this, [this](const QModelIndex& i) { activate(i.row()); });
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& i) { activate(i.row()); });
    update();
}

void FindingsPanel::setupTable() {
    m_view->setModel(m_findings);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setHorizontalScrollMode(QAbstractItemView::ScrollPerPixel);
    m_view->verticalHeader()->hide();
    m_view->setWordWrap(false);
    m_view->setToolTip(tr("Likely causes of cross-rank disagreement, most certain first. Click one to go to "
                          "its first step."));
    // Short columns as wide as their longest text (a cause id cut to "loss-scale-no…" names nothing);
    // Parameters, a list of any length, takes the rest and is elided (its tooltip names every tensor).
    QHeaderView* header = m_view->horizontalHeader();
    for (int c : {FindingsModel::ConfidenceCol, FindingsModel::CauseCol, FindingsModel::DimensionCol,
                  FindingsModel::StepCol})
        header->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(FindingsModel::ParamsCol, QHeaderView::Stretch);
    m_view->setMinimumHeight(header->sizeHint().height() + m_view->verticalHeader()->defaultSectionSize() +
                             2 * m_view->frameWidth());
}

void FindingsPanel::setupDetail() {
    m_detail->setObjectName(QStringLiteral("detail"));
    m_detail->setOpenLinks(false);
    m_detail->setPlaceholderText(tr("Select a finding to read its evidence and the fix."));
    // Rich text's default paragraph margins (12 px) would take a line's height between every part.
    m_detail->document()->setDefaultStyleSheet(
        QStringLiteral("h3 { margin-top: 0; margin-bottom: 4px; } p { margin-top: 0; margin-bottom: 4px; }"));
    const int line = m_detail->fontMetrics().lineSpacing();
    const int chrome =
        2 * m_detail->frameWidth() + 2 * int(std::ceil(m_detail->document()->documentMargin()));
    m_detail->setMinimumHeight(kDetailLines * line + chrome); // the title, then evidence and fix to read
}

void FindingsPanel::setupNotes() {
    m_notRun->setObjectName(QStringLiteral("notRun"));
    m_advice->setObjectName(QStringLiteral("advice"));
    m_notes->setObjectName(QStringLiteral("notes"));
    for (QLabel* l : {m_notRun, m_advice}) {
        l->setWordWrap(true);
        l->setTextFormat(Qt::PlainText);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
        l->setAlignment(Qt::AlignLeft | Qt::AlignTop);
        l->hide();
    }
    m_advice->setToolTip(tr("Settings of this run that make such jobs fragile or their diagnosis weaker. "
                            "Advice is read from the configuration; findings above rest on what the training "
                            "did."));
    m_notRun->setToolTip(tr("This file's source did not record what these checks read (or the run lacks it), "
                            "so the causes they name were not looked for."));
    auto* notes = new QWidget;
    auto* layout = new QVBoxLayout(notes);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->addWidget(m_notRun);
    layout->addWidget(m_advice);
    layout->addStretch(1);
    m_notes->setWidget(notes);
    m_notes->setWidgetResizable(true);
    m_notes->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff); // lines wrap to the width instead
    m_notes->setFrameShape(QFrame::NoFrame);
    m_notes->setMinimumHeight(kNotesLines * m_notRun->fontMetrics().lineSpacing() + 2);
    m_notes->hide();
}

// No cause named. The ranks "agree" only when nothing in the run says otherwise: beside a GRADIENT_SYNC
// event the panel says that no known cause explains it yet.
QString FindingsPanel::noFindingsText() const {
    const auto& events = m_model->events();
    const auto it = std::find_if(events.begin(), events.end(), &DiagnosisRunner::isDisagreement);
    if (it != events.end())
        return tr("No known cause named yet for %1 at step %2 (see Events).")
            .arg(QString::fromStdString(it->code))
            .arg(it->step);
    // Ranks the source never recorded (a monitor watching some ranks) are not among those that agree.
    if (const auto missing = ranksNotRecorded(m_model->meta()); !missing.empty()) {
        if (int(missing.size()) >= m_model->worldSize())
            return tr("No findings: no rank's statistics were recorded, so none were compared.");
        return tr("No findings: the recorded ranks agree (%1 not recorded, not compared).")
            .arg(QString::fromStdString(ranksNotRecordedText(missing)));
    }
    if (m_model->isLive())
        return tr("No findings so far: the ranks agree.");
    if (!m_runner->checksNotRun().empty())
        return tr("No findings in what this file records: the ranks agree.");
    return tr("No findings: the ranks agree and nothing points to a known cause.");
}

bool FindingsPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_split && event->type() == QEvent::Resize && !m_userSized)
        fitPanes();
    return QWidget::eventFilter(watched, event);
}

QString FindingsPanel::statusText() const {
    QTextDocument doc;
    doc.setHtml(m_status->text());
    return doc.toPlainText();
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
    else if (m_runner->evidenceStep() >= 0) // evidence the last diagnosis has not read: never "agree"
        text = n == 0 ? tr("Diagnosing step %1…").arg(m_runner->evidenceStep())
                      : tr("%n finding(s), most certain first; diagnosing step %1…", nullptr, n)
                            .arg(m_runner->evidenceStep());
    else if (n == 0)
        text = noFindingsText();
    else
        text = tr("%n finding(s), most certain first.", nullptr, n);
    // Against a reference (File > Compare With Reference…): where the run parts from it, in one line that
    // takes the user to that page and step.
    text = text.toHtmlEscaped();
    if (m_model->hasRun() && m_runner->reference())
        text += QStringLiteral(" <a href=\"reference:\">%1</a>")
                    .arg(tr("This run %1.")
                             .arg(QString::fromStdString(comparisonLine(*m_runner->reference())))
                             .toHtmlEscaped());
    m_status->setText(text);

    QStringList lines;
    if (m_model->hasRun() && m_runner->hasResult())
        for (const CheckNotRun& c : m_runner->checksNotRun())
            lines << QStringLiteral("• ") + QString::fromStdString(checkNotRunLine(c));
    const QString notes = m_notRun->text() + m_advice->text();
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
    m_notes->setVisible(!lines.isEmpty() || !advice.isEmpty());
    if (m_notRun->text() + m_advice->text() != notes)
        fitPanes();
}

// The panes' heights, when what they hold changes (not on every update: a height the user dragged stays):
// the table as tall as its rows, up to a third; then the finding's evidence and fix as tall as their text,
// before the notes, which keep at least their least height and scroll (in a short dock the fix is what
// a user came for). Without a finding the notes take the rest. Given as weights, which the splitter also
// keeps while the panel is hidden (a tab behind another).
void FindingsPanel::fitPanes() {
    const int total = m_split->height() > 100 ? m_split->height() : 300;
    const int rows = m_view->horizontalHeader()->sizeHint().height() + 2 * m_view->frameWidth() +
                     m_findings->rowCount() * m_view->verticalHeader()->defaultSectionSize();
    const int table = std::max(m_view->minimumHeight(), std::min(rows, total / 3));
    const int width = std::max(m_split->width() - 12, 200);
    const int room = total - table;
    int notes = 0;
    if (!m_notes->isHidden()) {
        const int want = m_notes->widget()->heightForWidth(width) + 4;
        const int detailWant = m_findings->rowCount() > 0 ? detailHeight(width) : m_detail->minimumHeight();
        notes =
            std::clamp(room - detailWant, m_notes->minimumHeight(), std::max(want, m_notes->minimumHeight()));
        // Whole lines: a line cut in half at the pane's edge reads as text that is missing.
        const int line = m_notRun->fontMetrics().lineSpacing();
        notes = std::max(m_notes->minimumHeight(), (notes - 2) / line * line + 2);
    }
    const int detail = std::max(m_detail->minimumHeight(), room - notes);
    m_split->setSizes({table, detail, notes});
    m_paneRows = m_findings->rowCount();
}

int FindingsPanel::detailHeight(int width) const {
    // A copy laid out at the width: the browser's own document keeps wrapping to its viewport.
    const std::unique_ptr<QTextDocument> doc(m_detail->document()->clone());
    const int viewport = m_detail->viewport()->width();
    doc->setTextWidth(viewport > 100 ? viewport : width - 2 * m_detail->frameWidth());
    return int(std::ceil(doc->size().height())) + 2 * m_detail->frameWidth() + 2;
}

void FindingsPanel::fitColumns() {
    const int widest = m_view->fontMetrics().horizontalAdvance(QString(kRanksChars, QLatin1Char('0')));
    m_view->resizeColumnToContents(FindingsModel::RanksCol);
    if (m_view->columnWidth(FindingsModel::RanksCol) > widest)
        m_view->setColumnWidth(FindingsModel::RanksCol, widest); // elided; the tooltip lists them all
}

void FindingsPanel::showDetail(int row) {
    const Finding* f = m_findings->findingAt(row);
    if (!f) {
        m_detail->clear();
        return;
    }
    // The selected row above already shows the cause, confidence, step, ranks and the first parameters: the
    // pane keeps its lines for the evidence and the fix, and lists the parameters only where the row cut
    // them short (in a short dock every line counts).
    QString html = tr("<p><b>Evidence:</b> %1</p><p><b>Fix:</b> %2</p>")
                       .arg(QString::fromStdString(f->evidence).toHtmlEscaped(),
                            QString::fromStdString(f->fix).toHtmlEscaped());
    if (FindingsModel::paramsText(*f) != FindingsModel::allParamsText(*f))
        html += tr("<p><b>Parameters (%1):</b> %2</p>")
                    .arg(f->parameters.size())
                    .arg(FindingsModel::allParamsText(*f).toHtmlEscaped());
    m_detail->setHtml(html);
    if (detailHeight(std::max(m_split->width() - 12, 200)) > m_detail->height())
        fitPanes(); // the fix must not be cut off below the evidence
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
