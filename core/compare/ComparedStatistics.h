// The statistics a comparison judges (docs/comparing.md), one row each, keyed by the run-file column that
// holds it (store/RunSchema.h): what kind of value it is, where in a step's data flow it is taken, which
// batches its values need to pair, and how its tolerance is derived. The rows are in the order data flows
// through a step: at one step the earliest statistic that parts is the one reported. What is compared, what
// is read and how each value is judged (AlignedComparison.cpp) iterates this table; a statistic is one row.
#pragma once

#include "store/RunRecords.h"
#include "store/RunSchema.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rs {

enum class StatKind : uint8_t {
    Value,             // a number, judged against its tolerance
    Fingerprint,       // bits of the computation: equal or not; any difference ends the bit-for-bit stretch
    SampleFingerprint, // bits of the data a rank read: other samples are other data, not other arithmetic
    SampleSet,         // the step's sample ids over all ranks, as a set
};

// Where in a step's data flow the value is taken.
enum class StatPhase : uint8_t {
    Step,   // once per step or per rank: the batch, the loss, the update's settings and decisions
    Local,  // a rank's gradient before the all-reduce
    Synced, // the gradient as the all-reduce delivered it
    Weight, // the weights after the update (the weight rows)
};

// Which batches the two runs' values must have come from to pair.
enum class StatPairing : uint8_t {
    Any,
    SameRankBatches,  // paired ranks saw the same samples
    SameGlobalBatch,  // the runs saw the same global batch
    OtherRankBatches, // only where paired ranks did not see the same samples but the global batch is the same
    RanksElseMeans,   // rank by rank on the same batches, else the means over ranks on the same global batch
};

// How the tolerance is derived (compare/CompareTolerance.h); 0 where the runs do the same arithmetic.
enum class StatTolerance : uint8_t {
    Exact,      // equality whatever the arithmetic
    Loss,       // ToleranceModel::loss
    LocalNorm,  // ToleranceModel::norm over the rank's local norm (else the value itself)
    LocalSum,   // ToleranceModel::sum over the rank's local norm (else 0)
    SyncedNorm, // ToleranceModel::norm over the mean local norm of the ranks (else the synced norm)
    SyncedSum,  // ToleranceModel::sum over the same
    WeightCarry // the updates' rounding carried into the weights, plus the norm's own rounding
};

// One recorded value of a statistic; recorded false where the record does not hold it (no such rank or
// parameter in it).
struct StatCell {
    bool recorded = false;
    double value = 0;
    uint64_t bits = 0;
};
using StepCellOf = StatCell (*)(const StepRecord&, size_t rank, size_t param);
using WeightCellOf = StatCell (*)(const WeightRecord&, size_t rank, size_t param);

struct Statistic {
    const char* name; // as the comparison's output names it ("synced_norm")
    int column;       // runschema::StepCol, or runschema::WeightCol for the Weight phase
    StatKind kind;
    StatPhase phase;
    StatPairing pairing = StatPairing::Any;
    StatTolerance tolerance = StatTolerance::Exact;
    // Set by the data and the schedule, not by arithmetic: still compared once the runs applied other
    // updates.
    bool exactInput = false;
    // A decision of the step (skip the update, the loss scale) that arithmetic alone may flip once runs have
    // drifted: judged against what the spread references measured (MeasuredDrift::discreteFrom).
    bool discrete = false;
    StepCellOf stepCell = nullptr;     // the value, read through the schema's member (not the Weight phase)
    WeightCellOf weightCell = nullptr; // the same for the Weight phase

    const runschema::Column& layout() const {
        return phase == StatPhase::Weight ? runschema::kWeightColumns[size_t(column)]
                                          : runschema::kStepColumns[size_t(column)];
    }
    const char* path() const { return layout().path; } // the dataset both files must have recorded
    bool perParameter() const { return layout().row == runschema::Row::RP; }
    bool bits() const { return kind == StatKind::Fingerprint || kind == StatKind::SampleFingerprint; }
};

namespace statcell {

template <class T> StatCell of(const T& v) {
    if constexpr (std::is_integral_v<T>)
        return {true, double(v), uint64_t(v)};
    else
        return {true, double(v), 0};
}
template <class T> StatCell at(const std::vector<T>& v, size_t i) {
    return i < v.size() ? of(v[i]) : StatCell{};
}
template <class T> StatCell member(const StepRecord& s, size_t rank, size_t param, T RankStep::*field) {
    if (rank >= s.ranks.size())
        return {};
    if constexpr (requires(const T& v) { v.size(); })
        return at(s.ranks[rank].*field, param);
    else
        return of(s.ranks[rank].*field);
}
template <class T> StatCell member(const StepRecord& s, size_t, size_t, T StepRecord::*field) {
    return of(s.*field);
}
template <int C> StatCell step(const StepRecord& s, size_t rank, size_t param) {
    return member(s, rank, param, std::get<C>(runschema::kStepTable).field);
}
template <int C> StatCell weight(const WeightRecord& w, size_t rank, size_t param) {
    const auto& perRank = w.*(std::get<C>(runschema::kWeightTable).field);
    return rank < perRank.size() ? at(perRank[rank], param) : StatCell{};
}

} // namespace statcell

