// Diagnosis findings as a table: confidence, cause, dimension, first step, ranks, parameters; the evidence
// and the fix are in the tooltip and in FindingsPanel's detail view. The Ranks and Parameters cells may be
// cut to the table's width: their tooltip starts with the whole list.
#pragma once

#include "diagnose/Finding.h"

#include <QAbstractTableModel>
#include <vector>

namespace rs {

class FindingsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ConfidenceCol, CauseCol, DimensionCol, StepCol, RanksCol, ParamsCol, ColumnCount };

    explicit FindingsModel(QObject* parent = nullptr);
    void setFindings(std::vector<Finding> findings);
    const std::vector<Finding>& findings() const { return m_findings; }
    const Finding* findingAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString ranksText(const Finding& f);
    static QString paramsText(const Finding& f);    // the first three, and how many there are
    static QString allParamsText(const Finding& f); // every one

private:
    std::vector<Finding> m_findings;
};

} // namespace rs
