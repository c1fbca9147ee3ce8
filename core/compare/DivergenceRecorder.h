// Where two runs part, gathered as the judging finds it (AlignedComparison.cpp): each judged value's excess
// into the step's row of the map and its parameter's worst, and per step the value furthest past its
// tolerance per statistic and parameter, which becomes the parameter's, the statistic's and the comparison's
// first divergence when it is the earliest.
#pragma once

#include "compare/RunComparison.h"

#include <cstdint>
#include <string>
#include <vector>

namespace rs {

class DivergenceRecorder {
public:
    // names: A's parameter names; column: A's parameter -> its index in c.perParameter (-1: not compared).
    DivergenceRecorder(RunComparison& c, std::vector<std::string> names, std::vector<int> column);

    // A new row of the map, NaN until a statistic of the parameter is judged at this step (not judged: an
    // overflowed step of other arithmetic, a step after the runs applied other updates).
    void beginStep(int64_t step);
    // One judged value of statistic row `stat` (ComparedStatistics.h): excess past its tolerance, relative
    // difference (ties), the values; rankA -1 when not per rank, param -1 when not per parameter.
    void record(size_t stat, double excess, double relative, const Divergence& value, int rankA, int param,
                int64_t step);
    // The step's candidates become first divergences where they are the first.
    void finishStep(int64_t step);

private:
    struct Candidate {
        double excess = 0, relative = 0;
        Divergence d;
    };
    RunComparison& m_c;
    std::vector<std::string> m_names;
    std::vector<int> m_column;
    std::vector<Candidate> m_candidates; // per statistic row x (1 + A's parameters): this step's worst

    void noteInMap(double excess, int param, int64_t step);
    Candidate& candidate(size_t stat, int param);
    const Candidate* finishStatistic(size_t stat);
};

} // namespace rs
