// The bounded summaries a Diagnoser keeps (private to core/diagnose): counters and per-rank, per-pair and
// per-parameter tallies that the accumulation (Diagnoser.cpp) fills and the rules (DiagnoserRules.cpp) read.
// Nothing here grows with the number of steps except a few capped lists.
#pragma once

#include "diagnose/Diagnoser.h"
#include "store/RecordKeys.h"
#include "store/RunSchema.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace rs {

inline constexpr int64_t kNoStep = std::numeric_limits<int64_t>::max();

// First occurrence of something, with the figure that showed it.
struct FirstSeen {
    int64_t step = kNoStep;
    int rank = -1;
    int param = -1;
    double value = 0;
    bool seen() const { return step != kNoStep; }
    void note(int64_t s, int r, int p, double v) {
        if (s < step) {
            step = s;
            rank = r;
            param = p;
            value = v;
        }
    }
};

struct KeptEvent {
    int64_t step = 0;
    int rank = -1;
    std::string code, message;
    std::vector<int> named; // ranks a TIMEOUT says it waited for
};

struct Diagnoser::State {
    RunMeta meta;
    int R = 0, P = 0;
    // What the source recorded (RunMeta::absent). Without synced fingerprints ranks are compared on their
    // synced norms as recorded (msprobe: to the csv's rounding); without sample ids, batches are compared
    // through the local gradients they produced (identical weights and batches give identical gradients).
    RecordKeys keys; // synced gradients and weights: fingerprints, or the norms as recorded
    bool haveSampleFp = true, haveLocalNorm = true;
    int64_t syncedComparableSteps = 0; // steps where some parameter's synced gradient came from every rank
    int64_t gradientKeySteps = 0;      // steps whose batches were compared through local gradients

    // --- steps, scalar part
    int64_t steps = 0, paramSteps = 0; // steps seen; of those, with per-parameter vectors
    int64_t firstStep = kNoStep, lastStep = -1;
    int64_t prevEpoch = -1;
    std::vector<int64_t> epochStarts; // steps where the epoch advanced (capped)
    std::vector<int64_t> deadStep;    // [rank] first step recorded Dead, kNoStep if never
    double scaleMin = std::numeric_limits<double>::infinity(), scaleMax = 0;
    int64_t overflowSteps = 0; // rank 0's (synced) overflow flag
    int64_t overflowLate = 0;  // the same after the warm-up of dynamic loss scaling
    int64_t stepsLate = 0;     // steps after that warm-up
    FirstSeen firstOverflow;
    int64_t skipMismatchSteps = 0; // steps where ranks disagree on skipping the update
    FirstSeen firstSkipMismatch;
    std::vector<int64_t> skipMinority; // [rank] steps where that rank was alone in its skip decision
    // Loss scales: with a shared overflow vote every rank's scaler takes the same steps, so the ranks' scales
    // agree. A split that no skip disagreement explains is a rank whose loss-scale manager started over.
    std::vector<float> prevScales; // [rank] the last step's, when every rank recorded one
    bool prevScalesAgree = true, prevSkipSplit = false;
    int64_t scaleSplitSteps = 0; // steps whose ranks' scales differ
    FirstSeen firstScaleSplit;   // rank: the one whose scale jumped; value: log2(its scale / the others')
    // A step applied with no overflow flagged anywhere, and a non-finite loss right after it: an overflow the
    // (unsynchronised) status check missed. The synced check of a healthy run flags any non-finite synced
    // gradient, so a finite update follows.
    bool prevCleanApplied = false;
    int64_t prevStepNo = -1;
    int64_t nanAfterClean = 0;
    FirstSeen firstNanAfterClean;
    // timing (after the first two steps: allocation and warm-up)
    int64_t timedSteps = 0;
    std::vector<int64_t> slowest;   // [rank] steps where its compute time was >= kSlowRatio x the others'
    std::vector<double> computeSum; // [rank] ms
    std::vector<double> commSum;    // [rank] ms
    // [rank] the first steps (at most kSlowDated) where it was >= kSlowRatio x the others, warm-up included:
    // they date a straggler, not decide one. A slow card is slow from its first step, and one step lost to a
    // noisy neighbour must not move the date, so the date is the first slow step another follows closely.
    std::vector<std::vector<int64_t>> slowDated;
    // data shards, per pair i<j (index i*R+j)
    int64_t sampleSteps = 0;
    std::vector<int64_t> identical;   // sample fingerprints and ids equal
    std::vector<int64_t> overlapping; // share at least a quarter of their ids
    std::vector<double> overlapSum;   // fraction of shared ids
    std::vector<int64_t> firstIdentical;
    std::vector<double> identCosMin;  // min sketch cosine over steps with identical batches
    std::vector<int64_t> paddedSteps; // [rank] steps whose batch has -1 (short shard)