template <int C> constexpr Statistic stepStatistic(Statistic s) {
    s.column = C;
    s.stepCell = &statcell::step<C>;
    return s;
}
template <int C> constexpr Statistic weightStatistic(Statistic s) {
    s.column = C;
    s.weightCell = &statcell::weight<C>;
    return s;
}

// clang-format off
inline constexpr std::array kStatistics{
    stepStatistic<runschema::kSampleFp>({"sample_fp", 0, StatKind::SampleFingerprint, StatPhase::Step,
        StatPairing::SameRankBatches, StatTolerance::Exact, true}),
    stepStatistic<runschema::kSampleIds>({"global_batch", 0, StatKind::SampleSet, StatPhase::Step,
        StatPairing::OtherRankBatches, StatTolerance::Exact, true}),
    stepStatistic<runschema::kLoss>({"loss", 0, StatKind::Value, StatPhase::Step, StatPairing::RanksElseMeans,
        StatTolerance::Loss}),
    stepStatistic<runschema::kLocalFp>({"local_fp", 0, StatKind::Fingerprint, StatPhase::Local,
        StatPairing::SameRankBatches}),
    stepStatistic<runschema::kLocalNorm>({"local_norm", 0, StatKind::Value, StatPhase::Local,
        StatPairing::SameRankBatches, StatTolerance::LocalNorm}),
    stepStatistic<runschema::kLocalMax>({"local_max", 0, StatKind::Value, StatPhase::Local,
        StatPairing::SameRankBatches, StatTolerance::LocalNorm}),
    stepStatistic<runschema::kLocalSum>({"local_sum", 0, StatKind::Value, StatPhase::Local,
        StatPairing::SameRankBatches, StatTolerance::LocalSum}),
    stepStatistic<runschema::kNonfinite>({"nonfinite", 0, StatKind::Value, StatPhase::Local,
        StatPairing::SameRankBatches}),
    stepStatistic<runschema::kSyncedNorm>({"synced_norm", 0, StatKind::Value, StatPhase::Synced,
        StatPairing::SameGlobalBatch, StatTolerance::SyncedNorm}),
    stepStatistic<runschema::kSyncedSum>({"synced_sum", 0, StatKind::Value, StatPhase::Synced,
        StatPairing::SameGlobalBatch, StatTolerance::SyncedSum}),
    stepStatistic<runschema::kSyncedFp>({"synced_fp", 0, StatKind::Fingerprint, StatPhase::Synced,
        StatPairing::SameGlobalBatch}),
    stepStatistic<runschema::kLr>({"lr", 0, StatKind::Value, StatPhase::Step, StatPairing::Any,
        StatTolerance::Exact, true}),
    stepStatistic<runschema::kLossScale>({"loss_scale", 0, StatKind::Value, StatPhase::Step, StatPairing::Any,
        StatTolerance::Exact, false, true}),
    stepStatistic<runschema::kSkipped>({"skipped", 0, StatKind::Value, StatPhase::Step, StatPairing::Any,
        StatTolerance::Exact, false, true}),
    stepStatistic<runschema::kBufferFpStep>({"buffer_fp", 0, StatKind::Fingerprint, StatPhase::Step,
        StatPairing::SameRankBatches}),
    weightStatistic<runschema::kWFp>({"weight_fp", 0, StatKind::Fingerprint, StatPhase::Weight}),
    weightStatistic<runschema::kWNorm>({"weight_norm", 0, StatKind::Value, StatPhase::Weight, StatPairing::Any,
        StatTolerance::WeightCarry}),
};
// clang-format on
inline constexpr size_t kStatisticCount = kStatistics.size();

// The row of the statistic held by a step column (kStatisticCount: none).
constexpr size_t statisticOfStepColumn(int column) {
    for (size_t s = 0; s < kStatisticCount; ++s)
        if (kStatistics[s].phase != StatPhase::Weight && kStatistics[s].column == column)
            return s;
    return kStatisticCount;
}

// The row named `name` (kStatisticCount: none).
size_t statisticNamed(std::string_view name);

} // namespace rs
