// TensorsPanel: see TensorsPanel.h.
#include "panels/TensorsPanel.h"

#include "model/RunModel.h"
#include "model/StepCursor.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

namespace rs {
namespace {

constexpr int kRanksAsColumns = 16;

struct Stat {
    const char* label;
    uint8_t bit;
    float TensorStat::*value;
};
constexpr Stat kStats[] = {{"Norm", 8, &TensorStat::norm},
                           {"Max", 1, &TensorStat::max},
                           {"Min", 2, &TensorStat::min},
                           {"Mean", 4, &TensorStat::mean}};

bool nonFinite(const TensorStat& t) {
    for (const Stat& s : kStats)
        if ((t.recorded & s.bit) && !std::isfinite(t.*s.value))
            return true;
    return false;
}

QString number(float v) {
    return std::isfinite(v) ? QString::number(double(v), 'g', 5) : QString::number(double(v));
}

} // namespace

TensorsPanel::TensorsPanel(RunModel* model, StepCursor* cursor, QWidget* parent)
    : QWidget(parent)
    , m_model(model)
    , m_cursor(cursor) {
    m_caption = new QLabel;
    m_caption->setObjectName(QStringLiteral("tensorsCaption"));
    m_caption->setWordWrap(true);
    m_stat = new QComboBox;
    m_stat->setObjectName(QStringLiteral("tensorsStatistic"));
    for (const Stat& s : kStats)
        m_stat->addItem(QString::fromLatin1(s.label));
    m_stat->setToolTip(tr("The statistic msprobe recorded for each tensor, shown per rank"));
    m_table = new QTableWidget;
    m_table->setObjectName(QStringLiteral("tensorsTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    auto* top = new QHBoxLayout;
    top->addWidget(m_caption, 1);
    top->addWidget(m_stat);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(m_table, 1);
    connect(m_stat, &QComboBox::currentIndexChanged, this, [this] {
        m_shownStep = -1;
        rebuild();
    });
    connect(m_model, &RunModel::runReset, this, &TensorsPanel::reindex);
    connect(m_model, &RunModel::opened, this, &TensorsPanel::reindex);
    connect(m_model, &RunModel::importsChanged, this, &TensorsPanel::reindex);
    // Replay moves the cursor many times a second: only a step with other tensors rebuilds the table.
    connect(m_cursor, &StepCursor::stepChanged, this, &TensorsPanel::rebuild);
    reindex();
}

QString TensorsPanel::caption() const {
    return m_caption->text();
}

void TensorsPanel::setStatistic(int index) {
    m_stat->setCurrentIndex(index);
}

// Once per import: each dumped step's rows, and the run's first non-finite tensor (the earliest step, then
// the rank's execution order).
void TensorsPanel::reindex() {
    m_byStep.clear();
    m_firstBad = -1;
    m_shownStep = -1;
    const auto& all = m_model->tensorStats();
    for (size_t i = 0; i < all.size(); ++i) {
        const TensorStat& t = all[i];
        m_byStep[t.step].push_back(i);
        if (nonFinite(t) &&
            (m_firstBad < 0 || t.step < all[size_t(m_firstBad)].step ||
             (t.step == all[size_t(m_firstBad)].step && t.order < all[size_t(m_firstBad)].order)))
            m_firstBad = int64_t(i);
    }
    rebuild();
}

void TensorsPanel::rebuild() {
    const auto& all = m_model->tensorStats();
    // The cursor's step, or the nearest dumped step at or before it (else the first).
    int64_t step = -1;
    if (!m_byStep.empty()) {
        auto it = m_byStep.upper_bound(m_cursor->step());
        step = it == m_byStep.begin() ? it->first : std::prev(it)->first;
    }
    if (step == m_shownStep && step >= 0)
        return;
    m_shownStep = step;
    m_table->clear();
    m_table->setRowCount(0);
    m_table->setColumnCount(0);
    if (all.empty()) {
        m_caption->setText(m_model->hasRun()
                               ? tr("Tensor statistics: not recorded. An msprobe dump "
                                    "(step<N>/rank<R>/dump.json) records them per API and module "
                                    "(File > Import msprobe Folder…).")
                               : tr("No run open."));
        return;
    }
    const TensorStat* first = m_firstBad >= 0 ? &all[size_t(m_firstBad)] : nullptr;
    const std::vector<size_t>& rows = m_byStep.at(step);

    const int R = m_model->worldSize();
    const Stat& stat = kStats[std::clamp(m_stat->currentIndex(), 0, 3)];
    // Rows: tensor names in execution order (the first rank that has each), cells per rank.
    std::map<std::string, int> rowOf;
    std::vector<std::pair<int64_t, std::string>> order;
    for (const size_t i : rows)
        if (const TensorStat& t = all[i]; !rowOf.count(t.name)) {
            rowOf[t.name] = 0;
            order.emplace_back(t.order, t.name);
        }
    std::stable_sort(order.begin(), order.end());
    for (size_t i = 0; i < order.size(); ++i)
        rowOf[order[i].second] = int(i);
    const bool columns = R <= kRanksAsColumns;
    QStringList header{tr("Tensor")};
    if (columns)
        for (int r = 0; r < R; ++r)
            header << tr("rank %1").arg(r);
    else
        header << tr("min") << tr("median") << tr("max") << tr("furthest rank") << tr("non-finite on");
    m_table->setColumnCount(int(header.size()));
    m_table->setHorizontalHeaderLabels(header);
    m_table->setRowCount(int(order.size()));
    // Per row: one slot per rank when ranks are columns, else only the ranks that have the tensor.
    std::vector<std::vector<const TensorStat*>> cells(order.size());
    if (columns)
        for (auto& row : cells)
            row.assign(size_t(R), nullptr);
    for (const size_t i : rows)
        if (const TensorStat& t = all[i]; t.rank >= 0 && t.rank < R) {
            auto& row = cells[size_t(rowOf[t.name])];
            if (columns)
                row[size_t(t.rank)] = &t;
            else
                row.push_back(&t);
        }
    const QColor bad(255, 190, 190);
    for (size_t row = 0; row < order.size(); ++row) {
        m_table->setItem(int(row), 0, new QTableWidgetItem(QString::fromStdString(order[row].second)));
        if (columns) {
            for (int r = 0; r < R; ++r) {
                const TensorStat* t = cells[row][size_t(r)];
                auto* item = new QTableWidgetItem(!t                         ? tr("not recorded")
                                                  : (t->recorded & stat.bit) ? number(t->*stat.value)
                                                                             : tr("not recorded"));
                if (t && nonFinite(*t))
                    item->setBackground(bad);
                m_table->setItem(int(row), r + 1, item);
            }
            continue;
        }
        std::vector<std::pair<float, int>> v;
        QStringList badRanks;
        for (const TensorStat* t : cells[row]) {
            if (nonFinite(*t))
                badRanks << QString::number(t->rank);
            if ((t->recorded & stat.bit) && std::isfinite(t->*stat.value))
                v.emplace_back(t->*stat.value, t->rank);
        }
        std::sort(v.begin(), v.end());
        QStringList cellsText;
        if (v.empty())
            cellsText << tr("not recorded") << QString() << QString() << QString();
        else {
            const float median = v[v.size() / 2].first;
            const auto far =
                std::abs(v.front().first - median) > std::abs(v.back().first - median) ? v.front() : v.back();
            cellsText << number(v.front().first) << number(median) << number(v.back().first)
                      << QString::number(far.second);
        }
        cellsText << badRanks.join(QStringLiteral(", "));
        for (int c = 0; c < cellsText.size(); ++c) {
            auto* item = new QTableWidgetItem(cellsText[c]);
            if (!badRanks.isEmpty())
                item->setBackground(bad);
            m_table->setItem(int(row), c + 1, item);
        }
    }
    QString text = tr("Step %1 · %n tensors per rank", nullptr, int(order.size())).arg(step);
    if (first)
        text += tr(" · first non-finite: %1 on rank %2 at step %3")
                    .arg(QString::fromStdString(first->name))
                    .arg(first->rank)
                    .arg(first->step);
    else
        text += tr(" · every recorded statistic is finite");
    m_caption->setText(text);
    m_table->resizeColumnsToContents();
}

} // namespace rs
