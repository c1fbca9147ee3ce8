// The run panel's checks (RunPanel.h): the form read into a TrainConfig, each field's value checked where
// the user sees it, then the files it names (data, rank table, run file), then the config as a whole.
#include "cluster/RankTable.h"
#include "panels/KeyEditor.h"
#include "panels/PathEdit.h"
#include "panels/RunPanel.h"
#include "train/ConfigKeys.h"
#include "train/Dataset.h"
#include "train/FashionMnist.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>

namespace rs {
namespace {

// A ConfigError says "key: problem"; the form names the field as the user sees it instead.
QString problemOf(const ConfigError& e) {
    const QString what = QString::fromUtf8(e.what());
    const qsizetype colon = what.indexOf(QStringLiteral(": "));
    return colon < 0 ? what : what.mid(colon + 2);
}

// The CIFAR-10 binary files missing from dir, by name.
QStringList missingCifarFiles(const QDir& dir) {
    QStringList missing;
    for (Split split : {Split::Train, Split::Test})
        for (const std::string& name : Cifar10Dataset::expectedFiles(split))
            if (!dir.exists(QString::fromStdString(name)))
                missing << QString::fromStdString(name);
    return missing;
}

} // namespace

// Reads through QFile so a built-in table (":/ranktables/...") validates like a file on disk.
RankTableCheck RunPanel::checkRankTable(const QString& path, int ranks) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return loadRankTable(path.toStdString(), ranks); // reports the unreadable file in core's words
    return parseRankTable(file.readAll().toStdString(), ranks);
}

RunPanel::FieldError RunPanel::validate(TrainConfig* out) const {
    TrainConfig c = m_base;
    for (const KeyField& f : m_keyFields)
        if (const QString message = readKeyValue(f.editor, *f.key, c); !message.isEmpty())
            return {f.editor, message};
    FieldError e = readComposite(c);
    if (e.message.isEmpty())
        e = validateFiles(c);
    if (!e.message.isEmpty())
        return e;
    try {
        c.validate();
    } catch (const ConfigError& err) {
        return {nullptr, QString::fromUtf8(err.what())};
    }
    *out = c;
    return {};
}

// The rows the panel builds by hand (RunPanelForm.cpp) into c; a fault spec that does not parse is named.
RunPanel::FieldError RunPanel::readComposite(TrainConfig& c) const {
    const bool epochs = m_lengthUnit->currentData() == QLatin1String("epochs");
    c.epochs = epochs ? m_length->value() : 0; // epochs == 0: steps decide
    if (!epochs)
        c.steps = m_length->value();
    c.lossScale.mode = LossScaleMode(m_lossMode->currentIndex());
    if (c.lossScale.mode != LossScaleMode::None)
        c.lossScale.value = float(m_lossValue->value());
    const QString dir = m_dataDir->text().trimmed();
    const QString source = m_dataSource->currentData().toString();
    if (source == QLatin1String("cifar10"))
        c.data = "cifar10:" + dir.toStdString();
    else if (source == QLatin1String("fashion-mnist"))
        c.data = dir.isEmpty() ? std::string("fashion-mnist") : "fashion-mnist:" + dir.toStdString();
    else
        c.data = "synthetic";
    c.rankTable = m_rankTable->text().trimmed().toStdString();
    c.faults.clear();
    for (const QString& spec :
         m_faults->text().split(QRegularExpression(QStringLiteral("[\\s,]+")), Qt::SkipEmptyParts)) {
        try {
            c.addFault(spec.toStdString());
        } catch (const ConfigError& e) {
            return {m_faults, tr("Faults: %1").arg(problemOf(e))};
        }
    }
    c.out = m_out->text().trimmed().toStdString();
    return {};
}

RunPanel::FieldError RunPanel::validateData(const TrainConfig& c) const {
    if (c.data.rfind("fashion-mnist", 0) == 0) {
        const QString given = QString::fromStdString(c.data).mid(14);
        const QString dir = given.isEmpty() ? QString::fromLatin1(kFashionMnistDir) : given;
        for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
            const QString f = QDir(dir).filePath(QString::fromLatin1(stem));
            if (!QFileInfo::exists(f + QStringLiteral(".gz")) && !QFileInfo::exists(f))
                return {m_dataRow,
                        tr("Fashion-MNIST folder: %1 has no %2.gz%3")
                            .arg(dir, QString::fromLatin1(stem),
                                 given.isEmpty() ? tr(" (install the package dataset-fashion-mnist)")
                                                 : QString())};
        }
    } else if (c.data != "synthetic") {
        const QString dir = QString::fromStdString(c.data.substr(8));
        if (dir.isEmpty())
            return {m_dataRow, tr("CIFAR-10 folder: choose the folder holding data_batch_1.bin …")};
        if (!QFileInfo(dir).isDir())
            return {m_dataRow, tr("CIFAR-10 folder: %1 does not exist").arg(dir)};
        const QStringList missing = missingCifarFiles(QDir(dir));
        if (!missing.isEmpty())
            return {m_dataRow, tr("CIFAR-10 folder: %1 has no %2 (expected the binary version, "
                                  "cifar-10-binary.tar.gz)")
                                   .arg(dir, missing.join(QStringLiteral(", ")))};
    }
    return {};
}

RunPanel::FieldError RunPanel::validateFiles(const TrainConfig& c) const {
    if (FieldError e = validateData(c); !e.message.isEmpty())
        return e;
    if (!c.rankTable.empty()) {
        const QString path = QString::fromStdString(c.rankTable);
        if (!QFileInfo::exists(path))
            return {m_rankTableRow, tr("Rank table: %1 does not exist").arg(path)};
        const RankTableCheck check = checkRankTable(path, c.ranks);
        if (!check.ok())
            return {m_rankTableRow, tr("Rank table: %1").arg(QString::fromStdString(check.summary()))};
    }
    const QString out = QString::fromStdString(c.out);
    if (out.isEmpty())
        return {m_outRow, tr("Run file: choose where to write the run")};
    const QFileInfo info(out);
    if (!info.absoluteDir().exists())
        return {m_outRow, tr("Run file: the folder %1 does not exist").arg(info.absolutePath())};
    if (info.exists())
        return {m_outRow, tr("Run file: %1 already exists; runs are never overwritten").arg(out)};
    return {};
}

} // namespace rs
