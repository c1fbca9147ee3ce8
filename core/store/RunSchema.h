// The layout of a RankSight run file (HDF5), in one place so the writer, the reader and
// docs/run-file.md agree. Every name, dtype and shape of the file is here; docs/run-file.md explains them.
// No HDF5 types in this header: Hdf5Types.h maps Dtype and Row to HDF5 for RunWriter and RunReader.
#pragma once

#include "store/RunRecords.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rs {

// Every failure to write or read a run file. The message names the file and the object: what was found and
// what was expected, e.g. "RUN.h5: dataset /grads/local_norm has dims (10,3,161), expected (S,4,161)".
class RunFileError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

namespace runschema {

inline constexpr std::string_view kFormatName = "ranksight-run";
// Bump when a reader of the previous version would misread a new file, or when the new layout lets a reader
// refuse what it had to accept before. Adding groups, datasets or attributes that old readers can ignore does
// not bump it (see docs/run-file.md, "Versioning").
// 2: root string attributes are fixed-length (1 had variable-length ones, which a reader of 2 still reads,
// and refuses in a file that says 2).
inline constexpr int kFormatVersion = 2;

// Root attributes.
inline constexpr const char* kAttrFormat = "format";                // string, kFormatName
inline constexpr const char* kAttrFormatVersion = "format_version"; // int32
inline constexpr const char* kAttrCreated = "created";              // string, ISO 8601 UTC
inline constexpr const char* kAttrModel = "model";
inline constexpr const char* kAttrWorldSize = "world_size";        // int32, R
inline constexpr const char* kAttrBatchPerRank = "batch_per_rank"; // int32, B
inline constexpr const char* kAttrPrecision = "precision";
inline constexpr const char* kAttrLossScale = "loss_scale";
inline constexpr const char* kAttrData = "data";
inline constexpr const char* kAttrSeed = "seed";                  // uint64
inline constexpr const char* kAttrSketchDim = "sketch_dim";       // int32, K
inline constexpr const char* kAttrWeightEvery = "weight_every";   // int32
inline constexpr const char* kAttrPlannedSteps = "planned_steps"; // int64
inline constexpr const char* kAttrConfig = "config";              // string, JSON
inline constexpr const char* kAttrRankTable = "rank_table";       // string, JSON (hccl.json)
inline constexpr const char* kAttrEnvironment = "environment";    // string, JSON
// Optional (files without it were written by the engine): ranksight-engine | pytorch-ddp | msprobe.
inline constexpr const char* kAttrSource = "source";
inline constexpr const char* kDefaultSource = "ranksight-engine";
// Optional: the datasets the source could not record, comma-separated paths of step and weight columns
// (e.g. "/grads/sketch,/grads/synced_fp"). Their rows hold the "missing" fill (NaN, 0, -1) and diagnosis
// does not read them. Files without the attribute recorded everything.
inline constexpr const char* kAttrAbsent = "absent";

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

inline constexpr int kEventCodeLen = 32;     // bytes incl. the terminating NUL
inline constexpr int kEventMessageLen = 256; // bytes incl. the terminating NUL
inline constexpr int kReasonLen = 256;       // stop reason, flight dump reason

enum class Dtype : uint8_t { I32, I64, U8, U32, U64, F32, F64, Str32, Str256 };

// Dims of one row of a table (after the leading, extendible row dimension).
// R world size, B batch per rank, P parameter tensors, K sketch dim, T total parameter elements.
enum class Row : uint8_t { Scalar, R, RB, RP, RPK, T };

// deflate: shuffle + deflate(1). Off for per-rank float columns whose mantissas are noise (gradient
// statistics, sketches, flight tensors): zlib saves ~10-15% there but costs ~4 ms per ResNet-50 step on 8
// ranks. On for everything that repeats across ranks (synced values, fingerprints), counts (mostly 0), and
// small rows.
struct Column {
    const char* path;
    Dtype dtype;
    Row row;
    bool deflate = true;
    // Added to format 2 after its first files were written: a file without it opens, and the column reads
    // as absent (RunMeta::absent names it, its values are zeros). Old readers ignore it in new files.
    bool addedLater = false;
};

// Per-step table: one row per appendStep. Every column is extendible along dim 0 (steps). The key column
// (/steps/step) is the last entry and is written last, so a reader that takes the minimum extent never
// sees a half-written step.
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
    kLocalNorm,
    kLocalMax,
    kLocalSum,
    kNonfinite,
    kOverflowCount,
    kUnderflowCount,
    kSketch,
    kSyncedNorm,
    kSyncedSum,
    kSyncedFp,
    kStep, // key, last
    kStepColCount
};
inline constexpr Column kStepColumns[kStepColCount] = {
    {"/steps/epoch", Dtype::I64, Row::Scalar},
    {"/steps/lr", Dtype::F32, Row::Scalar},
    {"/steps/loss", Dtype::F32, Row::R},
    {"/steps/accuracy", Dtype::F32, Row::R},
    {"/steps/loss_scale", Dtype::F32, Row::R},
    {"/steps/step_ms", Dtype::F32, Row::R},
    {"/steps/compute_ms", Dtype::F32, Row::R},
    {"/steps/comm_ms", Dtype::F32, Row::R},
    {"/steps/overflow", Dtype::U8, Row::R},
    {"/steps/skipped", Dtype::U8, Row::R},
    {"/steps/state", Dtype::U8, Row::R},
    {"/steps/sample_fp", Dtype::U64, Row::R},
    {"/steps/sample_ids", Dtype::I32, Row::RB},
    {"/steps/buffer_fp", Dtype::U64, Row::R, true, true},
    {"/grads/local_norm", Dtype::F32, Row::RP, false},
    {"/grads/local_max", Dtype::F32, Row::RP, false},
    {"/grads/local_sum", Dtype::F64, Row::RP, false},
    {"/grads/nonfinite", Dtype::U32, Row::RP},
    {"/grads/overflow_count", Dtype::U32, Row::RP},
    {"/grads/underflow_count", Dtype::U32, Row::RP},
    {"/grads/sketch", Dtype::F32, Row::RPK, false},
    {"/grads/synced_norm", Dtype::F32, Row::RP},
    {"/grads/synced_sum", Dtype::F64, Row::RP},
    {"/grads/synced_fp", Dtype::U64, Row::RP},
    {"/steps/step", Dtype::I64, Row::Scalar},
};

