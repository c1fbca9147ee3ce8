// ProcessRunReader: see ReaderProcess.h. The child is started with posix_spawn (safe in a threaded
// process: no fork of the parent's locks), gets the socket as fd 3 and the trace page as fd 4, and inherits
// the environment and the working directory (relative paths mean the same in both).
#include "reader/ReaderProcess.h"

#include "reader/ReaderTrace.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <new>
#include <poll.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

extern char** environ;

namespace rs {

namespace fs = std::filesystem;
namespace wire = readerwire;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kSocketFd = 3, kTraceFd = 4;
constexpr size_t kPageBytes = 4096;
// No answer is larger than this (a readAll of a large run is a few GiB); a bigger header is a reader
// process gone wrong.
constexpr uint64_t kMaxPayload = uint64_t(64) << 30;

int envInt(const char* name, int fallback, int lo, int hi) {
    // Nothing sets the environment once the program runs (BlasSetup is the first thing it does).
    // NOLINTNEXTLINE(concurrency-mt-unsafe)
    const char* v = std::getenv(name);
    if (!v || !*v)
        return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return end && *end == '\0' && n >= lo && n <= hi ? int(n) : fallback;
}

bool executable(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// A file descriptor >= 10, close-on-exec, so the child's dup2 to 3 and 4 cannot clobber one another.
int highFd(int fd) {
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    ::close(fd);
    return high;
}

std::string signalText(int sig) {
    const char* abbrev = sigabbrev_np(sig);
    const char* desc = sigdescr_np(sig);
    return fmt::format("SIG{}, {}", abbrev ? abbrev : std::to_string(sig).c_str(), desc ? desc : "signal");
}

} // namespace

std::string ProcessRunReader::findExecutable(std::string* looked) {
    std::vector<fs::path> candidates;
    // NOLINTNEXTLINE(concurrency-mt-unsafe): nothing sets the environment once the program runs
    if (const char* env = std::getenv("RANKSIGHT_READER"); env && *env)
        candidates.emplace_back(env);
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.push_back(self.parent_path() / "ranksight-reader");
        candidates.push_back(
            (self.parent_path() / "../libexec/ranksight/ranksight-reader").lexically_normal());
    }
#ifdef RANKSIGHT_READER_BUILD_PATH
    candidates.emplace_back(RANKSIGHT_READER_BUILD_PATH);
#endif
    std::string tried;
    for (const fs::path& p : candidates) {
        if (executable(p))
            return p.string();
        tried += (tried.empty() ? "" : ", ") + p.string();
    }
    if (looked)
        *looked = tried;
    return {};
}

template <class F> auto ProcessRunReader::request(wire::Op op, const std::string& args, F&& decode) const {
    std::lock_guard lock(m_mutex);
    const std::string payload = call(op, args);
    try {
        wire::Reader in(payload);
        auto result = decode(in);
        if (!in.atEnd())
            throw wire::ProtocolError("trailing bytes");
        return result;
    } catch (const wire::ProtocolError& e) {
        died(fmt::format("the reader process sent a malformed answer ({}) after reading {}", e.what(),
                         where()));
    }
}

std::unique_ptr<ProcessRunReader> ProcessRunReader::open(const std::string& path) {
    std::unique_ptr<ProcessRunReader> r(new ProcessRunReader(path));
    r->spawn();
    wire::Writer args;
    args.str(path);
    r->request(wire::Op::Open, args.bytes(), [&](wire::Reader& in) {
        r->m_meta = wire::getMeta(in);
        r->m_state = wire::getState(in);
        return 0;
    });
    return r;
}

