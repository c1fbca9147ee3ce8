// ReaderProtocol: the meta and the file's state on the wire (see ReaderProtocol.h; records: RecordWire.h).
// Each put has its get in the same order; nested counts are checked against a lower bound of an element's
// encoded size.
#include "reader/ReaderProtocol.h"

namespace rs::readerwire {

void put(Writer& w, const RunMeta& m) {
    w.str(m.model);
    w.pod<int32_t>(m.worldSize);
    w.pod<int32_t>(m.batchPerRank);
    w.str(m.precision);
    w.str(m.lossScale);
    w.str(m.data);
    w.pod<uint64_t>(m.seed);
    w.pod<int32_t>(m.sketchDim);
    w.pod<int32_t>(m.weightEvery);
    w.pod<int64_t>(m.plannedSteps);
    w.str(m.configJson);
    w.str(m.rankTableJson);
    w.str(m.environment);
    w.str(m.createdUtc);
    w.str(m.source);
    w.pod<uint64_t>(m.absent.size());
    for (const std::string& a : m.absent)
        w.str(a);
    w.pod<uint64_t>(m.params.size());
    for (const ParamInfo& p : m.params) {
        w.str(p.name);
        w.vec(p.shape);
        w.pod<int64_t>(p.numel);
        w.pod<int64_t>(p.offset);
    }
    w.pod<uint64_t>(m.bufferNames.size());
    for (const std::string& b : m.bufferNames)
        w.str(b);
    w.pod<uint64_t>(m.cards.size());
    for (const CardInfo& c : m.cards) {
        w.pod<int32_t>(c.rank);
        w.pod<int32_t>(c.deviceId);
        w.str(c.deviceIp);
        w.str(c.serverId);
        w.pod<int64_t>(c.hbmTotalBytes);
        w.pod<int64_t>(c.hbmUsedBytes);
    }
}

RunMeta getMeta(Reader& r) {
    RunMeta m;
    m.model = r.str();
    m.worldSize = r.pod<int32_t>();
    m.batchPerRank = r.pod<int32_t>();
    m.precision = r.str();
    m.lossScale = r.str();
    m.data = r.str();
    m.seed = r.pod<uint64_t>();
    m.sketchDim = r.pod<int32_t>();
    m.weightEvery = r.pod<int32_t>();
    m.plannedSteps = r.pod<int64_t>();
    m.configJson = r.str();
    m.rankTableJson = r.str();
    m.environment = r.str();
    m.createdUtc = r.str();
    m.source = r.str();
    m.absent.resize(size_t(r.count(8)));
    for (std::string& a : m.absent)
        a = r.str();
    m.params.resize(size_t(r.count(32)));
    for (ParamInfo& p : m.params) {
        p.name = r.str();
        p.shape = r.vec<int64_t>();
        p.numel = r.pod<int64_t>();
        p.offset = r.pod<int64_t>();
    }
    m.bufferNames.resize(size_t(r.count(8)));
    for (std::string& b : m.bufferNames)
        b = r.str();
    m.cards.resize(size_t(r.count(40)));
    for (CardInfo& c : m.cards) {
        c.rank = r.pod<int32_t>();
        c.deviceId = r.pod<int32_t>();
        c.deviceIp = r.str();
        c.serverId = r.str();
        c.hbmTotalBytes = r.pod<int64_t>();
        c.hbmUsedBytes = r.pod<int64_t>();
    }
    return m;
}

void put(Writer& w, const State& s) {
    w.pod<int32_t>(s.formatVersion);
    w.pod<uint8_t>(s.complete);
    w.str(s.stopReason);
    w.pod<int64_t>(s.totalElements);
    for (int64_t n : {s.steps, s.weights, s.evals, s.events, s.dumps, s.collectives, s.tensorStats})
        w.pod<int64_t>(n);
}

State getState(Reader& r) {
    State s;
    s.formatVersion = r.pod<int32_t>();
    s.complete = r.pod<uint8_t>() != 0;
    s.stopReason = r.str();
    s.totalElements = r.pod<int64_t>();
    for (int64_t* n : {&s.steps, &s.weights, &s.evals, &s.events, &s.dumps, &s.collectives, &s.tensorStats}) {
        *n = r.pod<int64_t>();
        if (*n < 0)
            throw ProtocolError("a negative row count");
    }
    return s;
}

} // namespace rs::readerwire
