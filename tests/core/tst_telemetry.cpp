// Gradient statistics, fingerprints, sketches and the event log rules.
#include "cluster/Communicator.h"
#include "core/RankThreads.h"
#include "telemetry/EventDetector.h"
#include "telemetry/Fingerprint.h"
#include "telemetry/GradStats.h"
#include "telemetry/KernelIsa.h"
#include "train/LocalStatistics.h"
#include "util/HalfConvert.h"

#include <QtTest>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace rs;

class TestTelemetry : public QObject {
    Q_OBJECT
private slots:
    void statsMatchNaiveLoop();
    void normAndSumAgreesWithTheFullPass();
    void halfPayloadInTheSamePass();
    void syncedPassInPiecesIsTheWholePass();
    void fp16Accounting();
    void fingerprintSeesOneBit();
    void pieceFingerprintIsTheSameInAnyCut();
    void pieceFingerprintSeesEveryBit();
    void everyKernelIsaGivesTheSameBits();
    void localPiecesGiveTheWholePass();
    void reducedLocalStatsAreTheOwnPass();
    void sketchCosineTracksTrueCosine_data();
    void sketchCosineTracksTrueCosine();
    void gradientMismatchEvent();
    void lossFluctuationEvent();
    void cleanStepsGiveNoWarnings();
};

static std::vector<float> randomVector(size_t n, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d;
    std::vector<float> v(n);
    for (auto& x : v)
        x = d(gen);
    return v;
}

void TestTelemetry::statsMatchNaiveLoop() {
    const auto g = randomVector(10007, 1);
    const float scale = 128.f;
    std::vector<float> scaled(g.size());
    for (size_t i = 0; i < g.size(); ++i)
        scaled[i] = g[i] * scale;
    std::vector<float> sketch(8);
    const auto s =
        gradStats(scaled.data(), static_cast<int64_t>(scaled.size()), 1.f / scale, 7, 8, sketch.data());
    double sumSq = 0, sum = 0;
    float mx = 0;
    for (float v : g) {
        sumSq += double(v) * v;
        sum += v;
        mx = std::max(mx, std::fabs(v));
    }
    QVERIFY(std::fabs(s.sumSq - sumSq) / sumSq < 1e-6);
    QVERIFY(std::fabs(s.sum - sum) < 1e-3);
    QCOMPARE(s.maxAbs, mx);
    QCOMPARE(s.nonfinite, 0u);
}

// The synced gradient's lighter pass gives the same bits as the full one for what it computes, non-finite
// elements and a ragged tail included.
void TestTelemetry::normAndSumAgreesWithTheFullPass() {
    auto g = randomVector(10007, 3);
    g[17] = std::numeric_limits<float>::infinity();
    g[5000] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t n : {int64_t(1), int64_t(63), int64_t(64), int64_t(10007)}) {
        const auto full = gradStats(g.data(), n, 0.25f, 0, 0, nullptr);
        const auto light = normAndSum(g.data(), n, 0.25f);
        QVERIFY(std::memcmp(&full.sumSq, &light.sumSq, sizeof full.sumSq) == 0);
        QVERIFY(std::memcmp(&full.sum, &light.sum, sizeof full.sum) == 0);
        QCOMPARE(light.nonfinite, full.nonfinite);
    }
    QCOMPARE(normAndSum(g.data(), 10007, 1.f).nonfinite, 2u);
    // Fused with the fingerprint: the same statistics and the fingerprint of the same bytes, for sizes around
    // the pass's 64-element blocks and the fingerprint's 8-element ones.
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(8), int64_t(63), int64_t(64), int64_t(65),
                      int64_t(129), int64_t(10007)}) {
        uint64_t fp = 0;
        const auto fused = normSumFingerprint(g.data(), n, 0.25f, &fp);
        const auto light = normAndSum(g.data(), n, 0.25f);
        QCOMPARE(fp, fingerprint(g.data(), size_t(n) * 4));
        QVERIFY(std::memcmp(&fused.sumSq, &light.sumSq, sizeof fused.sumSq) == 0);
        QVERIFY(std::memcmp(&fused.sum, &light.sum, sizeof fused.sum) == 0);
        QCOMPARE(fused.nonfinite, light.nonfinite);
    }
    // The local pass's fingerprint (gradStats with fp): the same bytes' piece fingerprint whatever the
    // sketch's block length (n / k rounded up, at most 256 elements), and the statistics unchanged.
    for (int64_t n :
         {int64_t(0), int64_t(1), int64_t(7), int64_t(9), int64_t(65), int64_t(1001), int64_t(10007)})
        for (int k : {0, 3, 16}) {
            std::vector<float> sketchA(size_t(std::max(k, 1))), sketchB(size_t(std::max(k, 1)));
            uint64_t fp = 0;
            const auto fused = gradStats(g.data(), n, 0.25f, 9, k, k ? sketchA.data() : nullptr, &fp);
            const auto plain = gradStats(g.data(), n, 0.25f, 9, k, k ? sketchB.data() : nullptr);
            QCOMPARE(fp, pieceFingerprint(g.data(), n));
            QVERIFY(std::memcmp(&fused.sumSq, &plain.sumSq, sizeof fused.sumSq) == 0);
            QVERIFY(std::memcmp(sketchA.data(), sketchB.data(), sketchA.size() * sizeof(float)) == 0);
        }
}

