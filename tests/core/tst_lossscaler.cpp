// Loss scaling follows MindSpore's managers step by step on scripted overflow patterns.
#include "train/LossScaler.h"

#include <QtTest>

using namespace rs;

class TestLossScaler : public QObject {
    Q_OBJECT
private slots:
    void dynamicSequence_data();
    void dynamicSequence();
    void fixedSkipsButKeepsScale();
    void noneNeverSkips();
    void parseSpecs_data();
    void parseSpecs();
};

void TestLossScaler::dynamicSequence_data() {
    QTest::addColumn<QString>("pattern"); // o = overflow, . = clean
    QTest::addColumn<float>("init");
    QTest::addColumn<int>("window");
    QTest::addColumn<QList<float>>("scales"); // scale after each step
    QTest::addColumn<QList<bool>>("skips");
    QTest::addRow("halves on overflow")
        << "ooo" << 1024.f << 2000 << QList<float>{512, 256, 128} << QList<bool>{true, true, true};
    QTest::addRow("doubles after window")
        << "...." << 8.f << 2 << QList<float>{8, 16, 16, 32} << QList<bool>{false, false, false, false};
    QTest::addRow("overflow resets window")
        << ".o.." << 8.f << 2 << QList<float>{8, 4, 4, 8} << QList<bool>{false, true, false, false};
    QTest::addRow("floor at 1") << "oo" << 2.f << 2000 << QList<float>{1, 1} << QList<bool>{true, true};
}

void TestLossScaler::dynamicSequence() {
    QFETCH(QString, pattern);
    QFETCH(float, init);
    QFETCH(int, window);
    QFETCH(QList<float>, scales);
    QFETCH(QList<bool>, skips);
    LossScaleSpec spec;
    spec.mode = LossScaleMode::Dynamic;
    spec.value = init;
    spec.window = window;
    LossScaler scaler(spec);
    QCOMPARE(scaler.scale(), init);
    for (int i = 0; i < pattern.size(); ++i) {
        const bool skipped = scaler.update(pattern[i] == 'o');
        QCOMPARE(skipped, skips[i]);
        QCOMPARE(scaler.scale(), scales[i]);
    }
}

void TestLossScaler::fixedSkipsButKeepsScale() {
    LossScaler scaler(parseLossScale("fixed:1024"));
    QVERIFY(scaler.update(true));
    QCOMPARE(scaler.scale(), 1024.f);
    QVERIFY(!scaler.update(false));
    QCOMPARE(scaler.scale(), 1024.f);
}

void TestLossScaler::noneNeverSkips() {
    LossScaler scaler(parseLossScale("none"));
    QCOMPARE(scaler.scale(), 1.f);
    QVERIFY(!scaler.update(true));
}

void TestLossScaler::parseSpecs_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("valid");
    QTest::addColumn<float>("value");
    QTest::addRow("dynamic default 2^24") << "dynamic" << true << 16777216.f;
    QTest::addRow("dynamic init") << "dynamic:65536" << true << 65536.f;
    QTest::addRow("fixed") << "fixed:128" << true << 128.f;
    QTest::addRow("none") << "none" << true << 1.f;
    QTest::addRow("fixed without value") << "fixed:" << false << 0.f;
    QTest::addRow("garbage") << "sometimes" << false << 0.f;
}

void TestLossScaler::parseSpecs() {
    QFETCH(QString, text);
    QFETCH(bool, valid);
    QFETCH(float, value);
    try {
        const auto spec = parseLossScale(text.toStdString());
        QVERIFY(valid);
        QCOMPARE(spec.value, value);
        QCOMPARE(QString::fromStdString(lossScaleName(spec)), text);
    } catch (const ConfigError& e) {
        QVERIFY2(!valid, e.what());
        QVERIFY(QString(e.what()).contains("loss_scale"));
    }
}

QTEST_GUILESS_MAIN(TestLossScaler)
#include "tst_lossscaler.moc"
