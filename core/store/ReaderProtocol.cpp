// ReaderProtocol: the records of RunRecords.h on the wire (see ReaderProtocol.h). Each put has its get in
// the same order; nested counts are checked against a lower bound of an element's encoded size.
#include "store/ReaderProtocol.h"

#include <algorithm>

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
    for (int64_t n : {s.steps, s.weights, s.evals, s.events, s.dumps})
        w.pod<int64_t>(n);
}

State getState(Reader& r) {
    State s;
    s.formatVersion = r.pod<int32_t>();
    s.complete = r.pod<uint8_t>() != 0;
    s.stopReason = r.str();
    s.totalElements = r.pod<int64_t>();
    for (int64_t* n : {&s.steps, &s.weights, &s.evals, &s.events, &s.dumps}) {
        *n = r.pod<int64_t>();
        if (*n < 0)
            throw ProtocolError("a negative row count");
    }
    return s;
}

void put(Writer& w, const std::vector<StepRecord>& steps) {
    w.pod<uint64_t>(steps.size());
    for (const StepRecord& s : steps) {
        w.pod<int64_t>(s.step);
        w.pod<int64_t>(s.epoch);
        w.pod<float>(s.lr);
        w.pod<uint64_t>(s.ranks.size());
        for (const RankStep& k : s.ranks) {
            w.pod<float>(k.loss);
            w.pod<float>(k.accuracy);
            w.pod<float>(k.lossScale);
            w.pod<uint8_t>(k.overflow);
            w.pod<uint8_t>(k.skipped);
            w.pod<uint8_t>(k.state);
            w.pod<float>(k.stepMs);
            w.pod<float>(k.computeMs);
            w.pod<float>(k.commMs);
            w.pod<uint64_t>(k.sampleFp);
            w.pod<uint64_t>(k.bufferFp);
            w.vec(k.sampleIds);
            w.vec(k.localNorm);
            w.vec(k.localMax);
            w.vec(k.localSum);
            w.vec(k.nonfinite);
            w.vec(k.overflowCount);
            w.vec(k.underflowCount);
            w.vec(k.sketch);
            w.vec(k.syncedNorm);
            w.vec(k.syncedSum);
            w.vec(k.syncedFp);
        }
    }
}

std::vector<StepRecord> getSteps(Reader& r) {
    std::vector<StepRecord> steps(size_t(r.count(28)));
    for (StepRecord& s : steps) {
        s.step = r.pod<int64_t>();
        s.epoch = r.pod<int64_t>();
        s.lr = r.pod<float>();
        s.ranks.resize(size_t(r.count(123)));
        for (RankStep& k : s.ranks) {
            k.loss = r.pod<float>();
            k.accuracy = r.pod<float>();
            k.lossScale = r.pod<float>();
            k.overflow = r.pod<uint8_t>();
            k.skipped = r.pod<uint8_t>();
            k.state = r.pod<uint8_t>();
            k.stepMs = r.pod<float>();
            k.computeMs = r.pod<float>();
            k.commMs = r.pod<float>();
            k.sampleFp = r.pod<uint64_t>();
            k.bufferFp = r.pod<uint64_t>();
            k.sampleIds = r.vec<int32_t>();
            k.localNorm = r.vec<float>();
            k.localMax = r.vec<float>();
            k.localSum = r.vec<double>();
            k.nonfinite = r.vec<uint32_t>();
            k.overflowCount = r.vec<uint32_t>();
            k.underflowCount = r.vec<uint32_t>();
            k.sketch = r.vec<float>();
            k.syncedNorm = r.vec<float>();
            k.syncedSum = r.vec<double>();
            k.syncedFp = r.vec<uint64_t>();
        }
    }
    return steps;
}

void put(Writer& w, const std::vector<WeightRecord>& rows) {
    w.pod<uint64_t>(rows.size());
    for (const WeightRecord& row : rows) {
        w.pod<int64_t>(row.step);
        w.pod<uint64_t>(row.fp.size());
        for (const auto& v : row.fp)
            w.vec(v);
        w.pod<uint64_t>(row.norm.size());
        for (const auto& v : row.norm)
            w.vec(v);
        w.vec(row.bufferFp);
        w.vec(row.bufferDrift);
        w.vec(row.bufferNorm);
    }
}

std::vector<WeightRecord> getWeights(Reader& r) {
    std::vector<WeightRecord> rows(size_t(r.count(40)));
    for (WeightRecord& row : rows) {
        row.step = r.pod<int64_t>();
        row.fp.resize(size_t(r.count(8)));
        for (auto& v : row.fp)
            v = r.vec<uint64_t>();
        row.norm.resize(size_t(r.count(8)));
        for (auto& v : row.norm)
            v = r.vec<float>();
        row.bufferFp = r.vec<uint64_t>();
        row.bufferDrift = r.vec<float>();
        row.bufferNorm = r.vec<float>();
    }
    return rows;
}

void put(Writer& w, const std::vector<EvalRecord>& rows) {
    w.pod<uint64_t>(rows.size());
    for (const EvalRecord& row : rows) {
        w.pod<int64_t>(row.step);
        w.vec(row.accuracy);
        w.vec(row.loss);
    }
}

std::vector<EvalRecord> getEvals(Reader& r) {
    std::vector<EvalRecord> rows(size_t(r.count(24)));
    for (EvalRecord& row : rows) {
        row.step = r.pod<int64_t>();
        row.accuracy = r.vec<float>();
        row.loss = r.vec<float>();
    }
    return rows;
}

void put(Writer& w, const std::vector<Event>& events) {
    w.pod<uint64_t>(events.size());
    for (const Event& e : events) {
        w.pod<int64_t>(e.step);
        w.pod<int32_t>(e.rank);
        w.pod<uint8_t>(uint8_t(e.severity));
        w.str(e.code);
        w.str(e.message);
    }
}

std::vector<Event> getEvents(Reader& r) {
    std::vector<Event> events(size_t(r.count(29)));
    for (Event& e : events) {
        e.step = r.pod<int64_t>();
        e.rank = r.pod<int32_t>();
        e.severity = Severity(std::min<uint8_t>(r.pod<uint8_t>(), uint8_t(Severity::Error)));
        e.code = r.str();
        e.message = r.str();
    }
    return events;
}

void put(Writer& w, const std::vector<FlightDump>& dumps) {
    w.pod<uint64_t>(dumps.size());
    for (const FlightDump& d : dumps) {
        w.pod<int64_t>(d.triggerStep);
        w.str(d.reason);
        w.pod<uint64_t>(d.entries.size());
        for (const FlightEntry& e : d.entries) {
            w.pod<int64_t>(e.step);
            w.pod<int32_t>(e.rank);
            w.pod<uint8_t>(e.kind);
            w.vec(e.data);
        }
    }
}

std::vector<FlightDump> getFlightDumps(Reader& r) {
    std::vector<FlightDump> dumps(size_t(r.count(24)));
    for (FlightDump& d : dumps) {
        d.triggerStep = r.pod<int64_t>();
        d.reason = r.str();
        d.entries.resize(size_t(r.count(21)));
        for (FlightEntry& e : d.entries) {
            e.step = r.pod<int64_t>();
            e.rank = r.pod<int32_t>();
            e.kind = r.pod<uint8_t>();
            e.data = r.vec<float>();
        }
    }
    return dumps;
}

} // namespace rs::readerwire
