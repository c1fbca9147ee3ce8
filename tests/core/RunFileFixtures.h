// Shared fixtures for the run-file tests (tst_runfile, tst_runfile_errors): deterministic record and meta
// builders, a writer that runs in a forked child, and small helpers to catch errors and edit closed files.
// Header-only: every function is inline.
#pragma once

#include "store/Hdf5Lock.h"
#include "store/RunReader.h"
#include "store/RunWriter.h"

#include <H5Cpp.h>
#include <QString>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fcntl.h>
#include <functional>
#include <limits>
#include <poll.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace rs::runfile_fixtures {

// --- deterministic "random" records: every value is a function of (step, rank, param, field)
// ----------------

inline uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

inline uint64_t h(int64_t step, int64_t rank, int64_t param, int field) {
    return mix(mix(mix(mix(uint64_t(step)) ^ uint64_t(rank)) ^ uint64_t(param)) ^ uint64_t(field));
}

// Mostly ordinary floats, with the odd inf, NaN and denormal that real fp16 runs produce.
inline float f32(int64_t step, int64_t rank, int64_t param, int field) {
    const uint64_t x = h(step, rank, param, field);
    if (x % 101 == 0)
        return std::numeric_limits<float>::infinity();
    if (x % 103 == 0)
        return std::numeric_limits<float>::quiet_NaN();
    if (x % 107 == 0)
        return std::numeric_limits<float>::denorm_min();
    return float(int64_t(x % 2000001) - 1000000) / 1024.0f;
}

inline double f64(int64_t step, int64_t rank, int64_t param, int field) {
    return double(int64_t(h(step, rank, param, field) % 20000001) - 10000000) / 3.0;
}

inline RunMeta makeMeta(int R, int P, int K, int B, bool cards = true) {
    RunMeta m;
    m.model = "smallcnn";
    m.worldSize = R;
    m.batchPerRank = B;
    m.precision = "O2";
    m.lossScale = "dynamic";
    m.data = "synthetic";
    m.seed = 0xfeedface12345678ull;
    m.sketchDim = K;
    m.weightEvery = 10;
    m.plannedSteps = 1000;
    m.configJson = R"({"model":"smallcnn","ranks":)" + std::to_string(R) + "}";
    m.rankTableJson = R"({"version":"1.0","server_count":"1","server_list":[]})";
    m.environment = R"({"host":"test","cores":2,"note":"üñí©ødé"})";
    m.createdUtc = "2024-05-01T12:00:00Z";
    int64_t offset = 0;
    for (int p = 0; p < P; ++p) {
        ParamInfo info;
        info.name = "layer" + std::to_string(p) + (p % 2 ? ".bias" : ".weight");
        if (p == 1)
            info.shape = {}; // a 0-d tensor
        else if (p % 2)
            info.shape = {int64_t(p + 1)};
        else
            info.shape = {int64_t(p + 2), 3, 3, 3};
        info.numel = 1;
        for (int64_t d : info.shape)
            info.numel *= d;
        info.offset = offset;
        offset += info.numel;
        m.params.push_back(info);
    }
    m.bufferNames = {"bn1.running_mean", "bn1.running_var"};
    if (cards)
        for (int r = 0; r < R; ++r)
            m.cards.push_back(CardInfo{r, r % 8, "192.168.100." + std::to_string(101 + r),
                                       "10.0.0." + std::to_string(1 + r / 8), int64_t(32) << 30,
                                       int64_t(1000000) * (r + 1)});
    return m;
}

