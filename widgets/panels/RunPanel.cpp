// The run form: see RunPanel.h.
#include "panels/RunPanel.h"

#include "cluster/RankTable.h"
#include "faults/FaultSpec.h"
#include "panels/PathEdit.h"
#include "panels/RunEstimate.h"
#include "panels/RunSummaryView.h"
#include "train/Dataset.h"
#include "train/FashionMnist.h"

#include <QComboBox>
#include <QCompleter>
#include <QDateTime>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QScopedValueRollback>
#include <QSettings>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <iterator>
#include <optional>

namespace rs {

namespace {

const QString kErrorStyle = QStringLiteral("color: #c62828;");

struct ModelChoice {
    ModelKind kind;
    const char* label;
};
constexpr ModelChoice kModels[] = {{ModelKind::Mlp, "MLP"},
                                   {ModelKind::SmallCnn, "SmallCNN"},
                                   {ModelKind::ResNet18, "ResNet-18"},
                                   {ModelKind::ResNet50, "ResNet-50"}};

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

// The built-in presets (":/presets/<name>.json"), in the combo's order.
const QString kPresets[] = {QStringLiteral("seed"), QStringLiteral("quick"), QStringLiteral("seed-story")};

bool isPreset(const QString& name) {
    return std::find(std::begin(kPresets), std::end(kPresets), name) != std::end(kPresets);
}

// A built-in preset's config (no run file), or nothing for another name.
std::optional<TrainConfig> presetConfig(const QString& name) {
    if (!isPreset(name))
        return std::nullopt;
    const QString path = QStringLiteral(":/presets/%1.json").arg(name);
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return std::nullopt;
    try {
        TrainConfig c = TrainConfig::fromJson(file.readAll().toStdString(), path.toStdString());
        c.out.clear();
        return c;
    } catch (const ConfigError&) {
        return std::nullopt; // a built-in preset that does not parse is a build error; tst_panels catches it
    }
}

// What is trained, as the run file records it (every config key, the learning rate as used) and the faults;
// not where it goes (out) or how the cards are spread over processes (nodes).
bool sameSettings(const TrainConfig& a, const TrainConfig& b) {
    return a.toJson() == b.toJson() && a.faults == b.faults;
}

// Reads through QFile so a built-in table (":/ranktables/...") validates like a file on disk.
RankTableCheck checkRankTable(const QString& path, int ranks) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return loadRankTable(path.toStdString(), ranks); // reports the unreadable file in core's words
    return parseRankTable(file.readAll().toStdString(), ranks);
}

} // namespace

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent)
    , m_runsDir(QDir::currentPath()) {
    m_formBox = new QWidget(this);
    m_form = new QFormLayout(m_formBox);
    m_form->setContentsMargins(0, 0, 0, 0);
    buildForm(m_form);

    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("error"));
    m_error->setStyleSheet(kErrorStyle);
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->hide();

    m_estimate = new QLabel(this);
    m_estimate->setObjectName(QStringLiteral("estimate"));
    m_estimate->setWordWrap(true);
    m_estimate->setToolTip(tr("Training time on this machine for these settings, from the images per second "
                              "the last run of this model and precision measured here (or, before one, "
                              "figures measured on a 2-core machine); evaluation and start-up come on top"));

    m_start = new QPushButton(tr("Start"), this);
    m_start->setObjectName(QStringLiteral("start"));
    m_start->setToolTip(tr("Start training with this setup; the run file fills step by step and every "
                           "chart follows it live"));
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName(QStringLiteral("stop"));
    m_stop->setToolTip(tr("Stop the run after the current step; the run file keeps every step so far"));
    m_stop->setEnabled(false);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(m_start);
    buttons->addWidget(m_stop);

    // Page 0: the form; page 1: the settings of a run opened from a file, read-only.
    auto* formPage = new QWidget(this);
    auto* formLayout = new QVBoxLayout(formPage);
    formLayout->setContentsMargins(0, 0, 0, 0);
    formLayout->addWidget(m_formBox);
    formLayout->addWidget(m_error);
    formLayout->addWidget(m_estimate);
    formLayout->addLayout(buttons);
    formLayout->addStretch(1);
    m_summary = new RunSummaryView(this);
    connect(m_summary, &RunSummaryView::newRunRequested, this, &RunPanel::showForm);
    m_pages = new QStackedWidget(this);
    m_pages->addWidget(formPage);
    m_pages->addWidget(m_summary);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_pages);

    connectEdits();
    connect(m_start, &QPushButton::clicked, this, &RunPanel::onStartClicked);
    connect(m_stop, &QPushButton::clicked, this, &RunPanel::stopRequested);
    loadPreset(QStringLiteral("seed-story")); // first launch: the reported bug, reproduced in about a minute
}

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
    buildSetupRows(form);
    buildNumericsRows(form);
    buildInputRows(form);
    buildOutputRows(form);
}

