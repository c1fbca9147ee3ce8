// `watch`: follows a run file another process is writing and raises an alert a shell, a scheduler or a
// training job can act on. Exit 3 on the first finding --fail-on matches (one line, or --json), 4 when no
// step came for --stall seconds, 0 when the run completed without one, 2 when the file cannot be read.
// --exec runs a command once at the alert, the finding in its environment. --stdin-sync answers a parent
// process (the DDP recorder's on_finding): each line on stdin makes watch read the file at once and answer
// "checked N" (or the alert), so the parent knows the verdict over every step it wrote; EOF ends watch.
#include "CliArgs.h"
#include "Commands.h"
#include "diagnose/RunWatcher.h"
#include "import/FlightRecorderDumps.h"
#include "store/RunSchema.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

extern char** environ; // NOLINT(readability-redundant-declaration): POSIX declares it nowhere in C++

namespace rs::cli {
namespace {

struct WatchOptions {
    std::string path;
    AlertFilter filter = AlertFilter::parse("any");
    double stallSeconds = 0;
    std::string dumpsDir; // --flight-dumps: named on a stall
    std::string exec;
    bool json = false;
    bool stdinSync = false;
    int pollMs = 250;
};

double secondsNow() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

WatchOptions parseOptions(const Args& argv) {
    const CliArgs args(argv, {"fail-on", "stall", "flight-dumps", "exec", "poll-ms"}, {"json", "stdin-sync"});
    if (args.positionals().size() != 1)
        throw UsageError(fmt::format("expected one run file, got {}", args.positionals().size()));
    WatchOptions o;
    o.path = args.positionals().front();
    try {
        o.filter = AlertFilter::parse(args.value("fail-on").value_or("any"));
    } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("--fail-on: {}", e.what()));
    }
    if (const auto stall = args.value("stall")) {
        size_t used = 0;
        try {
            o.stallSeconds = std::stod(*stall, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != stall->size() || !(o.stallSeconds > 0))
            throw UsageError(fmt::format("--stall: expected seconds > 0, got '{}'", *stall));
    }
    o.dumpsDir = args.value("flight-dumps").value_or("");
    if (!o.dumpsDir.empty() && o.stallSeconds <= 0)
        throw UsageError(
            "--flight-dumps needs --stall: the dumps are named when the job stops writing steps");
    o.exec = args.value("exec").value_or("");
    args.number("poll-ms", o.pollMs, 10, 60000);
    o.json = args.flag("json");
    o.stdinSync = args.flag("stdin-sync");
    return o;
}

void printLine(const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout); // a parent reading a pipe sees each line when it is written
}

