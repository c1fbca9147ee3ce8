// Plain value records that cross from the trainer to the run file and back from the reader.
// They hold no Qt and no LibTorch types so every layer can share them. Units are in the names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rs {

// One trainable parameter tensor, laid out in the replica's flat weight/gradient buffers.
struct ParamInfo {
    std::string name;           // e.g. "layer1.0.conv1.weight"
    std::vector<int64_t> shape; // e.g. {64, 64, 3, 3}
    int64_t numel = 0;
    int64_t offset = 0; // element offset into the flat buffer
};

// One emulated card as the run table describes it.
struct CardInfo {
    int rank = 0;
    int deviceId = 0;
    std::string deviceIp;
    std::string serverId;
    int64_t hbmTotalBytes = 0; // Ascend 910: 32 GiB
    int64_t hbmUsedBytes = 0;  // estimate: weights, grads, momentum, activations
};

// Everything fixed for the whole run; written once when the file is created.
struct RunMeta {
    std::string model;     // mlp | smallcnn | resnet18 | resnet50
    int worldSize = 0;     // ranks
    int batchPerRank = 0;  // samples per rank per step
    std::string precision; // O0 | O2 | O3
    std::string lossScale; // none | fixed:V | dynamic
    std::string data;      // synthetic | cifar10:DIR | fashion-mnist[:DIR]
    uint64_t seed = 0;
    int sketchDim = 0;                       // K of the per-parameter random-projection sketch
    int weightEvery = 0;                     // weight fingerprints every this many steps (and at step 0)
    int64_t plannedSteps = 0;                // steps the run was asked for
    std::string configJson;                  // the full effective config, as JSON
    std::string rankTableJson;               // the hccl.json used (generated or the user's)
    std::string environment;                 // JSON: versions, cores, host
    std::string createdUtc;                  // ISO 8601
    std::string source = "ranksight-engine"; // who wrote it: ranksight-engine | pytorch-ddp | msprobe
    std::vector<std::string> absent;         // dataset paths the source could not record (see RunSchema.h)
    int localFpVersion = 1;                  // how /grads/local_fp is defined (RootAttributes.h)
    // Datasets of a table that a writer killed while writing it left unreadable (a torn HDF5 object header):
    // recorded, but not there to read, so every view shows them as not recorded, never as zeros. The reader
    // says why in unreadableWhy. Empty for files whose writer closed them.
    std::vector<std::string> unreadable;
    std::string unreadableWhy;
    bool recorded(const std::string& datasetPath) const {
        for (const auto* list : {&absent, &unreadable})
            for (const std::string& a : *list)
                if (a == datasetPath)
                    return false;
        return true;
    }
    std::vector<ParamInfo> params;
    std::vector<std::string> bufferNames; // BatchNorm running statistics (never all-reduced)
    std::vector<CardInfo> cards;          // one per rank, index = rank
};

// Card health as the cards panel shows it.
enum class CardState : uint8_t { Ok = 0, Dead = 1, TimedOut = 2, Stopped = 3 };

// What one rank did in one step. Per-parameter vectors have meta.params.size() entries.
struct RankStep {
    float loss = 0;                 // unscaled loss of this rank's batch
    float accuracy = 0;             // batch accuracy, 0..1
    float lossScale = 1;            // the loss scale this rank used for this step
    uint8_t overflow = 0;           // this rank's overflow status after the (synced) check
    uint8_t skipped = 0;            // 1 when the update was skipped
    uint8_t state = 0;              // CardState
    float stepMs = 0;               // wall time of the whole step
    float computeMs = 0;            // forward + backward
    float commMs = 0;               // time spent inside collectives (includes waiting for peers)
    uint64_t sampleFp = 0;          // fingerprint of the sample ids of this step's batch
    std::vector<int32_t> sampleIds; // batchPerRank ids (-1 padded)
    // Fingerprint of the rank's BatchNorm running statistics after this step's forward (all buffers
    // together, as /weights/buffer_fp): in training mode every forward moves them, in eval mode none does.
    uint64_t bufferFp = 0;
    // Of computeMs, the time the card's thread was ready to run and waited for a free CPU core (the kernel's
    // run-queue delay): emulated cards share the host's cores, and that wait is the host's, not the card's.
    // NaN where it was not measured.
    float cpuWaitMs = 0;
    // The learning rate this rank's optimizer applied this step (on a skipped step, the one it would have
    // applied): ranks of one run apply the same, so a rank apart names an optimizer set differently on it,
    // also under the sharded update, where its weights cannot show it. NaN where it was not recorded.
    float optimizerLr = 0;

