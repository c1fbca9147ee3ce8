// Data sets: the synthetic set is deterministic, balanced, split-dependent and not separable by pixel
// means alone; the CIFAR-10 reader returns the bytes it was given and names the file in every error.
#include "train/Dataset.h"
#include "train/FashionMnist.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <array>
#include <cmath>
#include <thread>
#include <vector>
#include <zlib.h>

using namespace rs;

namespace {

using Image = std::array<uint8_t, kImageBytes>;

// The message of the DataError f throws, or an empty string if it throws none.
template <class F> QString dataErrorOf(F&& f) {
    try {
        f();
    } catch (const DataError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// Test fixture bytes: file k (0-based, test_batch is 5) record r.
int fixtureLabel(int file, int record) {
    return (file * 7 + record * 3) % kNumClasses;
}
uint8_t fixturePixel(int file, int record, int p) {
    return uint8_t((file * 31 + record * 17 + p * 5) & 0xff);
}
int fixtureRecords(int file) {
    return file == 5 ? 3 : file + 1;
} // 1..5 train records per file, 3 test

QString fixtureName(int file) {
    return file == 5 ? QStringLiteral("test_batch.bin") : QStringLiteral("data_batch_%1.bin").arg(file + 1);
}

QByteArray fixtureFile(int file) {
    QByteArray bytes;
    for (int r = 0; r < fixtureRecords(file); ++r) {
        bytes.append(char(fixtureLabel(file, r)));
        for (int p = 0; p < kImageBytes; ++p)
            bytes.append(char(fixturePixel(file, r, p)));
    }
    return bytes;
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
    QCOMPARE(f.write(bytes), bytes.size());
}

// Writes data_batch_1..5.bin and test_batch.bin in the CIFAR-10 binary format into dir.
void writeCifarFixture(const QString& dir) {
    for (int file = 0; file < 6; ++file)
        writeFile(dir + "/" + fixtureName(file), fixtureFile(file));
}

} // namespace

// Fashion-MNIST's idx files as the data set ships them: a big-endian header, then bytes; gzip unless plain.
QByteArray be32(uint32_t v) {
    const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
    return QByteArray(b, 4);
}
uint8_t fashionPixel(int image, int y, int x) {
    return uint8_t(1 + (image * 31 + y * 7 + x * 3) % 250); // never 0, so the padding is told apart
}
QByteArray fashionImages(int count, int side = 28) {
    QByteArray b = be32(0x00000803) + be32(uint32_t(count)) + be32(uint32_t(side)) + be32(uint32_t(side));
    for (int i = 0; i < count; ++i)
        for (int y = 0; y < side; ++y)
            for (int x = 0; x < side; ++x)
                b.append(char(fashionPixel(i, y, x)));
    return b;
}
QByteArray fashionLabels(int count) {
    QByteArray b = be32(0x00000801) + be32(uint32_t(count));
    for (int i = 0; i < count; ++i)
        b.append(char((i * 3) % 10));
    return b;
}
void writeGzip(const QString& path, const QByteArray& bytes) {
    gzFile f = gzopen(QFile::encodeName(path).constData(), "wb");
    QVERIFY(f);
    QCOMPARE(gzwrite(f, bytes.constData(), unsigned(bytes.size())), int(bytes.size()));
    QCOMPARE(gzclose(f), Z_OK);
}
// train: 6 images, t10k: 4.
void writeFashionFixture(const QString& dir) {
    writeGzip(dir + "/train-images-idx3-ubyte.gz", fashionImages(6));
    writeGzip(dir + "/train-labels-idx1-ubyte.gz", fashionLabels(6));
    writeGzip(dir + "/t10k-images-idx3-ubyte.gz", fashionImages(4));
    writeGzip(dir + "/t10k-labels-idx1-ubyte.gz", fashionLabels(4));
}

class TestDataset : public QObject {
    Q_OBJECT

private slots:
    void syntheticIsDeterministic_data();
    void syntheticIsDeterministic();
    void syntheticIsDeterministicAcrossThreads();
    void syntheticLabelsAreBalanced_data();
    void syntheticLabelsAreBalanced();
    void syntheticSplitsAndSeedsDiffer();
    void syntheticSizesAndDescription();
    void syntheticPixelsLookLikeImages();
    void syntheticNotSeparableByPixelMeans();
    void cifarReadsRecordsInOrder();
    void cifarSplitNeedsOnlyItsFiles();
    void cifarErrorsNameTheFile_data();
    void cifarErrorsNameTheFile();
    void openDatasetSpecs();
    void fashionMnistPadsAndRepeats();
    void fashionMnistErrorsNameTheFile_data();
    void fashionMnistErrorsNameTheFile();
    void fashionMnistInstalledSet();
};

void TestDataset::syntheticIsDeterministic_data() {
    QTest::addColumn<bool>("train");
    QTest::addColumn<quint64>("seed");
    QTest::addRow("train seed 0") << true << quint64(0);
    QTest::addRow("test seed 0") << false << quint64(0);
    QTest::addRow("train seed 7") << true << quint64(7);
}

void TestDataset::syntheticIsDeterministic() {
    QFETCH(bool, train);
    QFETCH(quint64, seed);
    const Split split = train ? Split::Train : Split::Test;
    SyntheticCifar a(split, seed), b(split, seed);
    for (int64_t index : {int64_t(0), int64_t(1), int64_t(9), int64_t(4321), a.size() - 1}) {
        Image x{}, y{}, z{};
        const int lx = a.get(index, x.data());
        const int ly = a.get(index, y.data()); // again, same object
        const int lz = b.get(index, z.data()); // another object
        QCOMPARE(lx, ly);
        QCOMPARE(lx, lz);
        QCOMPARE(lx, a.label(index));
        QVERIFY(x == y);
        QVERIFY(x == z);
    }
}

void TestDataset::syntheticIsDeterministicAcrossThreads() {
    const SyntheticCifar ds(Split::Train, 3);
    constexpr int kCount = 200, kThreads = 4;
    std::vector<Image> reference(kCount);
    std::vector<int> refLabels(kCount);
    for (int i = 0; i < kCount; ++i)
        refLabels[i] = ds.get(i, reference[i].data());

    // Every thread renders all indices, in a different order, from the same shared object.
    std::vector<std::vector<Image>> got(kThreads, std::vector<Image>(kCount));
    std::vector<std::vector<int>> gotLabels(kThreads, std::vector<int>(kCount));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            for (int k = 0; k < kCount; ++k) {
                const int i = (k * 37 + t * 11) % kCount;
                gotLabels[t][i] = ds.get(i, got[t][i].data());
            }
        });
    for (auto& th : threads)
        th.join();
    for (int t = 0; t < kThreads; ++t)
        for (int i = 0; i < kCount; ++i) {
            QCOMPARE(gotLabels[t][i], refLabels[i]);
            QVERIFY2(got[t][i] == reference[i], qPrintable(QString("thread %1 index %2").arg(t).arg(i)));
        }
}

