// `ranksight-cli watch` children for bench-latency: one per cause to wait for, each started before the live
// file exists and told to alert on that cause alone, so the time each takes to exit 3 is that cause's
// latency as a job's alert would see it (not the window's). Their JSON lines go to files in a folder.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace rs::bench {

struct WatchProcess {
    std::string cause;
    std::string outFile;
    pid_t pid = -1;
    int exitCode = -1;     // -1: still running, or killed
    double exitedS = -1;   // when it was seen to exit, on the caller's clock
    int64_t lastStep = -1; // the last step it had read at its alert (its JSON's last_step)
};

class WatchProcesses {
public:
    // Starts `cli watch live --fail-on CAUSE --json` per cause, stdout into dir/watch-CAUSE.json. Throws
    // std::runtime_error when one cannot be started.
    WatchProcesses(const std::string& cli, const std::string& live, const std::vector<std::string>& causes,
                   const std::string& dir);
    ~WatchProcesses(); // kills and reaps those still running
    WatchProcesses(const WatchProcesses&) = delete;
    WatchProcesses& operator=(const WatchProcesses&) = delete;

    // Reaps the children that exited since, stamping them with `now`. True while one still runs.
    bool poll(double now);
    // Kills those still running, reaps them, and reads every alert's JSON.
    void finish();
    const std::vector<WatchProcess>& processes() const { return m_children; }

private:
    void killRunning() noexcept;
    std::vector<WatchProcess> m_children;
};

} // namespace rs::bench
