// The panels over a run model filled directly (RunModel::applyDelta): the cards table shows the cursor's
// step and a dead card's alarm; the event log appends, filters and moves the cursor; the run form gives the
// presets' configs (and names the preset a loaded config equals), names invalid fields, gates Start and
// starts the run file it shows; replay advances the cursor and stops at the end.
// Item models run under QAbstractItemModelTester. Set RANKSIGHT_GRAB_DIR to save screenshots of the panels.
#include "model/RunDelta.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"
#include "panels/CardsModel.h"
#include "panels/CardsPanel.h"
#include "panels/CollectivesPanel.h"
#include "panels/EventFilterProxy.h"
#include "panels/EventLogModel.h"
#include "panels/EventLogPanel.h"
#include "panels/PathEdit.h"
#include "panels/ReplayControl.h"
#include "panels/RunPanel.h"
#include "panels/TensorsPanel.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

using namespace rs;

namespace {

constexpr int kRanks = 4;
constexpr int kSteps = 50;
constexpr int kDeadRank = 3;
constexpr int kDeadFrom = 40;
constexpr int64_t kMiB = int64_t(1024) * 1024;

float stepMs(int64_t row, int rank) {
    return 100.0f + float(row) + 0.25f * float(rank);
}

Event event(int64_t step, int rank, Severity s, const char* code, const char* message) {
    return Event{step, rank, s, code, message};
}

// Rows [first, first + n) of a 4-rank run whose rank 3 dies at step 40.
void fillRows(RunDelta& d, int64_t first, int64_t n) {
    d.firstRow = first;
    for (int64_t row = first; row < first + n; ++row) {
        d.stepNumbers.push_back(row);
        for (int r = 0; r < kRanks; ++r) {
            const bool dead = r == kDeadRank && row >= kDeadFrom;
            auto col = [&](StepColumn c) -> std::vector<float>& { return d.columns[columnIndex(c)]; };
            col(StepColumn::Loss).push_back(2.0f);
            col(StepColumn::Accuracy).push_back(0.1f);
            col(StepColumn::LossScale).push_back(65536.0f);
            col(StepColumn::StepMs).push_back(stepMs(row, r));
            col(StepColumn::ComputeMs).push_back(80.0f);
            col(StepColumn::CommMs).push_back(10.0f + float(r));
            col(StepColumn::Overflow).push_back(0);
            col(StepColumn::Skipped).push_back(0);
            col(StepColumn::State).push_back(float(dead ? CardState::Dead : CardState::Ok));
        }
    }
}

RunDelta firstDelta(int64_t steps = kSteps) {
    RunDelta d;
    d.first = true;
    d.path = QStringLiteral("test.h5");
    d.meta.model = "smallcnn";
    d.meta.worldSize = kRanks;
    d.meta.precision = "O2";
    for (int r = 0; r < kRanks; ++r)
        d.meta.cards.push_back(CardInfo{r, r, "192.0.2." + std::to_string(10 + r), "198.51.100.7",
                                        int64_t(32) * 1024 * kMiB, int64_t(2048 + 256 * r) * kMiB});
    fillRows(d, 0, steps);
    d.events = {
        event(0, -1, Severity::Info, "RUN_START", "Training started on 4 cards"),
        event(12, 1, Severity::Warning, "LOSS_FLUCTUATION",
              "Loss shows abnormal fluctuation: from 0.25 to 1.56 within 10 steps"),
        event(20, -1, Severity::Warning, "OVERFLOW", "fp16 overflow: update skipped, loss scale halved"),
        event(30, 0, Severity::Error, "GRADIENT_SYNC",
              "Rank 0 and Rank 1 parameter gradient mismatch at step 30"),
        event(40, kDeadRank, Severity::Error, "CARD_DEAD", "Rank 3 died"),
        event(45, -1, Severity::Info, "EVAL", "Eval accuracy 0.31")};
    return d;
}

RunDelta appendDelta(int64_t first, int64_t n) {
    RunDelta d;
    fillRows(d, first, n);
    d.events = {event(first, 2, Severity::Warning, "TIMEOUT", "Rank 2 waited 30000 ms for rank 3"),
                event(first + 1, -1, Severity::Info, "CHECKPOINT", "Weights fingerprinted")};
    return d;
}

void maybeGrab(QWidget* w, const char* name) {
    const QByteArray dir = qgetenv("RANKSIGHT_GRAB_DIR");
    if (dir.isEmpty())
        return;
    if (!w->isVisible()) {
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w));
    }
    QVERIFY(w->grab().save(QString::fromUtf8(dir) + QLatin1Char('/') + QLatin1String(name) + ".png"));
}

QString cell(const QAbstractItemModel& m, int row, int column, int role = Qt::DisplayRole) {
    return m.data(m.index(row, column), role).toString();
}

QString presetPath(const QString& name) {
    return QStringLiteral(RANKSIGHT_SOURCE_DIR "/resources/presets/%1.json").arg(name);
}

