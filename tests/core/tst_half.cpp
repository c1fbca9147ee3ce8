// IEEE binary16 conversions (util/Half.h): known values, ties to even, overflow and underflow, and
// every half bit pattern, checked against an independent value formula rather than against itself; the bulk
// conversion (util/HalfConvert.h, F16C where the CPU has it) gives the scalar one's bits, NaNs included.
#include "util/Half.h"
#include "util/HalfConvert.h"

#include <QtTest>
#include <cmath>
#include <cstring>
#include <limits>

namespace {

quint32 floatBits(float f) {
    quint32 x;
    std::memcpy(&x, &f, 4);
    return x;
}

bool isHalfNan(quint16 h) {
    return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

// The value a half bit pattern stands for, from the IEEE definition (not via Half.h).
double halfValue(quint16 h) {
    const int sign = (h & 0x8000u) ? -1 : 1;
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    if (exp == 0x1f)
        return mant ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
    if (exp == 0)
        return sign * std::ldexp(static_cast<double>(mant), -24);
    return sign * std::ldexp(static_cast<double>(1024 + mant), exp - 25);
}

} // namespace

class TestHalf : public QObject {
    Q_OBJECT

private slots:
    void floatToHalf_data() {
        QTest::addColumn<float>("value");
        QTest::addColumn<quint16>("bits");
        const float tiny = std::ldexp(1.0f, -24);
        QTest::addRow("1.0") << 1.0f << quint16(0x3c00);
        QTest::addRow("-2.0") << -2.0f << quint16(0xc000);
        QTest::addRow("0.1 rounds to nearest") << 0.1f << quint16(0x2e66);
        QTest::addRow("65504 max") << 65504.0f << quint16(0x7bff);
        QTest::addRow("65519 below the overflow tie") << 65519.0f << quint16(0x7bff);
        QTest::addRow("65520 overflows to inf") << 65520.0f << quint16(0x7c00);
        QTest::addRow("-65520 overflows to -inf") << -65520.0f << quint16(0xfc00);
        QTest::addRow("1e9 to inf") << 1e9f << quint16(0x7c00);
        QTest::addRow("inf") << std::numeric_limits<float>::infinity() << quint16(0x7c00);
        QTest::addRow("-inf") << -std::numeric_limits<float>::infinity() << quint16(0xfc00);
        QTest::addRow("2^-14 smallest normal") << std::ldexp(1.0f, -14) << quint16(0x0400);
        QTest::addRow("2^-24 smallest subnormal") << tiny << quint16(0x0001);
        QTest::addRow("2^-25 ties to zero") << std::ldexp(1.0f, -25) << quint16(0x0000);
        QTest::addRow("1.5*2^-25 rounds up") << 1.5f * std::ldexp(1.0f, -25) << quint16(0x0001);
        QTest::addRow("3*2^-25 ties to even 2") << 3.0f * std::ldexp(1.0f, -25) << quint16(0x0002);
        QTest::addRow("2^-26 underflows") << std::ldexp(1.0f, -26) << quint16(0x0000);
        QTest::addRow("-2^-26 underflows to -0") << -std::ldexp(1.0f, -26) << quint16(0x8000);
        QTest::addRow("+0") << 0.0f << quint16(0x0000);
        QTest::addRow("-0") << -0.0f << quint16(0x8000);
        QTest::addRow("1+2^-11 ties to even 1") << 1.0f + std::ldexp(1.0f, -11) << quint16(0x3c00);
        QTest::addRow("1+3*2^-11 ties to even 1+2^-9")
            << 1.0f + 3.0f * std::ldexp(1.0f, -11) << quint16(0x3c02);
        QTest::addRow("2049 ties to even 2048") << 2049.0f << quint16(0x6800);
        QTest::addRow("2051 ties to even 2052") << 2051.0f << quint16(0x6802);
    }

