//===- ScalarTest.cpp - FP4 / E8M0 / FP8 / bf16 scalar conversions --------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Expected values come from docs/ultraquant-format.md (FP4 table, tie rule,
// scale rule), the OCP MX v1.0 spec (E8M0, E4M3FN) and brute-force oracles
// written here independently of lib/Reference.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace uq::ref;

namespace {
float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
uint32_t toBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

/// The 15 FP4 levels with a code for each (the format doc's table).
struct Level {
  float value;
  uint8_t code;
};
constexpr Level kLevels[15] = {{-6, 15}, {-4, 14},  {-3, 13}, {-2, 12},
                               {-1.5, 11}, {-1, 10}, {-0.5, 9}, {0, 0},
                               {0.5, 1},  {1, 2},    {1.5, 3},  {2, 4},
                               {3, 5},    {4, 6},    {6, 7}};

/// Oracle: nearest level by distance; on a tie the lower level (TiesDown)
/// or the level whose code has bit 0 clear (NearestEven).
uint8_t fp4Oracle(float x, Rounding r) {
  double best = INFINITY;
  int bestI = -1;
  for (int i = 0; i < 15; ++i) {
    double dist = std::fabs(static_cast<double>(x) - kLevels[i].value);
    if (dist < best) {
      best = dist;
      bestI = i;
    } else if (dist == best && r == Rounding::NearestEven &&
               (kLevels[bestI].code & 1) && !(kLevels[i].code & 1)) {
      bestI = i; // Ties to even; TiesDown keeps the lower (earlier) level.
    }
  }
  return kLevels[bestI].code;
}

/// Oracle for E4M3FN decode through pow() (hand formula of the OCP spec).
double e4m3Oracle(uint8_t b) {
  int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  double mag = e == 0 ? (m / 8.0) * std::pow(2.0, -6)
                      : (1.0 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -mag : mag;
}
bool e4m3IsNaN(uint8_t b) { return (b & 0x7F) == 0x7F; }
} // namespace

//===----------------------------------------------------------------------===//
// FP4 E2M1
//===----------------------------------------------------------------------===//

TEST(Fp4, DecodeAllSixteenCodes) {
  const float table[16] = {0,  0.5f,  1,  1.5f,  2,  3,  4,  6,
                           -0, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(fp4Decode(static_cast<uint8_t>(c)), table[c]) << "code " << c;
    EXPECT_EQ(std::signbit(fp4Decode(static_cast<uint8_t>(c))), c >= 8)
        << "code " << c;
  }
  // Only the low 4 bits matter.
  EXPECT_EQ(fp4Decode(0xF7), 6.0f);
}

TEST(Fp4, FormatTieCases) {
  EXPECT_EQ(fp4Encode(0.25f), 0);   // +0.25 -> 0
  EXPECT_EQ(fp4Encode(-0.25f), 9);  // -0.25 -> -0.5
  EXPECT_EQ(fp4Encode(2.5f), 4);    // +2.5 -> 2
  EXPECT_EQ(fp4Encode(-2.5f), 13);  // -2.5 -> -3
  EXPECT_EQ(fp4Encode(5.0f), 6);    // +5 -> 4
  EXPECT_EQ(fp4Encode(-5.0f), 15);  // -5 -> -6
  EXPECT_EQ(fp4Encode(0.75f), 1);   // -> 0.5
  EXPECT_EQ(fp4Encode(-0.75f), 10); // -> -1
  EXPECT_EQ(fp4Encode(1.75f), 3);   // -> 1.5
  EXPECT_EQ(fp4Encode(3.5f), 5);    // -> 3
}

TEST(Fp4, ZeroSaturationAndNaN) {
  EXPECT_EQ(fp4Encode(0.0f), 0);
  EXPECT_EQ(fp4Encode(-0.0f), 0); // never code 8
  EXPECT_EQ(fp4Encode(-0.2f), 0);
  EXPECT_EQ(fp4Encode(std::nextafter(-0.25f, 0.0f)), 0);
  EXPECT_EQ(fp4Encode(std::nextafter(0.25f, 1.0f)), 1);
  EXPECT_EQ(fp4Encode(6.0f), 7);
  EXPECT_EQ(fp4Encode(6.5f), 7);
  EXPECT_EQ(fp4Encode(1e30f), 7);
  EXPECT_EQ(fp4Encode(INFINITY), 7);
  EXPECT_EQ(fp4Encode(-7.0f), 15);
  EXPECT_EQ(fp4Encode(-INFINITY), 15);
  EXPECT_EQ(fp4Encode(NAN), 0);
  EXPECT_EQ(fp4Encode(-0.0f, Rounding::NearestEven), 0);
  EXPECT_EQ(fp4Encode(-0.25f, Rounding::NearestEven), 0);
}

TEST(Fp4, RoundTripEveryCode) {
  for (int c = 0; c < 16; ++c) {
    uint8_t expect = c == 8 ? 0 : static_cast<uint8_t>(c);
    EXPECT_EQ(fp4Encode(fp4Decode(static_cast<uint8_t>(c))), expect);
    EXPECT_EQ(fp4Encode(fp4Decode(static_cast<uint8_t>(c)),
                        Rounding::NearestEven),
              expect);
  }
}

TEST(Fp4, NearestEvenTies) {
  EXPECT_EQ(fp4Encode(0.25f, Rounding::NearestEven), 0);   // 0 vs 0.5
  EXPECT_EQ(fp4Encode(0.75f, Rounding::NearestEven), 2);   // 0.5 vs 1
  EXPECT_EQ(fp4Encode(1.25f, Rounding::NearestEven), 2);   // 1 vs 1.5
  EXPECT_EQ(fp4Encode(1.75f, Rounding::NearestEven), 4);   // 1.5 vs 2
  EXPECT_EQ(fp4Encode(2.5f, Rounding::NearestEven), 4);    // 2 vs 3
  EXPECT_EQ(fp4Encode(3.5f, Rounding::NearestEven), 6);    // 3 vs 4
  EXPECT_EQ(fp4Encode(5.0f, Rounding::NearestEven), 6);    // 4 vs 6
  EXPECT_EQ(fp4Encode(-2.5f, Rounding::NearestEven), 12);  // -2
  EXPECT_EQ(fp4Encode(-5.0f, Rounding::NearestEven), 14);  // -4
}

TEST(Fp4, MatchesBruteForceOracle) {
  // Every midpoint and its float neighbours, plus a dense random sweep.
  std::vector<float> xs;
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
  for (float m : mids)
    for (float s : {1.0f, -1.0f}) {
      xs.push_back(s * m);
      xs.push_back(std::nextafter(s * m, INFINITY));
      xs.push_back(std::nextafter(s * m, -INFINITY));
    }
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  for (int i = 0; i < 200000; ++i)
    xs.push_back(dist(rng));
  for (float x : xs)
    for (Rounding r : {Rounding::TiesDown, Rounding::NearestEven}) {
      uint8_t expect = fp4Oracle(x, r);
      ASSERT_EQ(fp4Encode(x, r), expect)
          << "x = " << x << " rounding " << static_cast<int>(r);
    }
}

//===----------------------------------------------------------------------===//
// UE8M0
//===----------------------------------------------------------------------===//

TEST(E8m0, DecodeAll256Bytes) {
  for (int b = 0; b < 255; ++b) {
    double expect = std::ldexp(1.0, b - 127);
    EXPECT_EQ(static_cast<double>(e8m0Decode(static_cast<uint8_t>(b))),
              expect)
        << "byte " << b;
  }
  EXPECT_TRUE(std::isnan(e8m0Decode(255)));
}

TEST(E8m0, ScaleByteSentinels) {
  EXPECT_EQ(ue8m0ScaleByte(0.0f), 0);
  EXPECT_EQ(ue8m0ScaleByte(-0.0f), 0);
  EXPECT_EQ(ue8m0ScaleByte(INFINITY), 0);
  EXPECT_EQ(ue8m0ScaleByte(-INFINITY), 0);
  EXPECT_EQ(ue8m0ScaleByte(NAN), 0);
}

TEST(E8m0, ScaleByteClamping) {
  // log2 far below -126: the smallest subnormal, 0.156 * 2^-149 -> clamp.
  EXPECT_EQ(ue8m0ScaleByte(fromBits(1)), 1);
  EXPECT_EQ(ue8m0ScaleByte(1e-40f), 1);
  // c = 1, m = FLT_MAX: log2 ~ 128 -> e = 128 -> clamp to 127 -> 254.
  EXPECT_EQ(ue8m0ScaleByte(std::numeric_limits<float>::max(), 1.0), 254);
  // float(c) * m overflows to +inf: still clamps to 127, never 255.
  EXPECT_EQ(ue8m0ScaleByte(1e38f, 1e10), 254);
  // Largest byte reachable with the default c from a finite max.
  // 0.156 * FLT_MAX = 2^127.99 * 0.156 -> log2 = 125.31 -> e = 125.
  EXPECT_EQ(ue8m0ScaleByte(std::numeric_limits<float>::max()), 252);
}

TEST(E8m0, ScaleByteLogDomainHalfUp) {
  // With c = 1 the decision is at s = sqrt(2) * 2^k. The float just below
  // sqrt(2) has log2 = 0.49999997 -> e = 0; the float just above -> e = 1.
  const float below = fromBits(0x3FB504F3), above = fromBits(0x3FB504F4);
  ASSERT_LT(static_cast<double>(below), std::sqrt(2.0));
  ASSERT_GT(static_cast<double>(above), std::sqrt(2.0));
  for (int k = -100; k <= 100; k += 7) {
    EXPECT_EQ(ue8m0ScaleByte(std::ldexp(below, k), 1.0), 127 + k) << k;
    EXPECT_EQ(ue8m0ScaleByte(std::ldexp(above, k), 1.0), 128 + k) << k;
    EXPECT_EQ(ue8m0ScaleByte(std::ldexp(1.0f, k), 1.0), 127 + k) << k;
  }
  // The paper constant: s = 0.156 * m. m = 1/0.156 ~ 6.41 -> s ~ 1 -> 127.
  EXPECT_EQ(ue8m0ScaleByte(6.41f), 127);
  EXPECT_EQ(ue8m0ScaleByte(6.0f), 127);   // s = 0.936, log2 = -0.095
  EXPECT_EQ(ue8m0ScaleByte(32.0f), 129);  // s = 4.99, log2 = 2.32
  EXPECT_EQ(ue8m0ScaleByte(10.0f), 128);  // s = 1.56, log2 = 0.64
}

TEST(E8m0, ScaleByteMatchesLongDoubleOracle) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<double> lg(-140.0, 128.0);
  for (int i = 0; i < 100000; ++i) {
    float m = static_cast<float>(std::exp2(lg(rng)));
    if (m == 0.0f || !std::isfinite(m))
      continue;
    float s = 0.156f * m;
    long double l = std::log2(static_cast<long double>(s)) + 0.5L;
    if (s == 0.0f || std::fabs(l - std::floor(l + 0.5L)) < 1e-12L)
      continue; // Too close to the decision to trust the oracle.
    long double e = std::floor(l);
    e = std::min(127.0L, std::max(-126.0L, e));
    ASSERT_EQ(ue8m0ScaleByte(m), static_cast<int>(e) + 127) << "m = " << m;
  }
}

