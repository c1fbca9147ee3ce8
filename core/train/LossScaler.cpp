#include "train/LossScaler.h"

#include <algorithm>

namespace rs {

LossScaler::LossScaler(const LossScaleSpec& spec)
    : m_spec(spec)
    , m_scale(spec.mode == LossScaleMode::None ? 1.0f : spec.value) {}

bool LossScaler::update(bool overflow) {
    switch (m_spec.mode) {
    case LossScaleMode::None:
        return false; // nothing checks: a non-finite gradient goes straight into the weights
    case LossScaleMode::Fixed:
        return overflow; // drop_overflow_update=True
    case LossScaleMode::Dynamic:
        if (overflow) {
            m_scale = std::max(m_scale / m_spec.factor, 1.0f);
            m_goodSteps = 0;
            return true;
        }
        if (++m_goodSteps >= m_spec.window) {
            m_scale *= m_spec.factor;
            m_goodSteps = 0;
        }
        return false;
    }
    return false;
}

} // namespace rs
