// The fault matrix: real runs of `ranksight-cli train --fault ...`, diagnosed from the file alone. Every
// fault on its own must come out as the top finding, near the step it struck and naming the faulty rank;
// two faults together must both be reported.
#include "diagnose/Diagnoser.h"
#include "store/RunReader.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

using namespace rs;

class TestFaultMatrix : public QObject {
    Q_OBJECT

private slots:
    void single_data();
    void single();
    void pair_data();
    void pair();

private:
    std::vector<Finding> trainAndDiagnose(const QStringList& faults, const QString& model,
                                          const QString& precision, const QString& lossScale);
    QTemporaryDir m_dir;
    int m_runs = 0;
};

namespace {

QString describe(const std::vector<Finding>& f) {
    QStringList out;
    for (const auto& x : f)
        out << QString::fromStdString(findingLine(x));
    return out.join(QStringLiteral("\n"));
}

} // namespace

std::vector<Finding> TestFaultMatrix::trainAndDiagnose(const QStringList& faults, const QString& model,
                                                       const QString& precision, const QString& lossScale) {
    const QString out = m_dir.filePath(QStringLiteral("run%1.h5").arg(m_runs++));
    // Small and short: 4 ranks so a lone odd rank is distinguishable; a short collective timeout so the runs
    // where a card leaves end quickly.
    QStringList args{"train",
                     "--model",
                     model,
                     "--ranks",
                     "4",
                     "--batch",
                     "4",
                     "--steps",
                     "20",
                     "--precision",
                     precision,
                     "--loss-scale",
                     lossScale,
                     "--seed",
                     "7",
                     "--set",
                     "timeout_ms=1500",
                     "--set",
                     "weight_every=5", // rows often enough to see BatchNorm statistics stop moving mid-run
                     "--quiet",
                     "--force",
                     "--out",
                     out};
    for (const auto& f : faults)
        args << "--fault" << f;
    QProcess p;
    p.start(RANKSIGHT_CLI, args);
    if (!p.waitForFinished(120000)) {
        qWarning() << "train did not finish:" << args.join(' ');
        return {};
    }
    // Exit 1 is expected where the fault ends the run (a timeout, a refused rank table); the file is written.
    const auto reader = RunReader::open(out.toStdString());
    return diagnoseRun(*reader);
}

void TestFaultMatrix::single_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("precision");
    QTest::addColumn<QString>("lossScale");
    QTest::addColumn<QString>("cause");
    QTest::addColumn<int>("step"); // the step the fault strikes; -1: not tied to a step
    QTest::addColumn<int>("rank"); // a rank the finding must name; -1: any

    QTest::addRow("duplicate-rank-id") << "duplicate-rank-id:2"
                                       << "mlp"
                                       << "O0"
                                       << "dynamic"
                                       << "duplicate-rank-id" << 0 << 2;
    QTest::addRow("rank-table-invalid") << "rank-table-invalid"
                                        << "mlp"
                                        << "O0"
                                        << "dynamic"
                                        << "rank-table-invalid" << -1 << -1;
    QTest::addRow("rank-exit") << "rank-exit@6:1"
                               << "mlp"
                               << "O0"
                               << "dynamic"
                               << "rank-exit" << 6 << 1;
    QTest::addRow("init-mismatch") << "init-mismatch"
                                   << "mlp"
                                   << "O0"
                                   << "dynamic"
                                   << "init-mismatch" << 0 << 3;
    QTest::addRow("shard-overlap") << "shard-overlap"
                                   << "mlp"
                                   << "O0"
                                   << "dynamic"
                                   << "shard-overlap" << 0 << 3;
    QTest::addRow("shard-uneven") << "shard-uneven@8:2"
                                  << "mlp"
                                  << "O0"
                                  << "dynamic"
                                  << "shard-uneven" << 8 << 2;
    QTest::addRow("eval-mode") << "eval-mode@0:3"
                               << "smallcnn"
                               << "O0"
                               << "dynamic"
                               << "eval-mode" << 0 << 3;
    QTest::addRow("eval-mode mid-run") << "eval-mode@5:1"
                                       << "smallcnn"
                                       << "O2"
                                       << "dynamic"
                                       << "eval-mode" << 5 << 1;
    QTest::addRow("loss-scale-too-high") << "loss-scale-too-high"
                                         << "mlp"
                                         << "O2"
                                         << "dynamic"
                                         << "loss-scale-too-high" << 0 << -1;
    QTest::addRow("no-loss-scale") << "no-loss-scale"
                                   << "mlp"
                                   << "O3"
                                   << "dynamic"
                                   << "no-loss-scale" << 0 << -1;
    QTest::addRow("overflow-not-synced") << "overflow-not-synced"
                                         << "smallcnn"
                                         << "O2"
                                         << "dynamic"
                                         << "overflow-not-synced" << 0 << -1;
    QTest::addRow("grad-sum") << "grad-sum"
                              << "mlp"
                              << "O0"
                              << "dynamic"
                              << "grad-sum" << 0 << -1;
    QTest::addRow("param-not-synced") << "param-not-synced"
                                      << "mlp"
                                      << "O0"
                                      << "dynamic"
                                      << "param-not-synced" << 0 << -1;
    // Under a dynamic loss scale too: the flip goes into a gradient element below 1 in magnitude.
    QTest::addRow("sdc-before") << "sdc-before@12:1"
                                << "smallcnn"
                                << "O2"
                                << "dynamic"
                                << "sdc-before" << 12 << 1;
    QTest::addRow("sdc-after") << "sdc-after@8:2"
                               << "mlp"
                               << "O0"
                               << "dynamic"
                               << "sdc-after" << 8 << 2;
    // SmallCNN: its compute time is large enough that a 4x slower card stands out of a loaded machine's noise
    // (an MLP step is ~1 ms, where scheduling jitter alone reaches 2x).
    QTest::addRow("straggler") << "straggler:1"
                               << "smallcnn"
                               << "O0"
                               << "dynamic"
                               << "straggler" << 0 << 1;
}

