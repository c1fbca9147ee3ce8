// Bitwise comparison of run-file records with a readable first difference, for the run-file tests. They
// spell the fields out on purpose: they check the schema table, they do not use it.
#pragma once

#include "RunFileFixtures.h"

#include <QString>
#include <QtTest>
#include <cstring>
#include <vector>

namespace rs::runfile_fixtures {

// --- bitwise comparison with a readable first difference
// ----------------------------------------------------

template <class T> inline bool sameBits(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T> inline bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

inline QString diffSteps(const StepRecord& a, const StepRecord& b) {
    const QString at = QStringLiteral("step %1: ").arg(a.step);
    if (a.step != b.step || a.epoch != b.epoch || !sameBits(a.lr, b.lr))
        return at + "step/epoch/lr differ";
    if (a.ranks.size() != b.ranks.size())
        return at + "rank count differs";
    for (size_t r = 0; r < a.ranks.size(); ++r) {
        const RankStep &x = a.ranks[r], &y = b.ranks[r];
        const QString where = at + QStringLiteral("rank %1 ").arg(r);
#define RS_CHECK(field)                                                                                      \
    if (!sameBits(x.field, y.field))                                                                         \
        return where + #field " differs";
        RS_CHECK(loss)
        RS_CHECK(accuracy)
        RS_CHECK(lossScale)
        RS_CHECK(overflow)
        RS_CHECK(skipped)
        RS_CHECK(state)
        RS_CHECK(stepMs)
        RS_CHECK(computeMs)
        RS_CHECK(commMs)
        RS_CHECK(sampleFp)
        RS_CHECK(bufferFp)
        RS_CHECK(sampleIds)
        RS_CHECK(localNorm)
        RS_CHECK(localMax)
        RS_CHECK(localSum)
        RS_CHECK(nonfinite)
        RS_CHECK(overflowCount)
        RS_CHECK(underflowCount)
        RS_CHECK(sketch)
        RS_CHECK(localFp)
        RS_CHECK(syncedNorm)
        RS_CHECK(syncedSum)
        RS_CHECK(syncedFp)
#undef RS_CHECK
    }
    return {};
}

inline QString diffMeta(const RunMeta& a, const RunMeta& b) {
    if (a.model != b.model || a.worldSize != b.worldSize || a.batchPerRank != b.batchPerRank ||
        a.precision != b.precision || a.lossScale != b.lossScale || a.data != b.data || a.seed != b.seed ||
        a.sketchDim != b.sketchDim || a.weightEvery != b.weightEvery || a.plannedSteps != b.plannedSteps)
        return "meta scalars differ";
    if (a.configJson != b.configJson || a.rankTableJson != b.rankTableJson ||
        a.environment != b.environment || a.createdUtc != b.createdUtc)
        return "meta strings differ";
    if (a.params.size() != b.params.size())
        return "param count differs";
    for (size_t i = 0; i < a.params.size(); ++i)
        if (a.params[i].name != b.params[i].name || a.params[i].shape != b.params[i].shape ||
            a.params[i].numel != b.params[i].numel || a.params[i].offset != b.params[i].offset)
            return QStringLiteral("param %1 differs").arg(i);
    if (a.bufferNames != b.bufferNames)
        return "buffer names differ";
    if (a.cards.size() != b.cards.size())
        return "card count differs";
    for (size_t i = 0; i < a.cards.size(); ++i) {
        const CardInfo &x = a.cards[i], &y = b.cards[i];
        if (x.rank != y.rank || x.deviceId != y.deviceId || x.deviceIp != y.deviceIp ||
            x.serverId != y.serverId || x.hbmTotalBytes != y.hbmTotalBytes ||
            x.hbmUsedBytes != y.hbmUsedBytes)
            return QStringLiteral("card %1 differs").arg(i);
    }
    return {};
}

} // namespace rs::runfile_fixtures

#define RS_COMPARE_EMPTY(diff)                                                                               \
    do {                                                                                                     \
        const QString d_ = (diff);                                                                           \
        QVERIFY2(d_.isEmpty(), qPrintable(d_));                                                              \
    } while (0)
