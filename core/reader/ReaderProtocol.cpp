// ReaderProtocol: the meta and the file's state on the wire (see ReaderProtocol.h; records: RecordWire.h).
// Each put has its get in the same order; nested counts are checked against a lower bound of an element's
// encoded size.
#include "reader/ReaderProtocol.h"

#include "store/RootAttributes.h"

namespace rs::readerwire {

void put(Writer& w, const RunMeta& m) {
    // The members the root attributes hold, in their table's order (store/RootAttributes.h): an attribute
    // added there crosses the wire with no line here.
    runschema::forEachAttribute([&](const auto& a) {
        if constexpr (runschema::kMetaMember<decltype(a.field)>)
            recordwire::detail::putValue(w, m.*a.field);
    });
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
    w.pod<uint64_t>(m.unreadable.size());
    for (const std::string& u : m.unreadable)
        w.str(u);
    w.str(m.unreadableWhy);
}

RunMeta getMeta(Reader& r) {
    RunMeta m;
    runschema::forEachAttribute([&](const auto& a) {
        if constexpr (runschema::kMetaMember<decltype(a.field)>)
            recordwire::detail::getValue(r, m.*a.field);
    });
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
    m.unreadable.resize(size_t(r.count(8)));
    for (std::string& u : m.unreadable)
        u = r.str();
    m.unreadableWhy = r.str();
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