void RunPanel::buildSetupRows(QFormLayout* form) {
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

    m_model = new QComboBox;
    m_model->setObjectName(QStringLiteral("model"));
    for (const ModelChoice& m : kModels)
        m_model->addItem(QString::fromLatin1(m.label), QString::fromStdString(modelKindName(m.kind)));
    addRow(form, tr("&Model"), m_model,
           tr("The network every card trains a replica of, like the network given to mindspore.Model. "
              "CIFAR variants: 3×3 stem, no max-pool."));

    m_ranks = new QSpinBox;
    m_ranks->setObjectName(QStringLiteral("ranks"));
    m_ranks->setRange(1, kMaxRanks); // past kMaxCardsPerProcess per node, buildConfig says to add nodes
    addRow(form, tr("&Cards (ranks)"), m_ranks,
           tr("How many emulated Ascend 910 cards train data-parallel (RANK_SIZE, device_num of "
              "set_auto_parallel_context). Each card is one rank with its own replica and data shard; "
              "gradients are all-reduced every step."));

    m_nodes = new QSpinBox;
    m_nodes->setObjectName(QStringLiteral("nodes"));
    m_nodes->setRange(1, 8);
    addRow(form, tr("&Nodes"), m_nodes,
           tr("Servers of the rank table, each a process on this host with cards / nodes cards: node 0 "
              "trains in this window and writes the run file, nodes 1.. are ranksight-cli processes. They "
              "join through PyTorch's gloo over 127.0.0.1; the all-reduce sums inside each node, then "
              "across nodes, like HCCL across servers. Same results as one node, bit for bit. On real "
              "hosts, start ranksight-cli train --nodes N --node-rank K --master HOST:PORT on each."));

    m_batch = new QSpinBox;
    m_batch->setObjectName(QStringLiteral("batch"));
    m_batch->setRange(1, 4096);
    addRow(form, tr("&Batch per card"), m_batch,
           tr("Samples each card trains on per step: the batch_size of each rank's shard "
              "(DistributedSampler; num_shards and shard_id of a MindSpore dataset). The global batch is "
              "cards × this."));

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
    addRow(form, tr("&Length"), m_lengthRow,
           tr("How long to train: optimizer steps, or epochs over the training set (the epoch argument "
              "of Model.train)."));
}

void RunPanel::buildNumericsRows(QFormLayout* form) {
    m_precision = new QComboBox;
    m_precision->setObjectName(QStringLiteral("precision"));
    m_precision->addItem(tr("O0: fp32"), QStringLiteral("O0"));
    m_precision->addItem(tr("O2: fp16 compute, fp32 master weights"), QStringLiteral("O2"));
    m_precision->addItem(tr("O3: all fp16"), QStringLiteral("O3"));
    addRow(form, tr("P&recision"), m_precision,
           tr("amp_level, as in mindspore.Model(amp_level=...): O0 keeps everything fp32; O2 computes in "
              "fp16 with fp32 master weights and fp32 BatchNorm; O3 is all fp16. fp16 overflows to inf "
              "above 65504 and flushes tiny gradients to 0."));

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
    addRow(form, tr("Loss &scale"), m_lossRow,
           tr("Scales the loss before backward so small fp16 gradients survive. none: no scaling. fixed: "
              "FixedLossScaleManager(loss_scale=value). dynamic: DynamicLossScaleManager(init_loss_scale="
              "value, scale_factor=2, scale_window=2000): an overflow skips the step on every rank and "
              "halves the scale; 2000 clean steps double it."));
}

