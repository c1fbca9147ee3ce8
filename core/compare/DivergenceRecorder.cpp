// DivergenceRecorder: see DivergenceRecorder.h.
#include "compare/DivergenceRecorder.h"

#include "compare/ComparedStatistics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rs {
namespace {

bool worse(double excess, double relative, double thanExcess, double thanRelative) {
    return excess > thanExcess || (excess == thanExcess && relative > thanRelative);
}

} // namespace

DivergenceRecorder::DivergenceRecorder(RunComparison& c, std::vector<std::string> names,
                                       std::vector<int> column)
    : m_c(c)
    , m_names(std::move(names))
    , m_column(std::move(column))
    , m_candidates(kStatisticCount * (m_names.size() + 1)) {}

void DivergenceRecorder::beginStep(int64_t step) {
    m_c.mapSteps.push_back(step);
    m_c.mapExcess.resize(m_c.mapExcess.size() + m_c.perParameter.size(),
                         std::numeric_limits<float>::quiet_NaN());
}

void DivergenceRecorder::noteInMap(double excess, int param, int64_t step) {
    const int k = m_column[size_t(param)];
    float& cell = m_c.mapExcess[m_c.mapExcess.size() - m_c.perParameter.size() + size_t(k)];
    cell = std::isnan(cell) ? float(excess) : std::max(cell, float(excess));
    ParameterComparison& pc = m_c.perParameter[size_t(k)];
    if (excess > pc.worstExcess) {
        pc.worstExcess = excess;
        pc.worstStep = step;
    }
}

DivergenceRecorder::Candidate& DivergenceRecorder::candidate(size_t stat, int param) {
    return m_candidates[stat * (m_names.size() + 1) + size_t(param + 1)];
}

void DivergenceRecorder::record(size_t stat, double ex, double rel, const Divergence& value, int rankA,
                                int param, int64_t step) {
    if (param >= 0)
        noteInMap(ex, param, step);
    if (ex <= 1.0)
        return;
    Candidate& cand = candidate(stat, param);
    if (cand.d.statistic.empty() || worse(ex, rel, cand.excess, cand.relative)) {
        std::vector<int> ranks = std::move(cand.d.ranks);
        cand.d = value;
        cand.d.ranks = std::move(ranks);
        cand.d.step = step;
        cand.d.statistic = kStatistics[stat].name;
        cand.d.parameter = param >= 0 ? m_names[size_t(param)] : "";
        cand.excess = ex;
        cand.relative = rel;
    }
    if (rankA >= 0 && std::find(cand.d.ranks.begin(), cand.d.ranks.end(), rankA) == cand.d.ranks.end())
        cand.d.ranks.push_back(rankA);
}

// Per parameter: its first divergence. The statistic's worst: the parameter furthest past its tolerance.
const DivergenceRecorder::Candidate* DivergenceRecorder::finishStatistic(size_t stat) {
    const Candidate* best = nullptr;
    for (int param = -1; param < int(m_names.size()); ++param) {
        Candidate& cand = candidate(stat, param);
        if (cand.d.statistic.empty())
            continue;
        std::sort(cand.d.ranks.begin(), cand.d.ranks.end());
        if (param >= 0) {
            ParameterComparison& pc = m_c.perParameter[size_t(m_column[size_t(param)])];
            if (!pc.first)
                pc.first = cand.d;
        }
        if (!best || worse(cand.excess, cand.relative, best->excess, best->relative))
            best = &cand;
    }
    return best;
}

void DivergenceRecorder::finishStep(int64_t step) {
    // Overall: the earliest statistic in flow order (the table's order), then the furthest past its
    // tolerance.
    for (size_t s = 0; s < kStatisticCount; ++s) {
        const Candidate* best = finishStatistic(s);
        if (best && (!m_c.first || step < m_c.first->step))
            m_c.first = best->d;
        if (best && !m_c.firstOf(kStatistics[s].name))
            m_c.firstByStatistic.push_back(best->d);
    }
    for (Candidate& cand : m_candidates)
        cand = Candidate{};
    // A skip that came with a divergence at its step is the divergence's consequence, not drift.
    if (m_c.first && m_c.updatesDifferFrom >= 0 && m_c.first->step <= m_c.updatesDifferFrom)
        m_c.updatesDifferFrom = -1;
}

} // namespace rs
