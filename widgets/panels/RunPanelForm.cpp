// The run panel's form (RunPanel.h): the preset row, then a row for each config key whose table row
// (core/train/ConfigKeys.h) has a form row, in the table's order. Choice, Spin and Digits rows are generic
// editors (KeyEditor.h); Length, LossScale, Data, Faults, RankTable and RunFile are built here.
#include "cluster/RankTable.h"
#include "diagnose/Cause.h"
#include "panels/KeyEditor.h"
#include "panels/PathEdit.h"
#include "panels/RunPanel.h"
#include "train/ConfigKeys.h"
#include "train/FashionMnist.h"

#include <QComboBox>
#include <QCompleter>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScopedValueRollback>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

namespace rs {
namespace {

QStringList labFaultNames() { // the faults the lab can inject
    QStringList names;
    for (const CauseInfo& c : causes())
        if (c.reproduce)
            names << QString::fromLatin1(c.key);
    return names;
}

} // namespace

QWidget* RunPanel::withButton(QWidget* field, QPushButton* button) {
    auto* row = new QWidget(m_formBox);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    field->setParent(row);
    button->setParent(row);
    h->addWidget(field, 1);
    h->addWidget(button);
    return row;
}

void RunPanel::addRow(QFormLayout* form, const QString& label, QWidget* field, const QString& tip) {
    auto* l = new QLabel(label, m_formBox);
    l->setToolTip(tip);
    l->setBuddy(field);
    field->setToolTip(tip);
    form->addRow(l, field);
}

void RunPanel::buildForm(QFormLayout* form) {
    buildPresetRow(form);
    for (const ConfigKey& key : configKeys()) {
        if (key.form.kind == FormKind::None)
            continue;
        QWidget* field = makeField(key);
        const QString tip = key.form.kind == FormKind::Faults ? faultsTip(key) : tableText(key.form.tip);
        addRow(form, tableText(key.form.label), field, tip);
        if (key.form.kind == FormKind::RunFile)
            m_out->setExplanation(tip); // its own tooltip starts with the full path
    }
    m_ranks = qobject_cast<QSpinBox*>(keyEditor("ranks"));
    m_nodes = qobject_cast<QSpinBox*>(keyEditor("nodes"));
}

QWidget* RunPanel::keyEditor(const char* name) const {
    for (const KeyField& f : m_keyFields)
        if (f.key->name == name)
            return f.editor;
    return nullptr;
}

QWidget* RunPanel::makeField(const ConfigKey& key) {
    switch (key.form.kind) {
    case FormKind::Length:
        return makeLengthRow();
    case FormKind::LossScale:
        return makeLossScaleRow();
    case FormKind::Data:
        return makeDataRow();
    case FormKind::Faults:
        return makeFaultsRow();
    case FormKind::RankTable:
        return makeRankTableRow();
    case FormKind::RunFile:
        return makeRunFileRow();
    default:
        break;
    }
    QWidget* editor = makeKeyEditor(key);
    m_keyFields.push_back({&key, editor});
    return editor;
}

void RunPanel::buildPresetRow(QFormLayout* form) {
    m_preset = new QComboBox;
    m_preset->setObjectName(QStringLiteral("preset"));
    m_preset->addItem(tr("Seed: ResNet-50 × 4, O2"), QStringLiteral("seed"));
    m_preset->addItem(tr("Quick: SmallCNN × 4 (< 1 min)"), QStringLiteral("quick"));
    m_preset->addItem(tr("Seed story: the reported bug, step 1200 (~1 min)"), QStringLiteral("seed-story"));
    m_preset->addItem(tr("Custom"), QStringLiteral("custom"));
    addRow(form, tr("&Preset"), m_preset,
           tr("Seed: the setup the drift was reported on: ResNet-50 on 4 cards, amp_level O2, "
              "DynamicLossScaleManager, 200 steps.\nQuick: SmallCNN on 4 cards, the same story in under a "
              "minute on 2 cores.\nSeed story: the reported bug end to end: 4 cards train well, then rank 1 "
              "restarts its loss scale at step 1200 (fault %1), GRADIENT_SYNC names ranks 0 and 1 and the "
              "loss climbs.\nCustom: anything else; editing a field switches to it.")
               .arg(QString::fromLatin1(causeInfo(Cause::LossScaleNotRestored).key)));
}

QWidget* RunPanel::makeLengthRow() {
    m_length = new QSpinBox;
    m_length->setObjectName(QStringLiteral("length"));
    m_length->setRange(1, 1000000000);
    m_lengthUnit = new QComboBox;
    m_lengthUnit->setObjectName(QStringLiteral("lengthUnit"));
    m_lengthUnit->addItem(tr("steps"), QStringLiteral("steps"));
    m_lengthUnit->addItem(tr("epochs"), QStringLiteral("epochs"));
    m_lengthRow = new QWidget(m_formBox);
    auto* lengthLayout = new QHBoxLayout(m_lengthRow);
    lengthLayout->setContentsMargins(0, 0, 0, 0);
    lengthLayout->addWidget(m_length, 1);
    lengthLayout->addWidget(m_lengthUnit);
    return m_lengthRow;
}

QWidget* RunPanel::makeLossScaleRow() {
    m_lossMode = new QComboBox;
    m_lossMode->setObjectName(QStringLiteral("lossScaleMode"));
    m_lossMode->addItem(tr("none"), QStringLiteral("none"));
    m_lossMode->addItem(tr("fixed"), QStringLiteral("fixed"));
    m_lossMode->addItem(tr("dynamic"), QStringLiteral("dynamic"));
    m_lossValue = new QDoubleSpinBox;
    m_lossValue->setObjectName(QStringLiteral("lossScaleValue"));
    m_lossValue->setDecimals(0);
    m_lossValue->setRange(1, 4294967296.0);
    m_lossRow = new QWidget(m_formBox);
    auto* lossLayout = new QHBoxLayout(m_lossRow);
    lossLayout->setContentsMargins(0, 0, 0, 0);
    lossLayout->addWidget(m_lossMode);
    lossLayout->addWidget(m_lossValue, 1);
    return m_lossRow;
}

QWidget* RunPanel::makeDataRow() {
    m_dataSource = new QComboBox;
    m_dataSource->setObjectName(QStringLiteral("dataSource"));
    m_dataSource->addItem(tr("synthetic"), QStringLiteral("synthetic"));
    m_dataSource->addItem(tr("CIFAR-10 folder"), QStringLiteral("cifar10"));
    m_dataSource->addItem(tr("Fashion-MNIST (real images)"), QStringLiteral("fashion-mnist"));
    m_dataDir = new QLineEdit;
    m_dataDir->setObjectName(QStringLiteral("dataDir"));
    m_dataDir->setPlaceholderText(tr("folder with data_batch_1.bin …"));
    m_dataBrowse = new QPushButton(tr("Browse…"));
    m_dataBrowse->setObjectName(QStringLiteral("dataBrowse"));
    // The folder gets a line of its own, shown only for a data set read from files: paths are long, the dock
    // is narrow.
    m_dataRow = new QWidget(m_formBox);
    auto* dataLayout = new QVBoxLayout(m_dataRow);
    dataLayout->setContentsMargins(0, 0, 0, 0);
    dataLayout->addWidget(m_dataSource);
    m_dataDirRow = withButton(m_dataDir, m_dataBrowse);
    m_dataDirRow->setParent(m_dataRow);
    dataLayout->addWidget(m_dataDirRow);
    connect(m_dataBrowse, &QPushButton::clicked, this, &RunPanel::browseDataDir);
    return m_dataRow;
}

QWidget* RunPanel::makeFaultsRow() {
    m_faults = new QLineEdit;
    m_faults->setObjectName(QStringLiteral("faults"));
    m_faults->setPlaceholderText(tr("none (e.g. %1, %2)")
                                     .arg(QString::fromLatin1(causeInfo(Cause::GradSum).reproduce),
                                          QString::fromLatin1(causeInfo(Cause::SdcAfter).reproduce)));
    m_faults->setCompleter(new QCompleter(labFaultNames(), m_faults));
    return m_faults;
}

// The faults row's tip names what the lab injects, and the causes only a reference run shows.
QString RunPanel::faultsTip(const ConfigKey& key) const {
    return tableText(key.form.tip)
        .arg(labFaultNames().join(QStringLiteral(", ")),
             QString::fromLatin1(causeInfo(Cause::UpdateChanged).key),
             QString::fromLatin1(causeInfo(Cause::LossScaleChanged).key),
             QString::fromLatin1(causeInfo(Cause::AllReduceWrong).key));
}

QWidget* RunPanel::makeRankTableRow() {
    m_rankTable = new QLineEdit;
    m_rankTable->setObjectName(QStringLiteral("rankTable"));
    m_rankTable->setPlaceholderText(tr("generated for the emulated cards"));
    auto* rankBrowse = new QPushButton(tr("Browse…"));
    connect(rankBrowse, &QPushButton::clicked, this, &RunPanel::browseRankTable);
    m_rankTableRow = withButton(m_rankTable, rankBrowse);
    return m_rankTableRow;
}

QWidget* RunPanel::makeRunFileRow() {
    m_out = new PathEdit;
    m_out->setObjectName(QStringLiteral("out"));
    auto* outBrowse = new QPushButton(tr("Browse…"));
    connect(outBrowse, &QPushButton::clicked, this, &RunPanel::browseOut);
    m_outRow = withButton(m_out, outBrowse);
    return m_outRow;
}

void RunPanel::connectEdits() {
    // A key of the config file is what is trained: editing it leaves the preset. One of the command line
    // only (nodes) says how the cards are spread over processes: the preset stays.
    for (const KeyField& f : m_keyFields) {
        if (f.key->isFileKey())
            onKeyEdited(f.editor, this, [this] { onFieldEdited(); });
        else
            onKeyEdited(f.editor, this, [this] { revalidate(); });
    }
    for (QComboBox* c : {m_lengthUnit, m_lossMode, m_dataSource})
        connect(c, &QComboBox::currentIndexChanged, this, &RunPanel::onFieldEdited);
    connect(m_length, &QSpinBox::valueChanged, this, &RunPanel::onFieldEdited);
    for (QLineEdit* e : {m_dataDir, m_rankTable, m_faults})
        connect(e, &QLineEdit::textChanged, this, &RunPanel::onFieldEdited);
    connect(m_lossValue, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        (m_lossMode->currentData() == QLatin1String("fixed") ? m_fixedScale : m_dynamicInit) = float(v);
        onFieldEdited();
    });
    connect(m_lossMode, &QComboBox::currentIndexChanged, this, &RunPanel::onLossScaleModeChanged);
    connect(m_dataSource, &QComboBox::currentIndexChanged, this, &RunPanel::updateDataFolderRow);
    // The run file is where a run goes, not what it trains: editing it keeps the preset.
    connect(m_out, &QLineEdit::textEdited, this, [this] { m_outAuto = false; });
    connect(m_out, &QLineEdit::textChanged, this, &RunPanel::revalidate);
    connect(m_preset, &QComboBox::currentIndexChanged, this, &RunPanel::onPresetChosen);
}