// The O2/O3 payload written in the local statistics' pass (gradStats with half): floatsToHalves' bits for the
// whole tensor whatever the block length, inf and NaN included, and the statistics unchanged; the result read
// back with the synced statistics in one pass (halvesToFloatsWithStats).
void TestTelemetry::halfPayloadInTheSamePass() {
    auto h = randomVector(10007, 3);
    h[3] = std::numeric_limits<float>::infinity();
    h[700] = -std::numeric_limits<float>::quiet_NaN();
    h[701] = 70000.f;
    for (int64_t n : {int64_t(1), int64_t(9), int64_t(701), int64_t(702), int64_t(10007)})
        for (int k : {0, 3, 16}) {
            std::vector<float> sketchA(size_t(std::max(k, 1))), sketchB(size_t(std::max(k, 1)));
            std::vector<uint16_t> fusedHalf(size_t(n) + 1, 0xabcd);
            std::vector<uint16_t> whole(static_cast<size_t>(n));
            const auto fused =
                gradStats(h.data(), n, 0.25f, 9, k, k ? sketchA.data() : nullptr, nullptr, fusedHalf.data());
            const auto plain = gradStats(h.data(), n, 0.25f, 9, k, k ? sketchB.data() : nullptr);
            floatsToHalves(h.data(), whole.data(), size_t(n));
            QVERIFY2(std::memcmp(fusedHalf.data(), whole.data(), size_t(n) * 2) == 0,
                     qPrintable(QString::number(n)));
            QCOMPARE(fusedHalf[size_t(n)], uint16_t(0xabcd)); // nothing past the tensor
            QVERIFY(std::memcmp(&fused.sumSq, &plain.sumSq, sizeof fused.sumSq) == 0);
            QCOMPARE(fused.overflow, plain.overflow);
            QVERIFY(std::memcmp(sketchA.data(), sketchB.data(), sketchA.size() * sizeof(float)) == 0);
            // And back: the all-reduce's last pass converts the fp16 result and takes the synced statistics
            // on the way, with the bits of the conversion and normSumFingerprint apart.
            std::vector<float> back(static_cast<size_t>(n) + 1, -1.f), apart(static_cast<size_t>(n));
            uint64_t fpFused = 0, fpApart = 0;
            const auto s = halvesToFloatsWithStats(whole.data(), back.data(), n, 0.5f, &fpFused);
            halvesToFloats(whole.data(), apart.data(), size_t(n));
            const auto t = normSumFingerprint(apart.data(), n, 0.5f, &fpApart);
            QVERIFY(std::memcmp(back.data(), apart.data(), size_t(n) * 4) == 0);
            QCOMPARE(back[size_t(n)], -1.f);
            QCOMPARE(fpFused, fpApart);
            QVERIFY(std::memcmp(&s.sumSq, &t.sumSq, sizeof s.sumSq) == 0);
            QVERIFY(std::memcmp(&s.sum, &t.sum, sizeof s.sum) == 0);
            QCOMPARE(s.nonfinite, t.nonfinite);
        }
}

