// The wire between a ProcessRunReader (ReaderProcess.h) and its reader process (ReaderServer.h): one
// request, one response, over a stream socket. A frame is a 16-byte header (tag, payload size) and a payload
// in RecordWire.h's encoding: records as their tables define them, and here the meta and the file's state.
// The parent decodes what a reader process sends with every count checked against the bytes that are left
// (a process that libhdf5 corrupted must not make the parent allocate or read out of bounds).
#pragma once

#include "store/RecordWire.h"
#include "store/RunRecords.h"

#include <cstdint>
#include <string>
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
    ReadCollectives, // begin, end -> collectives
    ReadTensorStats, // begin, end -> tensor statistics
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
    int64_t steps = 0, weights = 0, evals = 0, events = 0, dumps = 0, collectives = 0, tensorStats = 0;
};

// Payloads are written and read with the record encoding's Writer and Reader; records go as RecordWire.h
// puts them.
using recordwire::get;
using recordwire::ProtocolError;
using recordwire::put;
using recordwire::Reader;
using recordwire::Writer;

void put(Writer& w, const RunMeta& m);
void put(Writer& w, const State& s);

RunMeta getMeta(Reader& r);
State getState(Reader& r);

} // namespace rs::readerwire