template <typename T> T* child(QWidget& w, const char* name) {
    T* c = w.findChild<T*>(QLatin1String(name));
    if (!c)
        qFatal("no child %s", name);
    return c;
}

} // namespace

class TestPanels : public QObject {
    Q_OBJECT

private slots:
    void cardsModelStaysConsistent();
    void cardsShowTheCursorStep();
    void cardsShowTheDeadCard();
    void cardsCoalesceUpdates();
    void cardsWaitForData();
    void cardsShowFailuresFromTheEventLog();
    void eventLogModelAppendsAndResets();
    void clickingAnEventMovesTheCursor();
    void eventFilters();
    void presetGivesItsConfig_data();
    void presetGivesItsConfig();
    void editingSwitchesToCustom();
    void setConfigRoundTrips();
    void aConfigWithAPresetsSettingsIsThatPreset();
    void startWritesTheRunFileShown();
    void theRunFileIsReadableInANarrowForm();
    void invalidFieldsAreNamed();
    void faultsGoIntoTheConfig();
    void nodesSpreadTheCardsWithoutLeavingThePreset();
    void setRunningTogglesButtons();
    void startOnlyWhenValid();
    void stateRoundTrips();
    void replayAdvancesAndStopsAtTheEnd();
    void replaySpaceSliderAndFollow();

private:
    QTemporaryDir m_tmp;
};

void TestPanels::cardsModelStaysConsistent() {
    RunModel model;
    StepCursor cursor;
    CardsModel cards(&model, &cursor);
    QAbstractItemModelTester tester(&cards, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.applyDelta(firstDelta());
    cards.refreshNow();
    QCOMPARE(cards.rowCount(), kRanks);
    QCOMPARE(cards.columnCount(), int(CardsModel::ColumnCount));
    model.applyDelta(appendDelta(kSteps, 10));
    cursor.setStep(kSteps + 5);
    QTRY_COMPARE(cards.shownStep(), int64_t(kSteps + 5));
    model.close();
    QCOMPARE(cards.rowCount(), 0); // at once, not at the next coalesced refresh
    model.applyDelta(firstDelta());
    QTRY_COMPARE(cards.rowCount(), kRanks);
}

void TestPanels::cardsShowTheCursorStep() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta());
    CardsModel cards(&model, &cursor);
    QAbstractItemModelTester tester(&cards, QAbstractItemModelTester::FailureReportingMode::QtTest);
    cursor.setStep(10);
    QTRY_COMPARE(cards.shownStep(), int64_t(10));
    QCOMPARE(cell(cards, 2, CardsModel::StepTime), QString::number(double(stepMs(10, 2)), 'f', 1));
    QCOMPARE(cell(cards, 2, CardsModel::CommWait), QStringLiteral("12.0"));
    QCOMPARE(cell(cards, 1, CardsModel::Npu), QStringLiteral("1"));
    QCOMPARE(cell(cards, 1, CardsModel::DeviceIp), QStringLiteral("192.0.2.11"));
    QCOMPARE(cell(cards, 0, CardsModel::Hbm), QStringLiteral("2048 / 32768 MB"));
    QCOMPARE(cell(cards, 0, CardsModel::State), QStringLiteral("running"));
    const auto align =
        cards.data(cards.index(0, CardsModel::StepTime), Qt::TextAlignmentRole).value<Qt::Alignment>();
    QVERIFY(align & Qt::AlignRight);
    QVERIFY(!cards.headerData(CardsModel::CommWait, Qt::Horizontal, Qt::ToolTipRole).toString().isEmpty());

    cursor.setStep(33);
    QTRY_COMPARE(cards.shownStep(), int64_t(33));
    QCOMPARE(cell(cards, 2, CardsModel::StepTime), QString::number(double(stepMs(33, 2)), 'f', 1));
    CardsPanel panel(&model, &cursor);
    panel.resize(720, 200);
    panel.cardsModel()->refreshNow();
    QCOMPARE(panel.caption(), QStringLiteral("Step 33 · 4 cards"));
}