// The synced statistics read as the all-reduce hands the result over in pieces (SyncedPass): the bits of
// normSumFingerprint over the whole tensor, whatever the pieces' sizes, inf and NaN included.
void TestTelemetry::syncedPassInPiecesIsTheWholePass() {
    auto g = randomVector(10007, 5);
    g[300] = std::numeric_limits<float>::infinity();
    g[9000] = std::numeric_limits<float>::quiet_NaN();
    std::mt19937 gen(11);
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(255), int64_t(256), int64_t(257), int64_t(10007)})
        for (int trial = 0; trial < 4; ++trial) {
            uint64_t fpWhole = 0, fpPieces = 0;
            const auto whole = normSumFingerprint(g.data(), n, 0.125f, &fpWhole);
            SyncedPass pass(g.data(), n, 0.125f);
            for (int64_t at = 0; at < n;) {
                at = std::min<int64_t>(n, at + 1 + int64_t(gen() % (trial == 0 ? 7 : 3000)));
                pass.feed(at);
            }
            const auto pieces = pass.finish(&fpPieces);
            QCOMPARE(fpPieces, fpWhole);
            QVERIFY(std::memcmp(&pieces.sumSq, &whole.sumSq, sizeof whole.sumSq) == 0);
            QVERIFY(std::memcmp(&pieces.sum, &whole.sum, sizeof whole.sum) == 0);
            QCOMPARE(pieces.nonfinite, whole.nonfinite);
        }
}

void TestTelemetry::fp16Accounting() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> g = {1.f, 70000.f, -65520.f, 65504.f, 1e-9f, -2e-8f, 0.f, nan, inf, 6e-8f};
    const auto s = gradStats(g.data(), static_cast<int64_t>(g.size()), 1.f, 0, 0, nullptr);
    QCOMPARE(s.nonfinite, 2u);
    QCOMPARE(s.overflow, 4u);  // 70000, -65520 and the two non-finite ones; 65504 is still representable
    QCOMPARE(s.underflow, 2u); // 1e-9 and -2e-8 round to 0; 6e-8 becomes the smallest subnormal
}

void TestTelemetry::fingerprintSeesOneBit() {
    auto a = randomVector(4099, 2);
    auto b = a;
    QCOMPARE(fingerprint(a.data(), a.size() * 4), fingerprint(b.data(), b.size() * 4));
    uint32_t bits;
    std::memcpy(&bits, &b[1234], 4);
    bits ^= 1u << 3;
    std::memcpy(&b[1234], &bits, 4);
    QVERIFY(fingerprint(a.data(), a.size() * 4) != fingerprint(b.data(), b.size() * 4));
    QVERIFY(fingerprint(a.data(), 12) != fingerprint(a.data(), 16)); // length matters
}

// The local fingerprint (PieceFingerprint) of a tensor cut anywhere, the pieces added in any order: the bits
// of the tensor in one piece. The all-reduce's reduce-scatter reads each rank's gradient in such pieces.
void TestTelemetry::pieceFingerprintIsTheSameInAnyCut() {
    auto g = randomVector(10007, 21);
    g[77] = std::numeric_limits<float>::quiet_NaN();
    std::mt19937 gen(5);
    for (int64_t n :
         {int64_t(0), int64_t(1), int64_t(3), int64_t(255), int64_t(256), int64_t(257), int64_t(10007)})
        for (int trial = 0; trial < 6; ++trial) {
            std::vector<std::pair<int64_t, int64_t>> pieces;
            for (int64_t at = 0; at < n;) {
                const int64_t next = std::min<int64_t>(n, at + 1 + int64_t(gen() % (trial < 3 ? 5 : 2000)));
                pieces.emplace_back(at, next);
                at = next;
            }
            std::shuffle(pieces.begin(), pieces.end(), gen);
            PieceFingerprint a, b, c; // a: every piece; b and c: every other one, merged afterwards
            for (size_t i = 0; i < pieces.size(); ++i) {
                const auto [from, to] = pieces[i];
                a.add(g.data() + from, from, to - from);
                (i % 2 ? b : c).add(g.data() + from, from, to - from);
            }
            c.merge(b);
            const uint64_t whole = pieceFingerprint(g.data(), n);
            QCOMPARE(a.finish(n), whole);
            QCOMPARE(c.finish(n), whole);
        }
    // The same values at other lengths, and zeros of other lengths, give other fingerprints.
    const std::vector<float> zeros(512, 0.f);
    QVERIFY(pieceFingerprint(zeros.data(), 256) != pieceFingerprint(zeros.data(), 512));
    QVERIFY(pieceFingerprint(g.data(), 100) != pieceFingerprint(g.data(), 101));
}