void TestDataset::syntheticLabelsAreBalanced_data() {
    QTest::addColumn<bool>("train");
    QTest::addColumn<quint64>("seed");
    QTest::addColumn<qint64>("start");
    QTest::addRow("train from 0") << true << quint64(0) << qint64(0);
    QTest::addRow("test from 0") << false << quint64(0) << qint64(0);
    QTest::addRow("train seed 5 from 33333") << true << quint64(5) << qint64(33333);
}

void TestDataset::syntheticLabelsAreBalanced() {
    QFETCH(bool, train);
    QFETCH(quint64, seed);
    QFETCH(qint64, start);
    const SyntheticCifar ds(train ? Split::Train : Split::Test, seed);
    constexpr int kCount = 5000;
    std::array<int, kNumClasses> counts{};
    for (int64_t i = start; i < start + kCount; ++i) {
        const int l = ds.label(i);
        QVERIFY(l >= 0 && l < kNumClasses);
        ++counts[size_t(l)];
    }
    for (int c = 0; c < kNumClasses; ++c)
        QVERIFY2(counts[c] >= 0.08 * kCount && counts[c] <= 0.12 * kCount,
                 qPrintable(QString("class %1: %2 of %3").arg(c).arg(counts[c]).arg(kCount)));
    // Labels are not simply index % 10.
    int modMatches = 0;
    for (int64_t i = start; i < start + 1000; ++i)
        modMatches += ds.label(i) == int(i % kNumClasses);
    QVERIFY2(modMatches < 200, qPrintable(QString("%1 of 1000 labels equal index %% 10").arg(modMatches)));
}

