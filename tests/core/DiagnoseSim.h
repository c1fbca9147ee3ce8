// Runs built by hand for the diagnosis tests: a healthy one (Sim) whose steps a test edits to plant one
// symptom, and the helpers that print and compare findings.
#pragma once

#include "RunFileFixtures.h"
#include "diagnose/Diagnoser.h"
#include "store/RunReader.h"

#include <QStringList>
#include <algorithm>
#include <cmath>
#include <vector>

namespace diagnose_sim {

using namespace rs;
using runfile_fixtures::h;

// A healthy run, built by hand: every rank reads its own rank-strided shard, local gradients differ by rank
// (different batches) but synced gradients are the mean and bitwise alike, BatchNorm statistics move on
// every rank, dynamic loss scaling overflows on the first steps on every rank together.
struct Sim {
    RunMeta meta;
    int R, P, K, B;
    std::vector<StepRecord> steps;
    std::vector<WeightRecord> weights;
    std::vector<Event> events;

    Sim(int ranks, int params, int64_t n, bool warmup = true)
        : R(ranks)
        , P(params)
        , K(8)
        , B(8) {
        meta = runfile_fixtures::makeMeta(R, P, K, B);
        meta.plannedSteps = n;
        for (int64_t s = 0; s < n; ++s)
            steps.push_back(step(s, warmup));
        for (int64_t s = 0; s <= n; s += 10)
            weights.push_back(weightRow(s));
    }

    static double unit(int64_t s, int64_t r, int64_t p, int field) { // uniform in [-1, 1)
        return double(h(s, r, p, field) % 2000001) / 1000000.0 - 1.0;
    }

    StepRecord step(int64_t s, bool warmup) const {
        StepRecord st;
        st.step = s;
        st.epoch = 0;
        st.lr = 0.1f;
        const bool overflow = warmup && s < 8; // 2^24 halving down to 2^16
        const float scale = std::ldexp(1.0f, warmup ? std::max(16, 24 - int(s)) : 16);
        std::vector<double> meanSum(size_t(P), 0);
        for (int r = 0; r < R; ++r) {
            RankStep x;
            x.loss = float(2.0 - 0.01 * double(s) + 0.1 * unit(s, r, -1, 1));
            x.accuracy = 0.5f;
            x.lossScale = scale;
            x.overflow = overflow;
            x.skipped = overflow;
            x.computeMs = float(100 + 20 * unit(s, r, -1, 2));
            x.commMs = float(20 + 5 * unit(s, r, -1, 3));
            x.stepMs = x.computeMs + x.commMs;
            for (int b = 0; b < B; ++b)
                x.sampleIds.push_back(int32_t((s * R * B + b * R + r) % 50000));
            x.sampleFp = runfile_fixtures::mix(uint64_t(x.sampleIds[0]) * 7919 + 1);
            x.bufferFp = h(s, r, -1, 23) | 1; // BatchNorm statistics move every step, on every rank
            for (int p = 0; p < P; ++p) {
                x.localNorm.push_back(float(1.0 + 0.2 * unit(s, r, p, 4)));
                x.localMax.push_back(float(0.1 + 0.02 * unit(s, r, p, 5)));
                x.localSum.push_back(0.5 + 0.2 * unit(s, r, p, 6));
                x.nonfinite.push_back(overflow ? 3 : 0);
                x.overflowCount.push_back(overflow ? 3 : 0);
                x.underflowCount.push_back(0);
                for (int k = 0; k < K; ++k)
                    x.sketch.push_back(float(unit(s, r, p * 100 + k, 7)));
                meanSum[size_t(p)] += x.localSum.back() / R;
            }
            st.ranks.push_back(std::move(x));
        }
        for (auto& x : st.ranks)
            for (int p = 0; p < P; ++p) {
                x.syncedNorm.push_back(0.8f);
                x.syncedSum.push_back(meanSum[size_t(p)]);
                x.syncedFp.push_back(h(s, 99, p, 8) | 1);
            }
        return st;
    }

    WeightRecord weightRow(int64_t s) const {
        WeightRecord w;
        w.step = s;
        for (int r = 0; r < R; ++r) {
            std::vector<uint64_t> fp;
            for (int p = 0; p < P; ++p)
                fp.push_back(h(s, 77, p, 9) | 1);
            w.fp.push_back(fp);
            w.norm.push_back(std::vector<float>(size_t(P), 1.0f));
            w.bufferFp.push_back(h(s, r, -1, 10) | 1); // statistics move on every rank, differently
            w.bufferDrift.push_back(r ? 0.02f : 0.0f);
        }
        return w;
    }

    std::vector<Finding> diagnose(int chunk = 7) const {
        Diagnoser d(meta);
        d.addWeights(weights);
        d.addEvents(events);
        for (size_t b = 0; b < steps.size(); b += size_t(chunk)) // chunked, as a live file arrives
            d.addSteps(
                {steps.begin() + long(b), steps.begin() + long(std::min(steps.size(), b + size_t(chunk)))});
        return d.findings();
    }
};

// Step timing as many emulated cards sharing two cores show it (measured on clean 64-rank runs of the
// engine): the OS schedules a card late on random steps, so its compute time is 2x the step's median on about
// 1 card-step in 8, 3x on 1 in 22, 4x on 1 in 50, 6x on 1 in 140, up to 20x (P(>= x) = 0.13 (x/2)^-2.6, the
// measured 12.6 %, 4.5 %, 1.9 %). `seed` draws another run.
inline void scheduleLate(Sim& sim, int64_t seed) {
    for (auto& st : sim.steps)
        for (int r = 0; r < sim.R; ++r) {
            const double v = 0.5 * (1 + Sim::unit(st.step, r, seed, 60)); // uniform in [0, 1)
            if (v < 0.13)
                st.ranks[size_t(r)].computeMs *= float(std::min(20.0, 2 * std::pow(0.13 / v, 1 / 2.6)));
        }
}

// The median compute time of the ranks of step `s` other than `rank`.
inline double othersMedianCompute(const Sim& sim, int64_t s, int rank) {
    std::vector<double> v;
    for (int r = 0; r < sim.R; ++r)
        if (r != rank)
            v.push_back(sim.steps[size_t(s)].ranks[size_t(r)].computeMs);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Card `rank` computes `factor` x the others' median on `steps`.
inline void slowCard(Sim& sim, int rank, const std::vector<int64_t>& steps, double factor) {
    for (int64_t s : steps)
        sim.steps[size_t(s)].ranks[size_t(rank)].computeMs =
            float(factor * othersMedianCompute(sim, s, rank));
}

// A synchronous collective: every card leaves when the last one arrives, so a card's comm time is its wait
// for the latest card, plus 20 ms and +-`jitter` ms of the CPU's share (cards that arrive late on a noisy
// step make the others wait, as a straggler does).
inline void waitForTheLast(Sim& sim, int64_t seed, double jitter) {
    for (auto& st : sim.steps) {
        float last = 0;
        for (const auto& x : st.ranks)
            last = std::max(last, x.computeMs);
        for (int r = 0; r < sim.R; ++r) {
            RankStep& x = st.ranks[size_t(r)];
            x.commMs = float(20 + (last - x.computeMs) + jitter * Sim::unit(st.step, r, seed, 61));
            x.stepMs = x.computeMs + x.commMs;
        }
    }
}

inline QString describe(const std::vector<Finding>& f) {
    QStringList out;
    for (const auto& x : f)
        out << QString::fromStdString(findingLine(x));
    return out.join(QStringLiteral("\n"));
}

inline std::vector<int> ints(std::initializer_list<int> v) {
    return v;
}

} // namespace diagnose_sim
