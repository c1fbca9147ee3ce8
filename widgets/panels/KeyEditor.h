// The run panel's editor for a config key whose row (core/train/ConfigKeys.h) has a generic form kind: a
// combo of the row's choices, a spin box over its range, or a line edit of digits. Made, filled, read and
// watched from the row alone, so a key with such a form row needs nothing here.
#pragma once

#include <QString>
#include <functional>
#include <string>

class QObject;
class QWidget;

namespace rs {

struct ConfigKey;
struct TrainConfig;

QString tableText(const std::string& text); // a label or tip of the table, translatable like the panel's own
QWidget* makeKeyEditor(const ConfigKey& key); // objectName: the key's name
QString keyLabelText(const ConfigKey& key);   // the label, without its mnemonic
void showKeyValue(QWidget* editor, const ConfigKey& key, const TrainConfig& config);
// Sets the key in config from the editor; the message naming the field ("Seed: ..."), or empty.
QString readKeyValue(const QWidget* editor, const ConfigKey& key, TrainConfig& config);
void onKeyEdited(QWidget* editor, QObject* context, const std::function<void()>& edited); // on every change

} // namespace rs