void TestFaultMatrix::single() {
    QFETCH(QString, spec);
    QFETCH(QString, model);
    QFETCH(QString, precision);
    QFETCH(QString, lossScale);
    QFETCH(QString, cause);
    QFETCH(int, step);
    QFETCH(int, rank);
    const auto f = trainAndDiagnose({spec}, model, precision, lossScale);
    QVERIFY2(!f.empty(), "no finding");
    QVERIFY2(f.front().cause == cause.toStdString(), qPrintable(describe(f)));
    if (step >= 0) {
        // Some symptoms only show once the dynamic loss scale came down or after the next weight record.
        QVERIFY2(f.front().firstStep >= step - 1 && f.front().firstStep <= step + 10,
                 qPrintable(describe(f)));
    }
    if (rank >= 0)
        QVERIFY2(std::count(f.front().ranks.begin(), f.front().ranks.end(), rank) == 1,
                 qPrintable(describe(f)));
}

void TestFaultMatrix::pair_data() {
    QTest::addColumn<QString>("a");
    QTest::addColumn<QString>("b");
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("causeA");
    QTest::addColumn<QString>("causeB");
    QTest::addRow("grad-sum + straggler") << "grad-sum"
                                          << "straggler:1"
                                          << "smallcnn"
                                          << "grad-sum"
                                          << "straggler";
    // Not param-not-synced with shard-overlap: identical batches on identical weights give identical local
    // gradients, so the parameter left out of the all-reduce agrees anyway (the fault is masked).
    QTest::addRow("param-not-synced + straggler") << "param-not-synced"
                                                  << "straggler:2"
                                                  << "smallcnn"
                                                  << "param-not-synced"
                                                  << "straggler";
    QTest::addRow("eval-mode + grad-sum") << "eval-mode@0:3"
                                          << "grad-sum"
                                          << "smallcnn"
                                          << "eval-mode"
                                          << "grad-sum";
    QTest::addRow("init-mismatch + sdc-after") << "init-mismatch"
                                               << "sdc-after@8:2"
                                               << "mlp"
                                               << "init-mismatch"
                                               << "sdc-after";
}

void TestFaultMatrix::pair() {
    QFETCH(QString, a);
    QFETCH(QString, b);
    QFETCH(QString, model);
    QFETCH(QString, causeA);
    QFETCH(QString, causeB);
    const auto f = trainAndDiagnose({a, b}, model, "O0", "dynamic");
    auto has = [&](const QString& c) {
        return std::any_of(f.begin(), f.end(), [&](const Finding& x) { return x.cause == c.toStdString(); });
    };
    QVERIFY2(has(causeA), qPrintable(describe(f)));
    QVERIFY2(has(causeB), qPrintable(describe(f)));
}

QTEST_GUILESS_MAIN(TestFaultMatrix)
#include "tst_faultmatrix.moc"
