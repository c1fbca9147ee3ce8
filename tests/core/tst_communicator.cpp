// The emulated HCCL communicator: AllReduce against an independent reference (fp32 and fp16, sum, mean,
// max, odd counts), bitwise agreement across ranks and runs, out of place, servers, Broadcast, AllGather,
// Barrier and the ComputeSlots limit. How it fails (timeouts, cancel, mismatched calls, bad arguments) is in
// tst_communicator_failures.cpp.
#include "cluster/Communicator.h"
#include "cluster/ComputeSlots.h"
#include "core/RankThreads.h"
#include "util/Half.h"

#include <QtTest>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

using namespace std::chrono_literals;
using namespace rankthreads;

Q_DECLARE_METATYPE(rs::DType)
Q_DECLARE_METATYPE(rs::ReduceOp)

namespace {

// Reference reduction written from the specification, independent of the implementation: chunk c is
// elements [c*count/N, (c+1)*count/N), summed in ring order (c+1)%N, ..., c; fp16 rounds after every add.
std::vector<uint8_t> referenceAllReduce(const std::vector<std::vector<uint8_t>>& inputs, size_t count,
                                        rs::DType dtype, rs::ReduceOp op) {
    const size_t n = inputs.size();
    std::vector<uint8_t> out(inputs[0].size());
    auto load = [&](size_t rank, size_t i) {
        if (dtype == rs::DType::F32) {
            float f;
            std::memcpy(&f, inputs[rank].data() + i * 4, 4);
            return f;
        }
        uint16_t h;
        std::memcpy(&h, inputs[rank].data() + i * 2, 2);
        return rs::halfToFloat(h);
    };
    for (size_t c = 0; c < n; ++c) {
        for (size_t i = c * count / n; i < (c + 1) * count / n; ++i) {
            float acc = load((c + 1) % n, i);
            for (size_t k = 2; k <= n; ++k) {
                const float x = load((c + k) % n, i);
                if (op == rs::ReduceOp::Max)
                    acc = (std::isnan(acc) || std::isnan(x)) ? NAN : std::max(acc, x);
                else
                    acc = acc + x;
                if (dtype == rs::DType::F16)
                    acc = rs::halfToFloat(rs::floatToHalf(acc));
            }
            if (op == rs::ReduceOp::Mean)
                acc = acc / static_cast<float>(n);
            if (dtype == rs::DType::F32) {
                std::memcpy(out.data() + i * 4, &acc, 4);
            } else {
                const uint16_t h = rs::floatToHalf(acc);
                std::memcpy(out.data() + i * 2, &h, 2);
            }
        }
    }
    return out;
}

std::vector<std::vector<uint8_t>> randomInputs(int worldSize, size_t count, rs::DType dtype, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<std::vector<uint8_t>> inputs(static_cast<size_t>(worldSize));
    for (auto& buf : inputs) {
        buf.resize(count * rs::dtypeSize(dtype));
        for (size_t i = 0; i < count; ++i) {
            const float f = dist(rng);
            if (dtype == rs::DType::F32) {
                std::memcpy(buf.data() + i * 4, &f, 4);
            } else {
                const uint16_t h = rs::floatToHalf(f);
                std::memcpy(buf.data() + i * 2, &h, 2);
            }
        }
    }
    return inputs;
}

// Every rank all-reduces its copy of inputs[rank]; returns the per-rank results.
std::vector<std::vector<uint8_t>> allReduceAll(rs::Communicator& comm,
                                               const std::vector<std::vector<uint8_t>>& inputs, size_t count,
                                               rs::DType dtype, rs::ReduceOp op, QString* error) {
    std::vector<std::vector<uint8_t>> buffers = inputs;
    const auto errors = runRanks(comm.worldSize(), [&](int r) {
        comm.allReduce(r, buffers[static_cast<size_t>(r)].data(), count, dtype, op);
    });
    if (!noErrors(errors, error))
        return {};
    return buffers;
}

// Every rank's input: count floats, distinct per rank and element (exact in fp32 sums of a few ranks).
std::vector<std::vector<float>> rampInputs(int n, size_t count) {
    std::vector<std::vector<float>> in(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i)
            in[size_t(r)].push_back(float(r + 1) * 0.5f + float(i % 97) * 0.25f);
    return in;
}

} // namespace

