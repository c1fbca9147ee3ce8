// The settings of a run as one table: a row per key, saying its JSON name, type, range, help line,
// command-line flag and run-panel row, and binding it to its TrainConfig member. TrainConfig's set, fromJson
// and toJson, `ranksight-cli train`'s flags and --help, the run panel's form and the user guide's table of
// settings are all read from these rows, so a key is spelled once: adding one is a member in TrainConfig.h
// (with its default) and a row in ConfigKeys.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rs {

struct TrainConfig;

// Where a key may be given, and whether the run file shows it. TrainConfig::writeFile is no row at all: only
// the benchmark sets it, to time runs without a run file.
enum class KeyScope {
    Written,   // a config-file key that toJson writes: the run file's `config` attribute shows it
    Unwritten, // a config-file key toJson leaves out: faults (a run file names a fault only through what
               // training records) and out (where the run goes, not what it trains)
    CliOnly,   // a flag of `ranksight-cli train` only: how this process joins the run (--nodes ...), --force
};

// What the user guide calls the value; List keys are JSON arrays of strings in a file.
enum class KeyType { Integer, Number, Boolean, Text, Choice, List };

// How the run panel shows a key. Choice, Spin and Digits are generic editors driven by the row alone; the
// others are composite rows the panel builds by hand (Length holds steps and epochs).
enum class FormKind { None, Choice, Spin, Digits, Length, LossScale, Data, Faults, RankTable, RunFile };

// A value as toJson writes it (float members stay float: the run file shows float(x) widened to double).
using ConfigValue = std::variant<bool, int64_t, uint64_t, float, std::string>;
std::string configValueText(const ConfigValue& value); // 4, 0.9, true, resnet50

struct KeyChoice {
    std::string value; // as the key takes it: "resnet50"
    std::string label; // as the run panel's combo shows it: "ResNet-50"
};

struct FormRow {
    FormKind kind = FormKind::None;
    std::string label;      // with its mnemonic: "&Cards (ranks)"
    std::string tip;        // the tooltip, in MindSpore's terms
    int64_t lo = 0, hi = 0; // Spin: the form's range when it is narrower than the key's (hi 0: the key's)
};

struct ConfigKey {
    std::string name; // JSON name: config files, presets, --set NAME=VALUE, the run file's `config`
    KeyType type = KeyType::Text;
    KeyScope scope = KeyScope::Written;
    std::string values;  // the range or the choices in words; also the error's "is not ..." for choices
    std::string help;    // one line: `train --help` and the user guide
    std::string flag;    // "loss-scale" for --loss-scale; empty: only --set and config files
    std::string metavar; // "S" in "--loss-scale S"; empty with a flag: the flag takes no value (--force)
    std::string bundled; // the flag's value may name a bundled file of this folder ("ranktables")
    // Applied before a file's other keys, and there a JSON integer: steps clears epochs, so a file sets
    // epochs after steps whatever its key order.
    bool early = false;
    int64_t lo = 0, hi = 0; // Integer keys: the range
    std::vector<KeyChoice> choices;
    FormRow form;
    // From text, as the command line gives it; throws ConfigError "name: problem".
    std::function<void(TrainConfig&, const std::string&)> set;
    // List keys: one more item (--fault SPEC; each item of a file's array after set(c, "") emptied it).
    std::function<void(TrainConfig&, const std::string&)> add;
    // The value toJson writes; nullopt when it writes none (epochs of a run measured in steps).
    std::function<std::optional<ConfigValue>(const TrainConfig&)> get;

    bool isFileKey() const { return scope != KeyScope::CliOnly; }
    bool takesValue() const { return !metavar.empty(); }
};

// Every row, in the order of the run panel's form, `train --help` and the user guide's table.
const std::vector<ConfigKey>& configKeys();
const ConfigKey* findConfigKey(const std::string& name); // a file key by JSON name; nullptr for others
const ConfigKey* findFlag(const std::string& flag);      // a row by its flag ("loss-scale")

// The user guide's table of config-file keys, as markdown (`ranksight-cli train --help-config`).
std::string configKeysMarkdown();

} // namespace rs
