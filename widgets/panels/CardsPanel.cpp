// The cards panel: see CardsPanel.h.
#include "panels/CardsPanel.h"

#include "model/RunModel.h"
#include "panels/CardsModel.h"
#include "store/RunSource.h"

#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

namespace rs {

namespace {

// "1 card", "4 cards", "4 processes": English plurals without shipping a translation file for them.
QString counted(int n, const char* noun) {
    const QString word = QLatin1String(noun);
    return QStringLiteral("%1 %2%3").arg(n).arg(word).arg(n == 1                            ? ""
                                                          : word.endsWith(QLatin1Char('s')) ? "es"
                                                                                            : "s");
}

} // namespace

CardsPanel::CardsPanel(RunModel* model, StepCursor* cursor, QWidget* parent)
    : QWidget(parent)
    , m_model(model)
    , m_cards(new CardsModel(model, cursor, this))
    , m_view(new QTableView(this))
    , m_caption(new QLabel(this)) {
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    m_view->setModel(m_cards);
    m_view->setFont(mono);
    m_view->horizontalHeader()->setFont(mono);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->setToolTip(tr("The emulated Ascend cards at the cursor's step, as npu-smi info shows real ones"));
    m_caption->setFont(mono);
    m_caption->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_caption);
    layout->addWidget(m_view);

    connect(m_cards, &CardsModel::refreshed, this, &CardsPanel::updateCaption);
    connect(m_view, &QTableView::activated, this, [this](const QModelIndex& index) {
        emit rankActivated(
            m_cards->data(m_cards->index(index.row(), CardsModel::Rank), CardsModel::RawRole).toInt());
    });
    updateCaption();
}

QString CardsPanel::caption() const {
    return m_caption->text();
}

void CardsPanel::updateCaption() {
    m_view->setColumnHidden(CardsModel::Node, !m_cards->hasNodes());
    m_view->setColumnHidden(CardsModel::Server, !m_cards->hasServers());
    // A column that says "not recorded" on every card is named once in the caption instead of taking the
    // table's width (an msprobe tree records no device, health, memory or times).
    QStringList notRecorded;
    for (int c : {CardsModel::Npu, CardsModel::DeviceIp, CardsModel::Health, CardsModel::Hbm,
                  CardsModel::StepTime, CardsModel::CommWait}) {
        bool none = m_cards->rowCount() > 0;
        for (int row = 0; row < m_cards->rowCount() && none; ++row)
            none = m_cards->data(m_cards->index(row, c)).toString() == QLatin1String(kNotRecorded);
        m_view->setColumnHidden(c, none);
        if (none)
            notRecorded << m_cards->headerData(c, Qt::Horizontal).toString();
    }
    const int cards = m_cards->cardCount();
    const std::string noun = m_model->hasRun() ? rankNoun(m_model->meta()) : std::string("card");
    if (m_cards->shownStep() < 0) {
        const bool noSteps = m_model->hasRun() && m_model->isComplete(); // complete, yet no step: an import
        m_caption->setText(cards == 0 ? tr("No run")
                           : noSteps  ? tr("%1, no steps recorded").arg(counted(cards, noun.c_str()))
                                      : tr("%1, waiting for data").arg(counted(cards, noun.c_str())));
        return;
    }
    const int alarms = m_cards->alarmCount(), warnings = m_cards->warningCount();
    QString text =
        tr("Step %1 · %2").arg(m_cards->shownStep()).arg(counted(m_cards->cardCount(), noun.c_str()));
    if (m_cards->grouped())
        text += tr(" · a row per group of servers (the worst of its cards), then the cards that stand out");
    if (alarms > 0)
        text += QStringLiteral(" · ") + counted(alarms, "alarm");
    if (warnings > 0)
        text += QStringLiteral(" · ") + counted(warnings, "warning");
    if (!notRecorded.isEmpty())
        text += tr(" · not recorded: %1").arg(notRecorded.join(QStringLiteral(", ")));
    m_caption->setText(text);
}

} // namespace rs
