// The event log panel: see EventLogPanel.h.
#include "panels/EventLogPanel.h"

#include "model/StepCursor.h"
#include "panels/EventFilterProxy.h"
#include "panels/EventLogModel.h"
#include "store/RunRecords.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QTableView>
#include <QVBoxLayout>

namespace rs {

EventLogPanel::EventLogPanel(RunModel* model, StepCursor* cursor, QWidget* parent)
    : QWidget(parent)
    , m_cursor(cursor)
    , m_events(new EventLogModel(model, this))
    , m_proxy(new EventFilterProxy(this))
    , m_view(new QTableView(this)) {
    m_proxy->setSourceModel(m_events);
    auto* bar = new QWidget(this);
    buildFilterBar(bar);
    setupView();

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(bar);
    layout->addWidget(m_view);

    connect(m_proxy, &QAbstractItemModel::rowsAboutToBeInserted, this,
            &EventLogPanel::onRowsAboutToBeInserted);
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, &EventLogPanel::onRowsInserted);
    connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, &EventLogPanel::updateCount);
    connect(m_proxy, &QAbstractItemModel::modelReset, this, &EventLogPanel::updateCount);
    connect(m_proxy, &QAbstractItemModel::layoutChanged, this, &EventLogPanel::updateCount);
    connect(m_events, &QAbstractItemModel::rowsInserted, this, &EventLogPanel::updateCount);
    updateCount();
}

void EventLogPanel::buildFilterBar(QWidget* bar) {
    m_severity = new QComboBox(bar);
    m_severity->addItem(tr("All severities"), int(Severity::Info));
    m_severity->addItem(tr("Warnings and errors"), int(Severity::Warning));
    m_severity->addItem(tr("Errors only"), int(Severity::Error));
    m_severity->setToolTip(tr("Show only events at least this severe"));
    m_text = new QLineEdit(bar);
    m_text->setPlaceholderText(tr("Filter: code, message, step or rank"));
    m_text->setClearButtonEnabled(true);
    m_text->setToolTip(tr("Show only events with this text in some column (case does not matter), e.g. "
                          "GRADIENT_SYNC, OVERFLOW or a step number"));
    m_count = new QLabel(bar);
    m_count->setToolTip(tr("Events shown / events in the run"));

    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_severity);
    row->addWidget(m_text, 1);
    row->addWidget(m_count);

    connect(m_severity, &QComboBox::currentIndexChanged, this,
            [this] { m_proxy->setMinimumSeverity(m_severity->currentData().toInt()); });
    connect(m_text, &QLineEdit::textChanged, m_proxy, &EventFilterProxy::setText);
}

void EventLogPanel::setupView() {
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(EventLogModel::StepCol, Qt::AscendingOrder);
    m_view->verticalHeader()->hide();
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    QHeaderView* header = m_view->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::ResizeToContents);
    header->setStretchLastSection(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setWordWrap(false);
    m_view->setAlternatingRowColors(true);
    m_view->setToolTip(tr("Click an event to move the step cursor to its step"));
    connect(m_view, &QTableView::clicked, this, &EventLogPanel::goToEvent);
    connect(m_view, &QTableView::activated, this, &EventLogPanel::goToEvent);
}

void EventLogPanel::goToEvent(const QModelIndex& proxyIndex) {
    if (proxyIndex.isValid())
        m_cursor->setStep(proxyIndex.data(EventLogModel::StepRole).toLongLong());
}

QString EventLogPanel::countText() const {
    return m_count->text();
}

void EventLogPanel::updateCount() {
    const int shown = m_proxy->rowCount(), total = m_events->rowCount();
    const QString events = total == 1 ? tr("1 event") : tr("%1 events").arg(total);
    m_count->setText(shown == total ? events : tr("%1 of %2").arg(shown).arg(events));
}

void EventLogPanel::onRowsAboutToBeInserted() {
    const QScrollBar* bar = m_view->verticalScrollBar();
    m_wasAtBottom = bar->value() >= bar->maximum();
}

void EventLogPanel::onRowsInserted() {
    updateCount();
    if (m_wasAtBottom)
        m_view->scrollToBottom();
}

} // namespace rs
