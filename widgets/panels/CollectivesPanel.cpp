// CollectivesPanel: see CollectivesPanel.h.
#include "panels/CollectivesPanel.h"

#include "model/RunModel.h"
#include "view/CollectiveProgress.h"

#include <QHeaderView>
#include <QLabel>
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
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_headline);
    layout->addWidget(m_table, 1);
    connect(m_model, &RunModel::runReset, this, &CollectivesPanel::rebuild);
    connect(m_model, &RunModel::opened, this, &CollectivesPanel::rebuild);
    connect(m_model, &RunModel::importsChanged, this, &CollectivesPanel::rebuild);
    rebuild();
}

QString CollectivesPanel::headline() const {
    return m_headline->text();
}

void CollectivesPanel::rebuild() {
    m_table->setRowCount(0);
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
    const view::CollectiveReport report =
        view::analyseCollectives(m_model->collectives(), view::collectiveSetup(m_model->meta()));
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
                  << (p->lastStep >= 0 ? QString::number(p->lastStep) : tr("not recorded"))
                  << QString::fromStdString(p->lastFrame);
        for (int c = 0; c < cells.size(); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if (marked)
                item->setBackground(oddColor);
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
}

} // namespace rs
