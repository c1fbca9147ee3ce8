// WatchProcesses: see WatchProcesses.h.
#include "WatchProcesses.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <system_error>

extern char** environ; // NOLINT(readability-redundant-declaration): POSIX declares it nowhere in C++

namespace rs::bench {

WatchProcesses::WatchProcesses(const std::string& cli, const std::string& live,
                               const std::vector<std::string>& causes, const std::string& dir) {
    for (const std::string& cause : causes) {
        WatchProcess w{cause, fmt::format("{}/watch-{}.json", dir, cause)};
        posix_spawn_file_actions_t io;
        posix_spawn_file_actions_init(&io);
        posix_spawn_file_actions_addopen(&io, STDOUT_FILENO, w.outFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                         0644);
        posix_spawn_file_actions_addopen(&io, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        std::string prog = cli, command = "watch", file = live, failOn = "--fail-on", what = cause,
                    json = "--json";
        char* argv[] = {prog.data(), command.data(), file.data(), failOn.data(),
                        what.data(), json.data(),    nullptr};
        const int err = posix_spawn(&w.pid, cli.c_str(), &io, nullptr, argv, environ);
        posix_spawn_file_actions_destroy(&io);
        if (err != 0)
            throw std::runtime_error(fmt::format("cannot start {} watch: {}", cli,
                                                 std::error_code(err, std::generic_category()).message()));
        m_children.push_back(std::move(w));
    }
}

WatchProcesses::~WatchProcesses() {
    killRunning();
}

void WatchProcesses::killRunning() noexcept {
    for (WatchProcess& w : m_children)
        if (w.pid >= 0) {
            kill(w.pid, SIGTERM);
            while (waitpid(w.pid, nullptr, 0) < 0 && errno == EINTR) {
            }
            w.pid = -1;
        }
}

bool WatchProcesses::poll(double now) {
    bool running = false;
    for (WatchProcess& w : m_children) {
        if (w.pid < 0)
            continue;
        int status = 0;
        const pid_t got = waitpid(w.pid, &status, WNOHANG);
        if (got == 0) {
            running = true;
            continue;
        }
        w.exitCode = got == w.pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        w.exitedS = now;
        w.pid = -1;
    }
    return running;
}

void WatchProcesses::finish() {
    killRunning();
    for (WatchProcess& w : m_children) {
        std::ifstream in(w.outFile);
        std::string line;
        if (w.exitCode == 3 && std::getline(in, line)) {
            const auto j = nlohmann::json::parse(line, nullptr, false);
            if (j.is_object() && j.contains("last_step") && j["last_step"].is_number_integer())
                w.lastStep = j["last_step"].get<int64_t>();
        }
    }
}

} // namespace rs::bench