void TestPanels::cardsShowTheDeadCard() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta());
    CardsPanel panel(&model, &cursor);
    CardsModel& cards = *panel.cardsModel();
    cursor.setStep(kDeadFrom - 1);
    QTRY_COMPARE(cards.shownStep(), int64_t(kDeadFrom - 1));
    QCOMPARE(cell(cards, kDeadRank, CardsModel::Health), QStringLiteral("OK"));
    QVERIFY(!cards.data(cards.index(kDeadRank, CardsModel::Health), Qt::ForegroundRole).isValid());

    cursor.setStep(45);
    QTRY_COMPARE(cards.shownStep(), int64_t(45));
    QCOMPARE(cell(cards, kDeadRank, CardsModel::Health), QStringLiteral("Alarm"));
    QCOMPARE(cell(cards, kDeadRank, CardsModel::State), QStringLiteral("dead"));
    QCOMPARE(cell(cards, 0, CardsModel::Health), QStringLiteral("OK"));
    const auto fg =
        cards.data(cards.index(kDeadRank, CardsModel::Health), Qt::ForegroundRole).value<QBrush>();
    QVERIFY(fg.color().red() > 150 && fg.color().green() < 100);
    QVERIFY(
        cell(cards, kDeadRank, CardsModel::State, Qt::ToolTipRole).contains(QStringLiteral("since step 40")));
    QTRY_COMPARE(panel.caption(), QStringLiteral("Step 45 · 4 cards · 1 alarm"));

    model.applyDelta([] {
        RunDelta d = appendDelta(kSteps, 1);
        d.complete = true;
        d.stopReason = "completed";
        return d;
    }());
    cursor.setStep(kSteps);
    QTRY_COMPARE(cards.shownStep(), int64_t(kSteps));
    QCOMPARE(cell(cards, 0, CardsModel::State), QStringLiteral("finished"));
    model.applyDelta([] { // the same run, stopped by the user: its cards were stopped, not finished
        RunDelta d;
        d.firstRow = kSteps + 1;
        d.complete = true;
        d.stopReason = "stopped";
        return d;
    }());
    cards.refreshNow();
    QCOMPARE(cell(cards, 0, CardsModel::State), QStringLiteral("stopped"));
    panel.resize(760, 190);
    maybeGrab(&panel, "cards");
}

void TestPanels::cardsCoalesceUpdates() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta());
    CardsModel cards(&model, &cursor);
    QSignalSpy refreshed(&cards, &CardsModel::refreshed);
    for (int step = 1; step <= 20; ++step)
        cursor.setStep(step);
    model.applyDelta(appendDelta(kSteps, 5));
    QTRY_COMPARE(refreshed.count(), 1);
    QTest::qWait(100);
    QCOMPARE(refreshed.count(), 1);
    QCOMPARE(cards.shownStep(), int64_t(20));
}

void TestPanels::cardsWaitForData() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta(0));
    CardsModel cards(&model, &cursor);
    QCOMPARE(cards.rowCount(), kRanks);
    QCOMPARE(cards.shownStep(), int64_t(-1));
    QCOMPARE(cell(cards, 0, CardsModel::State), QStringLiteral("waiting for data"));
    QCOMPARE(cell(cards, 0, CardsModel::StepTime), QStringLiteral("-"));
}

void TestPanels::cardsShowFailuresFromTheEventLog() {
    // What rank-exit leaves: no step row for the step the card died in, only CARD_FAILED and TIMEOUT events.
    RunModel model;
    StepCursor cursor;
    RunDelta d = firstDelta(10);
    d.events = {
        ::event(10, 1, Severity::Error, "CARD_FAILED", "Rank 1 failed at step 10: EL0004 HBM out of memory"),
        ::event(10, 0, Severity::Error, "TIMEOUT", "Rank 0: all-reduce timed out waiting for rank(s) 1")};
    d.complete = true;
    d.stopReason = "error: rank 1: EL0004";
    model.applyDelta(std::move(d));
    CardsModel cards(&model, &cursor);
    cursor.setStep(5);
    cards.refreshNow();
    QCOMPARE(cell(cards, 1, CardsModel::State), QStringLiteral("running"));
    cursor.setStep(9); // the last row: the card died right after it
    cards.refreshNow();
    QCOMPARE(cell(cards, 1, CardsModel::State), QStringLiteral("dead"));
    QCOMPARE(cell(cards, 1, CardsModel::Health), QStringLiteral("Alarm"));
    QCOMPARE(cell(cards, 0, CardsModel::State), QStringLiteral("timed out"));
    QCOMPARE(cell(cards, 2, CardsModel::Health), QStringLiteral("OK"));
}

void TestPanels::eventLogModelAppendsAndResets() {
    RunModel model;
    EventLogModel events(&model);
    QAbstractItemModelTester tester(&events, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&events, &QAbstractItemModel::rowsInserted);
    QSignalSpy reset(&events, &QAbstractItemModel::modelReset);
    model.applyDelta(firstDelta());
    QCOMPARE(events.rowCount(), 6);
    QCOMPARE(cell(events, 0, EventLogModel::RankCol), QStringLiteral("all"));
    QCOMPARE(cell(events, 1, EventLogModel::RankCol), QStringLiteral("1"));
    QCOMPARE(cell(events, 3, EventLogModel::SeverityCol), QStringLiteral("Error"));
    QCOMPARE(cell(events, 3, EventLogModel::CodeCol), QStringLiteral("GRADIENT_SYNC"));
    QVERIFY(events.data(events.index(3, EventLogModel::SeverityCol), Qt::DecorationRole).isValid());

    inserted.clear();
    model.applyDelta(appendDelta(kSteps, 3));
    QCOMPARE(events.rowCount(), 8);
    QCOMPARE(inserted.count(), 1);
    QCOMPARE(inserted.at(0).at(1).toInt(), 6);
    QCOMPARE(inserted.at(0).at(2).toInt(), 7);
    QCOMPARE(cell(events, 6, EventLogModel::CodeCol), QStringLiteral("TIMEOUT"));

    reset.clear();
    model.close();
    QVERIFY(reset.count() >= 1);
    QCOMPARE(events.rowCount(), 0);
}