class TestCommunicator : public QObject {
    Q_OBJECT

private slots:
    void allReduce_data() {
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<rs::DType>("dtype");
        QTest::addColumn<rs::ReduceOp>("op");
        QTest::addColumn<int>("count");
        const std::pair<rs::DType, const char*> dtypes[] = {{rs::DType::F32, "fp32"},
                                                            {rs::DType::F16, "fp16"}};
        const std::pair<rs::ReduceOp, const char*> ops[] = {
            {rs::ReduceOp::Sum, "sum"}, {rs::ReduceOp::Mean, "mean"}, {rs::ReduceOp::Max, "max"}};
        for (int n = 1; n <= 8; ++n)
            for (const auto& [dtype, dname] : dtypes)
                for (const auto& [op, oname] : ops)
                    for (int count : {0, 1, 5, 7, 64, 1001, 5000})
                        QTest::addRow("%d ranks %s %s count %d", n, dname, oname, count)
                            << n << dtype << op << count;
    }

    void allReduce() {
        QFETCH(int, worldSize);
        QFETCH(rs::DType, dtype);
        QFETCH(rs::ReduceOp, op);
        QFETCH(int, count);
        const size_t n = static_cast<size_t>(count);
        const auto inputs =
            randomInputs(worldSize, n, dtype, static_cast<uint32_t>(1000 * worldSize + count));
        const auto expected = referenceAllReduce(inputs, n, dtype, op);

        rs::Communicator comm(worldSize, 10s);
        QString error;
        const auto first = allReduceAll(comm, inputs, n, dtype, op, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (int r = 0; r < worldSize; ++r) // bitwise identical on every rank, and equal to the reference
            QVERIFY2(first[static_cast<size_t>(r)] == expected, qPrintable(QStringLiteral("rank %1").arg(r)));

        // Against the exact (double) result within the rounding the dtype allows, so the reference
        // itself cannot be wrong in the same way as the implementation.
        for (size_t i = 0; i < n; ++i) {
            double exact = op == rs::ReduceOp::Max ? -INFINITY : 0.0;
            double magnitude = 0.0;
            for (int r = 0; r < worldSize; ++r) {
                const auto& in = inputs[static_cast<size_t>(r)];
                double x;
                if (dtype == rs::DType::F32) {
                    float f;
                    std::memcpy(&f, in.data() + i * 4, 4);
                    x = f;
                } else {
                    uint16_t h;
                    std::memcpy(&h, in.data() + i * 2, 2);
                    x = rs::halfToFloat(h);
                }
                exact = op == rs::ReduceOp::Max ? std::max(exact, x) : exact + x;
                magnitude += std::fabs(x);
            }
            if (op == rs::ReduceOp::Mean) {
                exact /= worldSize;
                magnitude /= worldSize;
            }
            double got;
            if (dtype == rs::DType::F32) {
                float f;
                std::memcpy(&f, first[0].data() + i * 4, 4);
                got = f;
            } else {
                uint16_t h;
                std::memcpy(&h, first[0].data() + i * 2, 2);
                got = rs::halfToFloat(h);
            }
            const double ulp = dtype == rs::DType::F32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -10);
            const double tolerance = worldSize * ulp * magnitude + 1e-30;
            if (std::fabs(got - exact) > tolerance)
                QFAIL(qPrintable(QStringLiteral("element %1: got %2, exact %3").arg(i).arg(got).arg(exact)));
        }

        // The same inputs again, on the same communicator and on a new one: bitwise the same.
        const auto second = allReduceAll(comm, inputs, n, dtype, op, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(second == first);
        rs::Communicator fresh(worldSize, 10s);
        const auto third = allReduceAll(fresh, inputs, n, dtype, op, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(third == first);

        // Out of place: the same bits land in `out` and every rank's input is left as it was.
        auto ins = inputs;
        std::vector<std::vector<uint8_t>> outs(size_t(worldSize),
                                               std::vector<uint8_t>(inputs[0].size(), 0xab));
        const auto errors = runRanks(worldSize, [&](int r) {
            comm.allReduce(r, ins[size_t(r)].data(), outs[size_t(r)].data(), n, dtype, op);
        });
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        QVERIFY(ins == inputs);
        QVERIFY(outs == first);
    }

    // fp16 accumulates in fp16: each partial sum is rounded, so 1 + 2^-11 + 2^-11 stays 1 (ties to even)
    // where an fp32 accumulator would give 1 + 2^-10.
    void fp16AccumulatesInHalf() {
        const uint16_t one = rs::floatToHalf(1.0f);
        const uint16_t small = rs::floatToHalf(std::ldexp(1.0f, -11));
        QCOMPARE(rs::halfToFloat(small), std::ldexp(1.0f, -11));
        // count 1 on 3 ranks: the element is in chunk 2, summed in ring order 0, 1, 2
        std::vector<std::vector<uint16_t>> bufs = {{one}, {small}, {small}};
        rs::Communicator comm(3, 10s);
        const auto errors = runRanks(3, [&](int r) {
            comm.allReduce(r, bufs[static_cast<size_t>(r)].data(), 1, rs::DType::F16, rs::ReduceOp::Sum);
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        for (const auto& b : bufs)
            QCOMPARE(b[0], one);
    }

    // Halves over the whole finite range (subnormals, ties, sums that overflow to inf and inf - inf = NaN)
    // give bitwise the specification's result, whatever conversion path the implementation takes.
    void fp16WholeRange_data() {
        QTest::addColumn<rs::ReduceOp>("op");
        QTest::addRow("sum") << rs::ReduceOp::Sum;
        QTest::addRow("mean") << rs::ReduceOp::Mean;
        QTest::addRow("max") << rs::ReduceOp::Max;
    }

    void fp16WholeRange() {
        QFETCH(rs::ReduceOp, op);
        const int n = 8;
        const size_t count = 8 * 4096 + 13; // not a multiple of the vector width either
        std::mt19937 rng(7);
        std::uniform_int_distribution<int> exponent(0, 30); // no inf or NaN inputs
        std::uniform_int_distribution<int> mantissa(0, 1023);
        std::uniform_int_distribution<int> sign(0, 1);
        std::vector<std::vector<uint8_t>> inputs(n, std::vector<uint8_t>(count * 2));
        for (auto& buf : inputs)
            for (size_t i = 0; i < count; ++i) {
                // mostly small exponents, so subnormals and exact ties are frequent
                const int e = (i % 3 == 0) ? exponent(rng) : exponent(rng) % 4;
                const uint16_t h = static_cast<uint16_t>(sign(rng) << 15 | e << 10 | mantissa(rng));
                std::memcpy(buf.data() + i * 2, &h, 2);
            }
        const auto expected = referenceAllReduce(inputs, count, rs::DType::F16, op);
        rs::Communicator comm(n, 10s);
        QString error;
        const auto results = allReduceAll(comm, inputs, count, rs::DType::F16, op, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (size_t i = 0; i < count; ++i) {
            uint16_t got, want;
            std::memcpy(&got, results[0].data() + i * 2, 2);
            std::memcpy(&want, expected.data() + i * 2, 2);
            if (got != want)
                QFAIL(qPrintable(QStringLiteral("element %1: got 0x%2, expected 0x%3")
                                     .arg(i)
                                     .arg(got, 4, 16, QLatin1Char('0'))
                                     .arg(want, 4, 16, QLatin1Char('0'))));
        }
        for (const auto& r : results)
            QVERIFY(r == results[0]);
    }

    void fp16Overflow_data() {
        QTest::addColumn<rs::ReduceOp>("op");
        QTest::addColumn<float>("value");
        QTest::addColumn<float>("expected");
        const float inf = std::numeric_limits<float>::infinity();
        QTest::addRow("sum 4 x 40000 -> inf") << rs::ReduceOp::Sum << 40000.0f << inf;
        QTest::addRow("sum 4 x -40000 -> -inf") << rs::ReduceOp::Sum << -40000.0f << -inf;
        QTest::addRow("mean 4 x 40000 -> inf (the sum overflowed first)")
            << rs::ReduceOp::Mean << 40000.0f << inf;
        QTest::addRow("sum 4 x 16000 fits") << rs::ReduceOp::Sum << 16000.0f << 64000.0f;
        QTest::addRow("max 4 x 40000") << rs::ReduceOp::Max << 40000.0f << 40000.0f;
    }

    void fp16Overflow() {
        QFETCH(rs::ReduceOp, op);
        QFETCH(float, value);
        QFETCH(float, expected);
        const size_t count = 10;
        std::vector<std::vector<uint16_t>> bufs(4, std::vector<uint16_t>(count, rs::floatToHalf(value)));
        rs::Communicator comm(4, 10s);
        const auto errors = runRanks(4, [&](int r) {
            comm.allReduce(r, bufs[static_cast<size_t>(r)].data(), count, rs::DType::F16, op);
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        for (const auto& b : bufs)
            for (uint16_t h : b)
                QCOMPARE(rs::halfToFloat(h), expected);

        // fp32 holds the same sum
        std::vector<std::vector<float>> fbufs(4, std::vector<float>(count, value));
        const auto errors32 = runRanks(4, [&](int r) {
            comm.allReduce(r, fbufs[static_cast<size_t>(r)].data(), count, rs::DType::F32, rs::ReduceOp::Sum);
        });
        QVERIFY2(noErrors(errors32, &error), qPrintable(error));
        QCOMPARE(fbufs[2][3], 4 * value);
    }

    // Servers (issue 12): exact sums and means of integer-valued payloads (any order gives the same), the
    // same bits on every rank, fp16 sums past 65504 become inf, Max propagates NaN across servers, and a
    // server count that does not split the ranks is refused.
    void serversReduceHierarchically() {
        const int n = 6;
        const size_t count = 37; // chunks of unequal size inside each server
        rs::Communicator comm(n, 10s);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, comm.setServers(4));
        comm.setServers(3);
        std::vector<std::vector<float>> sum(n), mean(n), mx(n);
        std::vector<std::vector<uint16_t>> half(n);
        for (int r = 0; r < n; ++r)
            for (size_t i = 0; i < count; ++i) {
                sum[size_t(r)].push_back(float(r * 100 + int(i)));
                mean[size_t(r)].push_back(float(r + 1));
                mx[size_t(r)].push_back(r == 4 && i == 5 ? NAN : float(r * 10 - int(i)));
                half[size_t(r)].push_back(rs::floatToHalf(i == 0 ? 20000.0f : 1.0f));
            }
        const auto sumIn = sum; // out of place too: the stages run in place on a copy in `out`
        std::vector<std::vector<float>> sumOut(n, std::vector<float>(count));
        const auto errors = runRanks(n, [&](int r) {
            const size_t k = static_cast<size_t>(r);
            comm.allReduce(r, sumIn[k].data(), sumOut[k].data(), count, rs::DType::F32, rs::ReduceOp::Sum);
            comm.allReduce(r, sum[k].data(), count, rs::DType::F32, rs::ReduceOp::Sum);
            comm.allReduce(r, mean[k].data(), count, rs::DType::F32, rs::ReduceOp::Mean);
            comm.allReduce(r, mx[k].data(), count, rs::DType::F32, rs::ReduceOp::Max);
            comm.allReduce(r, half[k].data(), count, rs::DType::F16, rs::ReduceOp::Sum);
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        for (int r = 0; r < n; ++r) {
            for (size_t i = 0; i < count; ++i) {
                QCOMPARE(sum[size_t(r)][i], float(1500 + 6 * int(i))); // sum of r*100 over 6 ranks, plus 6i
                QCOMPARE(mean[size_t(r)][i], 3.5f);
                if (i == 5)
                    QVERIFY(std::isnan(mx[size_t(r)][i]));
                else
                    QCOMPARE(mx[size_t(r)][i], float(50 - int(i)));
            }
            QVERIFY(std::isinf(rs::halfToFloat(half[size_t(r)][0]))); // 6 x 20000 overflows fp16
            QCOMPARE(rs::halfToFloat(half[size_t(r)][1]), 6.0f);
            QCOMPARE(std::memcmp(sum[size_t(r)].data(), sum[0].data(), count * 4), 0);
            QCOMPARE(sumOut[size_t(r)], sum[size_t(r)]);
            QCOMPARE(sumIn[size_t(r)][3], float(r * 100 + 3));
        }
    }

    // The reader of the result in the reduction's last pass: ascending, adjacent ranges covering the buffer
    // once, in pieces, each final when handed over (its bytes already the result's), on the flat ring and
    // with servers; the result the same bits as without a reader.
    void deliveredRangesAreFinalAndInOrder() {
        for (int servers : {1, 2}) {
            const int n = 4;
            const size_t count = 10007; // several 8 KiB pieces per chunk, chunks of unequal size
            rs::Communicator comm(n, 10s);
            comm.setServers(servers);
            std::vector<std::vector<float>> in = rampInputs(n, count), out(n, std::vector<float>(count)),
                                            plain(n);
            std::vector<std::vector<std::pair<size_t, size_t>>> ranges(n);
            std::vector<std::vector<float>> seen(n, std::vector<float>(count, -1.f));
            const auto errors = runRanks(n, [&](int r) {
                const size_t k = size_t(r);
                comm.allReduce(r, in[k].data(), out[k].data(), count, rs::DType::F32, rs::ReduceOp::Sum,
                               [&, k](size_t b, size_t e) {
                                   ranges[k].emplace_back(b, e);
                                   std::copy(out[k].begin() + long(b), out[k].begin() + long(e),
                                             seen[k].begin() + long(b));
                               });
                plain[k] = in[k];
                comm.allReduce(r, plain[k].data(), count, rs::DType::F32, rs::ReduceOp::Sum);
            });
            QString error;
            QVERIFY2(noErrors(errors, &error), qPrintable(error));
            for (size_t k = 0; k < size_t(n); ++k) {
                size_t at = 0;
                for (const auto& [b, e] : ranges[k]) {
                    QCOMPARE(b, at);
                    QVERIFY(e > b);
                    at = e;
                }
                QCOMPARE(at, count);
                QVERIFY2(ranges[k].size() > size_t(n), "the last copy hands over pieces");
                QVERIFY(std::memcmp(seen[k].data(), out[k].data(), count * 4) == 0); // final when handed over
                QVERIFY(std::memcmp(out[k].data(), plain[k].data(), count * 4) == 0);
            }
        }
    }

    // The reader of every rank's input in the reduce-scatter (Communicator::Read): each element of each
    // rank's input read exactly once, by the rank that reduces its chunk (with servers, a member of the
    // source's server), with the input's values, all of them before the call returns on any rank; in place
    // too (where a rank's own chunk is overwritten by its sum), and the result the same bits as without one.
    void readHandsOverEveryInputOnce() {
        for (int servers : {1, 2})
            for (bool inPlace : {false, true}) {
                const int n = 4;
                const size_t count = 10007;
                rs::Communicator comm(n, 10s);
                comm.setServers(servers);
                std::vector<std::vector<float>> in = rampInputs(n, count), out(n, std::vector<float>(count)),
                                                plain(n);
                const auto original = in;
                // [source][element]: how often it was read, and whether it read the input's value
                std::vector<std::vector<std::atomic<int>>> reads(n);
                for (auto& v : reads)
                    v = std::vector<std::atomic<int>>(count);
                std::atomic<int> wrongValue{0}, wrongReader{0}, readsAfterReturn{0};
                std::atomic<int> returned{0};
                const auto errors = runRanks(n, [&](int r) {
                    const size_t k = size_t(r);
                    const auto read = [&, r](int source, size_t b, size_t e, const void* data) {
                        if (returned.load() > 0)
                            ++readsAfterReturn;
                        if (servers > 1 && source / (n / servers) != r / (n / servers))
                            ++wrongReader;
                        const auto* x = static_cast<const float*>(data);
                        for (size_t i = b; i < e; ++i) {
                            ++reads[size_t(source)][i];
                            if (std::memcmp(&x[i - b], &original[size_t(source)][i], 4) != 0)
                                ++wrongValue;
                        }
                    };
                    float* target = inPlace ? in[k].data() : out[k].data();
                    comm.allReduce(r, in[k].data(), target, count, rs::DType::F32, rs::ReduceOp::Sum,
                                   rs::Communicator::Delivered{}, read);
                    ++returned;
                    plain[k] = original[k];
                    comm.allReduce(r, plain[k].data(), count, rs::DType::F32, rs::ReduceOp::Sum);
                });
                QString error;
                QVERIFY2(noErrors(errors, &error), qPrintable(error));
                QCOMPARE(wrongValue.load(), 0);
                QCOMPARE(wrongReader.load(), 0);
                QCOMPARE(readsAfterReturn.load(), 0);
                for (int s = 0; s < n; ++s)
                    for (size_t i = 0; i < count; ++i)
                        QVERIFY2(reads[size_t(s)][i] == 1,
                                 qPrintable(QStringLiteral("rank %1 element %2 read %3 times")
                                                .arg(s)
                                                .arg(i)
                                                .arg(reads[size_t(s)][i].load())));
                for (size_t k = 0; k < size_t(n); ++k) {
                    const float* result = inPlace ? in[k].data() : out[k].data();
                    QVERIFY(std::memcmp(result, plain[k].data(), count * 4) == 0);
                }
            }
        // fp16 payloads are not read.
        rs::Communicator one(1, 1s);
        uint16_t h = 0;
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 one.allReduce(0, &h, &h, 1, rs::DType::F16, rs::ReduceOp::Sum,
                                               rs::Communicator::Delivered{},
                                               [](int, size_t, size_t, const void*) {}));
    }

    void maxPropagatesNan() {
        std::vector<std::vector<float>> bufs = {{1.0f, 2.0f}, {NAN, 3.0f}, {0.5f, -1.0f}};
        rs::Communicator comm(3, 10s);
        const auto errors = runRanks(3, [&](int r) {
            comm.allReduce(r, bufs[static_cast<size_t>(r)].data(), 2, rs::DType::F32, rs::ReduceOp::Max);
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        for (const auto& b : bufs) {
            QVERIFY(std::isnan(b[0]));
            QCOMPARE(b[1], 3.0f);
        }
    }

    void broadcast_data() {
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<int>("root");
        QTest::addColumn<int>("bytes");
        for (int n : {1, 2, 3, 4, 8})
            for (int root : {0, n / 2, n - 1})
                for (int bytes : {0, 1, 1000})
                    QTest::addRow("%d ranks root %d %d bytes", n, root, bytes) << n << root << bytes;
    }

    void broadcast() {
        QFETCH(int, worldSize);
        QFETCH(int, root);
        QFETCH(int, bytes);
        std::vector<std::vector<uint8_t>> bufs(static_cast<size_t>(worldSize));
        for (int r = 0; r < worldSize; ++r)
            for (int i = 0; i < bytes; ++i)
                bufs[static_cast<size_t>(r)].push_back(static_cast<uint8_t>(r * 37 + i));
        const std::vector<uint8_t> original = bufs[static_cast<size_t>(root)];
        rs::Communicator comm(worldSize, 10s);
        const auto errors = runRanks(worldSize, [&](int r) {
            comm.broadcast(r, bufs[static_cast<size_t>(r)].data(), static_cast<size_t>(bytes), root);
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        for (const auto& b : bufs)
            QVERIFY(b == original);
    }

    void allGather_data() {
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<int>("bytes");
        for (int n : {1, 2, 3, 8})
            for (int bytes : {0, 3, 1024})
                QTest::addRow("%d ranks %d bytes", n, bytes) << n << bytes;
    }

    void allGather() {
        QFETCH(int, worldSize);
        QFETCH(int, bytes);
        const size_t b = static_cast<size_t>(bytes);
        std::vector<std::vector<uint8_t>> send(static_cast<size_t>(worldSize));
        std::vector<uint8_t> expected;
        for (int r = 0; r < worldSize; ++r)
            for (size_t i = 0; i < b; ++i) {
                send[static_cast<size_t>(r)].push_back(static_cast<uint8_t>(r * 31 + i * 7 + 1));
                expected.push_back(send[static_cast<size_t>(r)].back());
            }
        std::vector<std::vector<uint8_t>> recv(static_cast<size_t>(worldSize),
                                               std::vector<uint8_t>(b * worldSize, 0xee));
        rs::Communicator comm(worldSize, 10s);
        const auto errors = runRanks(worldSize, [&](int r) {
            comm.allGather(r, send[static_cast<size_t>(r)].data(), b, recv[static_cast<size_t>(r)].data());
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        for (const auto& rv : recv)
            QVERIFY(rv == expected);
    }

    // No rank leaves a barrier before every rank entered it; one late rank per round.
    void barrier() {
        const int n = 4;
        const int rounds = 20;
        rs::Communicator comm(n, 10s);
        std::atomic<int> entered{0};
        std::atomic<int> violations{0};
        const auto errors = runRanks(n, [&](int r) {
            for (int round = 0; round < rounds; ++round) {
                if (round % n == r)
                    std::this_thread::sleep_for(2ms);
                entered.fetch_add(1);
                comm.barrier(r);
                if (entered.load() < (round + 1) * n)
                    violations.fetch_add(1);
            }
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        QCOMPARE(violations.load(), 0);
        QCOMPARE(entered.load(), n * rounds);
    }

    // Collectives back to back, many times, checking each result: shakes out generation races.
    void mixedSequence() {
        const int n = 4;
        const int iterations = 200;
        rs::Communicator comm(n, 10s);
        std::atomic<int> wrong{0};
        const auto errors = runRanks(n, [&](int r) {
            for (int it = 0; it < iterations; ++it) {
                std::vector<float> grad(37, float(r + it));
                comm.allReduce(r, grad.data(), grad.size(), rs::DType::F32, rs::ReduceOp::Sum);
                const float sum = float(n * it + n * (n - 1) / 2);
                for (float g : grad)
                    if (g != sum)
                        wrong.fetch_add(1);
                int value = r == it % n ? it : -1;
                comm.broadcast(r, &value, sizeof value, it % n);
                if (value != it)
                    wrong.fetch_add(1);
                int mine = r * 1000 + it;
                std::vector<int> all(n);
                comm.allGather(r, &mine, sizeof mine, all.data());
                for (int i = 0; i < n; ++i)
                    if (all[static_cast<size_t>(i)] != i * 1000 + it)
                        wrong.fetch_add(1);
                comm.barrier(r);
            }
        });
        QString error;
        QVERIFY2(noErrors(errors, &error), qPrintable(error));
        QCOMPARE(wrong.load(), 0);
    }

    void computeSlotsLimitConcurrency() {
        const int slotCount = 2;
        const int threads = 8;
        rs::ComputeSlots computeSlots(slotCount);
        QCOMPARE(computeSlots.capacity(), slotCount);
        std::atomic<int> current{0};
        std::atomic<int> maxSeen{0};
        runRanks(threads, [&](int) {
            for (int i = 0; i < 10; ++i) {
                rs::ComputeSlotGuard guard(computeSlots);
                const int now = current.fetch_add(1) + 1;
                int seen = maxSeen.load();
                while (now > seen && !maxSeen.compare_exchange_weak(seen, now)) {
                }
                std::this_thread::sleep_for(1ms);
                current.fetch_sub(1);
            }
        });
        QVERIFY2(maxSeen.load() <= slotCount, qPrintable(QString::number(maxSeen.load())));
        QVERIFY(maxSeen.load() >= 1);
        QCOMPARE(current.load(), 0);

        // every slot is free again, and no more than `slots` can be taken
        QVERIFY(computeSlots.tryAcquireFor(0ms));
        QVERIFY(computeSlots.tryAcquireFor(0ms));
        QVERIFY(!computeSlots.tryAcquireFor(20ms));
        computeSlots.release();
        QVERIFY(computeSlots.tryAcquireFor(0ms));
        computeSlots.release();
        computeSlots.release();
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rs::ComputeSlots(0));
    }
};

QTEST_GUILESS_MAIN(TestCommunicator)
#include "tst_communicator.moc"
