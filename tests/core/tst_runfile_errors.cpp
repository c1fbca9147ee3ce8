// The run-file reader on bad input: missing paths, directories, empty, text, foreign, newer, truncated and
// inconsistent files are refused with a message that says what was found; rows a killed writer left beyond
// the key column are ignored.
#include "RunFileFixtures.h"
#include "reader/OpenRunFile.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <sys/prctl.h>
#include <sys/wait.h>

using namespace rs;
using namespace rs::runfile_fixtures;

class TestRunFileErrors : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void rowsBeyondTheKeyColumnAreIgnored();
    void badInput_data();
    void badInput();
    void formatVersion1FilesWithVariableLengthStringsStillOpen();

private:
    QString file(const QString& name) const { return m_dir.filePath(name); }
    QTemporaryDir m_dir;
};

void TestRunFileErrors::initTestCase() {
    QVERIFY(m_dir.isValid());
}

void TestRunFileErrors::rowsBeyondTheKeyColumnAreIgnored() {
    // What a kill between writing a row's data and its /steps/step entry leaves behind.
    const RunMeta meta = makeMeta(2, 3, 2, 2);
    const QString path = file("halfrow.h5");
    writeRun(path, meta, 6);
    mutateFile(path, [](H5::H5File& f) {
        for (const char* name : {"/grads/sketch", "/steps/loss"}) {
            H5::DataSet ds = f.openDataSet(name);
            std::vector<hsize_t> dims(size_t(ds.getSpace().getSimpleExtentNdims()));
            ds.getSpace().getSimpleExtentDims(dims.data());
            dims[0] += 1;
            ds.extend(dims.data());
        }
    });
    const auto reader = openRunFile(path.toStdString());
    QCOMPARE(reader->stepCount(), int64_t(6));
    QCOMPARE(reader->readAll().steps.size(), size_t(6));
}

void TestRunFileErrors::badInput_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QStringList>("expected"); // all must appear in the message
    QTest::addRow("nonexistent path") << "missing" << QStringList{"no such file"};
    QTest::addRow("directory") << "directory" << QStringList{"is a directory"};
    QTest::addRow("empty file") << "empty" << QStringList{"is not an HDF5 file (the file is empty)"};
    QTest::addRow("text file") << "text" << QStringList{"is not an HDF5 file", "no HDF5 signature"};
    QTest::addRow("foreign HDF5, no format")
        << "foreign" << QStringList{"not a RankSight run file", "format attribute missing"};
    QTest::addRow("foreign HDF5, format foo")
        << "foo" << QStringList{"not a RankSight run file", "found format 'foo', expected 'ranksight-run'"};
    QTest::addRow("format is a number")
        << "format-int" << QStringList{"format attribute is of class integer"};
    QTest::addRow("newer format_version")
        << "newer"
        << QStringList{
               QStringLiteral("written by a newer RankSight: format_version 7, this build reads up to %1")
                   .arg(runschema::kFormatVersion)};
    QTest::addRow("format_version 0") << "version0" << QStringList{"format_version 0 is invalid"};
    QTest::addRow("missing attribute")
        << "no-world-size" << QStringList{"root attribute 'world_size' is missing"};
    QTest::addRow("missing dataset") << "no-sketch" << QStringList{"dataset /grads/sketch is missing"};
    QTest::addRow("missing group") << "no-flight" << QStringList{"dataset /flight/dumps/reason is missing"};
    QTest::addRow("inconsistent shape")
        << "shape"
        << QStringList{"dataset /grads/local_norm has dims (10,3,5), expected (S,4,5)", "R=world_size"};
    QTest::addRow("world_size disagrees with datasets")
        << "world-size" << QStringList{"dataset /cards/rank has dims (4), expected (0) or (3) (world_size)"};
    QTest::addRow("wrong dtype class")
        << "dtype" << QStringList{"dataset /steps/loss has dtype class integer, expected float"};
    QTest::addRow("variable-length string in a version 2 file")
        << "vlen-v2"
        << QStringList{"root attribute 'model' is a variable-length string",
                       "format_version 2 files hold fixed-length strings only"};
    QTest::addRow("variable-length format attribute in a version 2 file")
        << "vlen-format-v2" << QStringList{"root attribute 'format' is a variable-length string"};
    QTest::addRow("8-byte floats") << "f64"
                                   << QStringList{
                                          "dataset /steps/loss holds 8-byte float values, expected float32"};
    QTest::addRow("signed flags") << "signed-u8"
                                  << QStringList{
                                         "dataset /steps/overflow holds 1-byte signed integer values, "
                                         "expected uint8"};
    QTest::addRow("16-byte integer attribute")
        << "int128"
        << QStringList{"root attribute 'world_size' is a 16-byte integer, expected at most 8 bytes"};
    QTest::addRow("huge extent") << "huge"
                                 << QStringList{"dataset /steps/lr claims 1000000000000 rows",
                                                "the file is corrupt"};
    QTest::addRow("params disagree") << "params"
                                     << QStringList{"dataset /params/offset has dims (4), expected (5)"};
    QTest::addRow("truncated copy") << "truncated" << QStringList{"truncated"};
    QTest::addRow("truncated copy of a killed run")
        << "truncated-killed" << QStringList{"the file is truncated: the last row of /steps/"};
}