inline StepRecord makeStep(const RunMeta& m, int64_t step) {
    const int R = m.worldSize, P = int(m.params.size()), K = m.sketchDim, B = m.batchPerRank;
    StepRecord s;
    s.step = step;
    s.epoch = step / 7;
    s.lr = 0.1f / float(1 + step);
    for (int r = 0; r < R; ++r) {
        RankStep x;
        x.loss = f32(step, r, -1, 1);
        x.accuracy = float(h(step, r, -1, 2) % 1001) / 1000.0f;
        x.lossScale = std::ldexp(1.0f, int(h(step, r, -1, 3) % 25));
        x.overflow = uint8_t(h(step, r, -1, 4) % 2);
        x.skipped = uint8_t(h(step, r, -1, 5) % 2);
        x.state = uint8_t(h(step, r, -1, 6) % 4);
        x.stepMs = f32(step, r, -1, 7);
        x.computeMs = f32(step, r, -1, 8);
        x.commMs = f32(step, r, -1, 9);
        x.sampleFp = h(step, r, -1, 10);
        x.bufferFp = h(step, r, -1, 22);
        for (int b = 0; b < B; ++b)
            x.sampleIds.push_back(int32_t(h(step, r, b, 11) % 50000));
        for (int p = 0; p < P; ++p) {
            x.localNorm.push_back(f32(step, r, p, 12));
            x.localMax.push_back(f32(step, r, p, 13));
            x.localSum.push_back(f64(step, r, p, 14));
            x.nonfinite.push_back(uint32_t(h(step, r, p, 15)));
            x.overflowCount.push_back(uint32_t(h(step, r, p, 16) % 1000));
            x.underflowCount.push_back(uint32_t(h(step, r, p, 17) % 1000));
            for (int k = 0; k < K; ++k)
                x.sketch.push_back(f32(step, r, p * 1000 + k, 18));
            x.localFp.push_back(h(step, r, p, 41));
            x.syncedNorm.push_back(f32(step, 0, p, 19)); // identical across ranks, as in a healthy run
            x.syncedSum.push_back(f64(step, 0, p, 20));
            x.syncedFp.push_back(h(step, 0, p, 21));
        }
        s.ranks.push_back(std::move(x));
    }
    return s;
}

// Makes a makeStep record healthy for diagnosis: gradients alike across ranks, finite, nothing flushed to
// zero in fp16, every rank's synced values equal, no flags, cards ok. What a test then changes is the only
// cause.
inline void makeHealthy(StepRecord& s) {
    for (size_t r = 0; r < s.ranks.size(); ++r) {
        RankStep& x = s.ranks[r];
        x.state = 0;
        x.overflow = x.skipped = 0;
        x.lossScale = 65536.0f;
        x.stepMs = 20.0f;
        x.computeMs = 14.0f;
        x.commMs = 5.0f;
        for (size_t p = 0; p < x.localNorm.size(); ++p) {
            x.localNorm[p] = 1.0f + 0.01f * float(r);
            x.localMax[p] = 0.5f;
            x.localSum[p] = x.syncedSum[p] = 0.25;
            x.nonfinite[p] = x.overflowCount[p] = x.underflowCount[p] = 0;
            x.syncedNorm[p] = 1.0f;
        }
        for (size_t k = 0; k < x.sketch.size(); ++k)
            x.sketch[k] = 1.0f + 0.001f * float(k * (k + r) % 7);
        x.syncedFp = s.ranks[0].syncedFp;
    }
}

// Healthy weights: equal on every rank (the buffers drift alike).
inline void makeHealthy(WeightRecord& w) {
    for (size_t r = 0; r < w.fp.size(); ++r) {
        w.fp[r] = w.fp[0];
        w.norm[r] = w.norm[0];
        w.bufferDrift[r] = 0.0f;
    }
}

inline WeightRecord makeWeights(const RunMeta& m, int64_t step) {
    WeightRecord w;
    w.step = step;
    for (int r = 0; r < m.worldSize; ++r) {
        std::vector<uint64_t> fp;
        std::vector<float> norm;
        for (size_t p = 0; p < m.params.size(); ++p) {
            fp.push_back(h(step, r, int64_t(p), 30));
            norm.push_back(f32(step, r, int64_t(p), 31));
        }
        w.fp.push_back(fp);
        w.norm.push_back(norm);
        w.bufferFp.push_back(h(step, r, -1, 32));
        w.bufferDrift.push_back(f32(step, r, -1, 33));
    }
    return w;
}

inline EvalRecord makeEval(const RunMeta& m, int64_t step) {
    EvalRecord e;
    e.step = step;
    for (int r = 0; r < m.worldSize; ++r) {
        e.accuracy.push_back(float(h(step, r, -1, 40) % 1001) / 1000.0f);
        e.loss.push_back(f32(step, r, -1, 41));
    }
    return e;
}