void TestPanels::clickingAnEventMovesTheCursor() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta());
    EventLogPanel panel(&model, &cursor);
    panel.resize(800, 300);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTableView* view = panel.view();
    const QModelIndexList hits = view->model()->match(view->model()->index(0, EventLogModel::CodeCol),
                                                      Qt::DisplayRole, QStringLiteral("GRADIENT_SYNC"));
    QCOMPARE(hits.size(), 1);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(hits.front()).center());
    QCOMPARE(cursor.step(), int64_t(30));
    QVERIFY(!cursor.following());

    const QModelIndex overflow = view->model()
                                     ->match(view->model()->index(0, EventLogModel::CodeCol), Qt::DisplayRole,
                                             QStringLiteral("OVERFLOW"))
                                     .value(0);
    QVERIFY(overflow.isValid());
    view->setCurrentIndex(overflow);
    view->setFocus();
    QTest::keyClick(view, Qt::Key_Return);
    QCOMPARE(cursor.step(), int64_t(20));
    maybeGrab(&panel, "events");
}

void TestPanels::eventFilters() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta());
    EventLogPanel panel(&model, &cursor);
    QAbstractItemModelTester tester(panel.proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(panel.proxy()->rowCount(), 6);
    QCOMPARE(panel.countText(), QStringLiteral("6 events"));

    panel.severityFilter()->setCurrentIndex(1); // warnings and errors
    QCOMPARE(panel.proxy()->rowCount(), 4);
    QCOMPARE(panel.countText(), QStringLiteral("4 of 6 events"));
    panel.severityFilter()->setCurrentIndex(2); // errors only
    QCOMPARE(panel.proxy()->rowCount(), 2);
    panel.severityFilter()->setCurrentIndex(0);

    QTest::keyClicks(panel.textFilter(), QStringLiteral("overflow"));
    QCOMPARE(panel.proxy()->rowCount(), 1);
    QCOMPARE(cell(*panel.proxy(), 0, EventLogModel::StepCol), QStringLiteral("20"));
    QCOMPARE(panel.countText(), QStringLiteral("1 of 6 events"));
    panel.severityFilter()->setCurrentIndex(2);
    QCOMPARE(panel.proxy()->rowCount(), 0);
    panel.severityFilter()->setCurrentIndex(0);
    panel.textFilter()->setText(QStringLiteral("rank 3"));
    QCOMPARE(panel.proxy()->rowCount(), 1);

    model.applyDelta(appendDelta(kSteps, 2)); // rows arriving under a filter: only the matching appear
    QCOMPARE(panel.proxy()->rowCount(), 2);
    QCOMPARE(panel.countText(), QStringLiteral("2 of 8 events"));
}

void TestPanels::presetGivesItsConfig_data() {
    QTest::addColumn<QString>("name");
    QTest::addRow("seed") << QStringLiteral("seed");
    QTest::addRow("quick") << QStringLiteral("quick");
    QTest::addRow("seed-story") << QStringLiteral("seed-story");
}

void TestPanels::presetGivesItsConfig() {
    QFETCH(QString, name);
    QFile file(presetPath(name));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
    QVERIFY(!json.isEmpty());

    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    if (name != QLatin1String("quick"))
        QVERIFY(panel.loadPreset(QStringLiteral("quick"))); // start from another preset
    QVERIFY(panel.loadPreset(name));
    QCOMPARE(panel.presetName(), name);
    TrainConfig c;
    QString error;
    QVERIFY2(panel.buildConfig(&c, &error), qPrintable(error));
    QCOMPARE(QString::fromStdString(modelKindName(c.model)), json.value("model").toString());
    QCOMPARE(c.ranks, json.value("ranks").toInt());
    QCOMPARE(c.batchPerRank, json.value("batch").toInt());
    QCOMPARE(c.steps, int64_t(json.value("steps").toInt()));
    QCOMPARE(QString::fromStdString(precisionName(c.precision)), json.value("precision").toString());
    QCOMPARE(QString::fromStdString(lossScaleName(c.lossScale)), json.value("loss_scale").toString());
    QCOMPARE(QString::fromStdString(c.data), json.value("data").toString());
    QCOMPARE(c.evalEvery, int64_t(json.value("eval_every").toInt())); // a key the form does not show
    QStringList faults;
    for (const auto& f : c.faults)
        faults << QString::fromStdString(f);
    QCOMPARE(faults, json.value("faults").toVariant().toStringList());
    QVERIFY(QString::fromStdString(c.out).startsWith(m_tmp.filePath(QStringLiteral("runs/%1-").arg(name))));
    QVERIFY(QString::fromStdString(c.out).endsWith(QLatin1String(".h5")));
    QVERIFY(!panel.loadPreset(QStringLiteral("nonsense")));
    QCOMPARE(panel.presetName(), name);
}