// The per-rank scalar step columns (one number per step and rank; the charts read them whole):
// kLoss..kState, in this order. RunReader::readStepScalar reads one of them as float.
inline constexpr int kFirstRankScalar = kLoss, kLastRankScalar = kState;
inline constexpr int kRankScalarCount = kLastRankScalar - kFirstRankScalar + 1;
inline constexpr bool isRankScalar(int c) {
    return c >= kFirstRankScalar && c <= kLastRankScalar;
}

enum WeightCol : int { kWFp, kWNorm, kWBufferFp, kWBufferDrift, kWStep, kWeightColCount };
inline constexpr Column kWeightColumns[kWeightColCount] = {
    {"/weights/fp", Dtype::U64, Row::RP},       {"/weights/norm", Dtype::F32, Row::RP},
    {"/weights/buffer_fp", Dtype::U64, Row::R}, {"/weights/buffer_drift", Dtype::F32, Row::R},
    {"/weights/step", Dtype::I64, Row::Scalar},
};

enum EvalCol : int { kEAccuracy, kELoss, kEStep, kEvalColCount };
inline constexpr Column kEvalColumns[kEvalColCount] = {
    {"/eval/accuracy", Dtype::F32, Row::R},
    {"/eval/loss", Dtype::F32, Row::R},
    {"/eval/step", Dtype::I64, Row::Scalar},
};