// One flipped bit anywhere changes the fingerprint (each term's key is odd, so no single change cancels), and
// so do two elements that trade places, in a block or across blocks.
void TestTelemetry::pieceFingerprintSeesEveryBit() {
    const auto a = randomVector(1000, 8);
    const uint64_t base = pieceFingerprint(a.data(), int64_t(a.size()));
    for (size_t at : {size_t(0), size_t(1), size_t(255), size_t(256), size_t(999)})
        for (int bit = 0; bit < 32; ++bit) {
            auto b = a;
            uint32_t bits;
            std::memcpy(&bits, &b[at], 4);
            bits ^= 1u << bit;
            std::memcpy(&b[at], &bits, 4);
            QVERIFY2(pieceFingerprint(b.data(), int64_t(b.size())) != base,
                     qPrintable(QStringLiteral("element %1 bit %2").arg(at).arg(bit)));
        }
    for (auto [i, j] : {std::pair<size_t, size_t>{3, 4}, {10, 200}, {100, 700}}) {
        auto b = a;
        std::swap(b[i], b[j]);
        QVERIFY(pieceFingerprint(b.data(), int64_t(b.size())) != base);
    }
    const std::vector<float> posZero(8, 0.f), negZero(8, -0.f);
    QVERIFY(pieceFingerprint(posZero.data(), 8) != pieceFingerprint(negZero.data(), 8));
}

// The local statistics of a tensor taken in pieces (addLocalPiece, cut anywhere, merged in order): one piece
// gives gradStats' bits; any cut gives its fingerprint, maximum and counts exactly and its sums and sketch to
// float rounding.
// What each kernel gives on one ISA: every output's bits, for a comparison with memcmp.
static std::vector<unsigned char> kernelOutputs(const std::vector<float>& g) {
    std::vector<unsigned char> out;
    auto keep = [&out](const void* p, size_t bytes) {
        const auto* b = static_cast<const unsigned char*>(p);
        out.insert(out.end(), b, b + bytes);
    };
    auto keepStats = [&keep](const TensorStats& s) {
        keep(&s.sumSq, 8);
        keep(&s.sum, 8);
        keep(&s.maxAbs, 4);
        keep(&s.nonfinite, 4);
        keep(&s.overflow, 4);
        keep(&s.underflow, 4);
    };
    const int64_t n = int64_t(g.size());
    for (int k : {0, 3, 16}) {
        std::vector<float> sketch(size_t(std::max(k, 1)));
        std::vector<uint16_t> half(g.size());
        uint64_t fp = 0;
        keepStats(gradStats(g.data(), n, 0.5f, 11, k, k ? sketch.data() : nullptr, &fp, half.data()));
        keep(sketch.data(), sketch.size() * 4);
        keep(&fp, 8);
        keep(half.data(), half.size() * 2);
        // In pieces, as the reduce-scatter reads them.
        LocalPart part;
        std::vector<double> sums(size_t(std::max(k, 1)));
        for (int64_t at = 0; at < n; at += 333)
            addLocalPiece(g.data(), n, at, std::min(n, at + 333), 11, k, k ? sums.data() : nullptr, true,
                          part);
        keepStats(finishLocal(part, n, 0.5f, k, k ? sums.data() : nullptr, sketch.data(), &fp));
        keep(sums.data(), sums.size() * 8);
        keep(&fp, 8);
    }
    keepStats(normAndSum(g.data(), n, 0.25f));
    uint64_t fp = 0;
    keepStats(normSumFingerprint(g.data(), n, 0.25f, &fp));
    keep(&fp, 8);
    fp = pieceFingerprint(g.data(), n);
    keep(&fp, 8);
    return out;
}