void TestDataset::syntheticSplitsAndSeedsDiffer() {
    const SyntheticCifar train(Split::Train, 0), test(Split::Test, 0), other(Split::Train, 1);
    int sameLabels = 0, sameImages = 0;
    double meanAbsDiff = 0;
    for (int i = 0; i < 50; ++i) {
        Image a{}, b{}, c{};
        const int la = train.get(i, a.data()), lb = test.get(i, b.data()), lc = other.get(i, c.data());
        sameLabels += (la == lb) + (la == lc);
        sameImages += (a == b) + (a == c);
        for (int p = 0; p < kImageBytes; ++p)
            meanAbsDiff += std::abs(int(a[p]) - int(b[p]));
    }
    QCOMPARE(sameImages, 0);
    QVERIFY2(sameLabels < 40, qPrintable(QString("%1 of 100 labels equal").arg(sameLabels)));
    meanAbsDiff /= 50.0 * kImageBytes;
    QVERIFY2(meanAbsDiff > 20, qPrintable(QString("mean |train - test| %1").arg(meanAbsDiff)));
}

void TestDataset::syntheticSizesAndDescription() {
    QCOMPARE(SyntheticCifar(Split::Train).size(), int64_t(50000));
    QCOMPARE(SyntheticCifar(Split::Test).size(), int64_t(10000));
    const SyntheticCifar small(Split::Train, 7, 123);
    QCOMPARE(small.size(), int64_t(123));
    QCOMPARE(QString::fromStdString(small.describe()),
             QString("synthetic CIFAR-10 (train, 123 images, seed 7)"));
    QCOMPARE(QString::fromStdString(SyntheticCifar(Split::Test, 2).describe()),
             QString("synthetic CIFAR-10 (test, 10000 images, seed 2)"));
    Image img{};
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, small.get(123, img.data()));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, small.get(-1, img.data()));
}

void TestDataset::syntheticPixelsLookLikeImages() {
    // Mid-range, varied pixels in every channel: not black, not saturated, not flat.
    const SyntheticCifar ds(Split::Train, 0);
    constexpr int kCount = 100;
    for (int ch = 0; ch < kImageC; ++ch) {
        double sum = 0, sum2 = 0;
        for (int i = 0; i < kCount; ++i) {
            Image img{};
            ds.get(i, img.data());
            for (int p = 0; p < kImageH * kImageW; ++p) {
                const double v = img[size_t(ch * kImageH * kImageW + p)];
                sum += v;
                sum2 += v * v;
            }
        }
        const double n = double(kCount) * kImageH * kImageW, mean = sum / n;
        const double sd = std::sqrt(sum2 / n - mean * mean);
        QVERIFY2(mean > 60 && mean < 190, qPrintable(QString("channel %1 mean %2").arg(ch).arg(mean)));
        QVERIFY2(sd > 30, qPrintable(QString("channel %1 std dev %2").arg(ch).arg(sd)));
    }
}

void TestDataset::syntheticNotSeparableByPixelMeans() {
    // Nearest class mean on raw pixels: class means must differ (there is signal), yet this
    // pixel-template classifier must stay far from perfect (position, colour and phase vary).
    const SyntheticCifar train(Split::Train, 0), test(Split::Test, 0);
    constexpr int kTrain = 2000, kTest = 500;
    std::vector<std::array<double, kImageBytes>> means(kNumClasses);
    for (auto& m : means)
        m.fill(0);
    std::array<int, kNumClasses> counts{};
    Image img{};
    for (int i = 0; i < kTrain; ++i) {
        const int l = train.get(i, img.data());
        ++counts[size_t(l)];
        for (int p = 0; p < kImageBytes; ++p)
            means[size_t(l)][size_t(p)] += img[size_t(p)];
    }
    for (int c = 0; c < kNumClasses; ++c)
        for (double& v : means[size_t(c)])
            v /= counts[size_t(c)];
    double minMeanDistance = 1e30;
    for (int a = 0; a < kNumClasses; ++a)
        for (int b = a + 1; b < kNumClasses; ++b) {
            double d = 0;
            for (int p = 0; p < kImageBytes; ++p)
                d += std::pow(means[size_t(a)][size_t(p)] - means[size_t(b)][size_t(p)], 2);
            minMeanDistance = std::min(minMeanDistance, std::sqrt(d / kImageBytes));
        }
    QVERIFY2(minMeanDistance > 3,
             qPrintable(QString("closest class means differ by %1 rms").arg(minMeanDistance)));

    int correct = 0;
    for (int i = 0; i < kTest; ++i) {
        const int l = test.get(i, img.data());
        int best = -1;
        double bestD = 1e300;
        for (int c = 0; c < kNumClasses; ++c) {
            double d = 0;
            for (int p = 0; p < kImageBytes; ++p)
                d += std::pow(img[size_t(p)] - means[size_t(c)][size_t(p)], 2);
            if (d < bestD)
                bestD = d, best = c;
        }
        correct += best == l;
    }
    const double acc = double(correct) / kTest;
    qInfo("nearest class mean on pixels: %.1f%% held-out", 100 * acc);
    QVERIFY2(acc > 0.2, qPrintable(QString("accuracy %1: class means carry no signal").arg(acc)));
    QVERIFY2(acc < 0.9, qPrintable(QString("accuracy %1: trivially separable").arg(acc)));
}