void TestRunFileErrors::badInput() {
    QFETCH(QString, kind);
    QFETCH(QStringList, expected);
    const QString path = file("bad-" + kind + ".h5");
    const RunMeta meta = makeMeta(4, 5, 3, 2);
    auto plainHdf5 = [&](const std::function<void(H5::H5File&)>& f) {
        Hdf5Guard guard;
        H5::H5File file(path.toStdString(), H5F_ACC_TRUNC);
        hsize_t n = 3;
        H5::DataSet ds = file.createDataSet("data", H5::PredType::NATIVE_INT, H5::DataSpace(1, &n));
        f(file);
    };
    auto setStrAttr = [](H5::H5File& f, const char* name, const std::string& v) {
        H5::StrType t(H5::PredType::C_S1, H5T_VARIABLE);
        if (f.attrExists(name))
            f.removeAttr(name);
        f.createAttribute(name, t, H5::DataSpace(H5S_SCALAR)).write(t, v);
    };
    auto setIntAttr = [](H5::H5File& f, const char* name, int v) {
        if (f.attrExists(name))
            f.removeAttr(name);
        f.createAttribute(name, H5::PredType::STD_I32LE, H5::DataSpace(H5S_SCALAR))
            .write(H5::PredType::NATIVE_INT, &v);
    };
    auto replaceDataset = [](H5::H5File& f, const char* name, const H5::DataType& t,
                             std::vector<hsize_t> dims) {
        f.unlink(name);
        f.createDataSet(name, t, H5::DataSpace(int(dims.size()), dims.data()));
    };

    if (kind == "missing") {
    } else if (kind == "directory") {
        QVERIFY(QDir().mkpath(path));
    } else if (kind == "empty") {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
    } else if (kind == "text") {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("step,loss\n0,2.30\n1,2.25\n");
    } else if (kind == "foreign") {
        plainHdf5([](H5::H5File&) {});
    } else if (kind == "foo") {
        plainHdf5([&](H5::H5File& f) { setStrAttr(f, "format", "foo"); });
    } else if (kind == "format-int") {
        plainHdf5([&](H5::H5File& f) { setIntAttr(f, "format", 1); });
    } else if (kind == "truncated" || kind == "truncated-killed") {
        const QString good = file("good-for-truncation.h5");
        if (kind == "truncated") {
            writeRun(good, meta, 30);
        } else {
            int counts[2];
            QVERIFY(::pipe(counts) == 0);
            const pid_t pid = ::fork();
            QVERIFY(pid >= 0);
            if (pid == 0) {
                ::prctl(PR_SET_PDEATHSIG, SIGKILL);
                childWriter(good.toStdString(), meta, counts[1], -1, 0);
            }
            ::close(counts[1]);
            QVERIFY(waitForCount(counts[0], 30) >= 30);
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
            ::close(counts[0]);
        }
        QFile in(good);
        QVERIFY(in.open(QIODevice::ReadOnly));
        const QByteArray bytes = in.readAll();
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(bytes.left(bytes.size() / 2));
    } else {
        writeRun(path, meta, 10);
        mutateFile(path, [&](H5::H5File& f) {
            if (kind == "newer")
                setIntAttr(f, "format_version", 7);
            else if (kind == "version0")
                setIntAttr(f, "format_version", 0);
            else if (kind == "no-world-size")
                f.removeAttr("world_size");
            else if (kind == "no-sketch")
                f.unlink("/grads/sketch");
            else if (kind == "no-flight")
                f.unlink("/flight");
            else if (kind == "shape")
                replaceDataset(f, "/grads/local_norm", H5::PredType::IEEE_F32LE, {10, 3, 5});
            else if (kind == "world-size")
                setIntAttr(f, "world_size", 3);
            else if (kind == "dtype")
                replaceDataset(f, "/steps/loss", H5::PredType::STD_I32LE, {10, 4});
            else if (kind == "vlen-v2") { // a version 2 file: what 2 promised, later versions keep
                setIntAttr(f, "format_version", 2);
                setStrAttr(f, "model", "smallcnn");
            } else if (kind == "vlen-format-v2")
                setStrAttr(f, "format", "ranksight-run");
            else if (kind == "f64")
                replaceDataset(f, "/steps/loss", H5::PredType::IEEE_F64LE, {10, 4});
            else if (kind == "signed-u8")
                replaceDataset(f, "/steps/overflow", H5::PredType::STD_I8LE, {10, 4});
            else if (kind == "int128") {
                H5::IntType wide(H5::PredType::STD_I64LE);
                wide.setSize(16);
                const unsigned char v[16] = {4};
                f.removeAttr("world_size");
                f.createAttribute("world_size", wide, H5::DataSpace(H5S_SCALAR)).write(wide, v);
            } else if (kind == "params")
                replaceDataset(f, "/params/offset", H5::PredType::STD_I64LE, {4});
            else if (kind == "huge") {
                f.unlink("/steps/lr");
                hsize_t dims = 1000000000000ull, maxDims = H5S_UNLIMITED, chunk = 64;
                H5::DSetCreatPropList dcpl;
                dcpl.setChunk(1, &chunk);
                f.createDataSet("/steps/lr", H5::PredType::IEEE_F32LE, H5::DataSpace(1, &dims, &maxDims),
                                dcpl);
            } else
                QFAIL("unknown kind");
        });
    }

    const QString err = errorOf([&] { openRunFile(path.toStdString()); });
    QVERIFY2(!err.isEmpty(), "no error");
    qInfo("%s", qPrintable(QString(err).replace(m_dir.path(), "DIR")));
    QVERIFY2(err.startsWith(path), qPrintable(err));
    for (const QString& e : expected)
        QVERIFY2(err.contains(e), qPrintable(QStringLiteral("'%1' not in: %2").arg(e, err)));
}

