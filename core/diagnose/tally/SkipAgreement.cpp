// SkipAgreement: see SkipAgreement.h.
#include "diagnose/tally/SkipAgreement.h"

namespace rs {
namespace {

int skippers(const StepRecord& st) {
    int n = 0;
    for (const auto& x : st.ranks)
        n += x.skipped != 0;
    return n;
}

} // namespace

bool SkipAgreement::split(const StepRecord& st) {
    const int n = skippers(st);
    return n > 0 && n < int(st.ranks.size());
}

void SkipAgreement::addStep(const StepRecord& st, const RunExtent&) {
    if (!split(st))
        return;
    ++mismatchSteps;
    const int R = int(st.ranks.size());
    const bool minoritySkipped = skippers(st) * 2 <= R;
    for (int r = 0; r < R; ++r)
        if ((st.ranks[size_t(r)].skipped != 0) == minoritySkipped) {
            ++minority[size_t(r)];
            first.note(st.step, r, -1, 0);
        }
}

} // namespace rs