void ProcessRunReader::spawn() {
    std::string looked;
    const std::string exe = findExecutable(&looked);
    if (exe.empty())
        throw ReaderDiedError(fmt::format("{}: cannot read run files: RankSight's reader program "
                                          "(ranksight-reader) is missing; looked at {}. Reinstall RankSight "
                                          "or set RANKSIGHT_READER to its path",
                                          m_path, looked));
    m_timeoutMs = envInt("RANKSIGHT_READER_TIMEOUT_MS", 30000, 100, 24 * 3600 * 1000);
    const int memoryMb = envInt("RANKSIGHT_READER_MEMORY_MB", 4096, 0, 1 << 24);

    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        throw ReaderDiedError(fmt::format("{}: cannot start the reader process: socketpair: {}", m_path,
                                          std::generic_category().message(errno)));
    const int child = highFd(sv[1]);
    m_sock = sv[0];
    const int trace = highFd(::memfd_create("ranksight-reader-trace", MFD_CLOEXEC));
    void* page = MAP_FAILED;
    if (trace >= 0 && ::ftruncate(trace, kPageBytes) == 0)
        page = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, trace, 0);
    if (child < 0 || page == MAP_FAILED) {
        const std::string err = std::generic_category().message(errno);
        if (child >= 0)
            ::close(child);
        if (trace >= 0)
            ::close(trace);
        throw ReaderDiedError(fmt::format("{}: cannot start the reader process: {}", m_path, err));
    }
    m_page = new (page) readertrace::Page;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, child, kSocketFd);
    posix_spawn_file_actions_adddup2(&fa, trace, kTraceFd);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    // libhdf5's and the sanitizers' own output would interleave with ours: only when asked for.
    // NOLINTNEXTLINE(concurrency-mt-unsafe): nothing sets the environment once the program runs
    if (!std::getenv("RANKSIGHT_READER_STDERR"))
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    const std::string socketArg = std::to_string(kSocketFd), traceArg = std::to_string(kTraceFd),
                      memoryArg = std::to_string(memoryMb);
    const char* argv[] = {exe.c_str(),      "--socket-fd", socketArg.c_str(), "--trace-fd",
                          traceArg.c_str(), "--memory-mb", memoryArg.c_str(), nullptr};
    const int err = posix_spawn(&m_pid, exe.c_str(), &fa, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(child);
    ::close(trace);
    if (err != 0) {
        m_pid = -1;
        throw ReaderDiedError(fmt::format("{}: cannot start the reader process {}: {}", m_path, exe,
                                          std::generic_category().message(err)));
    }
}

ProcessRunReader::~ProcessRunReader() {
    stop();
}

void ProcessRunReader::stop() const {
    if (m_sock >= 0) {
        ::shutdown(m_sock, SHUT_RDWR);
        ::close(m_sock);
        m_sock = -1;
    }
    if (m_pid > 0) {
        // The child ends when its socket closes; give it a moment, then make sure.
        int status = 0;
        pid_t done = 0;
        for (int i = 0; i < 200 && (done = ::waitpid(m_pid, &status, WNOHANG)) == 0; ++i)
            ::usleep(5000);
        if (done == 0) {
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, &status, 0);
        }
        m_pid = -1;
    }
    if (m_page) {
        ::munmap(m_page, kPageBytes);
        m_page = nullptr;
    }
}

std::string ProcessRunReader::where() const {
    const std::string_view w = m_page ? readertrace::text(*m_page) : std::string_view{};
    return w.empty() ? std::string("the file") : std::string(w);
}

void ProcessRunReader::died(const std::string& why) const {
    m_dead = fmt::format("{}: {}", m_path, why);
    if (m_pid > 0)
        ::kill(m_pid, SIGKILL); // whatever state it is in, it is done
    stop();
    throw ReaderDiedError(m_dead);
}