inline Event makeEvent(int64_t i) {
    static const char* codes[] = {"GRADIENT_SYNC", "LOSS_FLUCTUATION", "OVERFLOW", "TIMEOUT"};
    Event e;
    e.step = i * 3;
    e.rank = int(i % 3) - 1;
    e.severity = Severity(i % 3);
    e.code = codes[i % 4];
    e.message = "[ERROR] GRADIENT_SYNC: Rank 0 and Rank " + std::to_string(i) +
                " parameter gradient mismatch at step " + std::to_string(e.step);
    if (e.code == std::string("TIMEOUT")) {
        e.peer = int(i % 5);
        e.peerGone = uint8_t(i % 2);
    }
    return e;
}

inline FlightDump makeDump(const RunMeta& m, int64_t trigger, int entries) {
    FlightDump d;
    d.triggerStep = trigger;
    d.reason = "loss spike at step " + std::to_string(trigger);
    const int64_t T = runschema::totalElements(m.params);
    for (int i = 0; i < entries; ++i) {
        FlightEntry e;
        e.step = trigger - i / 2;
        e.rank = i % m.worldSize;
        e.kind = uint8_t(i % 3);
        for (int64_t t = 0; t < T; ++t)
            e.data.push_back(f32(trigger, i, t, 50));
        d.entries.push_back(std::move(e));
    }
    return d;
}

// Runs f and returns the RunFileError message ("" if nothing was thrown, "<other>" for other exceptions).
inline QString errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const RunFileError& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return QStringLiteral("<other exception: %1>").arg(e.what());
    }
    return {};
}

// Modifies a closed file with the plain HDF5 API (to build broken files).
inline void mutateFile(const QString& path, const std::function<void(H5::H5File&)>& f) {
    Hdf5Guard guard;
    H5::H5File file(path.toStdString(), H5F_ACC_RDWR);
    f(file);
    file.close();
}

inline void writeRun(const QString& path, const RunMeta& meta, int steps) {
    auto w = RunWriter::create(path.toStdString(), meta, true);
    for (int s = 0; s < steps; ++s)
        w->appendStep(makeStep(meta, s));
    w->appendEvent(makeEvent(0));
    w->close("completed");
}

// Child side of the fork tests: never returns into Qt Test.
[[noreturn]] inline void childWriter(const std::string& path, const RunMeta& meta, int countFd, int commandFd,
                                     int pauseUs) {
    int status = 0;
    ::fcntl(countFd, F_SETFL, ::fcntl(countFd, F_GETFL) | O_NONBLOCK);
    try {
        auto w = RunWriter::create(path, meta, true);
        for (int64_t s = 0;; ++s) {
            w->appendStep(makeStep(meta, s));
            if (s % 10 == 0)
                w->appendWeights(makeWeights(meta, s));
            if (s % 5 == 0)
                w->appendEvent(makeEvent(s));
            // Non-blocking: a parent that stopped reading must not stall the writer (a lost count is
            // harmless).
            const int64_t flushed = w->stepsWritten();
            if (::write(countFd, &flushed, sizeof flushed) != sizeof flushed && errno != EAGAIN)
                break;
            if (commandFd >= 0) {
                pollfd p{commandFd, POLLIN, 0};
                if (::poll(&p, 1, 0) > 0) {
                    w->close("stopped by parent");
                    break;
                }
            }
            if (pauseUs)
                ::usleep(useconds_t(pauseUs));
            if (s > 1000000)
                break;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "child writer: %s\n", e.what());
        status = 2;
    }
    ::_exit(status);
}

// Reads step counts from the child until one is >= want (or the timeout passes); returns the last count.
inline int64_t waitForCount(int fd, int64_t want, int timeoutMs = 60000) {
    int64_t last = -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    while (last < want && std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0)
            continue;
        int64_t v;
        if (::read(fd, &v, sizeof v) != sizeof v)
            break;
        last = v;
    }
    return last;
}

} // namespace rs::runfile_fixtures
