// FindingsModel: see FindingsModel.h.
#include "panels/FindingsModel.h"

#include "diagnose/Cause.h"

#include <QColor>
#include <QStringList>
#include <cmath>

namespace rs {

FindingsModel::FindingsModel(QObject* parent)
    : QAbstractTableModel(parent) {}

void FindingsModel::setFindings(std::vector<Finding> findings) {
    beginResetModel();
    m_findings = std::move(findings);
    endResetModel();
}

const Finding* FindingsModel::findingAt(int row) const {
    return row >= 0 && row < int(m_findings.size()) ? &m_findings[size_t(row)] : nullptr;
}

int FindingsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_findings.size());
}

int FindingsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QString FindingsModel::ranksText(const Finding& f) {
    QStringList out;
    for (int r : f.ranks)
        out << QString::number(r);
    return out.isEmpty() ? QStringLiteral("all") : out.join(QStringLiteral(", "));
}

QString FindingsModel::paramsText(const Finding& f) {
    QStringList out;
    for (const auto& p : f.parameters)
        out << QString::fromStdString(p);
    if (out.size() > 3)
        return QStringLiteral("%1, … (%2)").arg(out.mid(0, 3).join(QStringLiteral(", "))).arg(out.size());
    return out.join(QStringLiteral(", "));
}

QString FindingsModel::allParamsText(const Finding& f) {
    QStringList out;
    for (const auto& p : f.parameters)
        out << QString::fromStdString(p);
    return out.join(QStringLiteral(", "));
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
    const Finding* f = index.isValid() ? findingAt(index.row()) : nullptr;
    if (!f || index.column() >= ColumnCount)
        return {};
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case ConfidenceCol:
            return QStringLiteral("%1 %").arg(int(std::lround(f->confidence * 100)));
        case CauseCol:
            return QString::fromStdString(f->key());
        case DimensionCol:
            return QString::fromStdString(f->dimension());
        case StepCol:
            return f->firstStep >= 0 ? QVariant(qlonglong(f->firstStep)) : QVariant(QStringLiteral("—"));
        case RanksCol:
            return ranksText(*f);
        case ParamsCol:
            return paramsText(*f);
        }
    }
    if (role == Qt::ToolTipRole) {
        // The two list columns are cut to fit the table: their tooltip starts with the whole list.
        QString list;
        if (index.column() == RanksCol)
            list = tr("<p><b>Ranks:</b> %1</p>").arg(ranksText(*f).toHtmlEscaped());
        else if (index.column() == ParamsCol && !f->parameters.empty())
            list = tr("<p><b>Parameters:</b> %1</p>").arg(allParamsText(*f).toHtmlEscaped());
        // The cause table's title says in words what the id means.
        const QString title = QStringLiteral(": ") + QString::fromLatin1(f->info().title);
        return list + tr("<b>%1</b>%2<p>%3</p><p><b>Fix:</b> %4</p>")
                          .arg(QString::fromStdString(f->key()).toHtmlEscaped(), title.toHtmlEscaped(),
                               QString::fromStdString(f->evidence).toHtmlEscaped(),
                               QString::fromStdString(f->fix).toHtmlEscaped());
    }
    if (role == Qt::TextAlignmentRole && (index.column() == ConfidenceCol || index.column() == StepCol))
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && index.column() == ConfidenceCol && f->confidence >= 0.8)
        return QColor(180, 0, 0);
    return {};
}

QVariant FindingsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return {};
    static const char* const names[] = {"Confidence", "Cause", "Dimension",
                                        "First step", "Ranks", "Parameters"};
    static const char* const tips[] = {"How sure the rule is, 0-100 %",
                                       "The likely cause, as a fault-lab id",
                                       "environment, data-model, numerics or parallel",
                                       "The first step the evidence shows",
                                       "The ranks concerned",
                                       "The parameter tensors concerned"};
    if (role == Qt::DisplayRole)
        return tr(names[section]);
    if (role == Qt::ToolTipRole)
        return tr(tips[section]);
    return {};
}

} // namespace rs