void RunPanel::buildInputRows(QFormLayout* form) {
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
    addRow(form, tr("&Data"), m_dataRow,
           tr("synthetic: a built-in, learnable, CIFAR-shaped data set that needs no download.\nCIFAR-10 "
              "folder: the binary version (data_batch_1.bin … data_batch_5.bin, test_batch.bin), like "
              "mindspore.dataset.Cifar10Dataset(dataset_dir).\nFashion-MNIST: Zalando's 28x28 grey images of "
              "clothes, padded to 32x32 and repeated to 3 channels, from Debian's dataset-fashion-mnist (an "
              "empty folder means /usr/share/datasets/fashion-mnist). Each rank reads its own shard."));

    m_seed = new QLineEdit;
    m_seed->setObjectName(QStringLiteral("seed"));
    m_seed->setValidator(
        new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{0,19}")), m_seed));
    addRow(form, tr("S&eed"), m_seed,
           tr("The seed every rank starts from, as mindspore.set_seed(seed): it fixes weight init, data "
              "shuffling and Dropout. With the same seed and the initial parameter broadcast the "
              "replicas start identical."));
}

void RunPanel::buildOutputRows(QFormLayout* form) {
    m_faults = new QLineEdit;
    m_faults->setObjectName(QStringLiteral("faults"));
    m_faults->setPlaceholderText(tr("none (e.g. %1, %2)")
                                     .arg(QString::fromLatin1(causeInfo(Cause::GradSum).reproduce),
                                          QString::fromLatin1(causeInfo(Cause::SdcAfter).reproduce)));
    QStringList names;
    for (const CauseInfo& c : causes())
        if (c.reproduce) // a fault the lab can inject
            names << QString::fromLatin1(c.key);
    m_faults->setCompleter(new QCompleter(names, m_faults));
    addRow(form, tr("&Faults"), m_faults,
           tr("Fault lab: reproduce a known cause of cross-rank drift on purpose, then see RankSight name "
              "it. Specs NAME[@STEP][:RANK], separated by spaces or commas (default step: early; default "
              "rank: the last). Names: %1. %2, %3 and %4 strike every rank alike: the ranks agree, so "
              "only a comparison with a clean run of the same settings names them (File › Compare With "
              "Reference…).")
               .arg(names.join(QStringLiteral(", ")),
                    QString::fromLatin1(causeInfo(Cause::UpdateChanged).key),
                    QString::fromLatin1(causeInfo(Cause::LossScaleChanged).key),
                    QString::fromLatin1(causeInfo(Cause::AllReduceWrong).key)));

    m_rankTable = new QLineEdit;
    m_rankTable->setObjectName(QStringLiteral("rankTable"));
    m_rankTable->setPlaceholderText(tr("generated for the emulated cards"));
    auto* rankBrowse = new QPushButton(tr("Browse…"));
    connect(rankBrowse, &QPushButton::clicked, this, &RunPanel::browseRankTable);
    m_rankTableRow = withButton(m_rankTable, rankBrowse);
    addRow(form, tr("Rank &table"), m_rankTableRow,
           tr("RANK_TABLE_FILE: an hccl.json listing server_list[].device[] with device_id, device_ip and "
              "rank_id. Empty: one is generated for the emulated cards. A wrong table (duplicate rank_id "
              "or device_id, a missing rank) is one of the causes RankSight names."));

    m_out = new PathEdit;
    m_out->setObjectName(QStringLiteral("out"));
    auto* outBrowse = new QPushButton(tr("Browse…"));
    connect(outBrowse, &QPushButton::clicked, this, &RunPanel::browseOut);
    m_outRow = withButton(m_out, outBrowse);
    const QString tip =
        tr("The HDF5 file the telemetry goes to, flushed every step so it can be watched live "
           "(also when ranksight-cli writes it) and replayed later; Start writes exactly this "
           "file. Generated names: <runs folder>/<preset>-<date>-<time>.h5, made when the "
           "preset, the runs folder or the last run changes. Runs are never overwritten.");
    addRow(form, tr("R&un file"), m_outRow, tip);
    m_out->setExplanation(tip); // its own tooltip starts with the full path
}

void RunPanel::connectEdits() {
    for (QComboBox* c : {m_model, m_lengthUnit, m_precision, m_lossMode, m_dataSource})
        connect(c, &QComboBox::currentIndexChanged, this, &RunPanel::onFieldEdited);
    // Nodes say how the cards are spread over processes, not what is trained: the preset stays.
    connect(m_nodes, &QSpinBox::valueChanged, this, &RunPanel::revalidate);
    for (QSpinBox* s : {m_ranks, m_batch, m_length})
        connect(s, &QSpinBox::valueChanged, this, &RunPanel::onFieldEdited);
    for (QLineEdit* e : {m_dataDir, m_seed, m_rankTable, m_faults})
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

void RunPanel::applyConfig(const TrainConfig& c) {
    const QScopedValueRollback guard(m_applying, true);
    m_model->setCurrentIndex(m_model->findData(QString::fromStdString(modelKindName(c.model))));
    m_ranks->setValue(c.ranks);
    m_batch->setValue(c.batchPerRank);
    const bool epochs = c.epochs > 0;
    m_lengthUnit->setCurrentIndex(epochs ? 1 : 0);
    m_length->setValue(int(std::min<int64_t>(epochs ? c.epochs : c.steps, m_length->maximum())));
    m_precision->setCurrentIndex(m_precision->findData(QString::fromStdString(precisionName(c.precision))));
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
    m_seed->setText(QString::number(c.seed));
    m_rankTable->setText(QString::fromStdString(c.rankTable));
    QStringList faults;
    for (const auto& f : c.faults)
        faults << QString::fromStdString(f);
    m_faults->setText(faults.join(QLatin1Char(' ')));
    m_outAuto = c.out.empty();
    if (!m_outAuto)
        m_out->setText(QString::fromStdString(c.out));
}

void RunPanel::setConfig(const TrainConfig& config) {
    m_base = config;
    applyConfig(config);
    setPresetCombo(matchingPreset(config));
    if (m_outAuto)
        regenerateOut();
    revalidate();
}

bool RunPanel::loadPreset(const QString& name) {
    std::optional<TrainConfig> preset = presetConfig(name);
    if (!preset)
        return false;
    m_base = std::move(*preset);
    const bool outAuto = m_outAuto;
    applyConfig(m_base);
    m_outAuto = outAuto; // a preset has no run file: keep the user's, or go on generating
    setPresetCombo(name);
    if (m_outAuto)
        regenerateOut();
    revalidate();
    return true;
}

QString RunPanel::matchingPreset(const TrainConfig& config) {
    for (const QString& name : kPresets)
        if (const std::optional<TrainConfig> preset = presetConfig(name);
            preset && sameSettings(*preset, config))
            return name;
    return QStringLiteral("custom");
}

QString RunPanel::presetName() const {
    return m_preset->currentData().toString();
}

void RunPanel::setPresetCombo(const QString& name) {
    const QScopedValueRollback guard(m_applying, true);
    m_preset->setCurrentIndex(m_preset->findData(name));
}

void RunPanel::onPresetChosen() {
    if (m_applying)
        return;
    if (!loadPreset(presetName()) && m_outAuto) // "custom" keeps the fields, renames the run file
        regenerateOut();
}

void RunPanel::onFieldEdited() {
    if (!m_applying && presetName() != QLatin1String("custom")) {
        setPresetCombo(QStringLiteral("custom"));
        if (m_outAuto)
            regenerateOut();
    }
    revalidate();
}

void RunPanel::setRunsDir(const QString& dir) {
    m_runsDir = QDir(dir).absolutePath(); // the run file field shows the path Start uses, in full
    QDir().mkpath(m_runsDir);
    if (m_outAuto)
        regenerateOut();
    revalidate();
}

QString RunPanel::autoOutPath() const {
    const QDir dir(m_runsDir);
    const QString stem = presetName() + QLatin1Char('-') +
                         QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    QString path = dir.filePath(stem + QStringLiteral(".h5"));
    for (int n = 2; QFileInfo::exists(path); ++n) // two runs in one second
        path = dir.filePath(QStringLiteral("%1-%2.h5").arg(stem).arg(n));
    return path;
}

void RunPanel::regenerateOut() {
    const QScopedValueRollback guard(m_applying, true);
    m_out->setText(autoOutPath());
}

RunPanel::FieldError RunPanel::validate(TrainConfig* out) const {
    TrainConfig c = m_base;
    c.model = parseModelKind(m_model->currentData().toString().toStdString()).value_or(c.model);
    c.ranks = m_ranks->value();
    c.nodes = m_nodes->value();
    c.batchPerRank = m_batch->value();
    const bool epochs = m_lengthUnit->currentData() == QLatin1String("epochs");
    c.epochs = epochs ? m_length->value() : 0; // epochs == 0: steps decide
    if (!epochs)
        c.steps = m_length->value();
    c.precision = parsePrecision(m_precision->currentData().toString().toStdString()).value_or(c.precision);
    c.lossScale.mode = LossScaleMode(m_lossMode->currentIndex());
    if (c.lossScale.mode != LossScaleMode::None)
        c.lossScale.value = float(m_lossValue->value());
    try {
        c.set("seed", m_seed->text().toStdString());
    } catch (const ConfigError& e) {
        return {m_seed, m_seed->text().isEmpty() ? tr("Seed: enter a whole number")
                                                 : tr("Seed: %1").arg(problemOf(e))};
    }
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
    FieldError e = validateFiles(c);
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

RunPanel::FieldError RunPanel::validateFiles(const TrainConfig& c) const {
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

bool RunPanel::buildConfig(TrainConfig* out, QString* error) const {
    TrainConfig c;
    const FieldError e = validate(&c);
    if (error)
        *error = e.message;
    if (!e.message.isEmpty())
        return false;
    if (out)
        *out = c;
    return true;
}

TrainConfig RunPanel::config() const {
    TrainConfig c;
    QString error;
    if (!buildConfig(&c, &error))
        throw ConfigError(error.toStdString());
    return c;
}

void RunPanel::revalidate() {
    TrainConfig c;
    const FieldError e = validate(&c);
    if (m_errorField)
        if (QWidget* label = m_form->labelForField(m_errorField))
            label->setStyleSheet({});
    m_errorField = e.field;
    if (m_errorField)
        if (QWidget* label = m_form->labelForField(m_errorField))
            label->setStyleSheet(kErrorStyle);
    m_error->setText(e.message);
    m_error->setVisible(!e.message.isEmpty());
    QSettings settings;
    m_estimate->setText(e.message.isEmpty() ? estimateRun(c, settings).text() : QString());
    m_estimate->setVisible(!m_estimate->text().isEmpty());
    m_start->setEnabled(!m_running && e.message.isEmpty());
}

QString RunPanel::errorText() const {
    return m_error->text();
}

QString RunPanel::estimateText() const {
    return m_estimate->text();
}

void RunPanel::setNodes(int nodes) {
    m_nodes->setValue(nodes);
}

void RunPanel::showLoadedRun(const RunMeta& meta, const QString& path) {
    m_summary->showRun(meta, path);
    m_pages->setCurrentWidget(m_summary);
}

void RunPanel::showForm() {
    m_pages->setCurrentIndex(0);
}

bool RunPanel::showsLoadedRun() const {
    return m_pages->currentWidget() == m_summary;
}

void RunPanel::setRunning(bool running) {
    if (running)
        showForm(); // this window's own run: the form it started from, disabled
    m_running = running;
    m_formBox->setEnabled(!running);
    m_stop->setEnabled(running);
    if (!running && m_outAuto)
        regenerateOut(); // the last run's file now exists
    revalidate();
}

void RunPanel::onStartClicked() {
    if (m_running)
        return;
    // Start writes the file the form shows. A generated name is made anew only when that file appeared in
    // the meantime (another run in the same second), and shown before the run starts.
    if (m_outAuto && QFileInfo::exists(m_out->text()))
        regenerateOut();
    revalidate();
    if (errorText().isEmpty())
        emit startRequested();
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

void RunPanel::saveState(QSettings& settings) const {
    settings.setValue(QStringLiteral("runPanel/preset"), presetName());
    TrainConfig c = m_base;
    QString error;
    buildConfig(&c, &error); // an invalid form saves what it was built from
    settings.setValue(QStringLiteral("runPanel/config"), QString::fromStdString(c.toJson()));
    settings.setValue(QStringLiteral("runPanel/nodes"), m_nodes->value()); // how, not what: not a config key
}

void RunPanel::restoreState(QSettings& settings) {
    const QString preset = settings.value(QStringLiteral("runPanel/preset")).toString();
    m_nodes->setValue(settings.value(QStringLiteral("runPanel/nodes"), 1).toInt());
    if (loadPreset(preset))
        return;
    const QString json = settings.value(QStringLiteral("runPanel/config")).toString();
    if (json.isEmpty())
        return;
    try {
        TrainConfig c = TrainConfig::fromJson(json.toStdString(), "settings");
        c.out.clear();
        setConfig(c);
    } catch (const ConfigError&) {
        loadPreset(QStringLiteral("seed-story")); // settings of an older version: start from the default
    }
}

} // namespace rs