void TestPanels::editingSwitchesToCustom() {
    RunPanel panel;
    // First launch: the seed story (a minute on 2 cores), not the 40-minute ResNet-50 seed.
    QCOMPARE(panel.presetName(), QStringLiteral("seed-story"));
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    QVERIFY(panel.loadPreset(QStringLiteral("quick")));
    QCOMPARE(child<QComboBox>(panel, "preset")->currentText(),
             QStringLiteral("Quick: SmallCNN × 4 (< 1 min)"));
    child<QSpinBox>(panel, "ranks")->setValue(2);
    QCOMPARE(panel.presetName(), QStringLiteral("custom"));
    QCOMPARE(child<QComboBox>(panel, "preset")->currentText(), QStringLiteral("Custom"));
    const TrainConfig c = panel.config();
    QCOMPARE(c.ranks, 2);
    QCOMPARE(c.model, ModelKind::SmallCnn); // the rest stays the preset's
    QVERIFY(QFileInfo(QString::fromStdString(c.out)).fileName().startsWith(QLatin1String("custom-")));

    child<QComboBox>(panel, "preset")->setCurrentIndex(0); // choosing a preset again loads it
    QCOMPARE(panel.presetName(), QStringLiteral("seed"));
    QCOMPARE(panel.config().model, ModelKind::ResNet50);
    QCOMPARE(panel.config().ranks, 4);
}

void TestPanels::setConfigRoundTrips() {
    QTemporaryDir cifar;
    for (const char* f : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                          "data_batch_5.bin", "test_batch.bin"}) {
        QFile file(cifar.filePath(QLatin1String(f)));
        QVERIFY(file.open(QIODevice::WriteOnly));
    }
    TrainConfig in;
    in.model = ModelKind::ResNet18;
    in.ranks = 2;
    in.batchPerRank = 8;
    in.epochs = 3;
    in.precision = Precision::O3;
    in.lossScale = parseLossScale("fixed:1024");
    in.data = "cifar10:" + cifar.path().toStdString();
    in.seed = 7;
    in.lr = 0.2f;
    in.rankTable = RANKSIGHT_TEST_DATA "/ranktables/valid_4p.json";
    in.ranks = 4;
    in.out = m_tmp.filePath(QStringLiteral("mine.h5")).toStdString();

    RunPanel panel;
    panel.setConfig(in);
    QCOMPARE(panel.presetName(), QStringLiteral("custom"));
    TrainConfig out;
    QString error;
    QVERIFY2(panel.buildConfig(&out, &error), qPrintable(error));
    QCOMPARE(out.toJson(), in.toJson());
    QCOMPARE(out.out, in.out);
}

// A config file with a preset's settings (resources/presets/quick.json, or the same keys written by hand) is
// that preset; one setting off is Custom. Where it goes is not a setting.
void TestPanels::aConfigWithAPresetsSettingsIsThatPreset() {
    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    QVERIFY(panel.loadPreset(QStringLiteral("seed")));
    panel.setConfig(TrainConfig::fromFile(presetPath(QStringLiteral("quick")).toStdString()));
    QCOMPARE(panel.presetName(), QStringLiteral("quick"));
    QCOMPARE(child<QComboBox>(panel, "preset")->currentText(),
             QStringLiteral("Quick: SmallCNN × 4 (< 1 min)"));
    QVERIFY(QFileInfo(child<QLineEdit>(panel, "out")->text()).fileName().startsWith(QLatin1String("quick-")));

    panel.setConfig(TrainConfig::fromFile(presetPath(QStringLiteral("seed-story")).toStdString())); // faults
    QCOMPARE(panel.presetName(), QStringLiteral("seed-story"));

    // The quick preset's settings written by hand, keys in another order: quick. Without its lr, the linear
    // scaling rule would train at 0.05 x 64 / 128 = 0.025, not quick's 0.05: Custom.
    TrainConfig same = TrainConfig::fromJson(
        R"({"eval_samples": 512, "seed": 1, "model": "smallcnn", "batch": 16, "ranks": 4, "steps": 150,
            "precision": "O2", "loss_scale": "dynamic", "data": "synthetic", "lr": 0.05, "eval_every": 50})",
        "by hand");
    same.out = m_tmp.filePath(QStringLiteral("mine.h5")).toStdString();
    panel.setConfig(same);
    QCOMPARE(panel.presetName(), QStringLiteral("quick"));
    QCOMPARE(panel.config().out, same.out); // the run file given stays
    same.lr = 0;
    panel.setConfig(same);
    QCOMPARE(panel.presetName(), QStringLiteral("custom"));
    same.lr = 0.05f;
    same.faults = {"grad-sum"};
    panel.setConfig(same);
    QCOMPARE(panel.presetName(), QStringLiteral("custom"));
}

