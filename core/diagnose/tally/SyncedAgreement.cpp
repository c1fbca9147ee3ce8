// SyncedAgreement: see SyncedAgreement.h.
#include "diagnose/tally/SyncedAgreement.h"

#include <cmath>
#include <fmt/format.h>
#include <map>

namespace rs {
namespace {

constexpr size_t kMaxParamsListed = 8;

} // namespace

SyncedAgreement::SyncedAgreement(const RunFacts& f)
    : paramMismatch(size_t(f.P), 0)
    , paramAllDistinct(size_t(f.P), 0)
    , paramOwnSum(size_t(f.P), 0)
    , paramFirst(size_t(f.P), kNoStep)
    , oddRank(size_t(std::max(f.R, 0)), 0)
    , sumCheckAlone(size_t(std::max(f.R, 0)), 0)
    , firstOdd(size_t(std::max(f.R, 0)), kNoStep)
    , m_facts(f)
    , m_key(size_t(std::max(f.R, 0))) {}

void SyncedAgreement::addParamStep(const StepRecord& st) {
    const int R = m_facts.R;
    bool comparable = false;
    std::vector<int> odd(size_t(R), 0), sumAlone(size_t(R), 0), mismatched;
    for (int p = 0; p < m_facts.P; ++p) {
        bool recorded = true;
        for (int r = 0; r < R; ++r) {
            m_key[size_t(r)] = m_facts.keys.synced(st.ranks[size_t(r)], size_t(p));
            recorded = recorded && m_key[size_t(r)] != 0; // 0: not recorded
        }
        comparable = comparable || recorded;
        if (recorded && compare(st, p, odd, sumAlone))
            mismatched.push_back(p);
    }
    comparableSteps += comparable;
    if (mismatched.empty())
        return;
    ++mismatchSteps;
    firstMismatch.note(st.step, -1, mismatched.front(), double(mismatched.size()));
    if (firstMismatchParams.empty()) // steps arrive in order: the first mismatch step names them
        for (size_t i = 0; i < mismatched.size() && i < kMaxParamsListed; ++i)
            firstMismatchParams.push_back(mismatched[i]);
    for (int r = 0; r < R; ++r) {
        oddRank[size_t(r)] += odd[size_t(r)];
        sumCheckAlone[size_t(r)] += sumAlone[size_t(r)];
        if (odd[size_t(r)] || sumAlone[size_t(r)])
            firstOdd[size_t(r)] = std::min(firstOdd[size_t(r)], st.step);
    }
}

bool SyncedAgreement::compare(const StepRecord& st, int p, std::vector<int>& odd,
                              std::vector<int>& sumAlone) {
    const int R = m_facts.R;
    std::map<uint64_t, int> groups;
    for (int r = 0; r < R; ++r)
        ++groups[m_key[size_t(r)]];
    if (groups.size() <= 1)
        return false;
    ++paramMismatch[size_t(p)];
    paramFirst[size_t(p)] = std::min(paramFirst[size_t(p)], st.step);
    if (int(groups.size()) == R)
        ++paramAllDistinct[size_t(p)];
    // The odd rank: alone against a majority that agrees (needs 3 ranks or more).
    if (R >= 3 && groups.size() == 2)
        for (int r = 0; r < R; ++r)
            if (groups[m_key[size_t(r)]] == 1)
                odd[size_t(r)] = 1;
    sumChecks(st, p, sumAlone);
    return true;
}

// The all-reduce must give mean(local sums) (or their sum) everywhere; a rank whose synced sum is instead its
// own local sum never took part.
void SyncedAgreement::sumChecks(const StepRecord& st, int p, std::vector<int>& sumAlone) {
    const int R = m_facts.R;
    const auto& rk = st.ranks;
    double mean = 0, meanAbs = 0, meanNorm = 0;
    for (int r = 0; r < R; ++r) {
        mean += rk[size_t(r)].localSum[size_t(p)] / R;
        meanAbs += std::fabs(rk[size_t(r)].localSum[size_t(p)]) / R;
        meanNorm += double(rk[size_t(r)].localNorm[size_t(p)]) / R;
    }
    const double numel = double(std::max<int64_t>(1, m_facts.meta.params[size_t(p)].numel));
    const double tol = 0.02 * meanAbs + 0.01 * std::sqrt(numel) * meanNorm + 1e-30;
    bool own = true;
    int failing = 0, failRank = -1;
    for (int r = 0; r < R; ++r) {
        const double syn = rk[size_t(r)].syncedSum[size_t(p)], loc = rk[size_t(r)].localSum[size_t(p)];
        own = own && std::isfinite(syn) &&
              std::fabs(syn - loc) <= 5e-3 * std::fabs(loc) + 1e-6 * tol; // fp16 payload rounding
        const bool okMean = std::fabs(syn - mean) <= tol, okSum = std::fabs(syn - mean * R) <= R * tol;
        if (!(okMean || okSum) || !std::isfinite(syn)) {
            ++failing;
            failRank = r;
        }
    }
    if (own)
        ++paramOwnSum[size_t(p)];
    if (failing == 1)
        sumAlone[size_t(failRank)] = 1;
}

std::vector<int> SyncedAgreement::leftOut(const RunExtent& run) const {
    std::vector<int> always;
    int64_t otherMismatch = 0;
    for (int p = 0; p < m_facts.P; ++p) {
        const int64_t m = paramMismatch[size_t(p)];
        const bool own = paramOwnSum[size_t(p)] * 2 >= m || paramAllDistinct[size_t(p)] * 10 >= m * 8;
        // On (nearly) every step since it first differed: a parameter dropped from the reducer mid-run (a
        // layer unfrozen after the reducer was built) differs from then on; a corrupted copy on one step.
        const int64_t since = paramFirst[size_t(p)] == kNoStep
                                  ? 0
                                  : std::min(run.paramSteps, run.lastStep - paramFirst[size_t(p)] + 1);
        if (since >= 3 && m * 10 >= since * 8 && own)
            always.push_back(p);
        else
            otherMismatch += m;
    }
    if (always.empty() || always.size() > size_t(std::max(1, m_facts.P / 10)) ||
        otherMismatch > run.paramSteps / 10)
        return {};
    return always;
}

std::string SyncedAgreement::notComparable(const RunExtent& run) const {
    if (run.paramSteps > 0 && comparableSteps == 0)
        return "no step recorded synced gradients on every rank (a rank the source did not record, or an "
               "msprobe run with dp_group set, which writes them on data-parallel rank 0 only)";
    return "";
}

std::string SyncedAgreement::figures() const {
    return fmt::format("synced mismatch steps {} (comparable steps {})", mismatchSteps, comparableSteps);
}

} // namespace rs