    // Local gradient, before the all-reduce, unscaled (divided by lossScale).
    std::vector<float> localNorm;         // L2 norm
    std::vector<float> localMax;          // max |g|
    std::vector<double> localSum;         // element sum (for the all-reduce arithmetic check)
    std::vector<uint32_t> nonfinite;      // inf/nan count
    std::vector<uint32_t> overflowCount;  // elements whose fp16 rounding is inf (scaled gradient)
    std::vector<uint32_t> underflowCount; // nonzero elements whose fp16 rounding is 0
    std::vector<float> sketch;            // params * sketchDim, random projection (shared seed)
    // Bitwise fingerprint of the local gradient as it enters the all-reduce (scaled, before any fp16
    // rounding): a run compared with a reference (compare/) finds a flipped bit here even where the flip is
    // averaged away or rounded off before it reaches what the ranks receive.
    std::vector<uint64_t> localFp;

    // Synced gradient, after the all-reduce, unscaled.
    std::vector<float> syncedNorm;
    std::vector<double> syncedSum;
    std::vector<uint64_t> syncedFp; // bitwise fingerprint of the tensor as the all-reduce delivered it
};

struct StepRecord {
    int64_t step = 0;
    int64_t epoch = 0;
    float lr = 0;
    // Wall-clock time (ns since the epoch) when the writer had the step's rows: joins records kept by other
    // tools (a flight recorder's collectives) with the step they happened in. 0: not recorded.
    int64_t endNs = 0;
    std::vector<RankStep> ranks; // index = rank
};

// Weight fingerprints (every weightEvery steps and at step 0, after the initial broadcast).
struct WeightRecord {
    int64_t step = 0;
    std::vector<std::vector<uint64_t>> fp; // [rank][param], bitwise
    std::vector<std::vector<float>> norm;  // [rank][param], L2
    std::vector<uint64_t> bufferFp;        // [rank], all BatchNorm running statistics together
    std::vector<float> bufferDrift;        // [rank], |norm(buffers_r) - norm(buffers_0)| / norm(buffers_0)
    // [rank], norm of the buffers: what the cards measure, on its way to the trainer's writer, which turns it
    // into bufferDrift. Not stored in the run file.
    std::vector<float> bufferNorm;
};

struct EvalRecord {
    int64_t step = 0;
    std::vector<float> accuracy; // [rank], held-out accuracy of each replica, 0..1
    std::vector<float> loss;     // [rank]
};

enum class Severity : uint8_t { Info = 0, Warning = 1, Error = 2 };

// "info", "warning", "error": how files, csv and the report spell a severity.
inline const char* severityName(Severity s) {
    switch (s) {
    case Severity::Info:
        return "info";
    case Severity::Warning:
        return "warning";
    case Severity::Error:
        return "error";
    }
    return "?";
}

struct Event {
    int64_t step = 0;
    int rank = -1; // -1: not tied to one rank
    Severity severity = Severity::Info;
    std::string code;    // e.g. GRADIENT_SYNC, LOSS_FLUCTUATION, OVERFLOW, TIMEOUT (<= 31 chars)
    std::string message; // the line users know (<= 255 chars)
    // TIMEOUT: the rank `rank` waited for, one event per missing rank (-1: none, or a file older than the
    // column: RunMeta::recorded says which), and whether that rank's node process is gone (multi-node).
    // Diagnosis reads these, never the message.
    int peer = -1;
    uint8_t peerGone = 0;
};