// The run file field shows the file Start writes: the name is not made again at Start (a second later it
// would differ), only when the file shown appeared meanwhile, and then the new name is shown first.
void TestPanels::startWritesTheRunFileShown() {
    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs-shown")));
    QVERIFY(panel.loadPreset(QStringLiteral("quick")));
    auto* out = child<QLineEdit>(panel, "out");
    const QString shown = out->text();
    QVERIFY2(shown.startsWith(m_tmp.filePath(QStringLiteral("runs-shown/quick-"))), qPrintable(shown));
    QSignalSpy startSpy(&panel, &RunPanel::startRequested);
    QTest::qWait(1100); // generated names count seconds
    QTest::mouseClick(child<QPushButton>(panel, "start"), Qt::LeftButton);
    QCOMPARE(startSpy.count(), 1);
    QCOMPARE(out->text(), shown);
    QCOMPARE(QString::fromStdString(panel.config().out), shown);

    QFile taken(shown); // another run took the name
    QVERIFY(taken.open(QIODevice::WriteOnly));
    taken.close();
    QTest::mouseClick(child<QPushButton>(panel, "start"), Qt::LeftButton);
    QCOMPARE(startSpy.count(), 2);
    QVERIFY(out->text() != shown);
    QCOMPARE(QString::fromStdString(panel.config().out), out->text());
}

// A narrow dock: the run file field shows the file name whole and the folders above it that fit, after an
// ellipsis; the tooltip has the full path, and editing shows the text itself.
void TestPanels::theRunFileIsReadableInANarrowForm() {
    RunPanel panel;
    const QString runs = m_tmp.filePath(QStringLiteral("a-folder-with-a-rather-long-name/and/another/runs"));
    panel.setRunsDir(runs);
    QVERIFY(panel.loadPreset(QStringLiteral("seed-story")));
    panel.resize(460, 640);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* out = child<PathEdit>(panel, "out");
    const QString path = out->text();
    const QString shown = out->shownText();
    QVERIFY2(shown != path && shown.contains(QChar(0x2026)), qPrintable(shown));
    QVERIFY2(shown.endsWith(QLatin1Char('/') + QFileInfo(path).fileName()), qPrintable(shown));
    QVERIFY2(shown.startsWith(QStringLiteral("…/")) && path.endsWith(shown.mid(1)), qPrintable(shown));
    QVERIFY2(shown.endsWith(QStringLiteral("/runs/") + QFileInfo(path).fileName()), qPrintable(shown));
    QVERIFY2(out->fontMetrics().horizontalAdvance(shown) < out->width(),
             qPrintable(QStringLiteral("%1 px in %2")
                            .arg(out->fontMetrics().horizontalAdvance(shown))
                            .arg(out->width())));
    QVERIFY2(out->toolTip().startsWith(path + QStringLiteral("\n\n")), qPrintable(out->toolTip()));
    const QFontMetrics fm = out->fontMetrics();
    QCOMPARE(PathEdit::elidePath(path, fm, 100000), path); // what fits stays whole
    const QString tail = QStringLiteral("…/runs/quick.h5");
    QCOMPARE(PathEdit::elidePath(QStringLiteral("/home/me/runs/quick.h5"), fm, fm.horizontalAdvance(tail)),
             tail);
    const QString cut = PathEdit::elidePath(QStringLiteral("/home/me/runs/quick.h5"), fm, 40); // no room
    QVERIFY2(cut.contains(QChar(0x2026)) && fm.horizontalAdvance(cut) <= 40, qPrintable(cut));
    maybeGrab(&panel, "run-file-narrow");
    panel.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&panel));
    out->setFocus();
    QTRY_VERIFY(out->hasFocus());
    QCOMPARE(out->shownText(), path);
}