    void floatToHalf() {
        QFETCH(float, value);
        QFETCH(quint16, bits);
        QCOMPARE(QString::number(rs::floatToHalf(value), 16), QString::number(bits, 16));
    }

    void halfToFloat_data() {
        QTest::addColumn<quint16>("bits");
        QTest::addColumn<float>("value");
        QTest::addRow("1.0") << quint16(0x3c00) << 1.0f;
        QTest::addRow("65504") << quint16(0x7bff) << 65504.0f;
        QTest::addRow("-2") << quint16(0xc000) << -2.0f;
        QTest::addRow("2^-24") << quint16(0x0001) << std::ldexp(1.0f, -24);
        QTest::addRow("largest subnormal") << quint16(0x03ff) << 1023.0f * std::ldexp(1.0f, -24);
        QTest::addRow("2^-14") << quint16(0x0400) << std::ldexp(1.0f, -14);
        QTest::addRow("inf") << quint16(0x7c00) << std::numeric_limits<float>::infinity();
        QTest::addRow("-inf") << quint16(0xfc00) << -std::numeric_limits<float>::infinity();
        QTest::addRow("-0") << quint16(0x8000) << -0.0f;
        QTest::addRow("+0") << quint16(0x0000) << 0.0f;
    }

    void halfToFloat() {
        QFETCH(quint16, bits);
        QFETCH(float, value);
        // bitwise, so -0 and +0 differ
        QCOMPARE(floatBits(rs::halfToFloat(bits)), floatBits(value));
    }

    void nan() {
        const float qnan = std::numeric_limits<float>::quiet_NaN();
        QVERIFY(isHalfNan(rs::floatToHalf(qnan)));
        QVERIFY(isHalfNan(rs::floatToHalf(-qnan)));
        QVERIFY(rs::floatToHalf(-qnan) & 0x8000u);
        QVERIFY(std::isnan(rs::halfToFloat(0x7e00)));
        QVERIFY(std::isnan(rs::halfToFloat(0x7c01))); // signalling payload is still NaN
        QVERIFY(std::isnan(rs::roundThroughHalf(qnan)));
    }

    // A NaN keeps its sign and the top of its payload, quieted: what x86 F16C does, so a conversion split
    // into pieces (the bulk loop's scalar tail) gives the bits of one over the whole buffer.
    void nanPayloads() {
        auto fromBits = [](quint32 x) {
            float f;
            std::memcpy(&f, &x, 4);
            return f;
        };
        QCOMPARE(rs::floatToHalf(fromBits(0x7fc00000u)), quint16(0x7e00));
        QCOMPARE(rs::floatToHalf(fromBits(0xffc00000u)), quint16(0xfe00)); // x86's default NaN
        QCOMPARE(rs::floatToHalf(fromBits(0x7fc12345u)), quint16(0x7e09));
        QCOMPARE(rs::floatToHalf(fromBits(0x7f800001u)), quint16(0x7e00)); // signalling, payload below half's
        QCOMPARE(rs::floatToHalf(fromBits(0xff9fe000u)), quint16(0xfeff));
        QCOMPARE(rs::floatToHalf(fromBits(0x7f800000u)), quint16(0x7c00));
    }