// Files written before format_version 2 hold their root strings as variable-length strings: they still
// open (through the reader process), with the same meta.
void TestRunFileErrors::formatVersion1FilesWithVariableLengthStringsStillOpen() {
    const QString path = file("version1.h5");
    const RunMeta meta = makeMeta(3, 4, 2, 2);
    writeRun(path, meta, 6);
    mutateFile(path, [](H5::H5File& f) {
        for (const char* name : {"format", "created", "model", "precision", "loss_scale", "data", "config",
                                 "rank_table", "environment"}) {
            H5::Attribute a = f.openAttribute(name);
            QVERIFY(!a.getStrType().isVariableStr()); // version 2 writes fixed-length strings
            std::string value;
            a.read(a.getStrType(), value);
            a.close();
            f.removeAttr(name);
            H5::StrType vlen(H5::PredType::C_S1, H5T_VARIABLE);
            vlen.setCset(H5T_CSET_UTF8);
            f.createAttribute(name, vlen, H5::DataSpace(H5S_SCALAR)).write(vlen, value);
        }
        f.removeAttr("source"); // version 1 files had none: they were all the engine's
        const int v = 1;
        f.openAttribute("format_version").write(H5::PredType::NATIVE_INT, &v);
    });
    const auto r = openRunFile(path.toStdString());
    QCOMPARE(r->formatVersion(), 1);
    QCOMPARE(r->meta().model, meta.model);
    QCOMPARE(r->meta().environment, meta.environment); // UTF-8 survives
    QCOMPARE(r->meta().configJson, meta.configJson);
    QCOMPARE(r->meta().source, std::string("ranksight-engine"));
    QCOMPARE(r->stepCount(), int64_t(6));
}

QTEST_GUILESS_MAIN(TestRunFileErrors)
#include "tst_runfile_errors.moc"
