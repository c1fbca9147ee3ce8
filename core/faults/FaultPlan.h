// The fault lab's hooks: what each `--fault` does to a run, as questions the trainer asks. Without faults the
// plan is empty and every answer is the clean run's (each hook scans an empty list), so the trainer asks
// unconditionally. Every fault imitates the real mistake so that it shows in the run file only through what
// training records.
#pragma once

#include "faults/FaultSpec.h"
#include "store/RunRecords.h"

#include <memory>
#include <optional>

namespace rs {

class FaultPlan {
public:
    // The plan of a run's `faults` specs on `ranks` cards whose loss scale is `lossScale` (as the config
    // names it: none, fixed:V, dynamic...). An empty plan when there are no specs. Throws ConfigError.
    static std::unique_ptr<FaultPlan> make(const std::vector<std::string>& faults, int ranks,
                                           const std::string& lossScale);

    // The config mistakes, which the trainer applies before anything is built: init-mismatch (no
    // broadcast), grad-sum (gradients_mean off), loss-scale-too-high (fixed 2^30) and no-loss-scale (no
    // scale), the last two with fp16 gradients (O2 unless O3 was asked for).
    struct ConfigChanges {
        bool broadcastInit = true;
        bool gradientsMean = true;
        std::optional<std::string> lossScale; // parseLossScale's text; nullopt keeps the run's
        bool halfGradients = false;           // O0 becomes O2
    };
    ConfigChanges configChanges() const;
    // rank-table-invalid: the hccl.json text the job would have been given (server_count, device_ip and
    // rank_id mistakes); nullopt otherwise.
    std::optional<std::string> rankTableText(const std::string& goodJson) const;
    // Binds param-not-synced to a parameter index. Throws ConfigError for an unknown name.
    void bindParams(const std::vector<ParamInfo>& params);

    uint64_t initSeed(int rank, uint64_t seed) const;       // init-mismatch: each rank its own seed
    int rankId(int rank) const;                             // duplicate-rank-id: rank R reads RANK_ID R-1
    bool sharedSampler() const;                             // shard-overlap: not a distributed sampler
    int64_t shardBatches(int rank, int64_t perEpoch) const; // shard-uneven: batches in rank's shard
    bool diesAt(int rank, int64_t step) const;              // rank-exit
    bool evalModeFrom(int rank, int64_t step) const;        // eval-mode: true on the step it switches
    bool overflowSynced(int64_t step) const;                // overflow-not-synced
    int unsyncedParam(int64_t step) const;                  // param-not-synced: index, or -1
    int flipBefore(int rank, int64_t step) const;           // sdc-before: the bit to flip, or -1
    int flipAfter(int rank, int64_t step) const;            // sdc-after: the bit to flip, or -1
    int slowdown(int rank, int64_t step) const;             // straggler: compute takes this many times longer
    // loss-scale-not-restored: a rank restarted (or resumed from a checkpoint) with a fresh loss-scale
    // manager at its initial value while the others keep theirs. True on the step its scaler starts over.
    bool scaleRestarts(int rank, int64_t step) const;
    // optimizer-mismatch: the factor on rank's learning rate at step (1 for a clean run): from the spec's
    // step on, one rank runs its own schedule, as a rank-dependent scheduler or a step size set on one rank
    // does.
    // update-changed multiplies every rank's from its step on (a learning rate changed everywhere); the
    // recorded learning rate stays the schedule's, as a step size applied inside the optimizer would.
    float lrFactor(int rank, int64_t step) const;
    // loss-scale-changed: true on the step every rank's loss scale halves (a resumed job whose scale manager
    // started from another value on every rank).
    bool scaleHalvesAt(int64_t step) const;
    // allreduce-wrong: true on the step the all-reduce delivers the same wrong bytes to every rank.
    bool allReduceWrongAt(int64_t step) const;

    // Flips bit `bit` (0..31 of the IEEE float; 30, the top exponent bit, by default) of one element near
    // the middle of the buffer whose magnitude is below 1: a silent data corruption. The default turns a
    // small gradient into a huge one; a mantissa bit changes it by less than 2x.
    static constexpr int kDefaultFlipBit = 30;
    static void flipBit(float* data, int64_t count, int bit = kDefaultFlipBit);
    // The card's own float status: a non-finite element, or one fp16 cannot hold when half is set.
    static bool overflows(const float* grads, int64_t count, bool half);

private:
    const FaultSpec* find(Cause cause) const;
    int rankOf(const FaultSpec& f) const { return f.rank >= 0 ? f.rank : m_ranks - 1; }
    bool at(Cause cause, int rank, int64_t step, int64_t defaultStep) const;
    int flipBit(Cause cause, int rank, int64_t step) const;

    std::vector<FaultSpec> m_specs;
    int m_ranks = 1;
    int m_unsyncedParam = -1;
};

} // namespace rs