//===----------------------------------------------------------------------===//
// OCP FP8 E4M3FN
//===----------------------------------------------------------------------===//

TEST(Fp8E4m3, DecodeAll256Bytes) {
  for (int b = 0; b < 256; ++b) {
    float f = fp8e4m3Decode(static_cast<uint8_t>(b));
    if (e4m3IsNaN(static_cast<uint8_t>(b))) {
      EXPECT_TRUE(std::isnan(f)) << "byte " << b;
      continue;
    }
    EXPECT_EQ(static_cast<double>(f), e4m3Oracle(static_cast<uint8_t>(b)))
        << "byte " << b;
  }
  // A few hand-checked values of the OCP table.
  EXPECT_EQ(fp8e4m3Decode(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(fp8e4m3Decode(0x80)));
  EXPECT_EQ(fp8e4m3Decode(0x01), 0.001953125f); // 2^-9
  EXPECT_EQ(fp8e4m3Decode(0x08), 0.015625f);    // 2^-6
  EXPECT_EQ(fp8e4m3Decode(0x38), 1.0f);
  EXPECT_EQ(fp8e4m3Decode(0x3F), 1.875f);
  EXPECT_EQ(fp8e4m3Decode(0x40), 2.0f);
  EXPECT_EQ(fp8e4m3Decode(0x7E), 448.0f);
  EXPECT_EQ(fp8e4m3Decode(0xFE), -448.0f);
  EXPECT_EQ(fp8e4m3Decode(0x77), 240.0f);
}

TEST(Fp8E4m3, RoundTripEveryFiniteByte) {
  for (int b = 0; b < 256; ++b) {
    if (e4m3IsNaN(static_cast<uint8_t>(b)))
      continue;
    float f = fp8e4m3Decode(static_cast<uint8_t>(b));
    EXPECT_EQ(fp8e4m3Encode(f), b) << "byte " << b;
    EXPECT_EQ(fp8e4m3Encode(f, Fp8Overflow::Saturate), b) << "byte " << b;
  }
}

TEST(Fp8E4m3, RoundNearestEvenTies) {
  EXPECT_EQ(fp8e4m3Encode(1.0625f), 0x38);  // 1 vs 1.125 -> 1 (even)
  EXPECT_EQ(fp8e4m3Encode(1.1875f), 0x3A);  // 1.125 vs 1.25 -> 1.25
  EXPECT_EQ(fp8e4m3Encode(std::nextafter(1.0625f, 2.0f)), 0x39);
  EXPECT_EQ(fp8e4m3Encode(-1.0625f), 0xB8);
  EXPECT_EQ(fp8e4m3Encode(0.0009765625f), 0x00); // 2^-10: 0 vs 2^-9
  EXPECT_EQ(fp8e4m3Encode(0.0029296875f), 0x02); // 3*2^-10: 1 vs 2 (*2^-9)
  EXPECT_EQ(fp8e4m3Encode(1e-6f), 0x00);
  EXPECT_EQ(fp8e4m3Encode(-1e-6f), 0x80);
  // 15*2^-10: between 7*2^-9 (0x07) and 2^-6 (0x08) -> 0x08 (even).
  EXPECT_EQ(fp8e4m3Encode(15.0f / 1024.0f), 0x08);
  EXPECT_EQ(fp8e4m3Encode(232.0f), 0x76); // 224 vs 240 -> 224 (0x76 even)
  EXPECT_EQ(fp8e4m3Encode(248.0f), 0x78); // 240 vs 256 -> 256
}

TEST(Fp8E4m3, OverflowNaNVersusSaturate) {
  EXPECT_EQ(fp8e4m3Encode(448.0f), 0x7E);
  EXPECT_EQ(fp8e4m3Encode(449.0f), 0x7E);
  EXPECT_EQ(fp8e4m3Encode(464.0f), 0x7E); // tie 448 vs (480): even 448
  EXPECT_EQ(fp8e4m3Encode(465.0f), 0x7F);
  EXPECT_EQ(fp8e4m3Encode(465.0f, Fp8Overflow::Saturate), 0x7E);
  EXPECT_EQ(fp8e4m3Encode(-1000.0f), 0xFF);
  EXPECT_EQ(fp8e4m3Encode(-1000.0f, Fp8Overflow::Saturate), 0xFE);
  EXPECT_EQ(fp8e4m3Encode(INFINITY), 0x7F);
  EXPECT_EQ(fp8e4m3Encode(INFINITY, Fp8Overflow::Saturate), 0x7E);
  EXPECT_EQ(fp8e4m3Encode(-INFINITY, Fp8Overflow::Saturate), 0xFE);
  EXPECT_EQ(fp8e4m3Encode(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(fp8e4m3Encode(NAN, Fp8Overflow::Saturate) & 0x7F, 0x7F);
  EXPECT_EQ(fp8e4m3Encode(3.4e38f), 0x7F);
}

TEST(Fp8E4m3, MatchesBruteForceOracle) {
  // Nearest finite byte by distance, ties to the even mantissa, overflow to
  // NaN above the midpoint 464.
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> lg(-12.0, 9.0);
  for (int i = 0; i < 50000; ++i) {
    float x = static_cast<float>(std::exp2(lg(rng))) * (i % 2 ? -1.0f : 1.0f);
    uint8_t expect = 0;
    double best = INFINITY;
    for (int b = 0; b < 256; ++b) {
      if (e4m3IsNaN(static_cast<uint8_t>(b)))
        continue;
      double v = e4m3Oracle(static_cast<uint8_t>(b));
      if (std::signbit(v) != std::signbit(x))
        continue;
      double dist = std::fabs(v - x);
      if (dist < best || (dist == best && (b & 1) == 0)) {
        best = dist;
        expect = static_cast<uint8_t>(b);
      }
    }
    if (std::fabs(x) > 464.0f)
      expect = x < 0 ? 0xFF : 0x7F;
    ASSERT_EQ(fp8e4m3Encode(x), expect) << "x = " << x;
  }
}

//===----------------------------------------------------------------------===//
// bf16
//===----------------------------------------------------------------------===//

TEST(Bf16, WidenIsExactAndRoundTrips) {
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(bf16ToFloat(0x7F80), INFINITY);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bf16ToFloat(static_cast<uint16_t>(b));
    ASSERT_EQ(toBits(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToBf16(f), b) << std::hex << b;
    }
  }
}

TEST(Bf16, RoundNearestEvenTiesAndNaN) {
  EXPECT_EQ(floatToBf16(fromBits(0x3F808000)), 0x3F80); // tie -> even
  EXPECT_EQ(floatToBf16(fromBits(0x3F818000)), 0x3F82); // tie -> even
  EXPECT_EQ(floatToBf16(fromBits(0x3F808001)), 0x3F81); // above tie
  EXPECT_EQ(floatToBf16(fromBits(0x3F807FFF)), 0x3F80); // below tie
  EXPECT_EQ(floatToBf16(fromBits(0xBF818000)), 0xBF82);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBf16(-INFINITY), 0xFF80);
  uint16_t n = floatToBf16(fromBits(0x7F800001)); // signalling, low payload
  EXPECT_TRUE(std::isnan(bf16ToFloat(n)));
  uint16_t nn = floatToBf16(fromBits(0xFFC00000));
  EXPECT_TRUE(std::isnan(bf16ToFloat(nn)));
  EXPECT_TRUE(nn & 0x8000);
}
