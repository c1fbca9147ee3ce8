// The layout of a RankSight run file (HDF5), in one place so the writer, the reader and
// docs/run-file.md agree. Every name, dtype and shape of the file is here or in the two headers of rows it
// includes; docs/run-file.md explains them. A table column is one row below (ColumnTable.h), naming the
// record member it holds, and a root attribute is one row of RootAttributes.h, naming the RunMeta member it
// holds: RunWriter, Hdf5RunReader, the wire (RecordWire.h: the reader process, the node exchange), CSV export
// and `ranksight-cli schema` (which python/ranksight/runfile.py is checked against) iterate the rows. Adding
// a column or a root attribute: docs/run-file.md. No HDF5 types in this header: Hdf5Types.h maps them to
// HDF5.
#pragma once

#include "store/ColumnTable.h"
#include "store/RecordFields.h"
#include "store/RootAttributes.h"
#include "store/RunLimits.h"
#include "store/RunRecords.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace rs {

// Every failure to write or read a run file. The message names the file and the object: what was found and
// what was expected, e.g. "RUN.h5: dataset /grads/local_norm has dims (10,3,161), expected (S,4,161)".
class RunFileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace runschema {

// Fixed-size datasets, written once at creation.
inline constexpr const char* kParamName = "/params/name";     // [P] fixed string
inline constexpr const char* kParamShape = "/params/shape";   // [P] fixed string, "64x3x3x3"; "" for 0-d
inline constexpr const char* kParamNumel = "/params/numel";   // [P] int64
inline constexpr const char* kParamOffset = "/params/offset"; // [P] int64
inline constexpr const char* kBufferNames = "/params/buffer_names";    // [NB] fixed string
inline constexpr const char* kCardRank = "/cards/rank";                // [C] int32, C = R or 0
inline constexpr const char* kCardDeviceId = "/cards/device_id";       // [C] int32
inline constexpr const char* kCardDeviceIp = "/cards/device_ip";       // [C] fixed string
inline constexpr const char* kCardServerId = "/cards/server_id";       // [C] fixed string
inline constexpr const char* kCardHbmTotal = "/cards/hbm_total_bytes"; // [C] int64
inline constexpr const char* kCardHbmUsed = "/cards/hbm_used_bytes";   // [C] int64

// Status, created up front (attributes cannot be added once SWMR writing started), written at close.
inline constexpr const char* kStatusComplete = "/status/complete";      // scalar uint8
inline constexpr const char* kStatusStopReason = "/status/stop_reason"; // scalar fixed string

// Per-step table: one row per appendStep. Every column is extendible along dim 0 (steps). The key column
// (/steps/step) is the last entry and is written last, so a reader that takes the minimum extent never
// sees a half-written step. Each table's enum names its rows for the code that picks one (diagnosis, the
// charts); a row's first value is its enum name, and the build fails if the two disagree.
enum StepCol : int {
    kEpoch,
    kLr,
    kLoss,
    kAccuracy,
    kLossScale,
    kStepMs,
    kComputeMs,
    kCommMs,
    kOverflow,
    kSkipped,
    kState,
    kSampleFp,
    kSampleIds,
    kBufferFpStep,
    kCpuWaitMs,
    kOptimizerLr,
    kLocalNorm,
    kLocalMax,
    kLocalSum,
    kNonfinite,
    kOverflowCount,
    kUnderflowCount,
    kSketch,
    kLocalFp,
    kSyncedNorm,
    kSyncedSum,
    kSyncedFp,
    kEndNs,
    kStep, // key, last
    kStepColCount
};
inline constexpr std::tuple kStepTable{
    col(kEpoch, "/steps/epoch", Dtype::I64, Row::Scalar, &StepRecord::epoch),
    col(kLr, "/steps/lr", Dtype::F32, Row::Scalar, &StepRecord::lr),
    col(kLoss, "/steps/loss", Dtype::F32, Row::R, &RankStep::loss),
    col(kAccuracy, "/steps/accuracy", Dtype::F32, Row::R, &RankStep::accuracy),
    col(kLossScale, "/steps/loss_scale", Dtype::F32, Row::R, &RankStep::lossScale),
    col(kStepMs, "/steps/step_ms", Dtype::F32, Row::R, &RankStep::stepMs),
    col(kComputeMs, "/steps/compute_ms", Dtype::F32, Row::R, &RankStep::computeMs),
    col(kCommMs, "/steps/comm_ms", Dtype::F32, Row::R, &RankStep::commMs),
    col(kOverflow, "/steps/overflow", Dtype::U8, Row::R, &RankStep::overflow),
    col(kSkipped, "/steps/skipped", Dtype::U8, Row::R, &RankStep::skipped),
    col(kState, "/steps/state", Dtype::U8, Row::R, &RankStep::state),
    col(kSampleFp, "/steps/sample_fp", Dtype::U64, Row::R, &RankStep::sampleFp),
    col(kSampleIds, "/steps/sample_ids", Dtype::I32, Row::RB, &RankStep::sampleIds, {.padded = true}),
    col(kBufferFpStep, "/steps/buffer_fp", Dtype::U64, Row::R, &RankStep::bufferFp, {.addedLater = true}),
    col(kCpuWaitMs, "/steps/cpu_wait_ms", Dtype::F32, Row::R, &RankStep::cpuWaitMs, {.addedLater = true}),
    col(kOptimizerLr, "/steps/optimizer_lr", Dtype::F32, Row::R, &RankStep::optimizerLr,
        {.addedLater = true}),
    col(kLocalNorm, "/grads/local_norm", Dtype::F32, Row::RP, &RankStep::localNorm, {.deflate = false}),
    col(kLocalMax, "/grads/local_max", Dtype::F32, Row::RP, &RankStep::localMax, {.deflate = false}),
    col(kLocalSum, "/grads/local_sum", Dtype::F64, Row::RP, &RankStep::localSum, {.deflate = false}),
    col(kNonfinite, "/grads/nonfinite", Dtype::U32, Row::RP, &RankStep::nonfinite),
    col(kOverflowCount, "/grads/overflow_count", Dtype::U32, Row::RP, &RankStep::overflowCount),
    col(kUnderflowCount, "/grads/underflow_count", Dtype::U32, Row::RP, &RankStep::underflowCount),
    col(kSketch, "/grads/sketch", Dtype::F32, Row::RPK, &RankStep::sketch, {.deflate = false}),
    col(kLocalFp, "/grads/local_fp", Dtype::U64, Row::RP, &RankStep::localFp,
        {.deflate = false, .addedLater = true}),
    col(kSyncedNorm, "/grads/synced_norm", Dtype::F32, Row::RP, &RankStep::syncedNorm),
    col(kSyncedSum, "/grads/synced_sum", Dtype::F64, Row::RP, &RankStep::syncedSum),
    col(kSyncedFp, "/grads/synced_fp", Dtype::U64, Row::RP, &RankStep::syncedFp),
    col(kEndNs, "/steps/end_ns", Dtype::I64, Row::Scalar, &StepRecord::endNs, {.addedLater = true}),
    col(kStep, "/steps/step", Dtype::I64, Row::Scalar, &StepRecord::step),
};

// The per-rank scalar step columns (one number per step and rank; the charts read them whole):
// kLoss..kState, in this order. RunReader::readStepScalar reads one of them as float.
inline constexpr int kFirstRankScalar = kLoss, kLastRankScalar = kState;
inline constexpr int kRankScalarCount = kLastRankScalar - kFirstRankScalar + 1;
inline constexpr bool isRankScalar(int c) {
    return c >= kFirstRankScalar && c <= kLastRankScalar;
}

enum WeightCol : int { kWFp, kWNorm, kWBufferFp, kWBufferDrift, kWStep, kWeightColCount };
inline constexpr std::tuple kWeightTable{
    col(kWFp, "/weights/fp", Dtype::U64, Row::RP, &WeightRecord::fp),
    col(kWNorm, "/weights/norm", Dtype::F32, Row::RP, &WeightRecord::norm),
    col(kWBufferFp, "/weights/buffer_fp", Dtype::U64, Row::R, &WeightRecord::bufferFp),
    col(kWBufferDrift, "/weights/buffer_drift", Dtype::F32, Row::R, &WeightRecord::bufferDrift),
    col(kWStep, "/weights/step", Dtype::I64, Row::Scalar, &WeightRecord::step),
};

enum EvalCol : int { kEAccuracy, kELoss, kEStep, kEvalColCount };
inline constexpr std::tuple kEvalTable{
    col(kEAccuracy, "/eval/accuracy", Dtype::F32, Row::R, &EvalRecord::accuracy),
    col(kELoss, "/eval/loss", Dtype::F32, Row::R, &EvalRecord::loss),
    col(kEStep, "/eval/step", Dtype::I64, Row::Scalar, &EvalRecord::step),
};

enum EventCol : int { kVRank, kVSeverity, kVCode, kVMessage, kVPeer, kVPeerGone, kVStep, kEventColCount };
inline constexpr std::tuple kEventTable{
    col(kVRank, "/events/rank", Dtype::I32, Row::Scalar, &Event::rank),
    col(kVSeverity, "/events/severity", Dtype::U8, Row::Scalar, &Event::severity),
    col(kVCode, "/events/code", Dtype::Str32, Row::Scalar, &Event::code),
    col(kVMessage, "/events/message", Dtype::Str256, Row::Scalar, &Event::message),
    col(kVPeer, "/events/peer", Dtype::I32, Row::Scalar, &Event::peer, {.addedLater = true}),
    col(kVPeerGone, "/events/peer_gone", Dtype::U8, Row::Scalar, &Event::peerGone, {.addedLater = true}),
    col(kVStep, "/events/step", Dtype::I64, Row::Scalar, &Event::step),
};

// Flight dumps: one row per dump; its entries are rows of /flight/entries whose `dump` is the dump's row.
enum DumpCol : int { kDReason, kDTriggerStep, kDumpColCount };
inline constexpr std::tuple kDumpTable{
    col(kDReason, "/flight/dumps/reason", Dtype::Str256, Row::Scalar, &FlightDump::reason),
    col(kDTriggerStep, "/flight/dumps/trigger_step", Dtype::I64, Row::Scalar, &FlightDump::triggerStep),
};

enum EntryCol : int { kFData, kFStep, kFRank, kFKind, kFDump, kEntryColCount };
inline constexpr std::tuple kEntryTable{
    col(kFData, "/flight/entries/data", Dtype::F32, Row::T, &FlightEntry::data, {.deflate = false}),
    col(kFStep, "/flight/entries/step", Dtype::I64, Row::Scalar, &FlightEntry::step),
    col(kFRank, "/flight/entries/rank", Dtype::I32, Row::Scalar, &FlightEntry::rank),
    col(kFKind, "/flight/entries/kind", Dtype::U8, Row::Scalar, &FlightEntry::kind),
    col(kFDump, "/flight/entries/dump", Dtype::I64, Row::Scalar, ParentRow{}),
};

// Collectives of imported flight-recorder dumps: one row per entry of a rank's dump, in the dump's order.
// Added to format 2 later, like each of its rows: older files read as having none, and list it absent.
enum CollectiveCol : int {
    kCRank,
    kCRecordId,
    kCSeq,
    kCGroup,
    kCOp,
    kCSizes,
    kCDtypes,
    kCState,
    kCP2p,
    kCRetired,
    kCCreatedNs,
    kCDurationMs,
    kCTimeoutMs,
    kCFrame,
    kCStep,
    kCollectiveColCount
};
inline constexpr ColumnOptions kLater{.addedLater = true};
inline constexpr std::tuple kCollectiveTable{
    col(kCRank, "/collectives/rank", Dtype::I32, Row::Scalar, &Collective::rank, kLater),
    col(kCRecordId, "/collectives/record_id", Dtype::I64, Row::Scalar, &Collective::recordId, kLater),
    col(kCSeq, "/collectives/seq", Dtype::I64, Row::Scalar, &Collective::seq, kLater),
    col(kCGroup, "/collectives/group", Dtype::Str256, Row::Scalar, &Collective::group, kLater),
    col(kCOp, "/collectives/op", Dtype::Str32, Row::Scalar, &Collective::op, kLater),
    col(kCSizes, "/collectives/sizes", Dtype::Str256, Row::Scalar, &Collective::sizes, kLater),
    col(kCDtypes, "/collectives/dtypes", Dtype::Str32, Row::Scalar, &Collective::dtypes, kLater),
    col(kCState, "/collectives/state", Dtype::U8, Row::Scalar, &Collective::state, kLater),
    col(kCP2p, "/collectives/p2p", Dtype::U8, Row::Scalar, &Collective::p2p, kLater),
    col(kCRetired, "/collectives/retired", Dtype::U8, Row::Scalar, &Collective::retired, kLater),
    col(kCCreatedNs, "/collectives/created_ns", Dtype::I64, Row::Scalar, &Collective::createdNs, kLater),
    col(kCDurationMs, "/collectives/duration_ms", Dtype::F32, Row::Scalar, &Collective::durationMs, kLater),
    col(kCTimeoutMs, "/collectives/timeout_ms", Dtype::I64, Row::Scalar, &Collective::timeoutMs, kLater),
    col(kCFrame, "/collectives/frame", Dtype::Str256, Row::Scalar, &Collective::frame, kLater),
    col(kCStep, "/collectives/step", Dtype::I64, Row::Scalar, &Collective::step, kLater),
};

// Tensor statistics of imported msprobe dumps: one row per tensor, step and rank, in each dump's order.
enum TensorCol : int {
    kTRank,
    kTOrder,
    kTName,
    kTDtype,
    kTShape,
    kTMax,
    kTMin,
    kTMean,
    kTNorm,
    kTRecorded,
    kTStep,
    kTensorColCount
};
inline constexpr std::tuple kTensorTable{
    col(kTRank, "/tensors/rank", Dtype::I32, Row::Scalar, &TensorStat::rank, kLater),
    col(kTOrder, "/tensors/order", Dtype::I64, Row::Scalar, &TensorStat::order, kLater),
    col(kTName, "/tensors/name", Dtype::Str256, Row::Scalar, &TensorStat::name, kLater),
    col(kTDtype, "/tensors/dtype", Dtype::Str32, Row::Scalar, &TensorStat::dtype, kLater),
    col(kTShape, "/tensors/shape", Dtype::Str256, Row::Scalar, &TensorStat::shape, kLater),
    col(kTMax, "/tensors/max", Dtype::F32, Row::Scalar, &TensorStat::max, kLater),
    col(kTMin, "/tensors/min", Dtype::F32, Row::Scalar, &TensorStat::min, kLater),
    col(kTMean, "/tensors/mean", Dtype::F32, Row::Scalar, &TensorStat::mean, kLater),
    col(kTNorm, "/tensors/norm", Dtype::F32, Row::Scalar, &TensorStat::norm, kLater),
    col(kTRecorded, "/tensors/recorded", Dtype::U8, Row::Scalar, &TensorStat::recorded, kLater),
    col(kTStep, "/tensors/step", Dtype::I64, Row::Scalar, &TensorStat::step, kLater),
};

// Each record type, the table its columns are in, and what else crosses the wire with it (RecordWire.h: the
// reader process's answers, the node exchange) that the file does not hold as a column of its own.
template <class Record> struct RecordTable {}; // no table: not a record of the run file
template <> struct RecordTable<StepRecord> {
    static constexpr const auto& columns = kStepTable;
    static constexpr std::tuple extras{&StepRecord::ranks}; // one RankStep per rank
};
template <> struct RecordTable<RankStep> {
    static constexpr const auto& columns = kStepTable;
    static constexpr std::tuple<> extras{};
};
template <> struct RecordTable<WeightRecord> {
    static constexpr const auto& columns = kWeightTable;
    // The cards' buffer norms, on their way to node 0's writer, which turns them into buffer_drift.
    static constexpr std::tuple extras{&WeightRecord::bufferNorm};
};
template <> struct RecordTable<EvalRecord> {
    static constexpr const auto& columns = kEvalTable;
    static constexpr std::tuple<> extras{};
};
template <> struct RecordTable<Event> {
    static constexpr const auto& columns = kEventTable;
    static constexpr std::tuple<> extras{};
};
template <> struct RecordTable<FlightDump> {
    static constexpr const auto& columns = kDumpTable;
    static constexpr std::tuple extras{&FlightDump::entries}; // rows of the entries table
};
template <> struct RecordTable<FlightEntry> {
    static constexpr const auto& columns = kEntryTable;
    static constexpr std::tuple<> extras{};
};
template <> struct RecordTable<Collective> {
    static constexpr const auto& columns = kCollectiveTable;
    static constexpr std::tuple<> extras{};
};
template <> struct RecordTable<TensorStat> {
    static constexpr const auto& columns = kTensorTable;
    static constexpr std::tuple<> extras{};
};

// An enum column's stored integer as the enum: a value it does not have (a damaged or newer file) reads as
// its last one.
template <class E> constexpr E fromStored(std::underlying_type_t<E> v) = delete;
template <> constexpr Severity fromStored<Severity>(uint8_t v) {
    return Severity(std::min<uint8_t>(v, uint8_t(Severity::Error)));
}

static_assert(validTable<StepRecord>(kStepTable));
static_assert(validTable<WeightRecord>(kWeightTable));
static_assert(validTable<EvalRecord>(kEvalTable));
static_assert(validTable<Event>(kEventTable));
static_assert(validTable<FlightDump>(kDumpTable));
static_assert(validTable<FlightEntry>(kEntryTable));
static_assert(validTable<Collective>(kCollectiveTable));
static_assert(validTable<TensorStat>(kTensorTable));

// The tables' layouts alone, indexed by their enums (kStepColumns[kLoss].path): for code that needs no
// record (the reader's validation, the absent list, diagnosis, the fuzzer).
inline constexpr auto kStepColumns = layoutsOf(kStepTable);
inline constexpr auto kWeightColumns = layoutsOf(kWeightTable);
inline constexpr auto kEvalColumns = layoutsOf(kEvalTable);
inline constexpr auto kEventColumns = layoutsOf(kEventTable);
inline constexpr auto kDumpColumns = layoutsOf(kDumpTable);
inline constexpr auto kEntryColumns = layoutsOf(kEntryTable);
inline constexpr auto kCollectiveColumns = layoutsOf(kCollectiveTable);
inline constexpr auto kTensorColumns = layoutsOf(kTensorTable);
static_assert(kStepColumns.size() == kStepColCount && kWeightColumns.size() == kWeightColCount &&
              kEvalColumns.size() == kEvalColCount && kEventColumns.size() == kEventColCount &&
              kDumpColumns.size() == kDumpColCount && kEntryColumns.size() == kEntryColCount &&
              kCollectiveColumns.size() == kCollectiveColCount && kTensorColumns.size() == kTensorColCount);

// What a file may declare absent (kAttrAbsent): every step and weight column except the key columns, and the
// root attributes of kAbsentAttributes (RootAttributes.h).
inline bool mayBeAbsent(std::string_view path) {
    for (const char* a : kAbsentAttributes)
        if (path == a)
            return true;
    for (int c = 0; c < kStepColCount; ++c)
        if (c != kStep && path == kStepColumns[c].path)
            return true;
    for (int c = 0; c < kWeightColCount; ++c)
        if (c != kWStep && path == kWeightColumns[c].path)
            return true;
    return false;
}

inline std::string joinAbsent(const std::vector<std::string>& paths) {
    std::string out;
    for (const std::string& p : paths)
        out += (out.empty() ? "" : ",") + p;
    return out;
}

// Names a reader does not know (a later version's columns) are dropped: they cannot concern it.
inline std::vector<std::string> splitAbsent(std::string_view list) {
    std::vector<std::string> out;
    while (!list.empty()) {
        const size_t comma = list.find(',');
        const std::string_view name = list.substr(0, comma);
        if (mayBeAbsent(name) && std::find(out.begin(), out.end(), name) == out.end())
            out.emplace_back(name);
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    return out;
}

// Groups, in creation order.
inline constexpr const char* kGroups[] = {
    "/params", "/cards",  "/status",       "/steps",          "/grads",       "/weights", "/eval",
    "/events", "/flight", "/flight/dumps", "/flight/entries", "/collectives", "/tensors"};

// Elements of the flat parameter buffer: the end of the last tensor (the flight recorder's row length).
// Params may come from a file that nothing has checked yet (the fuzzer's mutator, a damaged file before
// validation): a negative numel or offset counts as 0 and the end saturates at INT64_MAX instead of
// overflowing, so callers can compare the result against their limits.
inline int64_t totalElements(std::span<const ParamInfo> params) {
    int64_t total = 0;
    for (const ParamInfo& p : params) {
        const int64_t offset = std::max<int64_t>(p.offset, 0), numel = std::max<int64_t>(p.numel, 0);
        int64_t end = 0;
        if (__builtin_add_overflow(offset, numel, &end))
            end = std::numeric_limits<int64_t>::max();
        total = std::max(total, end);
    }
    return total;
}

} // namespace runschema
} // namespace rs
