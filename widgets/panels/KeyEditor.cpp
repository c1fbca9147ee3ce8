// See KeyEditor.h.
#include "panels/KeyEditor.h"

#include "train/ConfigKeys.h"
#include "train/TrainConfig.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QLineEdit>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <algorithm>

namespace rs {
namespace {

QWidget* makeChoice(const ConfigKey& key) {
    auto* combo = new QComboBox;
    for (const KeyChoice& c : key.choices)
        combo->addItem(tableText(c.label), QString::fromStdString(c.value));
    return combo;
}

QWidget* makeSpin(const ConfigKey& key) {
    auto* spin = new QSpinBox;
    const bool narrower = key.form.hi != 0;
    spin->setRange(int(narrower ? key.form.lo : key.lo), int(narrower ? key.form.hi : key.hi));
    return spin;
}

QWidget* makeDigits(const ConfigKey& key) { // a line edit: the range is past a spin box's int
    auto* edit = new QLineEdit;
    const QString digits = QString::number(std::max<qint64>(1, QString::number(key.hi).size()));
    edit->setValidator(
        new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{0,%1}").arg(digits)), edit));
    return edit;
}

// A ConfigError says "key: problem"; the form names the field as the user sees it instead.
QString problemOf(const ConfigError& e) {
    const QString what = QString::fromUtf8(e.what());
    const qsizetype colon = what.indexOf(QStringLiteral(": "));
    return colon < 0 ? what : what.mid(colon + 2);
}

QString editorText(const QWidget* editor) {
    if (const auto* combo = qobject_cast<const QComboBox*>(editor))
        return combo->currentData().toString();
    if (const auto* spin = qobject_cast<const QSpinBox*>(editor))
        return QString::number(spin->value());
    return static_cast<const QLineEdit*>(editor)->text();
}

} // namespace

QString tableText(const std::string& text) {
    return QCoreApplication::translate("ConfigKeys", text.c_str());
}

QWidget* makeKeyEditor(const ConfigKey& key) {
    QWidget* editor = key.form.kind == FormKind::Choice ? makeChoice(key)
                      : key.form.kind == FormKind::Spin ? makeSpin(key)
                                                        : makeDigits(key);
    editor->setObjectName(QString::fromStdString(key.name));
    return editor;
}

QString keyLabelText(const ConfigKey& key) {
    return tableText(key.form.label).remove(QLatin1Char('&'));
}

void showKeyValue(QWidget* editor, const ConfigKey& key, const TrainConfig& config) {
    const std::optional<ConfigValue> value = key.get(config);
    const QString text = value ? QString::fromStdString(configValueText(*value)) : QString();
    if (auto* combo = qobject_cast<QComboBox*>(editor))
        combo->setCurrentIndex(combo->findData(text));
    else if (auto* spin = qobject_cast<QSpinBox*>(editor))
        spin->setValue(text.toInt());
    else
        static_cast<QLineEdit*>(editor)->setText(text);
}

QString readKeyValue(const QWidget* editor, const ConfigKey& key, TrainConfig& config) {
    const QString text = editorText(editor);
    try {
        key.set(config, text.toStdString());
    } catch (const ConfigError& e) {
        if (text.isEmpty() && key.form.kind == FormKind::Digits)
            return QCoreApplication::translate("RunPanel", "%1: enter a whole number").arg(keyLabelText(key));
        return QStringLiteral("%1: %2").arg(keyLabelText(key), problemOf(e));
    }
    return {};
}

void onKeyEdited(QWidget* editor, QObject* context, const std::function<void()>& edited) {
    if (auto* combo = qobject_cast<QComboBox*>(editor))
        QObject::connect(combo, &QComboBox::currentIndexChanged, context, edited);
    else if (auto* spin = qobject_cast<QSpinBox*>(editor))
        QObject::connect(spin, &QSpinBox::valueChanged, context, edited);
    else
        QObject::connect(static_cast<QLineEdit*>(editor), &QLineEdit::textChanged, context, edited);
}

} // namespace rs
