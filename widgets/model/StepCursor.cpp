// StepCursor: see StepCursor.h.
#include "model/StepCursor.h"

namespace rs {

StepCursor::StepCursor(QObject* parent)
    : QObject(parent) {}

void StepCursor::setStep(int64_t step) {
    setFollowing(false);
    if (step == m_step)
        return;
    m_step = step;
    emit stepChanged(step);
}

void StepCursor::setRange(double lower, double upper) {
    if (!(upper > lower))
        return;
    setFollowing(false);
    if (lower == m_lower && upper == m_upper)
        return;
    m_lower = lower;
    m_upper = upper;
    emit rangeChanged(lower, upper);
}

void StepCursor::followLatest() {
    setFollowing(true);
}

void StepCursor::reset() {
    m_step = 0;
    m_lower = 0;
    m_upper = 1;
    setFollowing(true);
    emit stepChanged(m_step);
    emit rangeChanged(m_lower, m_upper);
}

void StepCursor::advanceTo(int64_t lastStep, double lower, double upper) {
    if (!m_following)
        return;
    if (lastStep != m_step) {
        m_step = lastStep;
        emit stepChanged(m_step);
    }
    if (upper <= lower)
        upper = lower + 1; // a one-step run still gets a visible range
    if (lower != m_lower || upper != m_upper) {
        m_lower = lower;
        m_upper = upper;
        emit rangeChanged(lower, upper);
    }
}

void StepCursor::setFollowing(bool on) {
    if (on == m_following)
        return;
    m_following = on;
    emit followingChanged(on);
}

} // namespace rs
