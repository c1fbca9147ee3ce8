// The checks' shared pieces: see Check.h.
#include "diagnose/Check.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace rs {

RunFacts::RunFacts(const RunMeta& m)
    : meta(m)
    , R(m.worldSize)
    , P(int(m.params.size()))
    , keys(RecordKeys::of(m)) {}

std::string RunFacts::paramName(int p) const {
    return p >= 0 && p < P ? meta.params[size_t(p)].name : std::string("?");
}

Finding makeFinding(Cause c, double confidence, int64_t firstStep, std::vector<int> ranks,
                    std::string evidence, std::string fix) {
    Finding f;
    f.cause = c;
    f.confidence = std::clamp(confidence, 0.0, 1.0);
    f.firstStep = firstStep == kNoStep ? -1 : firstStep;
    f.ranks = std::move(ranks);
    f.evidence = std::move(evidence);
    f.fix = std::move(fix);
    return f;
}

std::vector<int> allRanks(int R) {
    std::vector<int> v;
    v.reserve(size_t(std::max(R, 0)));
    for (int r = 0; r < R; ++r)
        v.push_back(r);
    return v;
}

std::string joinRanks(const std::vector<int>& ranks) {
    std::string out;
    for (size_t i = 0; i < ranks.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    return out;
}

double median(std::vector<double> v) {
    if (v.empty())
        return std::nan("");
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int argmax(const std::vector<int64_t>& v) {
    return v.empty() ? -1 : int(std::max_element(v.begin(), v.end()) - v.begin());
}

std::string syncedBasis(const RunFacts& f) {
    return f.keys.syncedFp
               ? std::string()
               : fmt::format("; the source ({}) records no fingerprints, so ranks were compared on "
                             "their synced gradient norms as recorded (equal to the file's rounding)",
                             f.meta.source);
}

} // namespace rs
