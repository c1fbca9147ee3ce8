// The one step cursor every chart shares, and the step range they all show (linked zoom and pan).
// Charts set it on click/drag and follow it through the signals; nothing here knows about widgets.
#pragma once

#include <QObject>
#include <cstdint>

namespace rs {

class StepCursor : public QObject {
    Q_OBJECT
public:
    explicit StepCursor(QObject* parent = nullptr);

    int64_t step() const { return m_step; }
    double rangeLower() const { return m_lower; }
    double rangeUpper() const { return m_upper; }
    // While following, a live run moves the cursor to each new step and the range to show the whole run.
    // A user's click or zoom stops following; followLatest() resumes it.
    bool following() const { return m_following; }

public slots:
    void setStep(int64_t step);                // by the user: stops following
    void setRange(double lower, double upper); // by the user: stops following
    void followLatest();
    void reset(); // a new run: step 0, range unset, following
    // From the model while following (does not stop following).
    void advanceTo(int64_t lastStep, double lower, double upper);

signals:
    void stepChanged(int64_t step);
    void rangeChanged(double lower, double upper);
    void followingChanged(bool following);

private:
    void setFollowing(bool on);
    int64_t m_step = 0;
    double m_lower = 0, m_upper = 1;
    bool m_following = true;
};

} // namespace rs
