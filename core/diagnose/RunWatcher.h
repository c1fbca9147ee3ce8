// Following a run file that another process is writing (the engine, node 0 of a multi-node run, the DDP
// recorder) and telling, at each look, whether it has reached a finding a user asked to be alerted on, has
// completed, or has stopped writing steps: the core of `ranksight-cli watch`. Each look reads only the rows
// the writer added since the last one (diagnoseMore), so following a long run costs what it writes.
// Time is passed in (seconds on any steady clock), so the stall rule is tested without sleeping.
#pragma once

#include "diagnose/Diagnoser.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace rs {

class RunReader;

// A finding is alerted once the file holds this many steps past its first step and it still holds (or the
// run has ended): a sign seen on one step can be the start of another cause (a parameter left out of the
// all-reduce looks, on its first step, like a copy corrupted after it), and two more steps tell them apart.
inline constexpr int64_t kSettleSteps = 2;
bool settled(const Finding& f, int64_t lastStep, bool runEnded);

// Which findings raise the alert: "any", a dimension (numerics, parallel, environment, data-model, or data
// for short), or cause ids separated by commas ("param-not-synced,sdc-after"). A dimension and causes can be
// mixed in one list.
class AlertFilter {
public:
    // Throws std::invalid_argument naming the word that is neither a cause nor a dimension.
    static AlertFilter parse(std::string_view spec);
    bool matches(const Finding& f) const;
    const std::string& spec() const { return m_spec; }

private:
    std::string m_spec;
    bool m_any = false;
    std::set<std::string, std::less<>> m_dimensions, m_causes;
};

class RunWatcher {
public:
    enum class Status {
        NoFile,    // the file is not there yet (or not yet readable while its writer creates it)
        Following, // readable, being written, no matching finding yet
        Alert,     // a matching finding: alert()
        Completed, // the writer closed the file, and no finding matched
        Stalled,   // no new step for the stall time
    };

    // stallSeconds <= 0: never stalled (a killed writer then leaves the watcher following forever).
    RunWatcher(std::string path, AlertFilter filter, double stallSeconds, double now);
    ~RunWatcher();
    RunWatcher(const RunWatcher&) = delete;
    RunWatcher& operator=(const RunWatcher&) = delete;

    // One look at the file: opens it once it exists, reads what was added, diagnoses it. Once the status is
    // Alert, Completed or Stalled it stays. Throws RunFileError when the file cannot be read: at once for a
    // file last changed more than a few seconds ago, after those seconds for one its writer may still be
    // creating.
    Status poll(double now);
    Status status() const { return m_status; }

    const Finding& alert() const { return m_alert; } // the first matching finding (status Alert)
    int64_t stepsRead() const { return m_at.steps; } // step rows diagnosed so far
    int64_t lastStep() const { return m_lastStep; }  // the step number of the last row read; -1 none
    double quietSeconds(double now) const { return now - m_lastProgress; }
    bool fileOpened() const { return m_reader != nullptr; }
    const std::string& stopReason() const { return m_stopReason; } // the writer's, once Completed
    const std::string& path() const { return m_path; }

private:
    bool open(double now);
    void readNew(double now);

    std::string m_path;
    AlertFilter m_filter;
    double m_stallSeconds;
    Status m_status = Status::NoFile;
    std::unique_ptr<RunReader> m_reader;
    std::unique_ptr<Diagnoser> m_diagnoser;
    DiagnosisCursor m_at;
    Finding m_alert;
    int64_t m_lastStep = -1;
    double m_lastProgress;
    double m_firstOpenFailure = -1;
    std::string m_stopReason;
};

// "param-not-synced at step 12, ranks 1, 3, parameter fc.weight (parallel, confidence 0.93): EVIDENCE":
// what an alert prints, on one line.
std::string alertLine(const Finding& f);

} // namespace rs