void TestPanels::invalidFieldsAreNamed() {
    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    QVERIFY(panel.errorText().isEmpty());
    child<QComboBox>(panel, "dataSource")->setCurrentIndex(1);
    child<QLineEdit>(panel, "dataDir")->setText(QStringLiteral("/no/such/cifar"));
    QVERIFY2(panel.errorText().startsWith(QLatin1String("CIFAR-10 folder:")), qPrintable(panel.errorText()));
    QVERIFY(panel.errorText().contains(QLatin1String("/no/such/cifar")));
    QString error;
    QVERIFY(!panel.buildConfig(nullptr, &error));
    QCOMPARE(error, panel.errorText());
    QVERIFY_THROWS_EXCEPTION(ConfigError, panel.config());
    QVERIFY(!child<QPushButton>(panel, "start")->isEnabled());
    panel.resize(460, 520);
    maybeGrab(&panel, "run-cifar-error");

    QTemporaryDir empty;
    child<QLineEdit>(panel, "dataDir")->setText(empty.path());
    QVERIFY2(panel.errorText().contains(QLatin1String("data_batch_1.bin")), qPrintable(panel.errorText()));
    // Fashion-MNIST: a folder without its idx files is named; an empty folder is Debian's install folder.
    child<QComboBox>(panel, "dataSource")->setCurrentIndex(2);
    QVERIFY2(panel.errorText().startsWith(QLatin1String("Fashion-MNIST folder:")) &&
                 panel.errorText().contains(QLatin1String("train-images-idx3-ubyte.gz")),
             qPrintable(panel.errorText()));
    child<QLineEdit>(panel, "dataDir")->clear();
    QVERIFY2(panel.errorText().isEmpty(), qPrintable(panel.errorText()));
    QCOMPARE(panel.config().data, std::string("fashion-mnist"));
    child<QComboBox>(panel, "dataSource")->setCurrentIndex(0);
    QVERIFY(panel.errorText().isEmpty());

    child<QLineEdit>(panel, "rankTable")->setText(QStringLiteral("/no/such/hccl.json"));
    QVERIFY2(panel.errorText().startsWith(QLatin1String("Rank table:")), qPrintable(panel.errorText()));
    child<QLineEdit>(panel, "rankTable")
        ->setText(QStringLiteral(RANKSIGHT_TEST_DATA "/ranktables/valid_4p.json"));
    QVERIFY2(panel.errorText().isEmpty(), qPrintable(panel.errorText()));
    child<QSpinBox>(panel, "ranks")->setValue(2); // the table has 4 devices
    QVERIFY2(panel.errorText().startsWith(QLatin1String("Rank table:")), qPrintable(panel.errorText()));
    child<QSpinBox>(panel, "ranks")->setValue(4);
    QVERIFY(panel.errorText().isEmpty());

    QFile existing(m_tmp.filePath(QStringLiteral("taken.h5")));
    QVERIFY(existing.open(QIODevice::WriteOnly));
    existing.close();
    child<QLineEdit>(panel, "out")->setText(existing.fileName());
    QVERIFY2(panel.errorText().startsWith(QLatin1String("Run file:")), qPrintable(panel.errorText()));
    child<QLineEdit>(panel, "seed")->clear();
    QVERIFY(!panel.buildConfig(nullptr, &error));
    QVERIFY2(error.startsWith(QLatin1String("Seed:")), qPrintable(error));
    panel.resize(460, 520);
    maybeGrab(&panel, "run-invalid");
}

void TestPanels::faultsGoIntoTheConfig() {
    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    child<QLineEdit>(panel, "faults")->setText(QStringLiteral("grad-sum, sdc-after@30:2  straggler:1"));
    QVERIFY2(panel.errorText().isEmpty(), qPrintable(panel.errorText()));
    TrainConfig c;
    QString error;
    QVERIFY2(panel.buildConfig(&c, &error), qPrintable(error));
    QCOMPARE(c.faults, (std::vector<std::string>{"grad-sum", "sdc-after@30:2", "straggler:1"}));
    child<QLineEdit>(panel, "faults")->setText(QStringLiteral("grad-sum no-such-fault"));
    QVERIFY2(panel.errorText().startsWith(QLatin1String("Faults:")), qPrintable(panel.errorText()));
    QVERIFY(panel.errorText().contains(QLatin1String("no-such-fault")));
    QVERIFY(!child<QPushButton>(panel, "start")->isEnabled());
    child<QLineEdit>(panel, "faults")->clear();
    QVERIFY(panel.buildConfig(&c, &error));
    QVERIFY(c.faults.empty());
}

// Nodes say how the cards are spread over processes, not what is trained: the preset stays, the config
// carries them, and cards that do not split evenly over the nodes are refused with the reason.
void TestPanels::nodesSpreadTheCardsWithoutLeavingThePreset() {
    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    QVERIFY(panel.loadPreset(QStringLiteral("quick")));
    child<QSpinBox>(panel, "nodes")->setValue(2);
    QCOMPARE(panel.presetName(), QStringLiteral("quick"));
    TrainConfig c;
    QString error;
    QVERIFY2(panel.buildConfig(&c, &error), qPrintable(error));
    QCOMPARE(c.nodes, 2);
    QCOMPARE(c.ranks, 4);
    child<QSpinBox>(panel, "ranks")->setValue(5);
    QVERIFY2(panel.errorText().contains(QLatin1String("5 ranks do not split evenly over 2 nodes")),
             qPrintable(panel.errorText()));
    QVERIFY(!child<QPushButton>(panel, "start")->isEnabled());
    child<QSpinBox>(panel, "nodes")->setValue(1);
    QVERIFY(panel.errorText().isEmpty());

    QSettings settings(m_tmp.filePath(QStringLiteral("nodes.ini")), QSettings::IniFormat);
    panel.setNodes(4);
    panel.saveState(settings);
    RunPanel restored;
    restored.restoreState(settings);
    QCOMPARE(child<QSpinBox>(restored, "nodes")->value(), 4);
}