void TestDataset::cifarReadsRecordsInOrder() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    writeCifarFixture(tmp.path());

    const auto train = Cifar10Dataset::open(tmp.path().toStdString(), Split::Train);
    QCOMPARE(train->size(), int64_t(1 + 2 + 3 + 4 + 5));
    int64_t index = 0;
    for (int file = 0; file < 5; ++file)
        for (int r = 0; r < fixtureRecords(file); ++r, ++index) {
            Image img{};
            QCOMPARE(train->get(index, img.data()), fixtureLabel(file, r));
            for (int p = 0; p < kImageBytes; ++p)
                QCOMPARE(img[size_t(p)], fixturePixel(file, r, p));
        }
    QCOMPARE(QString::fromStdString(train->describe()),
             QString("CIFAR-10 %1 (train, 15 images)").arg(tmp.path()));

    const auto test = Cifar10Dataset::open(tmp.path().toStdString(), Split::Test);
    QCOMPARE(test->size(), int64_t(3));
    Image img{};
    QCOMPARE(test->get(2, img.data()), fixtureLabel(5, 2));
    QCOMPARE(img[100], fixturePixel(5, 2, 100));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, test->get(3, img.data()));
}

void TestDataset::cifarSplitNeedsOnlyItsFiles() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    writeCifarFixture(tmp.path());
    QVERIFY(QFile::remove(tmp.path() + "/test_batch.bin"));
    QCOMPARE(Cifar10Dataset::open(tmp.path().toStdString(), Split::Train)->size(), int64_t(15));
    QVERIFY(!dataErrorOf([&] { Cifar10Dataset::open(tmp.path().toStdString(), Split::Test); }).isEmpty());
}

void TestDataset::cifarErrorsNameTheFile_data() {
    QTest::addColumn<QString>("breakage");
    QTest::addColumn<bool>("train");
    QTest::addColumn<QStringList>("expected"); // every one must appear in the message
    QTest::addRow("missing directory") << "nodir" << true << QStringList{"nonexistent", "does not exist"};
    QTest::addRow("not a directory") << "file" << true << QStringList{"data_batch_1.bin", "not a directory"};
    QTest::addRow("missing train file")
        << "rm data_batch_3.bin" << true
        << QStringList{"data_batch_3.bin' is missing", "data_batch_1.bin", "data_batch_5.bin"};
    QTest::addRow("two missing") << "rm data_batch_2.bin data_batch_4.bin" << true
                                 << QStringList{"data_batch_2.bin' is missing",
                                                "also missing: data_batch_4.bin"};
    QTest::addRow("missing test file")
        << "rm test_batch.bin" << false << QStringList{"test_batch.bin' is missing", "test split"};
    QTest::addRow("parent of the tarball folder")
        << "nest" << true
        << QStringList{"data_batch_1.bin' is missing", "did you mean", "cifar-10-batches-bin"};
    QTest::addRow("truncated") << "truncate data_batch_2.bin 6046" << true
                               << QStringList{"data_batch_2.bin", "6046 bytes", "1 whole records",
                                              "remainder 2973"};
    QTest::addRow("one byte over") << "truncate test_batch.bin 9220" << false
                                   << QStringList{"test_batch.bin", "9220 bytes", "3 whole records",
                                                  "remainder 1"};
    QTest::addRow("bad label") << "label data_batch_4.bin 2 12" << true
                               << QStringList{"data_batch_4.bin", "record 2", "byte offset 6146", "label 12"};
    QTest::addRow("label 255") << "label test_batch.bin 0 255" << false
                               << QStringList{"test_batch.bin", "record 0", "label 255"};
    QTest::addRow("empty file") << "truncate data_batch_5.bin 0" << true
                                << QStringList{"data_batch_5.bin", "empty"};
}

