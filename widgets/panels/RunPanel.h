// The run form: what to train and where to write it (a preset or a custom setup: model, cards, batch,
// length, precision, loss scale, data, seed, rank table, run file), with Start and Stop. It produces a
// TrainConfig; keys the form does not show (lr, eval_every, ...) come from the preset or the config last
// set. Its rows are the config keys' form rows (core/train/ConfigKeys.h), in the table's order
// (RunPanelForm.cpp); every field explains itself in MindSpore terms, and an invalid value is named in an
// inline error that keeps Start from proceeding (RunPanelChecks.cpp).
#pragma once

#include "train/TrainConfig.h"

#include <QString>
#include <QWidget>
#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QSettings;
class QSpinBox;
class QStackedWidget;
class QVBoxLayout;

namespace rs {

class PathEdit;
class RunSummaryView;
struct ConfigKey;
struct RankTableCheck;
struct RunMeta;

class RunPanel : public QWidget {
    Q_OBJECT
public:
    explicit RunPanel(QWidget* parent = nullptr);

    // The config the form describes, or false and a message naming the field at fault.
    bool buildConfig(TrainConfig* out, QString* error) const;
    TrainConfig config() const; // throws ConfigError with buildConfig's message
    // Shows a config; the combo names the preset whose settings it has (the file it came from does not
    // matter), else Custom. out empty: the run file name is generated.
    void setConfig(const TrainConfig& config);
    // "seed" or "quick", from the built-in presets; false (and nothing changes) for another name.
    bool loadPreset(const QString& name);
    QString presetName() const; // "seed", "quick" or "custom"

    // Where generated run file names go: <runsDir>/<preset>-<yyyyMMdd-HHmmss>.h5. Created if missing; kept
    // as an absolute path. The name is made when the preset, the runs folder or the last run changes, and the
    // field shows it: Start writes that file (a new name only if the file appeared meanwhile).
    void setRunsDir(const QString& dir);
    QString runsDir() const { return m_runsDir; }

    // A run opened from a file: its recorded settings replace the form, read-only, until showForm() (the
    // summary's New Run button, File > New Run) brings the form back as the user left it.
    void showLoadedRun(const RunMeta& meta, const QString& path);
    void showForm();
    bool showsLoadedRun() const;

    void setNodes(int nodes);      // processes on this host the cards are spread over (1: this one alone)
    void setRunning(bool running); // disables the form and Start, enables Stop
    bool isRunning() const { return m_running; }
    QString errorText() const;               // the inline error shown, empty when the form is valid
    QString estimateText() const;            // the time estimate shown, empty while the form is invalid
    void refreshEstimate() { revalidate(); } // after a run measured this machine

    void saveState(QSettings& settings) const;
    void restoreState(QSettings& settings);

signals:
    void startRequested(); // only when the form is valid; read config() then
    void stopRequested();

private:
    struct FieldError {
        QWidget* field = nullptr; // the form row at fault
        QString message;
    };

    // A config key's form row with a generic editor (KeyEditor.h).
    struct KeyField {
        const ConfigKey* key = nullptr;
        QWidget* editor = nullptr;
    };

    void buildPages();
    void buildStatusLines(QVBoxLayout* layout); // the error and the estimate
    QHBoxLayout* buildButtons();                // Start, Stop
    void buildForm(QFormLayout* form);          // the preset, then a row per key with a form row
    void buildPresetRow(QFormLayout* form);
    QWidget* makeField(const ConfigKey& key); // the row's field, by its form kind
    QWidget* makeLengthRow();                 // steps or epochs
    QWidget* makeLossScaleRow();
    QWidget* makeDataRow();
    QWidget* makeFaultsRow();
    QWidget* makeRankTableRow();
    QWidget* makeRunFileRow();
    QString faultsTip(const ConfigKey& key) const;
    QWidget* withButton(QWidget* field, QPushButton* button);
    void addRow(QFormLayout* form, const QString& label, QWidget* field, const QString& tip);
    QWidget* keyEditor(const char* name) const;
    void connectEdits();
    void applyConfig(const TrainConfig& config);
    void applyComposite(const TrainConfig& config); // the rows the panel builds by hand
    FieldError validate(TrainConfig* config) const;
    FieldError readComposite(TrainConfig& config) const;
    FieldError validateFiles(const TrainConfig& config) const;
    FieldError validateData(const TrainConfig& config) const;
    static RankTableCheck checkRankTable(const QString& path, int ranks);
    void revalidate();
    void onFieldEdited();
    void onPresetChosen();
    void onLossScaleModeChanged();
    void updateDataFolderRow();
    void onStartClicked();
    void browseDataDir();
    void browseRankTable();
    void browseOut();
    void setPresetCombo(const QString& name);
    static QString matchingPreset(const TrainConfig& config); // a preset's name, or "custom"
    void regenerateOut();
    QString autoOutPath() const;

    TrainConfig m_base; // keys the form does not show
    QString m_runsDir;
    bool m_running = false;
    bool m_applying = false; // fields change from code, not from the user: stay on the preset
    bool m_outAuto = true;   // the run file name is generated until the user picks one
    float m_fixedScale = 128.0f, m_dynamicInit = 16777216.0f; // the value each loss-scale mode remembers

    QStackedWidget* m_pages = nullptr;
    RunSummaryView* m_summary = nullptr;
    QWidget* m_formBox = nullptr;
    QFormLayout* m_form = nullptr;
    QComboBox* m_preset = nullptr;
    std::vector<KeyField> m_keyFields; // in form order
    QSpinBox* m_ranks = nullptr;       // a rank table chosen sets it
    QSpinBox* m_nodes = nullptr;       // kept apart from the config in the settings (how, not what)
    QSpinBox* m_length = nullptr;
    QComboBox* m_lengthUnit = nullptr;
    QComboBox* m_lossMode = nullptr;
    QDoubleSpinBox* m_lossValue = nullptr;
    QComboBox* m_dataSource = nullptr;
    QLineEdit* m_dataDir = nullptr;
    QPushButton* m_dataBrowse = nullptr;
    QWidget* m_dataDirRow = nullptr; // the folder and its Browse button, shown for CIFAR-10
    QLineEdit* m_faults = nullptr;   // fault-lab specs, space or comma separated
    QLineEdit* m_rankTable = nullptr;
    PathEdit* m_out = nullptr;
    QWidget *m_lengthRow = nullptr, *m_lossRow = nullptr, *m_dataRow = nullptr, *m_rankTableRow = nullptr,
            *m_outRow = nullptr;
    QLabel* m_error = nullptr;
    QLabel* m_estimate = nullptr; // time per step and for the run, before Start
    QPushButton* m_start = nullptr;
    QPushButton* m_stop = nullptr;
    QWidget* m_errorField = nullptr;
};

} // namespace rs
