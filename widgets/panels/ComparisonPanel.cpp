// ComparisonPanel: see ComparisonPanel.h.
#include "panels/ComparisonPanel.h"

#include "charts/ReferenceChart.h"
#include "compare/RunComparison.h"
#include "model/RunModel.h"
#include "model/StepCursor.h"

#include <QFileInfo>
#include <QLabel>
#include <QTextDocument>
#include <QVBoxLayout>

namespace rs {

ComparisonPanel::ComparisonPanel(RunModel* model, StepCursor* cursor, QWidget* parent)
    : QWidget(parent)
    , m_cursor(cursor)
    , m_summary(new QLabel)
    , m_chart(new ReferenceChart(model, cursor)) {
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setTextInteractionFlags(Qt::TextBrowserInteraction);
    m_summary->setContentsMargins(6, 4, 6, 4);
    connect(m_summary, &QLabel::linkActivated, this, [this](const QString& link) {
        if (link.startsWith(QStringLiteral("step:")))
            m_cursor->setStep(link.mid(5).toLongLong());
        else if (link == QLatin1String("spread:"))
            emit spreadRequested();
    });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_summary);
    layout->addWidget(m_chart, 1);
    connect(model, &RunModel::runReset, this, [this] { setComparison(nullptr, {}); });
    updateSummary();
}

void ComparisonPanel::setComparison(std::shared_ptr<const RunComparison> comparison,
                                    const QString& referencePath) {
    m_comparison = std::move(comparison);
    m_referencePath = m_comparison ? referencePath : QString();
    m_chart->setComparison(m_comparison, QFileInfo(m_referencePath).fileName());
    updateSummary();
    emit comparisonChanged();
}

void ComparisonPanel::updateSummary() {
    if (!m_comparison) {
        m_summary->setText(
            tr("No reference run. <b>File › Compare With Reference…</b> compares the open run with "
               "another one of the same job (the same run before a change, one process of the "
               "same servers, one card of the same global batch), step by step, parameter by "
               "parameter and rank by rank: what the cross-rank checks cannot see."));
        return;
    }
    const RunComparison& c = *m_comparison;
    QString html = tr("Against <b>%1</b>: ").arg(QFileInfo(m_referencePath).fileName().toHtmlEscaped());
    switch (c.expectation) {
    case Expectation::Bitwise:
        html += tr("the same configuration on the same layout, so equal bit for bit is expected.");
        break;
    case Expectation::Rounding:
        html += tr("the same computation reduced differently (%1 against %2): equal within the rounding "
                   "tolerance.")
                    .arg(QString::fromStdString(c.shapeA.name).toHtmlEscaped(),
                         QString::fromStdString(c.shapeB.name).toHtmlEscaped());
        break;
    case Expectation::Unknown:
        html += tr("the sources record no configuration: compared with the rounding tolerances of a ring.");
        break;
    case Expectation::Different:
        html += tr("the configurations differ, so the runs are not expected to agree.");
        break;
    }
    if (!c.differences.empty()) {
        QStringList d;
        for (const std::string& s : c.differences)
            d << QString::fromStdString(s).toHtmlEscaped();
        html += tr(" Differs: %1.").arg(d.join(QStringLiteral("; ")));
    }
    html += QStringLiteral("<br>");
    if (c.first)
        html +=
            tr("<b>First divergence:</b> <a href=\"step:%1\">step %1</a>%2, %3%4 (%5 vs %6%7).")
                .arg(c.first->step)
                .arg(c.first->parameter.empty()
                         ? QString()
                         : QStringLiteral(", ") + QString::fromStdString(c.first->parameter).toHtmlEscaped())
                .arg(QString::fromStdString(c.first->statistic))
                .arg(c.first->ranks.empty() ? QString() : tr(" on rank(s) %1").arg([&] {
                    QStringList r;
                    for (int x : c.first->ranks)
                        r << QString::number(x);
                    return r.join(QLatin1Char(','));
                }()))
                .arg(c.first->bits ? QStringLiteral("%1").arg(c.first->aBits, 16, 16, QLatin1Char('0'))
                                   : QString::number(c.first->a, 'g', 7))
                .arg(c.first->bits ? QStringLiteral("%1").arg(c.first->bBits, 16, 16, QLatin1Char('0'))
                                   : QString::number(c.first->b, 'g', 7))
                .arg(c.first->tolerance > 0 ? tr(", tolerance %1").arg(c.first->tolerance, 0, 'g', 3)
                                            : tr(", equality expected"));
    else if (c.updatesDifferFrom >= 0)
        html +=
            tr("<b>No divergence</b> through step %1, where the runs skipped other updates (as the "
               "spread shows arithmetic alone does once runs have drifted); after it only the samples and "
               "the learning rate are compared, and agree (grey on the map).")
                .arg(c.updatesDifferFrom);
    else
        html += tr("<b>No divergence</b> on %1 aligned steps: every compared statistic is within its "
                   "tolerance.")
                    .arg(c.alignedSteps);
    if (c.spreadUsed) {
        QStringList names;
        for (const SpreadReference& r : c.spreads)
            names << QFileInfo(QString::fromStdString(r.name)).fileName().toHtmlEscaped();
        html += tr(" Tolerances widened to %1× the drift measured against %2.")
                    .arg(kSpreadFactor)
                    .arg(names.join(QStringLiteral(", ")));
    } else if (!c.spreads.empty()) {
        html += tr(" The spread is not used: the runs do the same arithmetic.");
    } else if (c.first && c.first->tolerance > 0 && c.first->step > c.firstStep &&
               (c.expectation == Expectation::Rounding || c.expectation == Expectation::Unknown)) {
        // The one-step bound cannot tell the drift of other arithmetic over many steps from a fault.
        html += tr(" Runs of other arithmetic drift apart over many steps: <a href=\"spread:\">measure that "
                   "drift with the reference's job run once more with other arithmetic…</a>");
    }
    html += QStringLiteral(" ");
    html += c.bitwiseThrough >= 0
                ? tr("Fingerprints equal bit for bit through step %1.").arg(c.bitwiseThrough)
            : c.fingerprints ? tr("Fingerprints differ from the first aligned step.")
                             : tr("Fingerprints: none that both runs recorded.");
    if (!c.notCompared.empty())
        html += tr(" Not compared: %1 (the tooltip says why).").arg(c.notCompared.size());
    html += QStringLiteral("<br><small>") +
            tr("Map: white to pale green within the tolerance, yellow to red past it (log10 of difference / "
               "tolerance), "
               "near-black where bits differ that should be equal, grey where not judged.") +
            QStringLiteral("</small>");
    m_summary->setText(html);
    QString why;
    for (const NotCompared& n : c.notCompared)
        why +=
            QStringLiteral("%1: %2\n").arg(QString::fromStdString(n.words), QString::fromStdString(n.reason));
    m_summary->setToolTip(why.trimmed());
}

QString ComparisonPanel::summaryText() const {
    QTextDocument doc;
    doc.setHtml(m_summary->text());
    return doc.toPlainText();
}

} // namespace rs
