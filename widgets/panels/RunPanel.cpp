// The run panel (RunPanel.h): its pages, the presets, the run file's name, Start and Stop, and what it keeps
// between sessions. The form's rows are built in RunPanelForm.cpp and checked in RunPanelChecks.cpp.
#include "panels/RunPanel.h"

#include "panels/PathEdit.h"
#include "panels/RunEstimate.h"
#include "panels/RunSummaryView.h"

#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
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

} // namespace

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent)
    , m_runsDir(QDir::currentPath()) {
    m_formBox = new QWidget(this);
    m_form = new QFormLayout(m_formBox);
    m_form->setContentsMargins(0, 0, 0, 0);
    buildForm(m_form);
    buildPages();
    connectEdits();
    connect(m_start, &QPushButton::clicked, this, &RunPanel::onStartClicked);
    connect(m_stop, &QPushButton::clicked, this, &RunPanel::stopRequested);
    loadPreset(QStringLiteral("seed-story")); // first launch: the reported bug, reproduced in about a minute
}

// Page 0: the form, its error and estimate lines and the buttons; page 1: the settings of a run opened from a
// file, read-only.
void RunPanel::buildPages() {
    auto* formPage = new QWidget(this);
    auto* formLayout = new QVBoxLayout(formPage);
    formLayout->setContentsMargins(0, 0, 0, 0);
    formLayout->addWidget(m_formBox);
    buildStatusLines(formLayout);
    formLayout->addLayout(buildButtons());
    formLayout->addStretch(1);
    m_summary = new RunSummaryView(this);
    connect(m_summary, &RunSummaryView::newRunRequested, this, &RunPanel::showForm);
    m_pages = new QStackedWidget(this);
    m_pages->addWidget(formPage);
    m_pages->addWidget(m_summary);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_pages);
}

void RunPanel::buildStatusLines(QVBoxLayout* layout) {
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
    layout->addWidget(m_error);
    layout->addWidget(m_estimate);
}

QHBoxLayout* RunPanel::buildButtons() {
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
    return buttons;
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