    // --- steps, per-parameter part
    std::vector<int64_t> paramMismatchSteps; // [param] steps whose synced fingerprints differ across ranks
    std::vector<int64_t> paramAllDistinct;   // [param] ... with every rank different
    std::vector<int64_t> paramOwnSum;        // [param] ... where each rank's synced sum is its own local sum
    std::vector<int64_t> paramFirstMismatch; // [param]
    int64_t syncMismatchSteps = 0;
    FirstSeen firstSyncMismatch;
    std::vector<int64_t> oddRank;         // [rank] mismatch steps where this rank alone disagrees
    std::vector<int64_t> sumCheckAlone;   // [rank] mismatch steps where only its synced sum fails the check
    std::vector<int64_t> firstOdd;        // [rank]
    std::vector<int> firstMismatchParams; // params differing at the first mismatch step (capped)
    // all-reduce arithmetic: median over parameters of synced sum / mean of local sums
    int64_t ratioSteps = 0, ratioNearN = 0, ratioNearOne = 0;
    double ratioSum = 0;
    FirstSeen firstNearN;
    // silent data corruption before the all-reduce: a finite local outlier on one rank
    int64_t outlierSteps = 0, outlierSyncedAgree = 0;
    std::vector<int64_t> outlierRank; // [rank]
    FirstSeen firstOutlier;           // value: ratio to the other ranks' largest
    // fp16 underflow
    int64_t underflowSteps = 0;
    double underflowFracSum = 0;
    int64_t firstUnderflow = -1; // the first step whose flushed share reached kUnderflowFrac
    // systematic local-gradient bias (eval mode): log(total local norm / median over ranks)
    int64_t biasSteps = 0;
    std::vector<double> biasLogSum;
    std::vector<int64_t> biasHigh, biasLow;

    // --- weights
    int64_t weightRows = 0;
    bool initChecked = false;
    int64_t initStep = -1;
    std::vector<int> initDiffer; // [rank] parameters whose step-0 fingerprint differs from rank 0's
    std::vector<uint64_t> bufferFirst;
    std::vector<int64_t> bufferChanged; // [rank] later rows whose buffer fingerprint moved from the first
    // Eval mode that starts mid-run: a trailing streak of weight rows over which a rank's buffer fingerprint
    // stayed put (BatchNorm in train mode updates its statistics every forward, so they move between rows).
    std::vector<uint64_t> bufferPrev;      // [rank] the previous row's fingerprint
    std::vector<int64_t> bufferStill;      // [rank] unchanged row-to-row transitions at the end so far
    std::vector<int64_t> bufferStillSince; // [rank] the step of the row the streak starts at
    int64_t bufferPrevStep = -1;
    std::vector<float> bufferDriftMax; // [rank]
    // The same per step (/steps/buffer_fp, when recorded and the model has BatchNorm): a streak of steps over
    // which one rank's statistics stayed put while every other rank's moved on each step.
    bool haveStepBuffers = false;
    std::vector<uint64_t> stepBufferPrev; // [rank] the previous step's fingerprint
    int64_t stepBufferPrevStep = -1;      // that step; -1 before the first
    std::vector<int64_t> stepStill;       // [rank] length of the current streak
    std::vector<int64_t> stepStillSince;  // [rank] the step the current streak starts at
    std::vector<int64_t> frozenSince;     // [rank] the first streak of kFrozenSteps or more: its start
    std::vector<int64_t> frozenLongest;   // [rank] the longest streak
    std::vector<int64_t> weightDiverge;   // [rank] first weight row (step) differing from rank 0

    // --- evals, events, status
    int64_t evalRows = 0;
    std::vector<KeptEvent> events; // the codes diagnosis reads (capped)
    bool complete = false;
    std::string stopReason;

    explicit State(const RunMeta& m);
    bool recorded(runschema::StepCol c) const { return meta.recorded(runschema::kStepColumns[c].path); }
    bool recorded(runschema::WeightCol c) const { return meta.recorded(runschema::kWeightColumns[c].path); }
    int pair(int i, int j) const { return i * R + j; }
    std::string paramName(int p) const {
        return p >= 0 && p < P ? meta.params[size_t(p)].name : std::string("?");
    }
};

// Thresholds, conservative: a healthy run must stay clear of every one.
namespace diag {
inline constexpr int64_t kLossScaleWarmup = 40; // dynamic scaling halves down from 2^24 on the first steps
inline constexpr double kSlowRatio = 2.0;       // straggler: compute time vs the other ranks' median
inline constexpr size_t kSlowDated = 32;        // straggler: slow steps kept per rank for its date
inline constexpr double kOutlierRatio = 1e3;    // sdc-before: local max |g| vs the other ranks' largest
inline constexpr int64_t kFrozenSteps = 3; // eval-mode: steps a rank's BatchNorm statistics stay put alone
inline constexpr double kUnderflowFrac = 1e-3; // no-loss-scale: share of gradient elements flushed to zero
inline constexpr double kBiasLog = 0.26;       // eval-mode: |log norm ratio| ~ 1.3x
} // namespace diag

std::vector<Finding> runRules(const Diagnoser::State& s);

} // namespace rs