// The event codes RankSight writes: programs (diagnosis, the charts, the report, a slice) match on these, the
// message is for people. A code is at most 31 bytes; docs/run-file.md lists what each one means.
namespace eventcode {
inline constexpr const char* kGradientSync = "GRADIENT_SYNC";       // synced gradients differ across ranks
inline constexpr const char* kWeightSync = "WEIGHT_SYNC";           // weight fingerprints differ across ranks
inline constexpr const char* kSkipMismatch = "SKIP_MISMATCH";       // ranks disagree on skipping the update
inline constexpr const char* kNonfiniteLoss = "NONFINITE_LOSS";     // a rank's loss is inf or NaN
inline constexpr const char* kOverflow = "OVERFLOW";                // gradients overflowed: update skipped
inline constexpr const char* kLossFluctuation = "LOSS_FLUCTUATION"; // loss jumped against its recent mean
inline constexpr const char* kTimeout = "TIMEOUT";                  // a collective waited too long for peers
inline constexpr const char* kCardFailed = "CARD_FAILED";           // a card stopped with an error
inline constexpr const char* kFlightRecorder = "FLIGHT_RECORDER";   // full tensors dumped around an anomaly
inline constexpr const char* kRankTable = "RANK_TABLE"; // the rank table failed the pre-flight check
inline constexpr const char* kMonitorAnomaly = "MONITOR_ANOMALY"; // an alert of msprobe's monitor (imported)
} // namespace eventcode

// Full tensors of the last K steps, written when an anomaly appears or on request.
struct FlightEntry {
    int64_t step = 0;
    int rank = 0;
    uint8_t kind =
        0; // 0 local gradient, 1 synced gradient (both scaled by that step's loss scale), 2 weights
    std::vector<float> data; // flat, meta.params layout
};

struct FlightDump {
    int64_t triggerStep = 0;
    std::string reason;
    std::vector<FlightEntry> entries;
};

// One collective a rank issued, as a communication library's flight recorder kept it (PyTorch's
// ProcessGroupNCCL, torch_npu's ProcessGroupHCCL): what an imported dump of a hung job holds
// (core/import/FlightRecorderImport.h). Ranks are compared on these: which collective each one reached.
enum class CollectiveState : uint8_t { Scheduled = 0, Started = 1, Completed = 2 };

struct Collective {
    int rank = 0;
    int64_t recordId = 0;  // the recorder's ring-buffer id, increasing per rank
    int64_t seq = 0;       // collective_seq_id (p2p_seq_id for send and recv): equal across ranks for one op
    std::string group;     // the process group, "name (desc)" (<= 255 bytes)
    std::string op;        // "all_reduce", "send 0->1" (the profiling name without the backend; <= 31)
    std::string sizes;     // "in [[3, 4]] out [[3, 4]]" (<= 255)
    std::string dtypes;    // "Float", "Half" (<= 31)
    uint8_t state = 0;     // CollectiveState
    uint8_t p2p = 0;       // point to point (send/recv): seq counts those alone
    uint8_t retired = 0;   // the watchdog dropped it: completed, or retired after a timeout or abort
    int64_t createdNs = 0; // when the rank enqueued it, ns since the epoch
    float durationMs = 0;  // NaN: timing was off, or it did not complete
    int64_t timeoutMs = -1;
    std::string
        frame; // where the job called it: the innermost frame outside torch, "train.py:88 step" (<= 255)
    int64_t step = -1; // the training step it belongs to, when joined with a recorded run; -1 unknown
};

// One tensor's statistics as msprobe's dump tool recorded them (dump.json, task "statistics"): a module's or
// an API's input or output, forward or backward, per step and rank. Parameters and their gradients go to the
// step and weight tables instead; these are what those have no column for.
struct TensorStat {
    int rank = 0;
    int64_t order = 0; // its position in the rank's dump of the step: execution order
    std::string name;  // "Module.conv1.Conv2d.forward.0.output.0" (<= 255)
    std::string dtype; // "torch.float32" (<= 31)
    std::string shape; // "2x4x6x6", "" for 0-d (<= 255)
    float max = 0, min = 0, mean = 0, norm = 0;
    // Which of max, min, mean, norm the dump has (bits 0..3): msprobe writes null for empty, meta and fp8
    // tensors, and NaN for a tensor holding NaN, so NaN alone cannot say "not recorded".
    uint8_t recorded = 0;
    int64_t step = 0;
};

} // namespace rs
