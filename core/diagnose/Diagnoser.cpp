// Diagnoser's accumulation: folds each record into the bounded summaries of DiagnoserState.h, and
// diagnoseRun(), which feeds a whole file in chunks. The rules that read the summaries are in
// DiagnoserRules.cpp.
#include "diagnose/Diagnoser.h"

#include "diagnose/DiagnoserState.h"
#include "store/RunReader.h"
#include "view/RankMatrix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <regex>
#include <set>

namespace rs {

Diagnoser::State::State(const RunMeta& m)
    : meta(m)
    , R(m.worldSize)
    , P(int(m.params.size())) {
    keys = RecordKeys::of(m);
    haveSampleFp = recorded(runschema::kSampleFp);
    haveLocalNorm = recorded(runschema::kLocalNorm);
    const size_t r = size_t(std::max(R, 0)), pairs = r * r, p = size_t(P);
    deadStep.assign(r, kNoStep);
    skipMinority.assign(r, 0);
    slowest.assign(r, 0);
    computeSum.assign(r, 0);
    commSum.assign(r, 0);
    slowDated.assign(r, {});
    identical.assign(pairs, 0);
    overlapping.assign(pairs, 0);
    overlapSum.assign(pairs, 0);
    firstIdentical.assign(pairs, kNoStep);
    identCosMin.assign(pairs, 2.0);
    paddedSteps.assign(r, 0);
    paramMismatchSteps.assign(p, 0);
    paramAllDistinct.assign(p, 0);
    paramOwnSum.assign(p, 0);
    paramFirstMismatch.assign(p, kNoStep);
    oddRank.assign(r, 0);
    sumCheckAlone.assign(r, 0);
    firstOdd.assign(r, kNoStep);
    outlierRank.assign(r, 0);
    biasLogSum.assign(r, 0);
    biasHigh.assign(r, 0);
    biasLow.assign(r, 0);
    initDiffer.assign(r, 0);
    bufferChanged.assign(r, 0);
    bufferStill.assign(r, 0);
    bufferStillSince.assign(r, -1);
    bufferDriftMax.assign(r, 0);
    haveStepBuffers = recorded(runschema::kBufferFpStep) && !m.bufferNames.empty();
    stepStill.assign(r, 0);
    stepStillSince.assign(r, -1);
    frozenSince.assign(r, kNoStep);
    frozenLongest.assign(r, 0);
    weightDiverge.assign(r, kNoStep);
}

namespace {

constexpr size_t kMaxEvents = 1000, kMaxEpochStarts = 64, kMaxParamsListed = 8;

double median(std::vector<double> v) {
    if (v.empty())
        return std::nan("");
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool hasParamVectors(const RankStep& x, int P) {
    const auto p = size_t(P);
    return P > 0 && x.localNorm.size() == p && x.localMax.size() == p && x.localSum.size() == p &&
           x.syncedSum.size() == p && x.syncedFp.size() == p && x.underflowCount.size() == p;
}

uint64_t floatBits(float v) {
    uint32_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

// What identifies a rank's batch: the sample fingerprint, or without sample ids the local gradient it
// produced (every parameter's norm and max |g| as recorded). 0: nothing to compare.
uint64_t batchKey(const Diagnoser::State& s, const RankStep& x) {
    if (s.haveSampleFp)
        return x.sampleFp;
    if (!s.haveLocalNorm || x.localNorm.size() != size_t(s.P) || s.P == 0)
        return 0;
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (size_t p = 0; p < x.localNorm.size(); ++p) {
        if (!std::isfinite(x.localNorm[p]))
            return 0;
        const uint64_t mx = p < x.localMax.size() ? floatBits(x.localMax[p]) : 0;
        h = (h ^ floatBits(x.localNorm[p]) ^ (mx << 32)) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
    }
    return h | 1;
}

// "... waiting for rank(s) 1, 3 (call #12)" -> {1, 3}
std::vector<int> ranksNamed(const std::string& message) {
    static const std::regex re(R"(waiting for rank\(s\) ([0-9, ]+))");
    std::smatch m;
    std::vector<int> out;
    if (!std::regex_search(message, m, re))
        return out;
    static const std::regex num("[0-9]+");
    const std::string list = m[1];
    for (auto it = std::sregex_iterator(list.begin(), list.end(), num); it != std::sregex_iterator(); ++it)
        out.push_back(std::stoi(it->str()));
    return out;
}

// BatchNorm statistics per step: in training mode every forward moves them. A rank whose statistics stay put
// while every other working rank's move is in eval mode from the first such step. A step where another rank
// also stood still, or a rank was not working, says nothing about one rank: it ends the streak.
void stepBufferPart(Diagnoser::State& s, const StepRecord& st) {
    if (!s.haveStepBuffers)
        return;
    const size_t R = size_t(s.R);
    if (!s.stepBufferPrev.empty() && st.step == s.stepBufferPrevStep + 1) {
        std::vector<char> still(R);
        size_t stillCount = 0;
        bool allWorking = true;
        for (size_t r = 0; r < R; ++r) {
            still[r] = st.ranks[r].bufferFp == s.stepBufferPrev[r];
            stillCount += still[r];
            allWorking = allWorking && st.ranks[r].state == uint8_t(CardState::Ok);
        }
        for (size_t r = 0; r < R; ++r) {
            // A replica whose loss is not finite has NaN statistics, which stand still without eval mode.
            const bool finite = std::isfinite(st.ranks[r].loss);
            if (allWorking && finite && still[r] && stillCount == 1) {
                if (s.stepStill[r]++ == 0)
                    s.stepStillSince[r] = st.step;
                s.frozenLongest[r] = std::max(s.frozenLongest[r], s.stepStill[r]);
                if (s.stepStill[r] >= diag::kFrozenSteps && s.frozenSince[r] == kNoStep)
                    s.frozenSince[r] = s.stepStillSince[r];
            } else {
                s.stepStill[r] = 0;
            }
        }
    }
    s.stepBufferPrev.resize(R);
    for (size_t r = 0; r < R; ++r)
        s.stepBufferPrev[r] = st.ranks[r].bufferFp;
    s.stepBufferPrevStep = st.step;
}

void scalarPart(Diagnoser::State& s, const StepRecord& st) {
    const int R = s.R;
    const auto& rk = st.ranks;
    if (s.prevEpoch >= 0 && st.epoch > s.prevEpoch && s.epochStarts.size() < kMaxEpochStarts)
        s.epochStarts.push_back(st.step);
    s.prevEpoch = st.epoch;
    for (int r = 0; r < R; ++r) {
        const auto& x = rk[size_t(r)];
        if (x.state == uint8_t(CardState::Dead))
            s.deadStep[size_t(r)] = std::min(s.deadStep[size_t(r)], st.step);
        if (std::isfinite(x.lossScale) && x.lossScale > 0) {
            s.scaleMin = std::min(s.scaleMin, double(x.lossScale));
            s.scaleMax = std::max(s.scaleMax, double(x.lossScale));
        }
    }
    const bool late = st.step >= diag::kLossScaleWarmup;
    s.stepsLate += late;
    if (rk[0].overflow) {
        ++s.overflowSteps;
        s.overflowLate += late;
        s.firstOverflow.note(st.step, -1, -1, rk[0].lossScale);
    }

    // Skip decisions: every rank must take the same one (the overflow status is all-reduced).
    int skippers = 0;
    for (const auto& x : rk)
        skippers += x.skipped != 0;
    if (skippers > 0 && skippers < R) {
        ++s.skipMismatchSteps;
        // The minority is the odd one out; on a tie the ranks that skipped (they saw an overflow alone).
        const bool minoritySkipped = skippers * 2 <= R;
        for (int r = 0; r < R; ++r)
            if ((rk[size_t(r)].skipped != 0) == minoritySkipped) {
                ++s.skipMinority[size_t(r)];
                s.firstSkipMismatch.note(st.step, r, -1, 0);
            }
    }

    // Loss scales apart with no skip disagreement on this step or the one before: a scaler started over.
    bool scalesRecorded = true, scalesAgree = true;
    for (const auto& x : rk) {
        scalesRecorded = scalesRecorded && std::isfinite(x.lossScale) && x.lossScale > 0;
        scalesAgree = scalesAgree && x.lossScale == rk[0].lossScale;
    }
    const bool skipSplit = skippers > 0 && skippers < R;
    if (scalesRecorded) {
        if (!scalesAgree) {
            ++s.scaleSplitSteps;
            if (s.prevScalesAgree && s.prevScales.size() == size_t(R) && !skipSplit && !s.prevSkipSplit) {
                int odd = 0; // the rank whose scale moved most against its own last step's
                double most = -1;
                for (int r = 0; r < R; ++r)
                    if (const double jump =
                            std::fabs(std::log2(rk[size_t(r)].lossScale / s.prevScales[size_t(r)]));
                        jump > most) {
                        most = jump;
                        odd = r;
                    }
                std::vector<double> others;
                for (int r = 0; r < R; ++r)
                    if (r != odd)
                        others.push_back(rk[size_t(r)].lossScale);
                s.firstScaleSplit.note(st.step, odd, -1,
                                       std::log2(rk[size_t(odd)].lossScale / median(others)));
            }
        }
        s.prevScales.resize(size_t(R));
        for (int r = 0; r < R; ++r)
            s.prevScales[size_t(r)] = rk[size_t(r)].lossScale;
        s.prevScalesAgree = scalesAgree;
    } else {
        s.prevScales.clear();
    }
    s.prevSkipSplit = skipSplit;

    bool clean = true, lossFinite = true;
    for (const auto& x : rk) {
        clean = clean && !x.overflow && !x.skipped;
        lossFinite = lossFinite && std::isfinite(x.loss);
    }
    if (s.prevCleanApplied && st.step == s.prevStepNo + 1 && !lossFinite) {
        ++s.nanAfterClean;
        s.firstNanAfterClean.note(s.prevStepNo, -1, -1, 0);
    }
    s.prevCleanApplied = clean && lossFinite;
    s.prevStepNo = st.step;

    // Compute time: the first two steps allocate and warm up, so they date a slow card but do not count.
    if (R >= 2) {
        const bool timed = s.steps >= 2;
        s.timedSteps += timed ? 1 : 0;
        int slow = 0;
        for (int r = 0; r < R; ++r) {
            if (timed) {
                s.computeSum[size_t(r)] +=
                    std::isfinite(rk[size_t(r)].computeMs) ? rk[size_t(r)].computeMs : 0;
                s.commSum[size_t(r)] += std::isfinite(rk[size_t(r)].commMs) ? rk[size_t(r)].commMs : 0;
            }
            if (rk[size_t(r)].computeMs > rk[size_t(slow)].computeMs)
                slow = r;
        }
        std::vector<double> others;
        for (int r = 0; r < R; ++r)
            if (r != slow)
                others.push_back(rk[size_t(r)].computeMs);
        const double med = median(others);
        if (med > 0 && rk[size_t(slow)].computeMs >= diag::kSlowRatio * med) {
            s.slowest[size_t(slow)] += timed ? 1 : 0;
            if (auto& dated = s.slowDated[size_t(slow)]; dated.size() < diag::kSlowDated)
                dated.push_back(st.step);
        }
    }

    // Data shards: which pairs of ranks read the same samples.
    bool anyIdentical = false;
    std::vector<std::set<int32_t>> ids(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r)
        for (int32_t id : rk[size_t(r)].sampleIds) {
            if (id < 0)
                continue;
            ids[size_t(r)].insert(id);
        }
    for (int r = 0; r < R; ++r)
        if (std::count(rk[size_t(r)].sampleIds.begin(), rk[size_t(r)].sampleIds.end(), -1) > 0)
            ++s.paddedSteps[size_t(r)];
    std::vector<uint64_t> batch(static_cast<size_t>(R));
    for (int r = 0; r < R; ++r)
        batch[size_t(r)] = batchKey(s, rk[size_t(r)]);
    if (std::count(batch.begin(), batch.end(), uint64_t(0)) == R)
        return; // nothing recorded to compare batches by
    ++s.sampleSteps;
    s.gradientKeySteps += !s.haveSampleFp;
    for (int i = 0; i < R; ++i)
        for (int j = i + 1; j < R; ++j) {
            const auto& a = rk[size_t(i)];
            const auto& b = rk[size_t(j)];
            const bool same = batch[size_t(i)] != 0 && batch[size_t(i)] == batch[size_t(j)] &&
                              (a.sampleIds.empty() || a.sampleIds == b.sampleIds);
            const int k = s.pair(i, j);
            if (same) {
                ++s.identical[size_t(k)];
                s.firstIdentical[size_t(k)] = std::min(s.firstIdentical[size_t(k)], st.step);
                anyIdentical = true;
            }
            if (!ids[size_t(i)].empty() && !ids[size_t(j)].empty()) {
                size_t shared = 0;
                for (int32_t id : ids[size_t(i)])
                    shared += ids[size_t(j)].count(id);
                const double frac =
                    double(shared) / double(std::min(ids[size_t(i)].size(), ids[size_t(j)].size()));
                s.overlapSum[size_t(k)] += frac;
                s.overlapping[size_t(k)] += frac >= 0.25;
            } else if (same) {
                s.overlapSum[size_t(k)] += 1;
                ++s.overlapping[size_t(k)];
            }
        }
    // Identical batches on identical weights give identical local gradients: the sketch cosine tells whether
    // the two ranks really computed the same thing (duplicate rank) or only shared samples.
    if (anyIdentical && s.meta.sketchDim > 0 && hasParamVectors(rk[0], s.P)) {
        const auto cos = view::rankMatrix(view::RankMetric::SketchCosine, s.meta, st, nullptr);
        for (int i = 0; i < R; ++i)
            for (int j = i + 1; j < R; ++j) {
                const int k = s.pair(i, j);
                const double c = cos.at(i, j);
                if (s.firstIdentical[size_t(k)] <= st.step && std::isfinite(c))
                    s.identCosMin[size_t(k)] = std::min(s.identCosMin[size_t(k)], c);
            }
    }
}

// Synced fingerprints per parameter: agreement, the odd rank, and the all-reduce sum checks.
void syncedPart(Diagnoser::State& s, const StepRecord& st) {
    const int R = s.R, P = s.P;
    const auto& rk = st.ranks;
    bool mismatch = false, comparable = false;
    std::vector<int> oddThisStep(size_t(R), 0), sumAloneThisStep(size_t(R), 0);
    std::vector<int> mismatched;
    std::vector<uint64_t> key(static_cast<size_t>(R));
    for (int p = 0; p < P; ++p) {
        std::map<uint64_t, int> groups;
        bool recorded = true;
        for (int r = 0; r < R; ++r) {
            key[size_t(r)] = s.keys.synced(rk[size_t(r)], size_t(p));
            recorded = recorded && key[size_t(r)] != 0; // 0: not recorded
            ++groups[key[size_t(r)]];
        }
        comparable = comparable || recorded;
        if (!recorded || groups.size() <= 1)
            continue;
        mismatch = true;
        mismatched.push_back(p);
        ++s.paramMismatchSteps[size_t(p)];
        s.paramFirstMismatch[size_t(p)] = std::min(s.paramFirstMismatch[size_t(p)], st.step);
        if (int(groups.size()) == R)
            ++s.paramAllDistinct[size_t(p)];
        // The odd rank: alone against a majority that agrees (needs 3 ranks or more).
        if (R >= 3 && groups.size() == 2)
            for (int r = 0; r < R; ++r)
                if (groups[key[size_t(r)]] == 1)
                    oddThisStep[size_t(r)] = 1;
        // Sum checks: the all-reduce must give mean(local sums) (or their sum) everywhere; a rank whose
        // synced sum is instead its own local sum never took part.
        double mean = 0, meanAbs = 0, meanNorm = 0;
        for (int r = 0; r < R; ++r) {
            mean += rk[size_t(r)].localSum[size_t(p)] / R;
            meanAbs += std::fabs(rk[size_t(r)].localSum[size_t(p)]) / R;
            meanNorm += double(rk[size_t(r)].localNorm[size_t(p)]) / R;
        }
        const double numel = double(std::max<int64_t>(1, s.meta.params[size_t(p)].numel));
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
            ++s.paramOwnSum[size_t(p)];
        if (failing == 1)
            sumAloneThisStep[size_t(failRank)] = 1;
    }
    s.syncedComparableSteps += comparable;
    if (!mismatch)
        return;
    ++s.syncMismatchSteps;
    s.firstSyncMismatch.note(st.step, -1, mismatched.front(), double(mismatched.size()));
    if (s.firstMismatchParams.empty()) // steps arrive in order: the first mismatch step names them
        for (size_t i = 0; i < mismatched.size() && i < kMaxParamsListed; ++i)
            s.firstMismatchParams.push_back(mismatched[i]);
    for (int r = 0; r < R; ++r) {
        s.oddRank[size_t(r)] += oddThisStep[size_t(r)];
        s.sumCheckAlone[size_t(r)] += sumAloneThisStep[size_t(r)];
        if (oddThisStep[size_t(r)] || sumAloneThisStep[size_t(r)])
            s.firstOdd[size_t(r)] = std::min(s.firstOdd[size_t(r)], st.step);
    }
}

// Local gradients: all-reduce ratio, outliers, underflow and systematic per-rank bias.
void localPart(Diagnoser::State& s, const StepRecord& st) {
    const int R = s.R, P = s.P;
    const auto& rk = st.ranks;
    const bool overflowed = rk[0].overflow != 0;

    // synced sum / mean(local sums): 1 with gradients_mean, R when the gradients are summed.
    if (R >= 2 && !overflowed) {
        std::vector<double> ratios;
        for (int p = 0; p < P; ++p) {
            double mean = 0, meanAbs = 0;
            for (int r = 0; r < R; ++r) {
                mean += rk[size_t(r)].localSum[size_t(p)] / R;
                meanAbs += std::fabs(rk[size_t(r)].localSum[size_t(p)]) / R;
            }
            const double syn = rk[0].syncedSum[size_t(p)];
            // Sums that nearly cancel across ranks say nothing about the arithmetic.
            if (!std::isfinite(mean) || !std::isfinite(syn) || std::fabs(mean) < 0.3 * meanAbs ||
                std::fabs(mean) < 1e-20)
                continue;
            ratios.push_back(syn / mean);
        }
        if (ratios.size() >= 1) {
            const double m = median(ratios);
            ++s.ratioSteps;
            s.ratioSum += m;
            if (std::fabs(m - 1) < 0.15)
                ++s.ratioNearOne;
            else if (std::fabs(m - R) < 0.15 * R) {
                ++s.ratioNearN;
                s.firstNearN.note(st.step, -1, -1, m);
            }
        }
    }

    // A finite local outlier on one rank: max |g| a thousand times every other rank's largest.
    bool outlier = false;
    if (R >= 2)
        for (int p = 0; p < P; ++p)
            for (int r = 0; r < R; ++r) {
                const double mx = rk[size_t(r)].localMax[size_t(p)];
                if (!std::isfinite(mx) || mx <= 0)
                    continue;
                double others = 0;
                bool finite = true;
                for (int q = 0; q < R; ++q)
                    if (q != r) {
                        const double v = rk[size_t(q)].localMax[size_t(p)];
                        finite = finite && std::isfinite(v);
                        others = std::max(others, v);
                    }
                if (!finite || others <= 0 || mx < diag::kOutlierRatio * others)
                    continue;
                if (!outlier) {
                    outlier = true;
                    ++s.outlierSteps;
                    ++s.outlierRank[size_t(r)];
                    bool agree = true;
                    for (int q = 1; q < R; ++q)
                        for (int pp = 0; pp < P && agree; ++pp)
                            agree =
                                s.keys.synced(rk[size_t(q)], size_t(pp)) == s.keys.synced(rk[0], size_t(pp));
                    s.outlierSyncedAgree += agree;
                }
                s.firstOutlier.note(st.step, r, p, mx / others);
            }

    // fp16 underflow: the fraction of gradient elements that rounding to fp16 flushed to zero.
    double under = 0, total = 0;
    for (int r = 0; r < R; ++r)
        for (int p = 0; p < P; ++p) {
            under += rk[size_t(r)].underflowCount[size_t(p)];
            total += double(s.meta.params[size_t(p)].numel);
        }
    if (total > 0) {
        ++s.underflowSteps;
        s.underflowFracSum += under / total;
        if (s.firstUnderflow < 0 && under / total >= diag::kUnderflowFrac)
            s.firstUnderflow = st.step;
    }

    // Systematic bias of one rank's whole local gradient against the others'.
    if (R >= 2 && !overflowed) {
        std::vector<double> norms(static_cast<size_t>(R));
        bool ok = true;
        for (int r = 0; r < R; ++r) {
            double sq = 0;
            for (int p = 0; p < P; ++p)
                sq += double(rk[size_t(r)].localNorm[size_t(p)]) * rk[size_t(r)].localNorm[size_t(p)];
            norms[size_t(r)] = std::sqrt(sq);
            ok = ok && std::isfinite(norms[size_t(r)]) && norms[size_t(r)] > 0;
        }
        const double med = median(norms);
        if (ok && med > 0) {
            ++s.biasSteps;
            for (int r = 0; r < R; ++r) {
                const double l = std::log(norms[size_t(r)] / med);
                s.biasLogSum[size_t(r)] += l;
                s.biasHigh[size_t(r)] += l > diag::kBiasLog;
                s.biasLow[size_t(r)] += l < -diag::kBiasLog;
            }
        }
    }
}

} // namespace

Diagnoser::Diagnoser(const RunMeta& meta)
    : m_s(std::make_unique<State>(meta)) {}

Diagnoser::~Diagnoser() = default;

int64_t Diagnoser::stepsSeen() const {
    return m_s->steps;
}

void Diagnoser::addSteps(const std::vector<StepRecord>& steps) {
    State& s = *m_s;
    for (const auto& st : steps) {
        if (s.R <= 0 || int(st.ranks.size()) != s.R)
            continue; // a step that does not match the meta says nothing reliable
        scalarPart(s, st);
        stepBufferPart(s, st);
        ++s.steps;
        s.firstStep = std::min(s.firstStep, st.step);
        s.lastStep = std::max(s.lastStep, st.step);
        bool full = true;
        for (const auto& x : st.ranks)
            full = full && hasParamVectors(x, s.P);
        if (!full)
            continue;
        ++s.paramSteps;
        syncedPart(s, st);
        localPart(s, st);
    }
}

void Diagnoser::addWeights(const std::vector<WeightRecord>& weights) {
    State& s = *m_s;
    for (const auto& w : weights) {
        if (int(w.fp.size()) != s.R || s.R <= 0)
            continue;
        ++s.weightRows;
        for (int r = 1; r < s.R; ++r) {
            int differ = 0;
            for (size_t p = 0; p < size_t(s.P); ++p) {
                const uint64_t mine = s.keys.weight(w, size_t(r), p), ref = s.keys.weight(w, 0, p);
                differ += mine != 0 && ref != 0 && mine != ref;
            }
            if (!s.initChecked && w.step <= 0)
                s.initDiffer[size_t(r)] = differ;
            if (differ > 0)
                s.weightDiverge[size_t(r)] = std::min(s.weightDiverge[size_t(r)], w.step);
        }
        if (!s.initChecked && w.step <= 0) {
            s.initChecked = true;
            s.initStep = w.step;
            // The statistics before the first forward (the engine records row 0 at setup): what step 0's
            // per-step fingerprints are compared with, so eval mode from step 0 is dated step 0.
            if (s.haveStepBuffers && s.stepBufferPrev.empty() && int(w.bufferFp.size()) == s.R) {
                s.stepBufferPrev = w.bufferFp;
                s.stepBufferPrevStep = w.step - 1;
            }
        }
        if (int(w.bufferFp.size()) == s.R) {
            if (s.bufferFirst.empty())
                s.bufferFirst = w.bufferFp;
            else
                for (int r = 0; r < s.R; ++r)
                    s.bufferChanged[size_t(r)] += w.bufferFp[size_t(r)] != s.bufferFirst[size_t(r)];
            if (!s.bufferPrev.empty())
                for (size_t r = 0; r < size_t(s.R); ++r) {
                    if (w.bufferFp[r] != s.bufferPrev[r]) {
                        s.bufferStill[r] = 0;
                    } else if (s.bufferStill[r]++ == 0) {
                        s.bufferStillSince[r] = s.bufferPrevStep;
                    }
                }
            s.bufferPrev = w.bufferFp;
            s.bufferPrevStep = w.step;
        }
        for (size_t r = 0; r < w.bufferDrift.size() && r < size_t(s.R); ++r)
            if (std::isfinite(w.bufferDrift[r]))
                s.bufferDriftMax[r] = std::max(s.bufferDriftMax[r], w.bufferDrift[r]);
    }
}

void Diagnoser::addEvals(const std::vector<EvalRecord>& evals) {
    m_s->evalRows += int64_t(evals.size());
}

void Diagnoser::addEvents(const std::vector<Event>& events) {
    State& s = *m_s;
    static const std::set<std::string> kept = {eventcode::kTimeout, eventcode::kCardFailed,
                                               eventcode::kRankTable, eventcode::kSkipMismatch};
    for (const auto& e : events) {
        if (!kept.count(e.code) || s.events.size() >= kMaxEvents)
            continue;
        s.events.push_back({e.step, e.rank, e.code, e.message, ranksNamed(e.message)});
    }
}

void Diagnoser::setStatus(bool complete, const std::string& stopReason) {
    m_s->complete = complete;
    m_s->stopReason = stopReason;
}

std::vector<Finding> Diagnoser::findings() const {
    return runRules(*m_s);
}

std::string Diagnoser::figures() const {
    const State& s = *m_s;
    auto list = [](const auto& v) {
        std::string out;
        for (size_t i = 0; i < v.size(); ++i)
            out += fmt::format("{}{:.4g}", i ? " " : "", double(v[i]));
        return out;
    };
    std::vector<double> bias;
    bias.reserve(size_t(s.R));
    for (int r = 0; r < s.R; ++r)
        bias.push_back(s.biasSteps ? std::exp(s.biasLogSum[size_t(r)] / double(s.biasSteps)) : 1.0);
    std::string out;
    out += fmt::format("steps {} (per-parameter {}), weight rows {}, events kept {}\n", s.steps, s.paramSteps,
                       s.weightRows, s.events.size());
    out += fmt::format("loss scale {:g}..{:g}, overflow steps {} ({} after step {} of {})\n", s.scaleMin,
                       s.scaleMax, s.overflowSteps, s.overflowLate, diag::kLossScaleWarmup, s.stepsLate);
    out += fmt::format("skip mismatch steps {}, synced mismatch steps {}\n", s.skipMismatchSteps,
                       s.syncMismatchSteps);
    out += fmt::format("synced/local sum ratio: mean {:.3f} over {} steps, near 1: {}, near N: {}\n",
                       s.ratioSteps ? s.ratioSum / double(s.ratioSteps) : 0.0, s.ratioSteps, s.ratioNearOne,
                       s.ratioNearN);
    out += fmt::format("underflow fraction mean {:.5f} (threshold {})\n",
                       s.underflowSteps ? s.underflowFracSum / double(s.underflowSteps) : 0.0,
                       diag::kUnderflowFrac);
    out += fmt::format("local outlier steps {} (synced agreeing {})\n", s.outlierSteps, s.outlierSyncedAgree);
    out += fmt::format("slowest-by-{}x steps per rank [{}] of {}; compute ms [{}]; comm ms [{}]\n",
                       diag::kSlowRatio, list(s.slowest), s.timedSteps, list(s.computeSum), list(s.commSum));
    out += fmt::format("identical-batch steps per pair [{}]; overlapping [{}]\n", list(s.identical),
                       list(s.overlapping));
    out += fmt::format("local norm / median (geometric mean) [{}]; >1.3x [{}]; <1/1.3x [{}] of {}\n",
                       list(bias), list(s.biasHigh), list(s.biasLow), s.biasSteps);
    out +=
        fmt::format("buffer rows changed per rank [{}]; max buffer drift [{}]; init params differing [{}]\n",
                    list(s.bufferChanged), list(s.bufferDriftMax), list(s.initDiffer));
    return out;
}

void diagnoseMore(const RunReader& reader, Diagnoser& d, DiagnosisCursor& at,
                  const std::function<void(int)>& progress) {
    constexpr int64_t kChunk = 256;
    // Weight rows hold R x P fingerprints each: chunked like the steps, so a long run never sits in memory.
    for (const int64_t rows = reader.weightCount(); at.weights < rows;) {
        const int64_t end = std::min(rows, at.weights + kChunk);
        d.addWeights(reader.readWeights(at.weights, end));
        at.weights = end;
    }
    for (const int64_t rows = reader.eventCount(); at.events < rows;) {
        const int64_t end = std::min(rows, at.events + 4 * kChunk);
        d.addEvents(reader.readEvents(at.events, end));
        at.events = end;
    }
    if (const int64_t rows = reader.evalCount(); rows > at.evals) {
        d.addEvals(reader.readEvals(at.evals, rows));
        at.evals = rows;
    }
    const int64_t first = at.steps, steps = reader.stepCount();
    while (at.steps < steps) {
        const int64_t end = std::min(steps, at.steps + kChunk);
        d.addSteps(reader.readSteps(at.steps, end, true));
        at.steps = end;
        if (progress)
            progress(int(std::min<int64_t>(99, (end - first) * 100 / std::max<int64_t>(1, steps - first))));
    }
    d.setStatus(reader.complete(), reader.stopReason());
    if (progress)
        progress(100);
}

std::vector<Finding> diagnoseRun(const RunReader& reader, const std::function<void(int)>& progress,
                                 std::string* figures, std::vector<CheckNotRun>* notRun) {
    Diagnoser d(reader.meta());
    DiagnosisCursor at;
    diagnoseMore(reader, d, at, progress);
    if (figures)
        *figures = d.figures();
    if (notRun)
        *notRun = d.checksNotRun();
    return d.findings();
}

std::string findingLine(const Finding& f) {
    return fmt::format("{} ({}, confidence {:.2f}): {}", f.cause, f.dimension, f.confidence, f.evidence);
}

std::string findingText(const Finding& f) {
    std::string ranks, params;
    for (size_t i = 0; i < f.ranks.size(); ++i)
        ranks += (i ? ", " : "") + std::to_string(f.ranks[i]);
    for (size_t i = 0; i < f.parameters.size(); ++i)
        params += (i ? ", " : "") + f.parameters[i];
    std::string out = fmt::format("{}  [{}]  confidence {:.2f}\n", f.cause, f.dimension, f.confidence);
    if (f.firstStep >= 0)
        out += fmt::format("  first step: {}\n", f.firstStep);
    if (!ranks.empty())
        out += fmt::format("  ranks: {}\n", ranks);
    if (!params.empty())
        out += fmt::format("  parameters: {}\n", params);
    out += fmt::format("  evidence: {}\n  fix: {}\n", f.evidence, f.fix);
    return out;
}

} // namespace rs