void TestTelemetry::everyKernelIsaGivesTheSameBits() {
    // Runs recorded on machines with and without AVX2 must compare bit for bit: the wide kernels keep the
    // baseline's lanes and order and fuse no multiply with an add.
    if (!kernelIsaSupported(KernelIsa::Avx2))
        QSKIP("this CPU has no AVX2: only the baseline kernels can run here");
    const KernelIsa before = kernelIsa();
    std::mt19937 gen(5);
    std::uniform_int_distribution<int> pick(0, 99);
    for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(4), size_t(15), size_t(16), size_t(17),
                     size_t(255), size_t(256), size_t(257), size_t(1000), size_t(4099), size_t(70001)}) {
        for (int kind = 0; kind < 3; ++kind) {
            auto g = randomVector(n, uint32_t(n * 3 + kind));
            // kind 1: the values the checked pass and the counts are for; kind 2: large, so float sums round.
            for (auto& x : g) {
                const int r = pick(gen);
                if (kind == 1 && r < 3)
                    x = r == 0 ? std::numeric_limits<float>::quiet_NaN()
                               : (r == 1 ? -std::numeric_limits<float>::infinity() : 70000.f);
                else if (kind == 1 && r < 8)
                    x = r < 5 ? 1e-9f * x : (r < 7 ? -0.f : 1e-41f);
                else if (kind == 2)
                    x *= 1e4f;
            }
            QVERIFY(setKernelIsa(KernelIsa::Baseline));
            const auto base = kernelOutputs(g);
            QVERIFY(setKernelIsa(KernelIsa::Avx2));
            const auto wide = kernelOutputs(g);
            setKernelIsa(before);
            QCOMPARE(wide.size(), base.size());
            QVERIFY2(std::memcmp(wide.data(), base.data(), base.size()) == 0,
                     qPrintable(QStringLiteral("%1 elements, kind %2").arg(n).arg(kind)));
        }
    }
}

void TestTelemetry::localPiecesGiveTheWholePass() {
    auto g = randomVector(10007, 12);
    g[5] = 70000.f;
    g[40] = 1e-9f;
    g[600] = std::numeric_limits<float>::infinity();
    std::mt19937 gen(3);
    for (int64_t n : {int64_t(1), int64_t(257), int64_t(10007)})
        for (int k : {0, 16}) {
            std::vector<float> wholeSketch(16), pieceSketch(16);
            uint64_t wholeFp = 0, pieceFp = 0;
            const auto whole = gradStats(g.data(), n, 0.5f, 9, k, k ? wholeSketch.data() : nullptr, &wholeFp);
            for (int trial = 0; trial < 4; ++trial) {
                std::vector<LocalPart> parts;
                std::vector<std::vector<double>> sums;
                for (int64_t at = 0; at < n;) {
                    const int64_t next =
                        trial == 0 ? n
                                   : std::min<int64_t>(n, at + 1 + int64_t(gen() % (trial == 1 ? 9 : 3000)));
                    parts.emplace_back();
                    sums.emplace_back(16, 0.0);
                    addLocalPiece(g.data(), n, at, next, 9, k, k ? sums.back().data() : nullptr, true,
                                  parts.back());
                    at = next;
                }
                LocalPart total;
                std::vector<double> sketchSums(16, 0.0);
                for (size_t i = 0; i < parts.size(); ++i) {
                    total.merge(parts[i]);
                    for (size_t j = 0; j < 16; ++j)
                        sketchSums[j] += sums[i][j];
                }
                const auto s = finishLocal(total, n, 0.5f, k, k ? sketchSums.data() : nullptr,
                                           k ? pieceSketch.data() : nullptr, &pieceFp);
                QCOMPARE(pieceFp, wholeFp);
                QCOMPARE(s.maxAbs, whole.maxAbs);
                QCOMPARE(s.nonfinite, whole.nonfinite);
                QCOMPARE(s.overflow, whole.overflow);
                QCOMPARE(s.underflow, whole.underflow);
                if (trial == 0) { // one piece: the same bits
                    QVERIFY(std::memcmp(&s.sumSq, &whole.sumSq, sizeof s.sumSq) == 0);
                    QVERIFY(std::memcmp(&s.sum, &whole.sum, sizeof s.sum) == 0);
                    QVERIFY(std::memcmp(pieceSketch.data(), wholeSketch.data(), 16 * sizeof(float)) == 0);
                }
                QVERIFY(std::fabs(s.sumSq - whole.sumSq) <= 1e-6 * whole.sumSq);
                QVERIFY(std::fabs(s.sum - whole.sum) <= 1e-5 * std::sqrt(whole.sumSq * double(n)));
                for (int j = 0; j < k; ++j)
                    QVERIFY(std::fabs(pieceSketch[size_t(j)] - wholeSketch[size_t(j)]) <=
                            1e-4f * (1.f + std::fabs(wholeSketch[size_t(j)])));
            }
        }
}

