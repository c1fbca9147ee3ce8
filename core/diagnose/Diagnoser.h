// Diagnosis of a run: checks over the recorded data only (never the config's fault list), so a replayed file
// diagnoses exactly like the live run. One check per cause (diagnose/checks/, made from the cause table in
// diagnose/Cause.h), each keeping bounded state (counters and per-rank / per-parameter summaries, never the
// records themselves), so a GUI worker thread can feed a Diagnoser a growing live file chunk by chunk and ask
// for findings at any time; diagnoseRun() does that for a whole file. A healthy run (including dynamic loss
// scaling's early overflows and skips that every rank shares, different local gradients from different
// batches, and BatchNorm drift all ranks share) gives no findings.
#pragma once

#include "diagnose/Finding.h"
#include "store/RunRecords.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rs {

class RunReader;
struct RunComparison;

class Diagnoser {
public:
    explicit Diagnoser(const RunMeta& meta); // meta is copied
    ~Diagnoser();
    Diagnoser(const Diagnoser&) = delete;
    Diagnoser& operator=(const Diagnoser&) = delete;

    // Records in step order (each call continues where the last one ended). Steps should carry the
    // per-parameter vectors (RunReader::readSteps(..., perParam = true)); scalar-only steps feed only the
    // scalar checks.
    void addSteps(const std::vector<StepRecord>& steps);
    void addWeights(const std::vector<WeightRecord>& weights);
    void addEvents(const std::vector<Event>& events);
    void addCollectives(const std::vector<Collective>& collectives); // imported flight-recorder dumps
    // The run compared with a reference run (compare/RunComparison.h): the checks of causes every rank shares
    // read it (diagnose --reference). Once, after the records.
    void addReference(const RunComparison& comparison);

    int64_t stepsSeen() const;
    // The findings so far, highest confidence first. Cheap: a pass over the summaries.
    std::vector<Finding> findings() const;
    // The figures the checks compare with their thresholds, one per line (diagnose --verbose), so a user can
    // see how far a healthy run is from each rule.
    std::string figures() const;
    // The checks that cannot run on this file (diagnose/CheckNeeds.h): what the source did not record, or
    // what the run does not have. Empty for a run the engine recorded in full.
    std::vector<CheckNotRun> checksNotRun() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_d;
};

// How far a Diagnoser has read a run file, table by table.
struct DiagnosisCursor {
    int64_t steps = 0, weights = 0, events = 0, collectives = 0;
};

// Feeds `d` the rows `reader` has beyond `at` (chunk by chunk, advancing `at` after each, so a cancel thrown
// from progress leaves a consistent cursor) and the file's status: a live run is diagnosed by reading only
// what it added since the last call. progress gets 0..100 over the new steps.
void diagnoseMore(const RunReader& reader, Diagnoser& d, DiagnosisCursor& at,
                  const std::function<void(int percent)>& progress = {});

// Reads the whole file in chunks (a few hundred steps at a time) and diagnoses it. progress gets 0..100.
// Throws RunFileError like the reader.
// figures, when given, receives Diagnoser::figures(); notRun, Diagnoser::checksNotRun().
// reference, when given, is the run compared with a reference run (Diagnoser::addReference).
std::vector<Finding> diagnoseRun(const RunReader& reader,
                                 const std::function<void(int percent)>& progress = {},
                                 std::string* figures = nullptr, std::vector<CheckNotRun>* notRun = nullptr,
                                 const RunComparison* reference = nullptr);

// One line per finding for text output and the bug report: "cause (dimension, confidence 0.93): evidence".
std::string findingLine(const Finding& f);
// A block: the line, then first step, ranks, parameters and the fix, indented.
std::string findingText(const Finding& f);

} // namespace rs
