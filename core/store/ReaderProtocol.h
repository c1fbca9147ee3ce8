// The wire between a ProcessRunReader (ReaderProcess.h) and its reader process (ReaderServer.h): one
// request, one response, over a stream socket. A frame is a 16-byte header (tag, payload size) and a payload
// of plain little-endian values: numbers as they are in memory, strings and vectors as a count and their
// bytes. The parent decodes what a reader process sends with every count checked against the bytes that
// are left (a process that libhdf5 corrupted must not make the parent allocate or read out of bounds).
#pragma once

#include "store/RunRecords.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rs::readerwire {

// Request tags; a response's tag is a Status.
enum class Op : uint32_t {
    Open = 1,        // path -> RunMeta, State
    Refresh,         // -> bool changed, State
    ReadSteps,       // begin, end, perParam -> steps
    ReadWeights,     // begin, end -> weight rows
    ReadEvals,       // begin, end -> eval rows
    ReadEvents,      // begin, end -> events
    ReadStepNumbers, // begin, end -> int64s
    ReadWeightSteps, // begin, end -> int64s
    ReadFlightDumps, // -> dumps
    ReadStepScalar,  // name, begin, end -> floats
};

enum class Status : uint32_t {
    Ok = 0,
    RunFileError = 1, // the payload is the message (it names the file)
    Error = 2,        // any other exception: the payload is its message
};

struct FrameHeader {
    uint32_t tag = 0;
    uint32_t magic = kMagic;
    uint64_t size = 0;
    static constexpr uint32_t kMagic = 0x52535244; // "DRSR"
};
static_assert(sizeof(FrameHeader) == 16);

// What changes while a file grows: sent after Open and Refresh, cached by the parent, so counts, status
// and complete() cost no round trip.
struct State {
    int formatVersion = 0;
    bool complete = false;
    std::string stopReason;
    int64_t totalElements = 0;
    int64_t steps = 0, weights = 0, evals = 0, events = 0, dumps = 0;
};

// A malformed payload (from a reader process that went wrong).
class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Writer {
public:
    template <class T> void pod(T v) {
        static_assert(std::is_arithmetic_v<T>);
        m_buf.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    void str(std::string_view s) {
        pod<uint64_t>(s.size());
        m_buf.append(s);
    }
    template <class T> void vec(const std::vector<T>& v) {
        static_assert(std::is_arithmetic_v<T>);
        pod<uint64_t>(v.size());
        m_buf.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
    std::string& bytes() { return m_buf; }

private:
    std::string m_buf;
};

class Reader {
public:
    explicit Reader(std::string_view bytes)
        : m_p(bytes.data())
        , m_end(bytes.data() + bytes.size()) {}
    template <class T> T pod() {
        static_assert(std::is_arithmetic_v<T>);
        need(sizeof(T));
        T v;
        std::memcpy(&v, m_p, sizeof v);
        m_p += sizeof v;
        return v;
    }
    std::string str() {
        const uint64_t n = count(1);
        std::string s(m_p, size_t(n));
        m_p += n;
        return s;
    }
    template <class T> std::vector<T> vec() {
        static_assert(std::is_arithmetic_v<T>);
        const uint64_t n = count(sizeof(T));
        std::vector<T> v(static_cast<size_t>(n));
        if (n)
            std::memcpy(v.data(), m_p, size_t(n) * sizeof(T));
        m_p += n * sizeof(T);
        return v;
    }
    // A count of elements of `elemBytes` each that the rest of the payload can hold.
    uint64_t count(size_t elemBytes) {
        const uint64_t n = pod<uint64_t>();
        if (elemBytes && n > uint64_t(m_end - m_p) / elemBytes)
            throw ProtocolError("a count larger than the rest of the message");
        return n;
    }
    bool atEnd() const { return m_p == m_end; }

private:
    void need(size_t n) const {
        if (size_t(m_end - m_p) < n)
            throw ProtocolError("the message ends early");
    }
    const char* m_p;
    const char* m_end;
};

void put(Writer& w, const RunMeta& m);
void put(Writer& w, const State& s);
void put(Writer& w, const std::vector<StepRecord>& steps);
void put(Writer& w, const std::vector<WeightRecord>& rows);
void put(Writer& w, const std::vector<EvalRecord>& rows);
void put(Writer& w, const std::vector<Event>& events);
void put(Writer& w, const std::vector<FlightDump>& dumps);

RunMeta getMeta(Reader& r);
State getState(Reader& r);
std::vector<StepRecord> getSteps(Reader& r);
std::vector<WeightRecord> getWeights(Reader& r);
std::vector<EvalRecord> getEvals(Reader& r);
std::vector<Event> getEvents(Reader& r);
std::vector<FlightDump> getFlightDumps(Reader& r);

} // namespace rs::readerwire
