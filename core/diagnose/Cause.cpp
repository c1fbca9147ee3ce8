// The cause table: see Cause.h. One row per cause, in the order the checks run; each cause's check is made by
// checks::makeCheck (diagnose/checks/Checks.cpp).
#include "diagnose/Cause.h"

#include <fmt/format.h>

namespace rs {
namespace {

using view::RankMetric;
using enum Cause;
constexpr std::nullopt_t kNoMetric = std::nullopt;

// clang-format off
constexpr CauseInfo kCauses[] = {
    {RankTableInvalid, "rank-table-invalid", "environment", "the rank table (hccl.json) is invalid",
     kNoMetric, false, "rank-table-invalid", FaultArgs::None,
     "Fix the rank table (hccl.json) as the message says: one entry per device, rank_id 0..N-1 and device_id "
     "unique per server, server_count and the device list matching the job; `ranksight-cli lint-ranktable "
     "hccl.json` lists every problem. MindSpore: RANK_TABLE_FILE, RANK_ID, DEVICE_ID, RANK_SIZE.",
     nullptr, {}, 0},
    {RankExit, "rank-exit", "environment", "a card left the job",
     kNoMetric, false, "rank-exit@6:1", FaultArgs::StepRank,
     "Card {rank} left the job at step {step}: read rank {rank}'s own log (the first error, not the peers' HCCL "
     "timeouts), its HBM usage (out of memory?) and the device health (npu-smi info); the other ranks' timeouts "
     "are the consequence.",
     nullptr, {}, 0},
    {ShardUneven, "shard-uneven", "data-model", "a rank's data shard ran out of batches first",
     kNoMetric, false, "shard-uneven@8:2", FaultArgs::StepRank,
     "Give every rank the same number of batches per epoch: shard with DistributedSampler(drop_last=True) / "
     "MindSpore num_shards + shard_id with batch(drop_remainder=True), and check the per-rank data files have "
     "equal sizes.",
     nullptr, {}, 0},
    {InitMismatch, "init-mismatch", "data-model", "ranks started from different weights",
     RankMetric::WeightMismatch, false, "init-mismatch", FaultArgs::None,
     "Start every replica from the same weights: set the same seed on every rank (mindspore.set_seed / "
     "torch.manual_seed) and broadcast rank 0's parameters (set_auto_parallel_context(parameter_broadcast=True); "
     "PyTorch DDP broadcasts at construction, so build the model before wrapping it).",
     nullptr, {}, 0},
    {ShardOverlap, "shard-overlap", "data-model", "ranks read the same samples (no distributed sampler)",
     RankMetric::ShardOverlap, false, "shard-overlap", FaultArgs::None,
     "Shard the data set across ranks: PyTorch DistributedSampler(dataset, num_replicas=world_size, rank=rank) "
     "with sampler.set_epoch(epoch); MindSpore dataset(..., num_shards=rank_size, shard_id=rank_id).",
     nullptr, {}, 0},
    {DuplicateRankId, "duplicate-rank-id", "environment", "two processes run as the same rank",
     RankMetric::ShardOverlap, false, "duplicate-rank-id:2", FaultArgs::Rank,
     "Fix the rank table / launch environment: every process needs a unique RANK_ID (rank_id) and DEVICE_ID "
     "(MindSpore RANK_TABLE_FILE + RANK_ID per process; PyTorch unique RANK / LOCAL_RANK), so the sampler hands "
     "each rank its own shard.",
     nullptr, {}, 0},
    {EvalMode, "eval-mode", "data-model", "one rank trains in eval mode",
     RankMetric::SketchCosine, false, "eval-mode@0:3", FaultArgs::StepRank,
     "Put every replica in training mode before the training loop: network.set_train(True) (PyTorch "
     "model.train()) on rank {rank} too; an eval() left from a validation pass turns Dropout off and freezes "
     "BatchNorm on that rank only.",
     nullptr, {}, 0},
    {LossScaleTooHigh, "loss-scale-too-high", "numerics", "a fixed loss scale overflows every step",
     kNoMetric, false, "loss-scale-too-high", FaultArgs::None,
     "Use a dynamic loss scale: MindSpore DynamicLossScaleManager(init_loss_scale=2**24, scale_factor=2, "
     "scale_window=1000) (PyTorch torch.cuda.amp.GradScaler), or a much smaller FixedLossScaleManager value "
     "(e.g. 1024) with drop_overflow_update=False.",
     nullptr, {}, 0},
    {NoLossScale, "no-loss-scale", "numerics", "fp16 gradients flush to zero without a loss scale",
     kNoMetric, false, "no-loss-scale", FaultArgs::None,
     "Scale the loss under O2/O3: MindSpore amp with loss_scale_manager=DynamicLossScaleManager() (or "
     "FixedLossScaleManager(1024)); PyTorch torch.cuda.amp.GradScaler. Alternatively train in O0/O1.",
     nullptr, {}, 0},
    {OverflowNotSynced, "overflow-not-synced", "numerics", "the overflow status is not all-reduced",
     RankMetric::SyncedMismatch, false, "overflow-not-synced", FaultArgs::Step,
     "All-reduce the overflow status before deciding to skip: MindSpore TrainOneStepWithLossScaleCell / the "
     "AllReduce of NPUAllocFloatStatus in a custom cell; PyTorch: all_reduce(found_inf, MAX) before scaler.step "
     "(GradScaler with DDP does this).",
     // every rank missed the same overflow: no rank to name
     "All-reduce the overflow status after the gradient all-reduce and before deciding to skip: MindSpore "
     "TrainOneStepWithLossScaleCell (NPUAllocFloatStatus + AllReduce); PyTorch: all_reduce(found_inf, MAX) "
     "before scaler.step.",
     // A corrupted gradient blows the loss up on its rank the step after, which is also this cause's weak sign
     // (an update applied without an overflow flag, then a non-finite loss): the located corruption explains it.
     {SdcBefore, SdcAfter}, 0.7},
    {LossScaleNotRestored, "loss-scale-not-restored", "numerics", "a rank's loss scale started over",
     RankMetric::SyncedMismatch, false, "loss-scale-not-restored@8:2", FaultArgs::StepRank,
     "Restore the loss scale on every rank when a job resumes or a rank restarts: MindSpore keeps it in "
     "TrainOneStepWithLossScaleCell's scale_sense parameter (load the checkpoint into that cell, not only into "
     "the network); PyTorch: scaler.load_state_dict(checkpoint['scaler']) on every rank, not only rank 0.",
     nullptr, {}, 0},
    {SdcBefore, "sdc-before", "numerics", "silent data corruption before the all-reduce",
     RankMetric::SketchCosine, false, "sdc-before@12:1", FaultArgs::StepBit,
     "Hardware check of card {rank} (silent data corruption): npu-smi info -t health / ECC and HBM error "
     "counters, the vendor's hardware diagnostics; rerun the step on that card to confirm and take it out of "
     "the pool if it repeats.",
     nullptr, {}, 0},
    {ParamNotSynced, "param-not-synced", "parallel", "a parameter is left out of the all-reduce",
     RankMetric::SyncedMismatch, true, "param-not-synced", FaultArgs::StepParam,
     "Check the gradient reducer's parameter list and fusion buckets: {param} is missing (MindSpore: the "
     "parameter must be in network.trainable_params() when DistributedGradReducer is built, check "
     "all_reduce_fusion_config; PyTorch DDP: set requires_grad before wrapping, no parameters created after "
     "DDP()).",
     nullptr, {}, 0},
    {SdcAfter, "sdc-after", "numerics", "silent data corruption after the all-reduce",
     RankMetric::SyncedMismatch, true, "sdc-after@8:2", FaultArgs::StepBit,
     "Hardware check of card {rank} (silent data corruption after the all-reduce): npu-smi health, ECC / HBM "
     "error counters, vendor diagnostics; rerun to confirm and take the card out of the pool if it repeats.",
     "Hardware check of the cards involved (silent data corruption after the all-reduce): npu-smi health, ECC / "
     "HBM error counters; rerun to locate the card.",
     // Ranks whose loss scales differ apply different gradients from the same all-reduced bytes: their synced
     // fingerprints differ from the split on, which is the scale's doing, not a corrupted copy. The scales
     // split when a rank restarted without its scale, or skipped an overflowed step alone.
     {LossScaleNotRestored, OverflowNotSynced}, 2.0},
    {OptimizerMismatch, "optimizer-mismatch", "parallel", "one rank's optimizer updates differently",
     RankMetric::WeightMismatch, false, "optimizer-mismatch@5:2", FaultArgs::StepRank,
     "Give every rank the same optimizer: rank {rank}'s weights parted from the others' at step {step} although "
     "every rank received the same synced gradients. Look for a learning-rate schedule that depends on the rank, "
     "gradient clipping (clip_grad_norm_) or loss scaling inside `if rank == 0`, weight decay or momentum set "
     "differently, or an optimizer built before a checkpoint was loaded on one rank only.",
     "Give every rank the same optimizer: the weights parted after an update while every rank received the same "
     "synced gradients. Look for a learning-rate schedule that depends on the rank, gradient clipping inside `if "
     "rank == 0`, weight decay or momentum set differently, or an optimizer built before a checkpoint was loaded "
     "on one rank only.",
     // A rank that skipped an update alone, or whose synced copy was corrupted, also parts its weights.
     {OverflowNotSynced, SdcAfter}, 1.0},
    {GradSum, "grad-sum", "parallel", "the all-reduce sums instead of averaging",
     kNoMetric, false, "grad-sum", FaultArgs::None,
     "Average the gradients: set_auto_parallel_context(gradients_mean=True) in MindSpore (or "
     "DistributedGradReducer(mean=True)); in PyTorch divide by the world size after all_reduce(SUM) (DDP "
     "averages by itself).",
     nullptr, {}, 0},
    {Straggler, "straggler", "parallel", "one card is much slower than the others",
     kNoMetric, false, "straggler:1", FaultArgs::StepRank,
     "Find out why card {rank} is slow: its host process's CPU binding and load, the data pipeline feeding it "
     "(num_parallel_workers), thermal or power throttling, HBM pressure; the MindSpore profiler per rank "
     "(PyTorch: torch.profiler) shows where its time goes.",
     nullptr, {}, 0},
    {CollectiveMismatch, "collective-mismatch", "parallel", "ranks stopped at different collectives",
     kNoMetric, false, nullptr, FaultArgs::None,
     "Find why rank {rank} took another path at step {step}: every rank must issue the same collectives in the "
     "same order with the same sizes. A rank that never arrived is stuck before it (its own log and `py-spy dump "
     "--pid` of its process show where: a data loader that ran out on an uneven shard, an exception, a "
     "collective inside `if rank == 0`); a size or dtype mismatch means the ranks' models or tensors differ "
     "there (unused parameters, a conditional branch, mixed precision on one rank).",
     "Make every rank issue the same collectives in the same order with the same sizes: read the log and a "
     "`py-spy dump` of each rank that did not arrive (an uneven data shard, an exception, a collective inside "
     "`if rank == 0`), and look for a conditional branch or unused parameters where sizes differ.",
     {}, 0},
    {UpdateChanged, "update-changed", "numerics", "every rank updates the weights differently from the reference",
     kNoMetric, false, "update-changed@6", FaultArgs::Step,
     "Compare the optimizer with the reference run's, from step {step} on: the learning rate and its schedule "
     "(warm-up, the linear scaling rule when the global batch changed), momentum, weight decay, gradient "
     "clipping, and a checkpoint that restored another optimizer state. Every rank does the same, so the ranks "
     "still agree with each other.",
     nullptr, {}, 0},
    {LossScaleChanged, "loss-scale-changed", "numerics", "the loss scale differs from the reference on every rank",
     kNoMetric, false, "loss-scale-changed@6", FaultArgs::Step,
     "Compare the loss-scale manager with the reference run's, from step {step} on: its kind (fixed or dynamic), "
     "initial value, growth factor and window, and whether a resumed job restored its state "
     "(MindSpore's scale_sense; PyTorch scaler.load_state_dict) on every rank.",
     nullptr, {}, 0},
    {AllReduceWrong, "allreduce-wrong", "parallel", "the all-reduce delivers the same wrong result to every rank",
     kNoMetric, false, "allreduce-wrong@6", FaultArgs::Step,
     "Check the collective library from step {step} on: its version and the reduction algorithm it chose "
     "(HCCL_ALGO / NCCL_ALGO; ring, tree, hierarchical), a custom reducer or communication hook, and fusion "
     "buckets that mix dtypes; rerun the step with another algorithm to confirm. A card that corrupts its part "
     "of the reduce-scatter looks the same: check the cards' health (npu-smi, ECC counters).",
     nullptr, {}, 0},
};
// clang-format on
static_assert(std::size(kCauses) == kCauseCount);
static_assert(
    [] {
        for (size_t i = 0; i < kCauseCount; ++i)
            if (size_t(kCauses[i].id) != i)
                return false;
        return true;
    }(),
    "kCauses is indexed by Cause: rows in enum order");

} // namespace

std::span<const CauseInfo> causes() {
    return kCauses;
}

const CauseInfo& causeInfo(Cause c) {
    return kCauses[size_t(c)];
}

const CauseInfo* findCause(std::string_view key) {
    for (const CauseInfo& c : kCauses)
        if (key == c.key)
            return &c;
    return nullptr;
}

std::string causeFix(Cause c, int rank, int64_t step, const std::string& param, bool located) {
    const CauseInfo& info = causeInfo(c);
    const char* text = located || !info.fixUnlocated ? info.fix : info.fixUnlocated;
    return fmt::format(fmt::runtime(text), fmt::arg("rank", rank), fmt::arg("step", step),
                       fmt::arg("param", param));
}

} // namespace rs