// The local statistics taken in the all-reduce's own read (ReducedLocalStats) on 4 ranks, flat and with 2
// servers, in place and out of place: each rank gets what its own pass gives (fingerprints, maxima and counts
// exactly, sums to float rounding), step after step, and the all-reduce its usual result.
void TestTelemetry::reducedLocalStatsAreTheOwnPass() {
    const int n = 4, k = 8;
    std::vector<ParamInfo> params;
    int64_t at = 0;
    for (int64_t numel : {int64_t(3), int64_t(1000), int64_t(2500), int64_t(64), int64_t(7000), int64_t(5)}) {
        params.push_back({std::string("p").append(std::to_string(params.size())), {numel}, numel, at});
        at += numel;
    }
    const auto count = size_t(at);
    for (int servers : {1, 2})
        for (bool inPlace : {false, true}) {
            Communicator comm(n, std::chrono::seconds(10));
            comm.setServers(servers);
            ReducedLocalStats reads(n, params, k, 42);
            std::vector<RankStep> fused(n), own(n);
            std::vector<std::vector<float>> grads(n);
            for (int step = 0; step < 3; ++step) {
                for (int r = 0; r < n; ++r) {
                    grads[size_t(r)] = randomVector(count, uint32_t(100 * step + r));
                    grads[size_t(r)][size_t(17 * r)] = std::numeric_limits<float>::infinity();
                    localStatsInOwnPass(grads[size_t(r)].data(), params, 0.25f, 42, k, nullptr,
                                        own[size_t(r)]);
                }
                std::vector<std::vector<float>> out(n, std::vector<float>(count));
                const auto errors = rankthreads::runRanks(n, [&](int r) {
                    const auto q = size_t(r);
                    reads.startStep(r);
                    comm.allReduce(r, grads[q].data(), inPlace ? grads[q].data() : out[q].data(), count,
                                   DType::F32, ReduceOp::Sum, Communicator::Delivered{},
                                   [&, r](int source, size_t b, size_t e, const void* data) {
                                       reads.read(r, source, b, e, static_cast<const float*>(data));
                                   });
                    reads.combine(r, 0.25f, fused[q]);
                    comm.barrier(
                        r); // as the card's next collective: no row is reset before every rank merged
                });
                QString error;
                QVERIFY2(rankthreads::noErrors(errors, &error), qPrintable(error));
                for (size_t r = 0; r < size_t(n); ++r) {
                    const RankStep& f = fused[r];
                    const RankStep& o = own[r];
                    QCOMPARE(f.localFp, o.localFp);
                    QCOMPARE(f.localMax, o.localMax);
                    QCOMPARE(f.nonfinite, o.nonfinite);
                    QCOMPARE(f.overflowCount, o.overflowCount);
                    QCOMPARE(f.underflowCount, o.underflowCount);
                    for (size_t p = 0; p < params.size(); ++p) {
                        QVERIFY(std::fabs(f.localNorm[p] - o.localNorm[p]) <= 1e-5f * o.localNorm[p]);
                        QVERIFY(std::fabs(f.localSum[p] - o.localSum[p]) <=
                                1e-5 * (1 + double(o.localNorm[p]) * std::sqrt(double(params[p].numel))));
                    }
                    QCOMPARE(f.sketch.size(), o.sketch.size());
                    for (size_t j = 0; j < f.sketch.size(); ++j)
                        QVERIFY(std::fabs(f.sketch[j] - o.sketch[j]) <=
                                1e-4f * (1.f + std::fabs(o.sketch[j])));
                }
            }
        }
}

