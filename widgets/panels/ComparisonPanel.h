// The "Against the Reference" page beside the training charts: the open run compared with a reference run
// (File > Compare With Reference…). A
// summary in words (what the two are expected to agree on and why, the settings that differ, where they first
// part, how long their fingerprints stayed equal, what could not be compared) above the ReferenceChart.
// Clicking the summary's first divergence moves the step cursor there; where the runs' arithmetic differs, a
// link asks for a spread reference (spreadRequested) to tell their drift from a fault.
#pragma once

#include <QWidget>
#include <memory>

class QLabel;

namespace rs {

class ReferenceChart;
class RunModel;
class StepCursor;
struct RunComparison;

class ComparisonPanel : public QWidget {
    Q_OBJECT
public:
    ComparisonPanel(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    // The comparison of the open run with the file at referencePath; null clears it.
    void setComparison(std::shared_ptr<const RunComparison> comparison, const QString& referencePath);
    std::shared_ptr<const RunComparison> comparison() const { return m_comparison; }
    QString referencePath() const { return m_referencePath; }
    ReferenceChart* chart() const { return m_chart; }
    QString summaryText() const; // the summary as plain text

signals:
    void spreadRequested(); // the user asked to measure the drift with a spread reference
    void comparisonChanged();

private:
    void updateSummary();

    StepCursor* m_cursor;
    std::shared_ptr<const RunComparison> m_comparison;
    QString m_referencePath;
    QLabel* m_summary;
    ReferenceChart* m_chart;
};

} // namespace rs