    // floatsToHalves over every float pattern whose top 19 bits vary (all exponents, signs, NaN payloads)
    // and the halves' own values: the same bits as floatToHalf one element at a time, at every length mod 8.
    void bulkMatchesScalar() {
        std::vector<float> in;
        for (quint32 hi = 0; hi < (1u << 19); ++hi) {
            const quint32 x = (hi << 13) | ((hi * 2654435761u) & 0x1fffu);
            float f;
            std::memcpy(&f, &x, 4);
            in.push_back(f);
        }
        for (quint32 h = 0; h <= 0xffffu; ++h)
            in.push_back(rs::halfToFloat(static_cast<quint16>(h)));
        for (size_t cut : {in.size(), in.size() - 1, in.size() - 5, size_t(13)}) {
            std::vector<quint16> bulk(cut);
            rs::floatsToHalves(in.data(), bulk.data(), cut);
            for (size_t i = 0; i < cut; ++i)
                if (bulk[i] != rs::floatToHalf(in[i]))
                    QFAIL(qPrintable(QStringLiteral("0x%1: bulk 0x%2, scalar 0x%3 (F16C %4)")
                                         .arg(floatBits(in[i]), 8, 16, QLatin1Char('0'))
                                         .arg(bulk[i], 4, 16, QLatin1Char('0'))
                                         .arg(rs::floatToHalf(in[i]), 4, 16, QLatin1Char('0'))
                                         .arg(rs::haveF16c())));
        }
    }

    // Every one of the 65536 patterns: the float it converts to has the IEEE value, and converting
    // back gives the same pattern (NaN: still a NaN of the same sign).
    void roundTripAllPatterns() {
        int checked = 0;
        for (quint32 i = 0; i <= 0xffffu; ++i) {
            const quint16 h = static_cast<quint16>(i);
            const float f = rs::halfToFloat(h);
            const quint16 back = rs::floatToHalf(f);
            if (isHalfNan(h)) {
                QVERIFY2(std::isnan(f), qPrintable(QString::number(h, 16)));
                QVERIFY2(isHalfNan(back) && (back & 0x8000u) == (h & 0x8000u),
                         qPrintable(QString::number(h, 16)));
                continue;
            }
            if (static_cast<double>(f) != halfValue(h))
                QFAIL(qPrintable(QStringLiteral("0x%1 -> %2, expected %3")
                                     .arg(h, 4, 16, QLatin1Char('0'))
                                     .arg(double(f), 0, 'g', 17)
                                     .arg(halfValue(h), 0, 'g', 17)));
            if (back != h)
                QFAIL(qPrintable(QStringLiteral("0x%1 round-trips to 0x%2")
                                     .arg(h, 4, 16, QLatin1Char('0'))
                                     .arg(back, 4, 16, QLatin1Char('0'))));
            ++checked;
        }
        QCOMPARE(checked, 65536 - 2 * 1023); // all but the NaN patterns (1023 payloads, two signs)
    }

    // Between every two adjacent positive finite halves: the exact midpoint goes to the even pattern,
    // the next float above it to the upper half, the next float below it to the lower half.
    void midpointsTieToEven() {
        for (quint16 lo = 0; lo < 0x7bff; ++lo) {
            const quint16 hi = lo + 1;
            const double mid = (halfValue(lo) + halfValue(hi)) / 2; // exact in float: 12 significant bits
            const float m = static_cast<float>(mid);
            QCOMPARE(static_cast<double>(m), mid);
            const quint16 even = (lo & 1u) ? hi : lo;
            if (rs::floatToHalf(m) != even)
                QFAIL(qPrintable(QStringLiteral("midpoint of 0x%1 and 0x%2 -> 0x%3")
                                     .arg(lo, 4, 16, QLatin1Char('0'))
                                     .arg(hi, 4, 16, QLatin1Char('0'))
                                     .arg(rs::floatToHalf(m), 4, 16, QLatin1Char('0'))));
            QCOMPARE(rs::floatToHalf(std::nextafter(m, 1e9f)), hi);
            QCOMPARE(rs::floatToHalf(std::nextafter(m, 0.0f)), lo);
            QCOMPARE(rs::floatToHalf(-m), quint16(even | 0x8000u));
        }
        // past the largest half the tie goes to inf, as IEEE overflow does
        QCOMPARE(rs::floatToHalf(std::nextafter(65520.0f, 0.0f)), quint16(0x7bff));
        QCOMPARE(rs::floatToHalf(65520.0f), quint16(0x7c00));
    }
};

QTEST_GUILESS_MAIN(TestHalf)
#include "tst_half.moc"