void ProcessRunReader::sendRequest(wire::Op op, const std::string& args) const {
    wire::FrameHeader h;
    h.tag = uint32_t(op);
    h.size = args.size();
    std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
    frame += args;
    const char* p = frame.data();
    size_t n = frame.size();
    while (n) {
        const ssize_t w = ::send(m_sock, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; // the process is gone: receive() says how
        p += w;
        n -= size_t(w);
    }
}

// Reads one response. While waiting, the trace page's counter tells a working reader (it moves from object to
// object) from a hung one; a closed socket means the process ended, and its wait status says how.
std::string ProcessRunReader::receive(wire::Status& status) const {
    uint64_t lastSeq = m_page->seq.load(std::memory_order_acquire);
    Clock::time_point lastProgress = Clock::now();
    auto fill = [&](char* buf, size_t n) {
        size_t got = 0;
        while (got < n) {
            pollfd pfd{m_sock, POLLIN, 0};
            const int r = ::poll(&pfd, 1, 200);
            if (r < 0 && errno != EINTR)
                died(fmt::format("lost the reader process while reading {}: poll: {}", where(),
                                 std::generic_category().message(errno)));
            if (r <= 0) {
                const uint64_t seq = m_page->seq.load(std::memory_order_acquire);
                if (seq != lastSeq) {
                    lastSeq = seq;
                    lastProgress = Clock::now();
                } else if (Clock::now() - lastProgress > std::chrono::milliseconds(m_timeoutMs)) {
                    died(fmt::format("the file is damaged or its disk stalled: the HDF5 library made no "
                                     "progress for {} s while reading {}; the reader process was stopped "
                                     "(RANKSIGHT_READER_TIMEOUT_MS sets the limit)",
                                     m_timeoutMs / 1000.0, where()));
                }
                continue;
            }
            const ssize_t k = ::recv(m_sock, buf + got, n - got, 0);
            if (k > 0) {
                got += size_t(k);
                lastProgress = Clock::now();
                continue;
            }
            if (k < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            // End of stream: the reader process ended. How?
            int st = 0;
            pid_t done = 0;
            for (int i = 0; i < 400 && (done = ::waitpid(m_pid, &st, WNOHANG)) == 0; ++i)
                ::usleep(5000);
            const std::string at = where();
            if (done == m_pid && WIFSIGNALED(st)) {
                const int sig = WTERMSIG(st);
                if (sig == SIGKILL)
                    died(fmt::format("the reader process was killed while reading {} (out of memory?)", at));
                died(fmt::format("the file is damaged: reading {} crashed the HDF5 library ({}, in the "
                                 "reader process that RankSight runs for files from outside)",
                                 at, signalText(sig)));
            }
            if (done == m_pid && WIFEXITED(st))
                died(fmt::format("the file is damaged: reading {} ended the reader process with exit code {} "
                                 "(a memory error in the HDF5 library, caught by a sanitizer, ends it so)",
                                 at, WEXITSTATUS(st)));
            died(fmt::format("the reader process closed its connection while reading {}", at));
        }
    };
    wire::FrameHeader h;
    fill(reinterpret_cast<char*>(&h), sizeof h);
    if (h.magic != wire::FrameHeader::kMagic || h.size > kMaxPayload || h.tag > uint32_t(wire::Status::Error))
        died(fmt::format("the reader process sent a malformed answer while reading {}", where()));
    status = wire::Status(h.tag);
    std::string payload;
    // Grown as the bytes arrive, so a lying size costs nothing up front.
    constexpr size_t kStep = size_t(64) << 20;
    while (payload.size() < h.size) {
        const size_t at = payload.size();
        const size_t n = size_t(std::min<uint64_t>(h.size - at, kStep));
        payload.resize(at + n);
        fill(payload.data() + at, n);
    }
    return payload;
}

std::string ProcessRunReader::call(wire::Op op, const std::string& args) const {
    if (!m_dead.empty())
        throw ReaderDiedError(m_dead);
    sendRequest(op, args);
    wire::Status status = wire::Status::Ok;
    std::string payload = receive(status);
    if (status == wire::Status::RunFileError)
        throw RunFileError(payload);
    if (status == wire::Status::Error)
        throw RunFileError(fmt::format("{}: {}", m_path, payload));
    return payload;
}

namespace {
std::string range(int64_t begin, int64_t end) {
    wire::Writer w;
    w.pod<int64_t>(begin);
    w.pod<int64_t>(end);
    return std::move(w.bytes());
}
} // namespace

int ProcessRunReader::formatVersion() const {
    std::lock_guard lock(m_mutex);
    return m_state.formatVersion;
}
bool ProcessRunReader::complete() const {
    std::lock_guard lock(m_mutex);
    return m_state.complete;
}
std::string ProcessRunReader::stopReason() const {
    std::lock_guard lock(m_mutex);
    return m_state.stopReason;
}
int64_t ProcessRunReader::totalElements() const {
    std::lock_guard lock(m_mutex);
    return m_state.totalElements;
}
int64_t ProcessRunReader::stepCount() const {
    std::lock_guard lock(m_mutex);
    return m_state.steps;
}
int64_t ProcessRunReader::weightCount() const {
    std::lock_guard lock(m_mutex);
    return m_state.weights;
}
int64_t ProcessRunReader::evalCount() const {
    std::lock_guard lock(m_mutex);
    return m_state.evals;
}
int64_t ProcessRunReader::eventCount() const {
    std::lock_guard lock(m_mutex);
    return m_state.events;
}
int64_t ProcessRunReader::flightDumpCount() const {
    std::lock_guard lock(m_mutex);
    return m_state.dumps;
}
int64_t ProcessRunReader::collectiveCount() const {
    std::lock_guard lock(m_mutex);
    return m_state.collectives;
}
int64_t ProcessRunReader::tensorStatCount() const {
    std::lock_guard lock(m_mutex);
    return m_state.tensorStats;
}

bool ProcessRunReader::refresh() {
    wire::State state;
    const bool changed = request(wire::Op::Refresh, {}, [&](wire::Reader& in) {
        const bool c = in.pod<uint8_t>() != 0;
        state = wire::getState(in);
        return c;
    });
    std::lock_guard lock(m_mutex);
    m_state = std::move(state);
    return changed;
}

std::vector<StepRecord> ProcessRunReader::readSteps(int64_t begin, int64_t end, bool perParam) const {
    std::string args = range(begin, end);
    args.push_back(char(perParam));
    return request(wire::Op::ReadSteps, args, [](wire::Reader& in) { return wire::get<StepRecord>(in); });
}

std::vector<WeightRecord> ProcessRunReader::readWeights(int64_t begin, int64_t end) const {
    return request(wire::Op::ReadWeights, range(begin, end),
                   [](wire::Reader& in) { return wire::get<WeightRecord>(in); });
}

std::vector<EvalRecord> ProcessRunReader::readEvals(int64_t begin, int64_t end) const {
    return request(wire::Op::ReadEvals, range(begin, end),
                   [](wire::Reader& in) { return wire::get<EvalRecord>(in); });
}

std::vector<Event> ProcessRunReader::readEvents(int64_t begin, int64_t end) const {
    return request(wire::Op::ReadEvents, range(begin, end),
                   [](wire::Reader& in) { return wire::get<Event>(in); });
}

std::vector<Collective> ProcessRunReader::readCollectives(int64_t begin, int64_t end) const {
    return request(wire::Op::ReadCollectives, range(begin, end),
                   [](wire::Reader& in) { return wire::get<Collective>(in); });
}

std::vector<TensorStat> ProcessRunReader::readTensorStats(int64_t begin, int64_t end) const {
    return request(wire::Op::ReadTensorStats, range(begin, end),
                   [](wire::Reader& in) { return wire::get<TensorStat>(in); });
}

std::vector<int64_t> ProcessRunReader::readStepNumbers(int64_t begin, int64_t end) const {
    return request(wire::Op::ReadStepNumbers, range(begin, end),
                   [](wire::Reader& in) { return in.vec<int64_t>(); });
}

std::vector<int64_t> ProcessRunReader::readWeightSteps(int64_t begin, int64_t end) const {
    return request(wire::Op::ReadWeightSteps, range(begin, end),
                   [](wire::Reader& in) { return in.vec<int64_t>(); });
}

std::vector<FlightDump> ProcessRunReader::readFlightDumps() const {
    return request(wire::Op::ReadFlightDumps, {}, [](wire::Reader& in) { return wire::get<FlightDump>(in); });
}

std::vector<float> ProcessRunReader::readStepScalar(runschema::StepCol column, int64_t begin,
                                                    int64_t end) const {
    wire::Writer w;
    w.pod<int32_t>(column);
    w.pod<int64_t>(begin);
    w.pod<int64_t>(end);
    return request(wire::Op::ReadStepScalar, w.bytes(), [](wire::Reader& in) { return in.vec<float>(); });
}

} // namespace rs
