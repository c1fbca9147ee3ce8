// The gradient rules of diagnosis: numerics (loss scale, overflow synchronisation, silent data corruption)
// and parallel (all-reduce arithmetic, parameters left out of the all-reduce, stragglers). They read the
// bounded summaries of DiagnoserState.h; the environment and data-model rules are in DiagnoserRules.cpp.
#include "diagnose/DiagnoserState.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace rs {
namespace {

using Findings = std::vector<Finding>;

Finding make(const char* cause, const char* dimension, double confidence, int64_t firstStep,
             std::vector<int> ranks, std::string evidence, std::string fix) {
    Finding f;
    f.cause = cause;
    f.dimension = dimension;
    f.confidence = std::clamp(confidence, 0.0, 1.0);
    f.firstStep = firstStep == kNoStep ? -1 : firstStep;
    f.ranks = std::move(ranks);
    f.evidence = std::move(evidence);
    f.fix = std::move(fix);
    return f;
}

std::vector<int> allRanks(int R) {
    std::vector<int> v;
    v.reserve(size_t(R));
    for (int r = 0; r < R; ++r)
        v.push_back(r);
    return v;
}

int argmax(const std::vector<int64_t>& v) {
    return v.empty() ? -1 : int(std::max_element(v.begin(), v.end()) - v.begin());
}

// Evidence resting on synced norms instead of fingerprints says so: equal to the file's rounding is weaker.
std::string syncedBasis(const Diagnoser::State& s) {
    return s.keys.syncedFp
               ? std::string()
               : fmt::format("; the source ({}) records no fingerprints, so ranks were compared on "
                             "their synced gradient norms as recorded (equal to the file's rounding)",
                             s.meta.source);
}

// A fixed loss scale that overflows (nearly) every step: a dynamic scale would have come down.
void lossScaleTooHigh(const Diagnoser::State& s, Findings& out) {
    if (s.steps < 8 || s.scaleMax <= 0 || s.scaleMin != s.scaleMax || s.scaleMax < 1024)
        return;
    if (s.overflowSteps * 2 < s.steps)
        return;
    out.push_back(make(
        "loss-scale-too-high", "numerics", 0.9, s.firstOverflow.step, allRanks(s.R),
        fmt::format(
            "the loss scale stayed at {:g} for all {} steps while the gradients overflowed on {} of them "
            "({:.0f}%), so those updates were lost; a dynamic scale would have halved after the first",
            s.scaleMax, s.steps, s.overflowSteps, 100.0 * double(s.overflowSteps) / double(s.steps)),
        "Use a dynamic loss scale: MindSpore DynamicLossScaleManager(init_loss_scale=2**24, scale_factor=2, "
        "scale_window=1000) (PyTorch torch.cuda.amp.GradScaler), or a much smaller FixedLossScaleManager "
        "value (e.g. 1024) with drop_overflow_update=False."));
}

// Small gradients flushed to zero in fp16: the share of gradient elements whose fp16 rounding (of the scaled
// gradient, as the card sent it) is zero although the value was not. It rests on what the training did, not
// on the settings: a loss scale of 1 under O2 is advice (diagnose/Advice.h), the flushed share is the
// finding. A dynamic scale keeps the share near zero (it multiplies the gradients up to just below overflow);
// without one, a small network's gradients lose several percent of their elements. Under O3 the emulator's
// backward already rounds every layer through fp16, so the flushed elements arrive as zeros and are not
// counted: that case is advice only.
void noLossScale(const Diagnoser::State& s, Findings& out) {
    if (!s.meta.recorded("/grads/underflow_count") || s.underflowSteps < 5)
        return;
    const double frac = s.underflowFracSum / double(s.underflowSteps);
    if (frac < diag::kUnderflowFrac)
        return;
    const double conf = frac >= 4 * diag::kUnderflowFrac ? 0.9 : 0.8;
    const std::string scale = s.scaleMin == s.scaleMax ? fmt::format("{:g}", s.scaleMax)
                                                       : fmt::format("{:g} to {:g}", s.scaleMin, s.scaleMax);
    out.push_back(make(
        "no-loss-scale", "numerics", conf, s.firstUnderflow >= 0 ? s.firstUnderflow : s.firstStep,
        allRanks(s.R),
        fmt::format(
            "on average {:.2f}% of the gradient elements flushed to zero in fp16 over {} steps, with a "
            "loss scale of {}: those updates are lost. A loss scale of 2^k keeps elements down to "
            "2^-(24+k); a dynamic scale starts at 2^24 and stays just below overflow",
            100 * frac, s.underflowSteps, scale),
        "Scale the loss under O2/O3: MindSpore amp with loss_scale_manager=DynamicLossScaleManager() (or "
        "FixedLossScaleManager(1024)); PyTorch torch.cuda.amp.GradScaler. Alternatively train in O0/O1."));
}

void overflowNotSynced(const Diagnoser::State& s, Findings& out) {
    if (s.skipMismatchSteps == 0) {
        // Every rank missed the same overflow: weaker, and only meaningful where a loss scale would skip.
        if (s.nanAfterClean == 0 || s.meta.lossScale == "none" || s.scaleMax <= 1)
            return;
        out.push_back(
            make("overflow-not-synced", "numerics", 0.6, s.firstNanAfterClean.step, allRanks(s.R),
                 fmt::format(
                     "step {} was applied with no overflow flagged on any rank, and the loss was non-finite "
                     "on the next step ({} such step(s)): the update carried an overflow that the ranks' "
                     "own status checks missed; a status all-reduced after the gradient all-reduce flags it "
                     "and skips the step",
                     s.firstNanAfterClean.step, s.nanAfterClean),
                 "All-reduce the overflow status after the gradient all-reduce and before deciding to skip: "
                 "MindSpore TrainOneStepWithLossScaleCell (NPUAllocFloatStatus + AllReduce); PyTorch: "
                 "all_reduce(found_inf, MAX) before scaler.step."));
        return;
    }
    std::vector<int> ranks;
    for (int r = 0; r < s.R; ++r)
        if (s.skipMinority[size_t(r)] > 0)
            ranks.push_back(r);
    int64_t diverge = kNoStep;
    for (int r : ranks)
        diverge = std::min(diverge, s.weightDiverge[size_t(r)]);
    out.push_back(make(
        "overflow-not-synced", "numerics", diverge != kNoStep ? 0.95 : 0.9, s.firstSkipMismatch.step, ranks,
        fmt::format(
            "ranks disagreed on skipping the update on {} step(s), first at step {} (rank {} alone){}; "
            "with an all-reduced overflow status every rank skips the same steps",
            s.skipMismatchSteps, s.firstSkipMismatch.step, s.firstSkipMismatch.rank,
            diverge != kNoStep ? fmt::format("; weights differ across ranks from step {}", diverge)
                               : std::string()),
        "All-reduce the overflow status before deciding to skip: MindSpore TrainOneStepWithLossScaleCell / "
        "the AllReduce of NPUAllocFloatStatus in a custom cell; PyTorch: all_reduce(found_inf, MAX) before "
        "scaler.step (GradScaler with DDP does this)."));
}

// One rank's loss scale jumped away from the others' with no overflow skip they disagreed on: its loss-scale
// manager started over (a restarted rank process, or a checkpoint resumed without the scale). Every rank
// divides the all-reduced sum by its own scale, so from then on the ranks apply different gradients, and the
// ranks with the smaller scale apply the other's share of the sum too large.
void lossScaleNotRestored(const Diagnoser::State& s, Findings& out) {
    const auto& split = s.firstScaleSplit;
    if (!split.seen() || (s.firstSkipMismatch.seen() && s.firstSkipMismatch.step < split.step))
        return;
    const int r = split.rank;
    const double k = split.value;
    const std::string effect =
        k > 0
            ? fmt::format("the other ranks apply rank {}'s share of the all-reduced gradient {:g}x too large",
                          r, std::exp2(k))
            : fmt::format(
                  "rank {} applies the other ranks' shares of the all-reduced gradient {:g}x too large", r,
                  std::exp2(-k));
    out.push_back(make(
        "loss-scale-not-restored", "numerics", 0.9, split.step, {r},
        fmt::format(
            "at step {} rank {}'s loss scale became 2^{:.0f} times the other ranks' and stayed apart ({} "
            "step(s) with the ranks' scales unequal), with no overflow skip they disagreed on before it: "
            "its loss-scale manager started over. Each rank divides the all-reduced sum by its own scale, "
            "so the synced gradients differ across ranks and {}",
            split.step, r, k, s.scaleSplitSteps, effect),
        "Restore the loss scale on every rank when a job resumes or a rank restarts: MindSpore keeps it in "
        "TrainOneStepWithLossScaleCell's scale_sense parameter (load the checkpoint into that cell, not only "
        "into "
        "the network); PyTorch: scaler.load_state_dict(checkpoint['scaler']) on every rank, not only rank "
        "0."));
}

// A finite local-gradient value a thousand times every other rank's, on one rank and few steps, while the
// synced gradients still agree: corruption before the all-reduce.
void sdcBefore(const Diagnoser::State& s, Findings& out) {
    if (s.outlierSteps == 0 || !s.firstOutlier.seen())
        return;
    const int64_t allowed = std::max<int64_t>(3, s.paramSteps / 20);
    if (s.outlierSteps > allowed || s.outlierSyncedAgree < s.outlierSteps)
        return;
    // Corruption before the all-reduce never splits the synced copies; a split at or before the outlier is
    // sdc-after's (the corrupted replica's later gradients are the outliers then).
    if (s.syncMismatchSteps > 0 && s.firstSyncMismatch.step <= s.firstOutlier.step)
        return;
    const int r = s.firstOutlier.rank;
    out.push_back(make(
        "sdc-before", "numerics", s.outlierSteps == 1 ? 0.85 : 0.75, s.firstOutlier.step, {r},
        fmt::format("at step {} rank {}'s local gradient of {} has max |g| {:.3g}x the largest of the other "
                    "ranks ({} such step(s) in {}), while the synced gradient is identical on every rank: "
                    "one card's value was corrupted before the all-reduce",
                    s.firstOutlier.step, r, s.paramName(s.firstOutlier.param), s.firstOutlier.value,
                    s.outlierSteps, s.paramSteps),
        fmt::format(
            "Hardware check of card {} (silent data corruption): npu-smi info -t health / ECC and HBM "
            "error counters, the vendor's hardware diagnostics; rerun the step on that card to "
            "confirm and take it out of the pool if it repeats.",
            r)));
}

// Synced fingerprints that differ across ranks: one parameter never all-reduced, or one rank's copy
// corrupted after the all-reduce.
void syncedMismatch(const Diagnoser::State& s, Findings& out) {
    if (s.syncMismatchSteps == 0 || s.paramSteps == 0)
        return;
    std::vector<int> always;
    int64_t otherMismatch = 0;
    for (int p = 0; p < s.P; ++p) {
        const int64_t m = s.paramMismatchSteps[size_t(p)];
        const bool own = s.paramOwnSum[size_t(p)] * 2 >= m || s.paramAllDistinct[size_t(p)] * 10 >= m * 8;
        // On (nearly) every step since it first differed: a parameter dropped from the reducer mid-run (a
        // layer unfrozen after the reducer was built) differs from then on; a corrupted copy on one step.
        const int64_t since = s.paramFirstMismatch[size_t(p)] == kNoStep
                                  ? 0
                                  : std::min(s.paramSteps, s.lastStep - s.paramFirstMismatch[size_t(p)] + 1);
        if (since >= 3 && m * 10 >= since * 8 && own)
            always.push_back(p);
        else
            otherMismatch += m;
    }
    if (!always.empty() && always.size() <= size_t(std::max(1, s.P / 10)) &&
        otherMismatch <= s.paramSteps / 10) {
        Finding f = make("param-not-synced", "parallel", 0.9, s.paramFirstMismatch[size_t(always[0])],
                         allRanks(s.R), "", "");
        int64_t ownSteps = 0;
        for (int p : always) {
            f.parameters.push_back(s.paramName(p));
            f.firstStep = std::min(f.firstStep, s.paramFirstMismatch[size_t(p)]);
            ownSteps += s.paramOwnSum[size_t(p)];
        }
        f.evidence = fmt::format(
            "the synced gradient of {} differs across ranks on {} of {} steps while every "
            "other parameter agrees; on {} of those its synced sum equals each rank's own "
            "local sum: it never went through the all-reduce",
            f.parameters.front(), s.paramMismatchSteps[size_t(always[0])], s.paramSteps, ownSteps);
        f.evidence += syncedBasis(s);
        f.fix = fmt::format("Check the gradient reducer's parameter list and fusion buckets: {} is missing "
                            "(MindSpore: the parameter must be in network.trainable_params() when "
                            "DistributedGradReducer is built, check all_reduce_fusion_config; PyTorch DDP: "
                            "set requires_grad before wrapping, no parameters created after DDP()).",
                            f.parameters.front());
        out.push_back(std::move(f));
        return;
    }
    // One rank against the others: alone in its fingerprint (3+ ranks) or alone failing the sum check.
    std::vector<int64_t> score(size_t(s.R));
    for (int r = 0; r < s.R; ++r)
        score[size_t(r)] = s.oddRank[size_t(r)] + s.sumCheckAlone[size_t(r)];
    const int r = argmax(score);
    const bool located = r >= 0 && score[size_t(r)] > 0;
    std::string params;
    for (size_t i = 0; i < s.firstMismatchParams.size(); ++i)
        params += (i ? ", " : "") + s.paramName(s.firstMismatchParams[i]);
    Finding f =
        make("sdc-after", "numerics", located ? 0.85 : 0.6,
             located ? std::min(s.firstOdd[size_t(r)], s.firstSyncMismatch.step) : s.firstSyncMismatch.step,
             located ? std::vector<int>{r} : allRanks(s.R), "", "");
    for (int p : s.firstMismatchParams)
        f.parameters.push_back(s.paramName(p));
    f.evidence = fmt::format(
        "synced gradient fingerprints differ across ranks on {} step(s) from step {} ({}){}{}; the "
        "all-reduce "
        "delivers the same bits to every rank, so the copy changed after it",
        s.syncMismatchSteps, s.firstSyncMismatch.step, params,
        located
            ? fmt::format("; rank {} is the odd one ({} step(s) alone in its fingerprint, {} alone failing "
                          "the synced-sum check)",
                          r, s.oddRank[size_t(r)], s.sumCheckAlone[size_t(r)])
            : std::string(),
        located && s.weightDiverge[size_t(r)] != kNoStep
            ? fmt::format("; its weights differ from rank 0's from step {}", s.weightDiverge[size_t(r)])
            : std::string());
    f.evidence += syncedBasis(s);
    f.fix = located ? fmt::format("Hardware check of card {} (silent data corruption after the all-reduce): "
                                  "npu-smi health, ECC / HBM error counters, vendor diagnostics; rerun to "
                                  "confirm and take the card out of the pool if it repeats.",
                                  r)
                    : "Hardware check of the cards involved (silent data corruption after the all-reduce): "
                      "npu-smi health, ECC / HBM error counters; rerun to locate the card.";
    out.push_back(std::move(f));
}

// --- parallel --------------------------------------------------------------------------------------------

void gradSum(const Diagnoser::State& s, Findings& out) {
    if (s.R < 2 || s.ratioSteps < 5 || s.ratioNearN * 10 < s.ratioSteps * 7)
        return;
    out.push_back(make(
        "grad-sum", "parallel", 0.9, s.firstNearN.step, allRanks(s.R),
        fmt::format("the synced gradient sum is {:.2f}x the mean of the ranks' local sums (median over "
                    "parameters, {} of {} steps near {}): the all-reduce sums instead of averaging, so the "
                    "effective learning rate is {}x",
                    s.ratioSum / double(s.ratioSteps), s.ratioNearN, s.ratioSteps, s.R, s.R),
        "Average the gradients: set_auto_parallel_context(gradients_mean=True) in MindSpore (or "
        "DistributedGradReducer(mean=True)); in PyTorch divide by the world size after all_reduce(SUM) (DDP "
        "averages by itself)."));
}

// The first slow step that another slow step follows within three steps (the first slow step if none does).
int64_t slowSince(const std::vector<int64_t>& dated) {
    for (size_t i = 0; i + 1 < dated.size(); ++i)
        if (dated[i + 1] - dated[i] <= 3)
            return dated[i];
    return dated.empty() ? kNoStep : dated.front();
}

void straggler(const Diagnoser::State& s, Findings& out) {
    if (s.R < 2 || s.timedSteps < 8)
        return;
    const int r = argmax(s.slowest);
    if (r < 0)
        return;
    // Slow on most steps of the run, or a card that turned slow late and stayed slow: most steps since its
    // streak began (at least 8 of them), however few of the whole run that is.
    const int64_t since = slowSince(s.slowDated[size_t(r)]);
    int64_t slowBefore = 0;
    for (int64_t d : s.slowDated[size_t(r)])
        slowBefore += d < since ? 1 : 0;
    const int64_t slowAfter = s.slowest[size_t(r)] - slowBefore, span = s.lastStep - since + 1;
    const bool most = s.slowest[size_t(r)] * 10 >= s.timedSteps * 6;
    const bool late = since != kNoStep && slowAfter >= 8 && slowAfter * 10 >= span * 8;
    if (!most && !late)
        return;
    double othersCompute = 0, othersComm = 0;
    for (int q = 0; q < s.R; ++q)
        if (q != r) {
            othersCompute += s.computeSum[size_t(q)] / (s.R - 1);
            othersComm += s.commSum[size_t(q)] / (s.R - 1);
        }
    const double n = double(s.timedSteps);
    const double mine = s.computeSum[size_t(r)] / n, myComm = s.commSum[size_t(r)] / n;
    // The others wait for it inside the collectives: their comm time exceeds its own by at least half of
    // its extra compute. (Not a ratio of the comm times: where many emulated cards share few cores, every
    // card waits long for the CPU in each collective, and one card's extra time is a small part of that.)
    const double extra = mine - othersCompute / n;
    if (othersComm / n - myComm < 0.5 * extra || mine < diag::kSlowRatio * othersCompute / n)
        return;
    out.push_back(
        make("straggler", "parallel", 0.8, since, {r},
             fmt::format(
                 "rank {} computes {:.1f} ms per step against {:.1f} ms on the others ({} of {} steps at "
                 "least {:.0f}x slower{}), and the others wait {:.1f} ms per step in collectives against its "
                 "{:.1f} ms; gradients still agree",
                 r, mine, othersCompute / n, s.slowest[size_t(r)], s.timedSteps, diag::kSlowRatio,
                 most ? std::string() : fmt::format("; {} of the {} since step {}", slowAfter, span, since),
                 othersComm / n, myComm),
             fmt::format(
                 "Find out why card {} is slow: its host process's CPU binding and load, the data pipeline "
                 "feeding it (num_parallel_workers), thermal or power throttling, HBM pressure; the "
                 "MindSpore profiler per rank (PyTorch: torch.profiler) shows where its time goes.",
                 r)));
}

} // namespace

void numericsRules(const Diagnoser::State& s, Findings& out) {
    lossScaleTooHigh(s, out);
    noLossScale(s, out);
    overflowNotSynced(s, out);
    lossScaleNotRestored(s, out);
    sdcBefore(s, out);
    syncedMismatch(s, out);
}

void parallelRules(const Diagnoser::State& s, Findings& out) {
    gradSum(s, out);
    straggler(s, out);
}

} // namespace rs