void TestPanels::setRunningTogglesButtons() {
    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    auto* start = child<QPushButton>(panel, "start");
    auto* stop = child<QPushButton>(panel, "stop");
    QVERIFY(start->isEnabled());
    QVERIFY(!stop->isEnabled());
    panel.setRunning(true);
    QVERIFY(!start->isEnabled());
    QVERIFY(stop->isEnabled());
    QVERIFY(!child<QComboBox>(panel, "model")->isEnabled());
    QSignalSpy stopSpy(&panel, &RunPanel::stopRequested);
    QTest::mouseClick(stop, Qt::LeftButton);
    QCOMPARE(stopSpy.count(), 1);
    panel.resize(460, 460);
    maybeGrab(&panel, "run-running");
    panel.setRunning(false);
    QVERIFY(start->isEnabled());
    QVERIFY(!stop->isEnabled());
    QVERIFY(child<QComboBox>(panel, "model")->isEnabled());
}

void TestPanels::startOnlyWhenValid() {
    RunPanel panel;
    panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    QSignalSpy startSpy(&panel, &RunPanel::startRequested);
    auto* start = child<QPushButton>(panel, "start");
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(startSpy.count(), 1);

    // A rank table that vanishes after the form was checked: Start looks again and refuses.
    const QString table = m_tmp.filePath(QStringLiteral("hccl.json"));
    QVERIFY(QFile::copy(QStringLiteral(RANKSIGHT_TEST_DATA "/ranktables/valid_4p.json"), table));
    child<QLineEdit>(panel, "rankTable")->setText(table);
    QVERIFY(start->isEnabled());
    QVERIFY(QFile::remove(table));
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(startSpy.count(), 1);
    QVERIFY(panel.errorText().startsWith(QLatin1String("Rank table:")));
    QVERIFY(!start->isEnabled());
    QTest::mouseClick(start, Qt::LeftButton);
    QCOMPARE(startSpy.count(), 1);
}

void TestPanels::stateRoundTrips() {
    QSettings settings(m_tmp.filePath(QStringLiteral("state.ini")), QSettings::IniFormat);
    {
        RunPanel panel;
        panel.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
        QVERIFY(panel.loadPreset(QStringLiteral("quick")));
        child<QComboBox>(panel, "precision")->setCurrentIndex(0); // O0
        child<QLineEdit>(panel, "seed")->setText(QStringLiteral("42"));
        panel.saveState(settings);
    }
    RunPanel restored;
    restored.setRunsDir(m_tmp.filePath(QStringLiteral("runs")));
    restored.restoreState(settings);
    QCOMPARE(restored.presetName(), QStringLiteral("custom"));
    const TrainConfig c = restored.config();
    QCOMPARE(c.model, ModelKind::SmallCnn);
    QCOMPARE(c.precision, Precision::O0);
    QCOMPARE(c.seed, uint64_t(42));
}

void TestPanels::replayAdvancesAndStopsAtTheEnd() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta());
    ReplayControl replay(&model, &cursor);
    cursor.setStep(0);
    replay.setSpeed(500);
    QCOMPARE(replay.speed(), 500);
    QSignalSpy playing(&replay, &ReplayControl::playingChanged);
    replay.play();
    QVERIFY(replay.isPlaying());
    QTRY_VERIFY(cursor.step() > 0);
    QTRY_VERIFY_WITH_TIMEOUT(!replay.isPlaying(), 10000);
    QCOMPARE(cursor.step(), int64_t(kSteps - 1));
    QCOMPARE(replay.slider()->value(), kSteps - 1);
    QCOMPARE(replay.positionText(), QStringLiteral("step 49 / 49"));
    QCOMPARE(playing.count(), 2);

    replay.setSpeed(1); // slow: in 400 ms at most one step
    cursor.setStep(10);
    replay.play();
    QTest::qWait(400);
    QVERIFY(cursor.step() <= 11);
    replay.pause();
    replay.resize(640, 40);
    maybeGrab(&replay, "replay");
}

void TestPanels::replaySpaceSliderAndFollow() {
    RunModel model;
    StepCursor cursor;
    model.applyDelta(firstDelta());
    ReplayControl replay(&model, &cursor);
    cursor.setStep(5);
    QTest::keyClick(&replay, Qt::Key_Space);
    QVERIFY(replay.isPlaying());
    QTest::keyClick(replay.slider(), Qt::Key_Space); // unhandled by the slider: the control toggles
    QVERIFY(!replay.isPlaying());

    replay.slider()->setValue(10);
    QCOMPARE(cursor.step(), int64_t(10));
    QVERIFY(!cursor.following());
    cursor.setStep(20);
    QCOMPARE(replay.slider()->value(), 20);

    QTest::mouseClick(replay.followButton(), Qt::LeftButton);
    QVERIFY(cursor.following());
    QCOMPARE(cursor.step(), int64_t(kSteps - 1));
    QVERIFY(replay.followButton()->isChecked());
    cursor.setStep(3);
    QVERIFY(!replay.followButton()->isChecked());
}

QTEST_MAIN(TestPanels)
#include "tst_panels.moc"