void TestDataset::cifarErrorsNameTheFile() {
    QFETCH(QString, breakage);
    QFETCH(bool, train);
    QFETCH(QStringList, expected);
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    writeCifarFixture(tmp.path());

    QString dir = tmp.path();
    const QStringList words = breakage.split(' ');
    if (words[0] == "nodir") {
        dir = tmp.path() + "/nonexistent";
    } else if (words[0] == "file") {
        dir = tmp.path() + "/data_batch_1.bin";
    } else if (words[0] == "nest") {
        dir = tmp.path() + "/outer";
        QVERIFY(QDir().mkpath(dir + "/cifar-10-batches-bin"));
    } else if (words[0] == "rm") {
        for (int i = 1; i < words.size(); ++i)
            QVERIFY(QFile::remove(tmp.path() + "/" + words[i]));
    } else if (words[0] == "truncate") {
        QVERIFY(QFile::resize(tmp.path() + "/" + words[1], words[2].toLongLong()));
    } else if (words[0] == "label") {
        QFile f(tmp.path() + "/" + words[1]);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.seek(words[2].toLongLong() * kCifarRecordBytes));
        QCOMPARE(f.write(QByteArray(1, char(words[3].toInt()))), qint64(1));
    } else {
        QFAIL("unknown breakage");
    }

    const QString msg =
        dataErrorOf([&] { Cifar10Dataset::open(dir.toStdString(), train ? Split::Train : Split::Test); });
    QVERIFY2(!msg.isEmpty(), "no DataError thrown");
    for (const QString& e : expected)
        QVERIFY2(msg.contains(e), qPrintable(QString("'%1' not in: %2").arg(e, msg)));
}

void TestDataset::openDatasetSpecs() {
    const auto synth = openDataset("synthetic", Split::Test, 11);
    QCOMPARE(QString::fromStdString(synth->describe()),
             QString("synthetic CIFAR-10 (test, 10000 images, seed 11)"));
    Image a{}, b{};
    QCOMPARE(synth->get(5, a.data()), SyntheticCifar(Split::Test, 11).get(5, b.data()));
    QVERIFY(a == b);

    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    writeCifarFixture(tmp.path());
    QCOMPARE(openDataset("cifar10:" + tmp.path().toStdString(), Split::Train, 0)->size(), int64_t(15));

    QString msg = dataErrorOf([] { openDataset("bogus", Split::Train, 0); });
    QVERIFY2(msg.contains("bogus") && msg.contains("synthetic") && msg.contains("cifar10:DIR") &&
                 msg.contains("fashion-mnist[:DIR]"),
             qPrintable(msg));
    msg = dataErrorOf([] { openDataset("cifar10:", Split::Train, 0); });
    QVERIFY2(msg.contains("no directory"), qPrintable(msg));
    msg = dataErrorOf([] { openDataset("cifar10:/nonexistent/cifar", Split::Train, 0); });
    QVERIFY2(msg.contains("/nonexistent/cifar"), qPrintable(msg));
}

// A 28x28 grey image becomes 3 equal 32x32 planes with a 2-pixel black border; the label is the file's.
void TestDataset::fashionMnistPadsAndRepeats() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    writeFashionFixture(tmp.path());
    const auto train = openDataset("fashion-mnist:" + tmp.path().toStdString(), Split::Train, 0);
    QCOMPARE(train->size(), int64_t(6));
    QCOMPARE(QString::fromStdString(train->describe()),
             QString("Fashion-MNIST %1 (train, 6 images)").arg(tmp.path()));
    Image img{};
    for (int i = 0; i < 6; ++i) {
        QCOMPARE(train->get(i, img.data()), (i * 3) % 10);
        for (int y = 0; y < kImageH; ++y)
            for (int x = 0; x < kImageW; ++x) {
                const bool inside = y >= 2 && y < 30 && x >= 2 && x < 30;
                const uint8_t want = inside ? fashionPixel(i, y - 2, x - 2) : 0;
                for (int c = 0; c < kImageC; ++c)
                    QCOMPARE(img[size_t(c * 1024 + y * 32 + x)], want);
            }
    }
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, train->get(6, img.data()));
    QCOMPARE(openDataset("fashion-mnist:" + tmp.path().toStdString(), Split::Test, 0)->size(), int64_t(4));
    // Unpacked files read alike.
    QTemporaryDir plain;
    writeFile(plain.path() + "/t10k-images-idx3-ubyte", fashionImages(4));
    writeFile(plain.path() + "/t10k-labels-idx1-ubyte", fashionLabels(4));
    const auto test = FashionMnistDataset::open(plain.path().toStdString(), Split::Test);
    QCOMPARE(test->get(3, img.data()), 9);
    QCOMPARE(img[size_t(2 * 32 + 2)], fashionPixel(3, 0, 0));
}