enum EventCol : int { kVRank, kVSeverity, kVCode, kVMessage, kVStep, kEventColCount };
inline constexpr Column kEventColumns[kEventColCount] = {
    {"/events/rank", Dtype::I32, Row::Scalar},   {"/events/severity", Dtype::U8, Row::Scalar},
    {"/events/code", Dtype::Str32, Row::Scalar}, {"/events/message", Dtype::Str256, Row::Scalar},
    {"/events/step", Dtype::I64, Row::Scalar},
};

// Flight dumps: one row per dump; its entries are rows of /flight/entries whose `dump` is the dump's row.
enum DumpCol : int { kDReason, kDTriggerStep, kDumpColCount };
inline constexpr Column kDumpColumns[kDumpColCount] = {
    {"/flight/dumps/reason", Dtype::Str256, Row::Scalar},
    {"/flight/dumps/trigger_step", Dtype::I64, Row::Scalar},
};

enum EntryCol : int { kFData, kFStep, kFRank, kFKind, kFDump, kEntryColCount };
inline constexpr Column kEntryColumns[kEntryColCount] = {
    {"/flight/entries/data", Dtype::F32, Row::T, false}, {"/flight/entries/step", Dtype::I64, Row::Scalar},
    {"/flight/entries/rank", Dtype::I32, Row::Scalar},   {"/flight/entries/kind", Dtype::U8, Row::Scalar},
    {"/flight/entries/dump", Dtype::I64, Row::Scalar},
};

// Root attributes a file may declare absent (kAttrAbsent) when its source cannot know them (an msprobe tree
// names no model, batch, precision, loss scale or seed): the attribute then holds a placeholder that no view
// shows. Readers of files that predate this list drop these names (splitAbsent), as for any unknown name.
inline constexpr const char* kAbsentAttributes[] = {kAttrModel,     kAttrBatchPerRank, kAttrPrecision,
                                                    kAttrLossScale, kAttrData,         kAttrSeed};

// What a file may declare absent (kAttrAbsent): every step and weight column except the key columns, and the
// root attributes above.
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
inline constexpr const char* kGroups[] = {"/params", "/cards",        "/status",        "/steps",
                                          "/grads",  "/weights",      "/eval",          "/events",
                                          "/flight", "/flight/dumps", "/flight/entries"};

// Sanity limits a reader enforces before allocating anything a file claims.
inline constexpr int64_t kMaxWorldSize = 1 << 16;
inline constexpr int64_t kMaxParams = 1 << 20;
inline constexpr int64_t kMaxSketchDim = 1 << 16;
inline constexpr int64_t kMaxBatch = 1 << 24;
inline constexpr int64_t kMaxTotalElements = int64_t(1) << 36;
inline constexpr int64_t kMaxStringBytes = 1 << 24; // a fixed-length string type or an attribute
// Shuffle + deflate cannot shrink data by more than ~1032:1, so no dataset's logical size may exceed
// kMaxInflation x the file size (+ slack for partial chunks and fill values).
inline constexpr int64_t kMaxInflation = 1100;
inline constexpr int64_t kInflationSlackBytes = 64 << 20;

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

inline int dtypeBytes(Dtype t) {
    switch (t) {
    case Dtype::U8:
        return 1;
    case Dtype::I32:
    case Dtype::U32:
    case Dtype::F32:
        return 4;
    case Dtype::I64:
    case Dtype::U64:
    case Dtype::F64:
        return 8;
    case Dtype::Str32:
        return kEventCodeLen;
    case Dtype::Str256:
        return kEventMessageLen;
    }
    return 1;
}

inline const char* dtypeName(Dtype t) {
    switch (t) {
    case Dtype::I32:
        return "int32";
    case Dtype::I64:
        return "int64";
    case Dtype::U8:
        return "uint8";
    case Dtype::U32:
        return "uint32";
    case Dtype::U64:
        return "uint64";
    case Dtype::F32:
        return "float32";
    case Dtype::F64:
        return "float64";
    case Dtype::Str32:
        return "string[32]";
    case Dtype::Str256:
        return "string[256]";
    }
    return "?";
}

} // namespace runschema
} // namespace rs
