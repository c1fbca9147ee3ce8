// ReaderServer: see ReaderServer.h. One request at a time: read a frame, call the in-process reader, send
// the answer (or the exception's message).
#include "reader/ReaderServer.h"

#include "reader/ReaderProtocol.h"
#include "store/Hdf5RunReader.h"

#include <cerrno>
#include <new>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rs {

namespace {

namespace wire = readerwire;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// false at a clean end of stream before the first byte.
bool readExact(int fd, void* buf, size_t n) {
    auto* p = static_cast<char*>(buf);
    size_t got = 0;
    while (got < n) {
        const ssize_t r = ::read(fd, p + got, n - got);
        if (r > 0) {
            got += size_t(r);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 && got == 0)
            return false;
        throw std::runtime_error("the connection to the parent broke");
    }
    return true;
}

void writeAll(int fd, const void* buf, size_t n) {
    const auto* p = static_cast<const char*>(buf);
    while (n) {
        const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            throw std::runtime_error("the connection to the parent broke");
        p += w;
        n -= size_t(w);
    }
}

void reply(int fd, wire::Status status, const std::string& payload) {
    wire::FrameHeader h;
    h.tag = uint32_t(status);
    h.size = payload.size();
    writeAll(fd, &h, sizeof h);
    writeAll(fd, payload.data(), payload.size());
}

wire::State stateOf(const RunReader& r) {
    wire::State s;
    s.formatVersion = r.formatVersion();
    s.complete = r.complete();
    s.stopReason = r.stopReason();
    s.totalElements = r.totalElements();
    s.steps = r.stepCount();
    s.weights = r.weightCount();
    s.evals = r.evalCount();
    s.events = r.eventCount();
    s.dumps = r.flightDumpCount();
    s.collectives = r.collectiveCount();
    s.tensorStats = r.tensorStatCount();
    return s;
}

// One request; returns the response payload.
std::string handle(std::unique_ptr<Hdf5RunReader>& reader, wire::Op op, wire::Reader& in) {
    wire::Writer out;
    if (op == wire::Op::Open) {
        reader = Hdf5RunReader::open(in.str());
        wire::put(out, reader->meta());
        wire::put(out, stateOf(*reader));
        return std::move(out.bytes());
    }
    if (!reader)
        throw std::runtime_error("no run file is open in the reader process");
    const Hdf5RunReader& r = *reader;
    switch (op) {
    case wire::Op::Refresh: {
        const bool changed = reader->refresh();
        out.pod<uint8_t>(changed);
        wire::put(out, stateOf(r));
        break;
    }
    case wire::Op::ReadSteps: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        const bool perParam = in.pod<uint8_t>() != 0;
        wire::put(out, r.readSteps(b, e, perParam));
        break;
    }
    case wire::Op::ReadWeights: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        wire::put(out, r.readWeights(b, e));
        break;
    }
    case wire::Op::ReadEvals: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        wire::put(out, r.readEvals(b, e));
        break;
    }
    case wire::Op::ReadEvents: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        wire::put(out, r.readEvents(b, e));
        break;
    }
    case wire::Op::ReadStepNumbers: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        out.vec(r.readStepNumbers(b, e));
        break;
    }
    case wire::Op::ReadWeightSteps: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        out.vec(r.readWeightSteps(b, e));
        break;
    }
    case wire::Op::ReadCollectives: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        wire::put(out, r.readCollectives(b, e));
        break;
    }
    case wire::Op::ReadTensorStats: {
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        wire::put(out, r.readTensorStats(b, e));
        break;
    }
    case wire::Op::ReadFlightDumps:
        wire::put(out, r.readFlightDumps());
        break;
    case wire::Op::ReadStepScalar: {
        // Checked by the reader (isRankScalar) before it indexes anything with it.
        const auto column = runschema::StepCol(in.pod<int32_t>());
        const auto b = in.pod<int64_t>(), e = in.pod<int64_t>();
        out.vec(r.readStepScalar(column, b, e));
        break;
    }
    default:
        throw std::runtime_error("unknown request " + std::to_string(uint32_t(op)));
    }
    return std::move(out.bytes());
}

} // namespace

void limitReaderProcess(uint64_t memoryBytes) {
    const rlimit noCore{0, 0};
    setrlimit(RLIMIT_CORE, &noCore);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); // also no core through a core_pattern pipe (systemd-coredump)
    if (memoryBytes && !kSanitized) {
        const rlimit as{rlim_t(memoryBytes), rlim_t(memoryBytes)};
        setrlimit(RLIMIT_AS, &as);
    }
}

int serveReader(int fd) {
    std::unique_ptr<Hdf5RunReader> reader;
    try {
        for (;;) {
            wire::FrameHeader h;
            if (!readExact(fd, &h, sizeof h))
                return 0;
            if (h.magic != wire::FrameHeader::kMagic || h.size > (uint64_t(1) << 20))
                throw std::runtime_error("a malformed request");
            std::string payload(size_t(h.size), '\0');
            if (h.size && !readExact(fd, payload.data(), payload.size()))
                return 1;
            try {
                wire::Reader in(payload);
                const std::string out = handle(reader, wire::Op(h.tag), in);
                reply(fd, wire::Status::Ok, out);
            } catch (const RunFileError& e) {
                reply(fd, wire::Status::RunFileError, e.what());
            } catch (const std::bad_alloc&) {
                struct rlimit as {};
                getrlimit(RLIMIT_AS, &as);
                reply(fd, wire::Status::Error,
                      as.rlim_cur == RLIM_INFINITY ? std::string("out of memory in the reader process")
                                                   : "out of memory: the reader process is limited to " +
                                                         std::to_string(uint64_t(as.rlim_cur) >> 20) +
                                                         " MiB (RANKSIGHT_READER_MEMORY_MB raises it)");
            } catch (const std::exception& e) {
                reply(fd, wire::Status::Error, e.what());
            }
        }
    } catch (const std::exception&) {
        return 1;
    }
}

} // namespace rs