void TestTelemetry::sketchCosineTracksTrueCosine_data() {
    QTest::addColumn<float>("mix");
    QTest::addRow("identical") << 1.0f;
    QTest::addRow("correlated") << 0.7f;
    QTest::addRow("independent") << 0.0f;
    QTest::addRow("opposite") << -1.0f;
}

void TestTelemetry::sketchCosineTracksTrueCosine() {
    QFETCH(float, mix);
    const size_t n = 200000;
    const auto a = randomVector(n, 3), noise = randomVector(n, 4);
    std::vector<float> b(n);
    const float rest = std::sqrt(std::max(0.f, 1 - mix * mix));
    for (size_t i = 0; i < n; ++i)
        b[i] = mix * a[i] + rest * noise[i];
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    const double truth = ab / std::sqrt(aa * bb);
    const int k = 64;
    std::vector<float> sa(k), sb(k);
    gradStats(a.data(), n, 1.f, 99, k, sa.data());
    gradStats(b.data(), n, 1.f, 99, k, sb.data());
    const double est = cosine(sa.data(), sb.data(), k);
    QVERIFY2(std::fabs(est - truth) < 0.3, qPrintable(QString("sketch %1 vs true %2").arg(est).arg(truth)));
    if (mix == 1.0f)
        QCOMPARE(sa, sb); // identical tensors, identical sketches: cosine exactly 1
}

static RunMeta metaWith(int params) {
    RunMeta m;
    m.worldSize = 2;
    for (int p = 0; p < params; ++p)
        m.params.push_back({std::string("p").append(std::to_string(p)), {4}, 4, p * 4});
    return m;
}

static StepRecord stepWith(int64_t step, float loss0, float loss1) {
    StepRecord s;
    s.step = step;
    s.ranks.resize(2);
    s.ranks[0].loss = loss0;
    s.ranks[1].loss = loss1;
    for (auto& r : s.ranks)
        r.syncedFp = {11, 22, 33};
    return s;
}

void TestTelemetry::gradientMismatchEvent() {
    const auto meta = metaWith(3);
    EventDetector det(meta);
    QVERIFY(det.onStep(stepWith(0, 1, 1)).empty());
    auto s = stepWith(1200, 1, 1);
    s.ranks[1].syncedFp[1] = 99;
    const auto events = det.onStep(s);
    QCOMPARE(events.size(), size_t(1));
    QCOMPARE(QString::fromStdString(events[0].code), QString("GRADIENT_SYNC"));
    QVERIFY(QString::fromStdString(events[0].message)
                .startsWith("GRADIENT_SYNC: Rank 0 and Rank 1 parameter gradient mismatch at step 1200"));
    QVERIFY(QString::fromStdString(events[0].message).contains("first: p1"));
    QVERIFY(det.onStep(s).empty()); // reported once per rank pair, not every step
}

void TestTelemetry::lossFluctuationEvent() {
    const auto meta = metaWith(3);
    EventDetector det(meta);
    for (int i = 0; i < 10; ++i)
        QVERIFY(det.onStep(stepWith(i, 0.25f, 0.25f)).empty());
    const auto events = det.onStep(stepWith(10, 1.5f, 1.62f));
    QCOMPARE(events.size(), size_t(1));
    QCOMPARE(QString::fromStdString(events[0].message),
             QString("Loss shows abnormal fluctuation: from 0.25 to 1.56 within 10 steps"));
}

void TestTelemetry::cleanStepsGiveNoWarnings() {
    const auto meta = metaWith(3);
    EventDetector det(meta);
    std::mt19937 gen(5);
    std::uniform_real_distribution<float> noise(-0.1f, 0.1f);
    for (int i = 0; i < 500; ++i) { // a decaying, noisy loss: healthy training
        const float base = 2.3f * std::exp(-i / 100.f) + 0.1f;
        QVERIFY(det.onStep(stepWith(i, base + noise(gen), base + noise(gen))).empty());
    }
}

QTEST_GUILESS_MAIN(TestTelemetry)
#include "tst_telemetry.moc"
