// CollectivesPanel: see CollectivesPanel.h.
#include "panels/CollectivesPanel.h"

#include "model/RunModel.h"
#include "view/CollectiveProgress.h"

#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

namespace rs {
namespace {

// Past this many ranks in a group, the ranks where most ranks are collapse into one row.
constexpr int kRanksShownWhole = 64;

int64_t commonSeq(const view::GroupProgress& g) {
    if (g.ranks.empty())
        return -1;
    std::map<int64_t, int> count;
    for (const view::RankPosition& p : g.ranks)
        ++count[p.lastSeq];
    return std::max_element(count.begin(), count.end(), [](auto& a, auto& b) { return a.second < b.second; })
        ->first;
}

} // namespace

CollectivesPanel::CollectivesPanel(RunModel* model, QWidget* parent)
    : QWidget(parent)
    , m_model(model) {
    m_headline = new QLabel;
    m_headline->setObjectName(QStringLiteral("collectivesHeadline"));
    m_headline->setWordWrap(true);
    m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_table = new QTableWidget(0, 7);
    m_table->setObjectName(QStringLiteral("collectivesTable"));
    m_table->setHorizontalHeaderLabels({tr("Rank"), tr("Group"), tr("Last collective"), tr("State"),
                                        tr("Completed up to"), tr("Step"), tr("Called at")});
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setToolTip(tr("Per rank, the last collective its flight recorder kept (#sequence number, "
                           "operation, sizes): ranks that stopped elsewhere than the others are marked"));
    m_traceback = new QPlainTextEdit;
    m_traceback->setObjectName(QStringLiteral("collectivesTraceback"));
    m_traceback->setReadOnly(true);
    m_traceback->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_traceback->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_traceback->setToolTip(
        tr("The selected rank's Python stacks when it dumped (torch_npu writes them beside "
           "each dump, <prefix><rank>_py_traceback)"));
    m_traceback->hide();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_headline);
    layout->addWidget(m_table, 2);
    layout->addWidget(m_traceback, 1);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &CollectivesPanel::selectionChanged);
    connect(m_model, &RunModel::runReset, this, &CollectivesPanel::rebuild);
    connect(m_model, &RunModel::opened, this, &CollectivesPanel::rebuild);
    connect(m_model, &RunModel::importsChanged, this, &CollectivesPanel::rebuild);
    rebuild();
}

QString CollectivesPanel::headline() const {
    return m_headline->text();
}

QString CollectivesPanel::tracebackText() const {
    return m_tracebacks.empty() ? QString() : m_traceback->toPlainText();
}

void CollectivesPanel::showTraceback(int rank) {
    if (m_tracebacks.empty()) {
        m_traceback->hide();
        m_traceback->clear();
        return;
    }
    m_tracebackRank = rank;
    const auto it = m_tracebacks.find(rank);
    m_traceback->setPlainText(
        it == m_tracebacks.end()
            ? tr("Rank %1: Python traceback not recorded (no _py_traceback file beside its dump).").arg(rank)
            : tr("Rank %1, Python traceback when it dumped:\n%2")
                  .arg(rank)
                  .arg(QString::fromStdString(it->second)));
    m_traceback->show();
}

void CollectivesPanel::selectionChanged() {
    const auto rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty())
        return;
    const QVariant rank = m_table->item(rows.front().row(), 0)->data(Qt::UserRole);
    if (rank.isValid())
        showTraceback(rank.toInt());
}

void CollectivesPanel::rebuild() {
    m_table->setRowCount(0);
    m_tracebacks.clear();
    showTraceback(-1);
    if (!m_model->hasRun()) {
        m_headline->setText(tr("No run open."));
        return;
    }
    if (m_model->collectives().empty()) {
        m_headline->setText(
            tr("Collectives: not recorded. This run holds no flight-recorder dumps; a PyTorch "
               "job that hung leaves one per rank (File > Import Flight Recorder Dumps…)."));
        return;
    }
    const view::CollectiveSetup setup = view::collectiveSetup(m_model->meta());
    const view::CollectiveReport report = view::analyseCollectives(m_model->collectives(), setup);
    m_tracebacks = setup.tracebacks;
    std::vector<int> odd;
    std::string oddGroup;
    QString head;
    if (report.first) {
        odd = report.first->odd;
        oddGroup = report.first->group;
        head = tr("First disagreement: %1").arg(QString::fromStdString(report.first->text()));
    } else if (!report.allWaiting.empty())
        head = QString::fromStdString(report.allWaiting);
    else
        head = tr("The ranks agree on every collective they dumped.");
    if (!m_tracebacks.empty()) {
        QStringList ranks;
        for (const auto& [rank, text] : m_tracebacks)
            ranks << QString::number(rank);
        head +=
            tr(" Python tracebacks of rank%1 %2: select a rank to see its own.")
                .arg(ranks.size() > 1 ? QStringLiteral("s") : QString(), ranks.join(QStringLiteral(", ")));
    }
    m_headline->setText(head);

    const QColor oddColor(255, 205, 205);
    auto addRow = [&](const QString& rank, const view::GroupProgress& g, const view::RankPosition* p,
                      bool marked) {
        const int row = m_table->rowCount();
        m_table->insertRow(row);
        QStringList cells{rank, QString::fromStdString(g.group.label())};
        if (!p || !p->dumped)
            cells << tr("not recorded (no dump)") << QString() << QString() << QString() << QString();
        else if (p->lastSeq < 0)
            cells << tr("none in this group") << QString() << QString() << QString() << QString();
        else
            cells << QStringLiteral("#%1 %2").arg(p->lastSeq).arg(QString::fromStdString(p->lastOp))
                  << QString::fromLatin1(view::collectiveStateName(p->lastState))
                  << (p->completedSeq >= 0 ? QStringLiteral("#%1").arg(p->completedSeq) : tr("none"))
                  << (view::stepText(p->lastStep).empty()
                          ? tr("not recorded")
                          : QString::fromStdString(view::stepText(p->lastStep)))
                  << QString::fromStdString(p->lastFrame);
        for (int c = 0; c < cells.size(); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if (marked)
                item->setBackground(oddColor);
            if (c == 0 && p && rank == QString::number(p->rank))
                item->setData(Qt::UserRole, p->rank);
            m_table->setItem(row, c, item);
        }
    };
    for (const view::GroupProgress& g : report.groups) {
        const bool collapse = int(g.ranks.size()) > kRanksShownWhole;
        const int64_t common = commonSeq(g);
        int collapsed = 0;
        for (const view::RankPosition& p : g.ranks) {
            const bool marked =
                g.group.label() == oddGroup && std::find(odd.begin(), odd.end(), p.rank) != odd.end();
            if (collapse && !marked && p.dumped && p.lastSeq == common) {
                ++collapsed;
                continue;
            }
            addRow(QString::number(p.rank), g, &p, marked);
        }
        if (collapsed > 0) {
            const auto it = std::find_if(g.ranks.begin(), g.ranks.end(), [&](const view::RankPosition& p) {
                return p.dumped && p.lastSeq == common;
            });
            addRow(tr("%n other ranks", nullptr, collapsed), g, &*it, false);
        }
    }
    m_table->resizeColumnsToContents();
    // The traceback of the first rank that is elsewhere, else of the lowest rank that has one.
    if (!m_tracebacks.empty())
        showTraceback(!odd.empty() && m_tracebacks.count(odd.front()) ? odd.front()
                                                                      : m_tracebacks.begin()->first);
}

} // namespace rs
