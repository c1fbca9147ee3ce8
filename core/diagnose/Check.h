// What a diagnosis check is: a small class per cause (diagnose/checks/) that folds each record into bounded
// state of its own and, asked at any time, concludes its finding with the evidence. Several checks read the
// same per-step figures (which ranks' synced gradients agree, which pairs of ranks read the same batches):
// those are tallies (diagnose/tally/), each kept once per diagnosis and shared read-only by the checks that
// ask for one. Nothing here grows with the number of steps except a few capped lists, so a live run is
// diagnosed incrementally and a file of any length in bounded memory.
#pragma once

#include "diagnose/Cause.h"
#include "diagnose/Finding.h"
#include "store/RecordKeys.h"
#include "store/RunRecords.h"

#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace rs {

struct RunComparison;

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

// The run as the Diagnoser has seen it so far.
struct RunExtent {
    int64_t steps = 0;      // steps seen
    int64_t paramSteps = 0; // of those, with per-parameter vectors
    int64_t firstStep = kNoStep, lastStep = -1;
    int64_t weightRows = 0;
};

// What every check knows of the run before the first record: the meta and what identifies ranks' tensors.
struct RunFacts {
    explicit RunFacts(const RunMeta& m);
    RunMeta meta;
    int R = 0, P = 0;
    RecordKeys keys; // synced gradients and weights: fingerprints, or the norms as recorded
    std::string paramName(int p) const;
};

// Folds records in step order. addStep sees every step whose ranks match the meta, addParamStep only those
// that carry the per-parameter vectors as well (RunReader::readSteps(..., perParam = true)); `before` is the
// extent before this step.
class Accumulator {
public:
    virtual ~Accumulator() = default;
    virtual void addStep(const StepRecord&, const RunExtent& /*before*/) {}
    virtual void addParamStep(const StepRecord&) {}
    virtual void addWeights(const WeightRecord&) {}
    virtual void addEvent(const Event&) {}
    virtual void addCollective(const Collective&) {}
    // The run compared with a reference run (diagnose --reference), once, after the records.
    virtual void addReference(const RunComparison&) {}
    // The figures it compares with thresholds, one line each (diagnose --verbose); "" for none.
    virtual std::string figures() const { return {}; }
};

// The tallies of one diagnosis, each made on first request and fed before the checks.
class Tallies {
public:
    explicit Tallies(const RunFacts& facts)
        : m_facts(facts) {}
    template <class T> T& get() {
        for (const auto& a : m_all)
            if (auto* t = dynamic_cast<T*>(a.get()))
                return *t;
        m_all.push_back(std::make_unique<T>(m_facts));
        return static_cast<T&>(*m_all.back());
    }
    const std::vector<std::unique_ptr<Accumulator>>& all() const { return m_all; }

private:
    const RunFacts& m_facts;
    std::vector<std::unique_ptr<Accumulator>> m_all;
};

struct CheckContext {
    const RunFacts& facts;
    Tallies& tallies;
};

// A dataset a check reads: `path` (runschema), and what it is in "the source recorded no <what>".
struct Need {
    const char* path;
    const char* what;
};

// The datasets a check reads, under the check's name as users see it ("synced gradient agreement"): it runs
// when every dataset of `all` and at least one of `any` (if given) is recorded. Checks that decide between
// causes from the same data share one Needs.
struct Needs {
    const char* name;
    std::vector<Need> all;
    std::vector<Need> any;
};

class Check : public Accumulator {
public:
    virtual const Needs& needs() const = 0;
    // Appends its finding(s), if the evidence is there.
    virtual void conclude(const RunExtent& run, std::vector<Finding>& out) const = 0;
    // Why the check cannot run on this run although its datasets are recorded ("the model has no BatchNorm
    // running statistics"); "" when it can.
    virtual std::string cannotRun(const RunExtent&) const { return {}; }
    // A cause every rank shares, named only against a reference run: without one it is not listed among the
    // checks that could not run (diagnosis without a reference stays as it was).
    virtual bool needsReference() const { return false; }
};

// A finding of `c`: dimension from the cause table, confidence clamped to [0, 1], kNoStep as -1.
Finding makeFinding(Cause c, double confidence, int64_t firstStep, std::vector<int> ranks,
                    std::string evidence, std::string fix);

// Small shared helpers of the checks.
std::vector<int> allRanks(int R);
std::string joinRanks(const std::vector<int>& ranks);
double median(std::vector<double> v);
int argmax(const std::vector<int64_t>& v);
// Evidence resting on synced norms instead of fingerprints says so: equal to the file's rounding is weaker.
std::string syncedBasis(const RunFacts& f);
// "1 0.5 3" (diagnose --verbose)
template <class V> std::string figureList(const V& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
        s += fmt::format("{}{:.4g}", i ? " " : "", double(v[i]));
    return s;
}

} // namespace rs
