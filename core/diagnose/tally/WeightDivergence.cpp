// WeightDivergence: see WeightDivergence.h.
#include "diagnose/tally/WeightDivergence.h"

namespace rs {

int paramsDiffering(const RunFacts& f, const WeightRecord& w, int rank) {
    int differ = 0;
    for (size_t p = 0; p < size_t(f.P); ++p) {
        const uint64_t mine = f.keys.weight(w, size_t(rank), p), ref = f.keys.weight(w, 0, p);
        differ += mine != 0 && ref != 0 && mine != ref;
    }
    return differ;
}

void WeightDivergence::addWeights(const WeightRecord& w) {
    for (int r = 1; r < m_facts.R; ++r)
        if (paramsDiffering(m_facts, w, r) > 0)
            since[size_t(r)] = std::min(since[size_t(r)], w.step);
}

} // namespace rs