void TestDataset::fashionMnistErrorsNameTheFile_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    QTest::addRow("images magic") << "train-images-idx3-ubyte.gz" << fashionLabels(6)
                                  << "train-images-idx3-ubyte.gz' is not an idx image file";
    QTest::addRow("27x27") << "train-images-idx3-ubyte.gz" << fashionImages(6, 27) << "holds 27x27 images";
    QTest::addRow("short images") << "train-images-idx3-ubyte.gz" << fashionImages(6).left(1000)
                                  << "says 6 images but holds 984 bytes";
    QTest::addRow("label count") << "train-labels-idx1-ubyte.gz" << fashionLabels(5)
                                 << "train-labels-idx1-ubyte.gz' holds 5 labels for 6 images";
    QByteArray badLabel = fashionLabels(6);
    badLabel[8 + 4] = char(12);
    QTest::addRow("label 12") << "train-labels-idx1-ubyte.gz" << badLabel << "label 12 of image 4";
    QTest::addRow("not gzip") << "train-labels-idx1-ubyte.gz" << QByteArray("\x1f\x8b\x08garbage", 11)
                              << "train-labels-idx1-ubyte.gz' is not a readable gzip file";
}

void TestDataset::fashionMnistErrorsNameTheFile() {
    QFETCH(QString, file);
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    writeFashionFixture(tmp.path());
    if (QTest::currentDataTag() == QLatin1String("not gzip"))
        writeFile(tmp.path() + "/" + file, bytes);
    else
        writeGzip(tmp.path() + "/" + file, bytes);
    const QString msg =
        dataErrorOf([&] { FashionMnistDataset::open(tmp.path().toStdString(), Split::Train); });
    QVERIFY2(msg.contains(expected), qPrintable(msg));
    QVERIFY2(msg.contains(tmp.path()), qPrintable(msg));
    // A missing file names it.
    QFile::remove(tmp.path() + "/t10k-labels-idx1-ubyte.gz");
    const QString missing =
        dataErrorOf([&] { FashionMnistDataset::open(tmp.path().toStdString(), Split::Test); });
    QVERIFY2(missing.contains("t10k-labels-idx1-ubyte.gz' is missing"), qPrintable(missing));
}

// Debian's dataset-fashion-mnist (.ci/install-deps installs it): the real test split, 1,000 images a class.
void TestDataset::fashionMnistInstalledSet() {
    const auto test = openDataset("fashion-mnist", Split::Test, 0);
    QCOMPARE(test->size(), int64_t(10000));
    std::array<int, kNumClasses> perClass{};
    Image img{};
    for (int64_t i = 0; i < test->size(); ++i)
        ++perClass[size_t(test->get(i, img.data()))];
    for (int n : perClass)
        QCOMPARE(n, 1000);
    QCOMPARE(openDataset("fashion-mnist:", Split::Train, 0)->size(), int64_t(60000));
    // What the window's run estimate counts an epoch as, without reading the files: the sizes opened above.
    QCOMPARE(trainSizeOf("fashion-mnist"), openDataset("fashion-mnist", Split::Train, 0)->size());
    QCOMPARE(trainSizeOf("synthetic"), openDataset("synthetic", Split::Train, 0)->size());
    QCOMPARE(stepsPerEpoch(trainSizeOf("fashion-mnist"), 4, 32), int64_t(468)); // 15,000 per rank / 32
}

QTEST_GUILESS_MAIN(TestDataset)
#include "tst_dataset.moc"
