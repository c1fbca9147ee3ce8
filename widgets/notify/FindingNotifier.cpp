// FindingNotifier: see FindingNotifier.h.
#include "notify/FindingNotifier.h"

#include "diagnose/Cause.h"
#include "diagnose/Finding.h"
#include "model/DiagnosisRunner.h"
#include "model/RunModel.h"

#include <QApplication>
#include <QRegularExpression>
#include <QSettings>

namespace rs {

namespace {
// The ranks a finding names; none means every rank (-1 stands for that).
QSet<int> namedRanks(const Finding& f) {
    QSet<int> ranks;
    for (int r : f.ranks)
        ranks.insert(r);
    if (ranks.isEmpty())
        ranks.insert(-1);
    return ranks;
}

QString ranksWords(const std::vector<int>& ranks) {
    QStringList out;
    for (int r : ranks)
        out << QString::number(r);
    if (out.isEmpty())
        return FindingNotifier::tr("all ranks");
    return (out.size() == 1 ? FindingNotifier::tr("rank %1") : FindingNotifier::tr("ranks %1"))
        .arg(out.join(QStringLiteral(", ")));
}
} // namespace

FindingNotifier::FindingNotifier(RunModel* model, DiagnosisRunner* runner, QWidget* window, QObject* parent)
    : QObject(parent)
    , m_model(model)
    , m_runner(runner)
    , m_window(window)
    , m_desktop(new DesktopNotice(this)) {
    m_enabled = QSettings().value(settingsKey(), true).toBool();
    connect(m_desktop, &DesktopNotice::clicked, this, &FindingNotifier::activated);
    connect(model, &RunModel::runReset, this, &FindingNotifier::onRunReset);
    connect(model, &RunModel::statusChanged, this, &FindingNotifier::onRunStatus);
    connect(model, &RunModel::stepsAppended, this, &FindingNotifier::onRunStatus);
    connect(runner, &DiagnosisRunner::findingsChanged, this, &FindingNotifier::onFindings);
}

QString FindingNotifier::settingsKey() {
    return QStringLiteral("notifyOnFindings");
}

void FindingNotifier::setEnabled(bool on) {
    m_enabled = on;
    QSettings().setValue(settingsKey(), on);
}

QString FindingNotifier::backendText() const {
    switch (backend()) {
    case DesktopNotice::Backend::Freedesktop:
        return tr("This desktop shows them as freedesktop notifications.");
    case DesktopNotice::Backend::Tray:
        return tr("This desktop has no notification service: they show from the system tray.");
    case DesktopNotice::Backend::None:
        break;
    }
    return tr("This desktop has neither a notification service nor a system tray: the status bar and the "
              "task bar show them.");
}

void FindingNotifier::onRunReset() {
    m_sawLive = false;
    m_known.clear();
}

// Only once the load is done: while a complete file loads it is not yet marked complete.
void FindingNotifier::onRunStatus() {
    if (m_model->hasRun() && !m_model->isLoading() && m_model->isLive())
        m_sawLive = true;
}

void FindingNotifier::onFindings() {
    if (!m_runner->hasResult())
        return;
    // Known even while the setting is off: turning it on later does not announce old findings.
    // A finding is news when its cause is new or it names a rank not named for that cause before. A finding
    // that narrows an earlier one (every rank, then the odd one once more steps are read) is not.
    for (const Finding& f : m_runner->findings()) {
        QSet<int>& told = m_known[QString::fromStdString(f.key())];
        const QSet<int> ranks = namedRanks(f);
        const bool news = told.isEmpty() || (!told.contains(-1) && !told.contains(ranks));
        told.unite(ranks);
        if (news && m_enabled && m_sawLive)
            notify(f);
    }
}

void FindingNotifier::notify(const Finding& f) {
    m_last = noticeFor(f);
    m_lastBackend = m_desktop->send(m_last.summary, m_last.body);
    ++m_count;
    emit noticed(m_last.summary);
    if (m_window && !m_window->isActiveWindow()) {
        QApplication::alert(m_window->window()); // until the user brings it up
        ++m_alerts;
    }
}

FindingNotifier::Notice FindingNotifier::noticeFor(const Finding& f) {
    QString cause = QString::fromUtf8(f.info().title);
    if (!cause.isEmpty())
        cause[0] = cause[0].toUpper();
    Notice n;
    n.summary = f.firstStep >= 0
                    ? tr("%1 at step %2, %3").arg(cause).arg(f.firstStep).arg(ranksWords(f.ranks))
                    : tr("%1, %2").arg(cause, ranksWords(f.ranks));
    n.body = firstSentence(QString::fromStdString(f.evidence));
    return n;
}

// Up to the first full stop that ends a sentence (followed by a space and a capital or by the end), so a
// figure like "4.00" or "e.g. fc.weight" is not cut.
QString FindingNotifier::firstSentence(const QString& text) {
    static const QRegularExpression end(QStringLiteral("[.!?](?=\\s+[A-Z(]|\\s*$)"));
    const QString t = text.trimmed();
    const QRegularExpressionMatch m = end.match(t);
    return m.hasMatch() ? t.left(m.capturedEnd()) : t;
}

} // namespace rs
