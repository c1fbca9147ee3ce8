// The cards panel past 64 cards (CardsModel::kMaxCardRows): a row per group of servers, the cards that stand
// out drawn out after their group, the caption counting every card.
#include "model/RunDelta.h"
#include "model/RunModel.h"
#include "model/StepColumn.h"
#include "model/StepCursor.h"
#include "panels/CardsModel.h"
#include "panels/CardsPanel.h"

#include <QAbstractItemModelTester>
#include <QtTest>

using namespace rs;

namespace {

constexpr int64_t kMiB = int64_t(1024) * 1024;

QString cell(const QAbstractItemModel& m, int row, int column, int role = Qt::DisplayRole) {
    return m.data(m.index(row, column), role).toString();
}

} // namespace

class TestCardGroups : public QObject {
    Q_OBJECT

private slots:
    void aThousandCardsGroupByServer();
};

// 1,024 cards on 128 servers of 8: no table of 1,024 rows. A row per group of servers with the worst of
// its cards, and after its group each card that stands out: rank 517 dead, rank 700 with a step three times
// the others'. The caption counts every card and the alarm.
void TestCardGroups::aThousandCardsGroupByServer() {
    constexpr int kMany = 1024, kDead = 517, kSlow = 700;
    RunDelta d;
    d.first = true;
    d.path = QStringLiteral("thousand.h5");
    d.meta.model = "mlp";
    d.meta.worldSize = kMany;
    for (int r = 0; r < kMany; ++r)
        d.meta.cards.push_back(CardInfo{r, r % 8, "10.1.0." + std::to_string(r),
                                        "10.0.0." + std::to_string(1 + r / 8), int64_t(32) * 1024 * kMiB,
                                        int64_t(2048) * kMiB});
    d.firstRow = 0;
    d.stepNumbers = {0};
    for (int r = 0; r < kMany; ++r) {
        auto col = [&](StepColumn c) -> std::vector<float>& { return d.columns[columnIndex(c)]; };
        col(StepColumn::Loss).push_back(2.0f);
        col(StepColumn::Accuracy).push_back(0.1f);
        col(StepColumn::LossScale).push_back(65536.0f);
        col(StepColumn::StepMs).push_back(r == kSlow ? 300.0f : 100.0f);
        col(StepColumn::ComputeMs).push_back(80.0f);
        col(StepColumn::CommMs).push_back(10.0f);
        col(StepColumn::Overflow).push_back(0);
        col(StepColumn::Skipped).push_back(0);
        col(StepColumn::State).push_back(float(r == kDead ? CardState::Dead : CardState::Ok));
    }
    RunModel model;
    StepCursor cursor;
    model.applyDelta(d);
    CardsPanel panel(&model, &cursor);
    CardsModel& cards = *panel.cardsModel();
    QAbstractItemModelTester tester(&cards, QAbstractItemModelTester::FailureReportingMode::QtTest);
    cursor.setStep(0);
    QTRY_COMPARE(cards.shownStep(), int64_t(0));
    cards.refreshNow();
    QVERIFY(cards.grouped());
    QCOMPARE(cards.rowCount(), 64 + 2); // 64 groups of 2 servers, and the two cards drawn out
    QCOMPARE(cards.cardCount(), kMany);
    QCOMPARE(cards.alarmCount(), 1);
    QCOMPARE(cell(cards, 0, CardsModel::Rank), QStringLiteral("0–15"));
    QCOMPARE(cell(cards, 0, CardsModel::Npu), QStringLiteral("16 cards"));
    QCOMPARE(cell(cards, 0, CardsModel::Server), QStringLiteral("10.0.0.1 … 10.0.0.2"));
    QCOMPARE(cell(cards, 0, CardsModel::Health), QStringLiteral("OK"));
    // The group of rank 517 (ranks 512-527) is row 32: its health is the dead card's, which follows it.
    QCOMPARE(cell(cards, 32, CardsModel::Rank), QStringLiteral("512–527"));
    QCOMPARE(cell(cards, 32, CardsModel::Health), QStringLiteral("Alarm"));
    QCOMPARE(cell(cards, 33, CardsModel::Rank), QStringLiteral("↳ 517"));
    QCOMPARE(cards.data(cards.index(33, CardsModel::Rank), CardsModel::RawRole).toInt(), kDead);
    QCOMPARE(cell(cards, 33, CardsModel::State), QStringLiteral("dead"));
    // Rank 700's group (688-703) shows its step time, and the card follows with why it stands out.
    QCOMPARE(cell(cards, 44, CardsModel::Rank), QStringLiteral("688–703"));
    QCOMPARE(cell(cards, 44, CardsModel::StepTime), QStringLiteral("300.0"));
    QCOMPARE(cell(cards, 45, CardsModel::Rank), QStringLiteral("↳ 700"));
    QVERIFY2(
        cards.data(cards.index(45, CardsModel::Rank), Qt::ToolTipRole).toString().contains("3.0x the median"),
        qPrintable(cards.data(cards.index(45, CardsModel::Rank), Qt::ToolTipRole).toString()));
    QVERIFY2(panel.caption().startsWith("Step 0 · 1024 cards · a row per group of servers") &&
                 panel.caption().contains("1 alarm"),
             qPrintable(panel.caption()));
}

QTEST_MAIN(TestCardGroups)
#include "tst_cardgroups.moc"