void RunPanel::onLossScaleModeChanged() {
    const QString mode = m_lossMode->currentData().toString();
    m_lossValue->setEnabled(mode != QLatin1String("none"));
    if (mode == QLatin1String("fixed"))
        m_lossValue->setValue(double(m_fixedScale));
    else if (mode == QLatin1String("dynamic"))
        m_lossValue->setValue(double(m_dynamicInit));
}

void RunPanel::updateDataFolderRow() {
    const QString source = m_dataSource->currentData().toString();
    m_dataDirRow->setHidden(source == QLatin1String("synthetic"));
    m_dataDir->setPlaceholderText(source == QLatin1String("fashion-mnist")
                                      ? QString::fromLatin1(kFashionMnistDir)
                                      : tr("folder with data_batch_1.bin …"));
}

// A config shown in the form: what it trains. How this process runs (nodes) is not part of it.
void RunPanel::applyConfig(const TrainConfig& c) {
    const QScopedValueRollback guard(m_applying, true);
    for (const KeyField& f : m_keyFields)
        if (f.key->isFileKey())
            showKeyValue(f.editor, *f.key, c);
    applyComposite(c);
}

void RunPanel::applyComposite(const TrainConfig& c) {
    const bool epochs = c.epochs > 0;
    m_lengthUnit->setCurrentIndex(epochs ? 1 : 0);
    m_length->setValue(int(std::min<int64_t>(epochs ? c.epochs : c.steps, m_length->maximum())));
    if (c.lossScale.mode == LossScaleMode::Fixed)
        m_fixedScale = c.lossScale.value;
    if (c.lossScale.mode == LossScaleMode::Dynamic)
        m_dynamicInit = c.lossScale.value;
    m_lossMode->setCurrentIndex(int(c.lossScale.mode)); // None, Fixed, Dynamic: the combo's order
    onLossScaleModeChanged();
    const QString data = QString::fromStdString(c.data);
    const bool cifar = data.startsWith(QLatin1String("cifar10:"));
    const bool fashion = data.startsWith(QLatin1String("fashion-mnist"));
    m_dataSource->setCurrentIndex(cifar ? 1 : fashion ? 2 : 0);
    m_dataDir->setText(cifar ? data.mid(8) : fashion ? data.mid(14) : QString());
    updateDataFolderRow();
    m_rankTable->setText(QString::fromStdString(c.rankTable));
    QStringList faults;
    for (const auto& f : c.faults)
        faults << QString::fromStdString(f);
    m_faults->setText(faults.join(QLatin1Char(' ')));
    m_outAuto = c.out.empty();
    if (!m_outAuto)
        m_out->setText(QString::fromStdString(c.out));
}

void RunPanel::browseDataDir() {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("CIFAR-10 folder (binary version)"), m_dataDir->text());
    if (dir.isEmpty())
        return;
    m_dataSource->setCurrentIndex(1);
    m_dataDir->setText(dir);
}

void RunPanel::browseRankTable() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Rank table (hccl.json)"), m_rankTable->text(),
                                                      tr("Rank tables (*.json);;All files (*)"));
    if (path.isEmpty())
        return;
    // A valid table decides the card count; an invalid one is left for the error line to explain.
    const RankTableCheck check = checkRankTable(path, -1);
    if (check.ok())
        m_ranks->setValue(check.table->worldSize());
    m_rankTable->setText(path);
}

void RunPanel::browseOut() {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Run file"), m_out->text(), tr("RankSight runs (*.h5)"),
                                     nullptr, QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty())
        return;
    m_outAuto = false;
    m_out->setText(path);
}

} // namespace rs
