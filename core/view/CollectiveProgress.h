// Which collective each rank reached, and the first one where ranks disagree: read from the collectives of
// imported flight-recorder dumps (RunRecords.h: Collective). The Collectives panel draws it, diagnosis names
// `collective-mismatch` from it, and `import-flight-recorder` prints it.
//
// Matching follows PyTorch's own analyser (torch/distributed/flight_recorder, fr_trace): per process group,
// the collectives are lined up by collective_seq_id after aligning ring buffers that wrapped differently
// (start at the largest first sequence number any rank kept), and compared rank by rank: a rank without
// that sequence number never arrived (it is behind, or hangs before it); a different operation, size or
// dtype is a mismatch. Point-to-point operations (send/recv) are listed but not matched.
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rs::view {

// A process group as the dump's pg_config names it.
struct ProcessGroup {
    std::string name; // "0", the key of pg_config
    std::string desc; // "default_pg"
    std::vector<int> ranks;
    std::string labelText;     // as the importer labelled it ("" in older files: made from name and desc)
    std::string label() const; // "0 (default_pg)": Collective::group
};

// The run's process groups and which ranks left a dump, from the run's config (the importer writes them
// there); empty when the run holds no flight-recorder import.
struct CollectiveSetup {
    std::vector<ProcessGroup> groups;
    std::vector<int> dumped; // ranks with a dump file
    int worldSize = 0;
    // Each rank's Python stacks when it dumped (torch_npu's _py_traceback files), as written; by rank.
    std::map<int, std::string> tracebacks;
};
CollectiveSetup collectiveSetup(const RunMeta& meta);

// Where a collective sits in the joined run, for people: "step 7", "before the run" (enqueued before the
// run's first recorded step), "" when not joined or its time was not recorded.
std::string stepText(int64_t step);

// The innermost frame of a Python traceback file's main thread (else its first thread), as
// "/job/train.py:33 in step"; "" when the text holds no frame.
std::string innermostPythonFrame(const std::string& traceback);

// One rank's position in one group.
struct RankPosition {
    int rank = 0;
    bool dumped = false;
    int64_t lastSeq = -1;      // the last collective it enqueued (-1: none)
    int64_t completedSeq = -1; // the last one it completed
    std::string lastOp;
    uint8_t lastState = 0; // CollectiveState of lastSeq
    int64_t lastCreatedNs = 0;
    int64_t lastStep = -1;
    std::string lastFrame; // where the rank called it
};

struct GroupProgress {
    ProcessGroup group;
    std::vector<RankPosition> ranks; // members, in rank order
    int64_t collectives = 0;         // entries of the group, all ranks
};

enum class Disagreement : uint8_t {
    NeverArrived, // some ranks wait in a collective that others never enqueued; they stopped just before it
    // The others completed collectives these ranks have no record of: their dumps end earlier (written
    // before the others', or their recorder stopped), so where they are now is not in the dumps.
    Behind,
    OpMismatch, // ranks enqueued different operations under one sequence number
    SizeMismatch,
    DtypeMismatch,
    NoDump, // ranks wait, and the ranks that could explain it left no dump: where they stopped is unknown
};
const char* disagreementName(Disagreement d); // "never arrived", "size mismatch", ...

struct FirstDisagreement {
    Disagreement kind = Disagreement::NeverArrived;
    std::string group;           // ProcessGroup::label()
    int64_t seq = 0;             // the collective's sequence number
    std::vector<int> odd;        // the ranks that differ (or never arrived, or left no dump)
    std::vector<int> others;     // the ranks that agree (and wait)
    std::string expected, found; // what the others enqueued, what the odd ranks did ("" if nothing)
    int64_t oddLastSeq = -1;     // NeverArrived / Behind: the first odd rank's last sequence number
    int64_t othersLastSeq = -1;  // Behind: how far the others got
    int64_t step = -1;           // the step it happened in, when joined with a run (stepText)
    int64_t createdNs = 0;       // when the others enqueued it
    std::string frame;           // where the others called it
    std::string text() const;    // one line for people
};

struct CollectiveReport {
    std::vector<GroupProgress> groups;
    std::optional<FirstDisagreement> first; // the earliest, by the time the agreeing ranks enqueued it
    // Every dumped rank reached the group's last collective and none completed it: the collective itself is
    // stuck (network, device, library), not a rank elsewhere. "" otherwise.
    std::string allWaiting;
};

CollectiveReport analyseCollectives(const std::vector<Collective>& collectives, const CollectiveSetup& setup);

// "all_reduce in [[3, 4]] out [[3, 4]] Float"
std::string describeCollective(const Collective& c);
// CollectiveState as the dumps spell it: "scheduled", "started", "completed".
const char* collectiveStateName(uint8_t state);

} // namespace rs::view