std::string json(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string commaList(const auto& items) {
    std::string out;
    for (const auto& item : items)
        out += fmt::format("{}{}", out.empty() ? "" : ",", item);
    return out;
}

// Runs `command` with /bin/sh once, the alert in its environment, and waits for it. Its failure is reported,
// never fatal: the alert itself was already printed.
void runExec(const std::string& command, const std::vector<std::string>& vars) {
    std::vector<char*> env;
    for (char** e = environ; *e; ++e)
        env.push_back(*e);
    std::vector<std::string> own = vars;
    for (std::string& v : own)
        env.push_back(v.data());
    env.push_back(nullptr);
    std::string sh = "/bin/sh", dashC = "-c", cmd = command;
    char* argv[] = {sh.data(), dashC.data(), cmd.data(), nullptr};
    pid_t pid = 0;
    if (const int err = posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv, env.data()); err != 0) {
        printError(fmt::format("watch: --exec could not start /bin/sh: {}",
                               std::error_code(err, std::generic_category()).message()));
        return;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        printError(fmt::format("watch: --exec '{}' {}", command,
                               WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                                 : std::string("was killed by a signal")));
}

int reportAlert(const WatchOptions& o, const RunWatcher& w) {
    const Finding& f = w.alert();
    const std::string line = fmt::format("{}: {}", o.path, alertLine(f));
    if (o.json)
        printLine(json({{"alert", "finding"},
                        {"run", o.path},
                        {"cause", f.key()},
                        {"dimension", f.dimension()},
                        {"confidence", std::round(f.confidence * 100) / 100},
                        {"first_step", f.firstStep},
                        {"ranks", f.ranks},
                        {"parameters", f.parameters},
                        {"evidence", f.evidence},
                        {"fix", f.fix},
                        {"steps_read", w.stepsRead()},
                        {"last_step", w.lastStep()}}));
    else
        printLine(line);
    if (!o.exec.empty())
        runExec(o.exec, {"RANKSIGHT_CAUSE=" + f.key(),
                         "RANKSIGHT_STEP=" + (f.firstStep >= 0 ? std::to_string(f.firstStep) : ""),
                         "RANKSIGHT_RANKS=" + commaList(f.ranks),
                         "RANKSIGHT_PARAMETER=" + (f.parameters.empty() ? "" : f.parameters.front()),
                         "RANKSIGHT_RUN=" + o.path, "RANKSIGHT_MESSAGE=" + line});
    return 3;
}

// The flight-recorder dumps a hung job left in `dir`, in words, and as JSON (null when there are none).
std::pair<std::string, nlohmann::json> flightDumps(const WatchOptions& o) {
    try {
        const flightrec::DumpSet set = flightrec::findDumps(o.dumpsDir);
        nlohmann::json files = nlohmann::json::array();
        for (const auto& f : set.files)
            files.push_back(f.string());
        return {fmt::format("flight-recorder dumps of ranks {} in {}; read them with: ranksight-cli "
                            "import-flight-recorder {} --run {} --out hang.h5",
                            commaList(set.ranks), o.dumpsDir, o.dumpsDir, o.path),
                {{"dir", o.dumpsDir}, {"prefix", set.prefix}, {"ranks", set.ranks}, {"files", files}}};
    } catch (const std::exception& e) {
        return {fmt::format("no flight-recorder dumps to name: {}", e.what()), nullptr};
    }
}

int reportStall(const WatchOptions& o, const RunWatcher& w) {
    const std::string since = w.lastStep() >= 0 ? fmt::format("since step {}", w.lastStep())
                              : !w.fileOpened() ? "since watching began (no readable file yet)"
                                                : "since watching began (no step yet)";
    const std::string line =
        fmt::format("{}: no step for {:g} s {}: the job hung or died", o.path, o.stallSeconds, since);
    auto [dumpsLine, dumpsJson] =
        o.dumpsDir.empty() ? std::pair<std::string, nlohmann::json>{} : flightDumps(o);
    if (o.json) {
        printLine(json({{"alert", "stall"},
                        {"run", o.path},
                        {"seconds", o.stallSeconds},
                        {"last_step", w.lastStep()},
                        {"steps_read", w.stepsRead()},
                        {"flight_dumps", dumpsJson}}));
    } else {
        printLine(line);
        if (!dumpsLine.empty())
            printLine(dumpsLine);
    }
    if (!o.exec.empty())
        runExec(o.exec, {"RANKSIGHT_CAUSE=stall",
                         "RANKSIGHT_STEP=" + (w.lastStep() >= 0 ? std::to_string(w.lastStep()) : ""),
                         "RANKSIGHT_RANKS=", "RANKSIGHT_PARAMETER=", "RANKSIGHT_RUN=" + o.path,
                         "RANKSIGHT_MESSAGE=" + line});
    return 4;
}

int reportCompleted(const WatchOptions& o, const RunWatcher& w) {
    if (o.json)
        printLine(json({{"alert", nullptr},
                        {"run", o.path},
                        {"completed", true},
                        {"stop_reason", w.stopReason()},
                        {"steps_read", w.stepsRead()}}));
    else
        printLine(fmt::format("{}: the run {} after {} steps with no finding matching '{}'", o.path,
                              w.stopReason() == "completed" ? "completed" : "ended (" + w.stopReason() + ")",
                              w.stepsRead(), o.filter.spec()));
    return 0;
}

// Waits up to the poll interval. With --stdin-sync, returns early when the parent asks; false when the
// parent closed stdin.
bool waitForTurn(const WatchOptions& o, int& requests) {
    if (!o.stdinSync) {
        std::this_thread::sleep_for(std::chrono::milliseconds(o.pollMs));
        return true;
    }
    pollfd in{STDIN_FILENO, POLLIN, 0};
    if (::poll(&in, 1, o.pollMs) <= 0)
        return true;
    char buf[256];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
        return false;
    for (ssize_t i = 0; i < n; ++i)
        requests += buf[i] == '\n';
    return true;
}

} // namespace

int watchCommand(const Args& argv) {
    const WatchOptions o = parseOptions(argv);
    RunWatcher w(o.path, o.filter, o.stallSeconds, secondsNow());
    bool announced = false;
    int requests = 0;
    for (;;) {
        RunWatcher::Status s{};
        try {
            s = w.poll(secondsNow());
        } catch (const RunFileError& e) {
            printError(fmt::format("watch: {}", e.what()));
            return 2;
        }
        if (s == RunWatcher::Status::Alert)
            return reportAlert(o, w);
        if (s == RunWatcher::Status::Stalled)
            return reportStall(o, w);
        if (s == RunWatcher::Status::Completed)
            return reportCompleted(o, w);
        if (!announced && s == RunWatcher::Status::Following && !o.stdinSync) {
            std::fputs(fmt::format("watch: following {} (alert on: {})\n", o.path, o.filter.spec()).c_str(),
                       stderr);
            announced = true;
        }
        for (; requests > 0; --requests)
            printLine(fmt::format("checked {}", w.stepsRead()));
        if (!waitForTurn(o, requests))
            return 0;
    }
}

} // namespace rs::cli
