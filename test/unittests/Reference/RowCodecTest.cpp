//===- RowCodecTest.cpp - Rotation and row encode/decode ------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace uq::ref;

namespace {
/// H_d / sqrt(d) x with H[i][j] = (-1)^popcount(i & j) (the Sylvester
/// matrix), summed in long double: an oracle independent of the butterfly.
std::vector<long double> hadamardOracle(const std::vector<float> &x) {
  const size_t d = x.size();
  std::vector<long double> y(d, 0.0L);
  for (size_t i = 0; i < d; ++i) {
    for (size_t j = 0; j < d; ++j) {
      long double s = (__builtin_popcountll(i & j) & 1) ? -1.0L : 1.0L;
      y[i] += s * x[j];
    }
    y[i] /= std::sqrt(static_cast<long double>(d));
  }
  return y;
}

std::vector<float> randomRow(int64_t d, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(d);
  for (float &v : x)
    v = dist(rng);
  return x;
}
} // namespace

TEST(Hadamard, ExactF64IsCorrectlyRoundedOnRandomRows) {
  for (int64_t d : {1, 2, 4, 32, 64, 128, 256}) {
    for (unsigned seed = 0; seed < 20; ++seed) {
      std::vector<float> x = randomRow(d, seed);
      std::vector<long double> y = hadamardOracle(x);
      std::vector<float> r = x;
      ASSERT_TRUE(hadamardRotate(r.data(), d).ok());
      for (int64_t i = 0; i < d; ++i) {
        // Double rounding (long double -> double -> float) can at most
        // differ from a single rounding by one ulp; expect <= 1 ulp.
        float ref = static_cast<float>(y[i]);
        float ulp = std::nextafter(std::fabs(ref), INFINITY) - std::fabs(ref);
        ASSERT_LE(std::fabs(r[i] - ref), ulp) << "d=" << d << " i=" << i;
      }
    }
  }
}

TEST(Hadamard, ButterflyF32IsCloseAndInvolutive) {
  for (int64_t d : {64, 128, 256}) {
    std::vector<float> x = randomRow(d, 5);
    std::vector<long double> y = hadamardOracle(x);
    std::vector<float> r = x;
    ASSERT_TRUE(
        hadamardRotate(r.data(), d, RotationArithmetic::ButterflyF32).ok());
    for (int64_t i = 0; i < d; ++i)
      EXPECT_NEAR(r[i], static_cast<double>(y[i]), 1e-5);
    // H / sqrt(d) is symmetric and orthogonal: applying it twice is I.
    std::vector<float> back = x;
    ASSERT_TRUE(hadamardRotate(back.data(), d).ok());
    ASSERT_TRUE(hadamardRotate(back.data(), d).ok());
    for (int64_t i = 0; i < d; ++i)
      EXPECT_NEAR(back[i], x[i], 1e-6);
  }
}

TEST(Hadamard, RejectsNonPowerOfTwo) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  Status st = hadamardRotate(x.data(), 6);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("power of two"), std::string::npos);
  EXPECT_EQ(x[0], 1.0f); // untouched
  EXPECT_FALSE(hadamardRotate(x.data(), 0).ok());
  EXPECT_FALSE(hadamardRotate(x.data(), -4).ok());
}

TEST(RowCodec, Sizes) {
  Format k = keyFormat(), v = valueFormat();
  EXPECT_EQ(codeBytes(v, 128), 64);
  EXPECT_EQ(scaleBytes(v, 128), 4);
  EXPECT_EQ(slotBytes(k, v, 64), 68);
  EXPECT_EQ(slotBytes(k, v, 128), 136);
  EXPECT_EQ(slotBytes(k, v, 256), 272);
  Format f8;
  f8.code = ElementCode::FP8_E4M3;
  EXPECT_EQ(codeBytes(f8, 128), 128);
  EXPECT_EQ(scaleBytes(f8, 128), 0);
  Format b16;
  b16.code = ElementCode::BF16;
  EXPECT_EQ(codeBytes(b16, 128), 256);
  EXPECT_EQ(scaleBytes(b16, 128), 0);
  // Invalid: not a multiple of the group size; rotation of a non-power-of-2.
  EXPECT_EQ(codeBytes(v, 48), -1);
  EXPECT_EQ(scaleBytes(v, 48), -1);
  EXPECT_EQ(codeBytes(k, 96), -1);
  EXPECT_TRUE(validateFormat(v, 96).ok());
  EXPECT_EQ(slotBytes(k, v, 96), -1);
  Format bad = v;
  bad.c = 0.0;
  EXPECT_FALSE(validateFormat(bad, 128).ok());
  bad = v;
  bad.groupSize = 0;
  EXPECT_FALSE(validateFormat(bad, 128).ok());
}

TEST(RowCodec, HandWorkedGroup) {
  // One group of 32: max 32 -> s = 0.156 * 32 = 4.992, log2 = 2.32,
  // e = floor(2.82) = 2, byte 129, elements divided by 4.
  std::vector<float> x(32, 0.0f);
  x[0] = 32;    // 8 -> saturates to 6 (code 7)
  x[1] = 10;    // 2.5 -> tie -> 2 (code 4)
  x[2] = -10;   // -2.5 -> tie -> -3 (code 13)
  x[3] = 2;     // 0.5 (code 1)
  x[4] = 1;     // 0.25 -> tie -> 0 (code 0)
  x[5] = -1;    // -0.25 -> tie -> -0.5 (code 9)
  x[6] = -0.0f; // code 0
  x[7] = 23;    // 5.75 -> 6 (code 7)
  uint8_t codes[16], scale;
  ASSERT_TRUE(encodeRow(valueFormat(), x.data(), 32, codes, &scale).ok());
  EXPECT_EQ(scale, 129);
  const uint8_t expect[16] = {0x47, 0x1D, 0x90, 0x70, 0, 0, 0, 0,
                              0,    0,    0,    0,    0, 0, 0, 0};
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(codes[i], expect[i]) << "byte " << i;
  float out[32];
  ASSERT_TRUE(decodeRow(valueFormat(), codes, &scale, 32, out).ok());
  const float dec[8] = {24, 8, -12, 2, 0, -2, 0, 24};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(out[i], dec[i]) << i;
  for (int i = 8; i < 32; ++i)
    EXPECT_EQ(out[i], 0.0f);
}

TEST(RowCodec, ZeroAndNonFiniteGroupsUseTheSentinel) {
  std::vector<float> x = randomRow(128, 3);
  for (int i = 0; i < 32; ++i)
    x[i] = 0.0f; // group 0: all zero
  x[40] = INFINITY;
  x[70] = NAN;
  uint8_t codes[64], scales[4];
  ASSERT_TRUE(encodeRow(valueFormat(), x.data(), 128, codes, scales).ok());
  for (int gidx : {0, 1, 2}) {
    EXPECT_EQ(scales[gidx], 0) << "group " << gidx;
    for (int b = gidx * 16; b < gidx * 16 + 16; ++b)
      EXPECT_EQ(codes[b], 0) << "byte " << b;
  }
  EXPECT_NE(scales[3], 0);
  float out[128];
  ASSERT_TRUE(decodeRow(valueFormat(), codes, scales, 128, out).ok());
  for (int i = 0; i < 96; ++i)
    EXPECT_EQ(out[i], 0.0f);
  // A key row with one Inf: the rotation spreads it into every group.
  std::vector<float> k = randomRow(128, 4);
  k[5] = -INFINITY;
  ASSERT_TRUE(encodeRow(keyFormat(), k.data(), 128, codes, scales).ok());
  for (int gidx = 0; gidx < 4; ++gidx)
    EXPECT_EQ(scales[gidx], 0);
}

TEST(RowCodec, KeyRowDecodesInTheRotatedDomain) {
  std::vector<float> x = randomRow(128, 11);
  std::vector<float> rot = x;
  ASSERT_TRUE(hadamardRotate(rot.data(), 128).ok());
  uint8_t codes[64], scales[4];
  ASSERT_TRUE(encodeRow(keyFormat(), x.data(), 128, codes, scales).ok());
  std::vector<float> out(128);
  ASSERT_TRUE(decodeRow(keyFormat(), codes, scales, 128, out.data()).ok());
  // Each decoded element is within half a level step of the rotated input:
  // the largest FP4 gap is 2 (4 -> 6) times the scale; saturation clips at
  // 6 * scale.
  for (int i = 0; i < 128; ++i) {
    float s = e8m0Decode(scales[i / 32]);
    float clipped = std::fmax(-6 * s, std::fmin(6 * s, rot[i]));
    EXPECT_LE(std::fabs(out[i] - clipped), 1.0f * s) << i;
  }
  // Same bytes as encoding the pre-rotated row with an unrotated format.
  uint8_t codes2[64], scales2[4];
  ASSERT_TRUE(
      encodeRow(valueFormat(), rot.data(), 128, codes2, scales2).ok());
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(codes[i], codes2[i]);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(scales[i], scales2[i]);
}

TEST(RowCodec, Fp8AndBf16Rows) {
  Format f8;
  f8.code = ElementCode::FP8_E4M3;
  std::vector<float> x = {1.0f, -2.5f, 448.0f, 1000.0f, 0.0f, 1.0625f};
  x.resize(32, 0.5f);
  std::vector<uint8_t> c(32);
  ASSERT_TRUE(encodeRow(f8, x.data(), 32, c.data(), nullptr).ok());
  EXPECT_EQ(c[0], 0x38);
  EXPECT_EQ(c[1], 0xC2); // -2.5 = -1.25 * 2
  EXPECT_EQ(c[2], 0x7E);
  EXPECT_EQ(c[3], 0x7F); // NaN on overflow by default
  EXPECT_EQ(c[5], 0x38);
  f8.fp8Overflow = Fp8Overflow::Saturate;
  ASSERT_TRUE(encodeRow(f8, x.data(), 32, c.data(), nullptr).ok());
  EXPECT_EQ(c[3], 0x7E);

  Format b16;
  b16.code = ElementCode::BF16;
  std::vector<uint8_t> cb(64);
  ASSERT_TRUE(encodeRow(b16, x.data(), 32, cb.data(), nullptr).ok());
  EXPECT_EQ(cb[0], 0x80); // 1.0 = 0x3F80, little endian
  EXPECT_EQ(cb[1], 0x3F);
  std::vector<float> out(32);
  ASSERT_TRUE(decodeRow(b16, cb.data(), nullptr, 32, out.data()).ok());
  EXPECT_EQ(out[1], -2.5f);
  EXPECT_EQ(out[3], 1000.0f);
}

TEST(RowCodec, RejectsBadSizes) {
  std::vector<float> x(48, 1.0f);
  uint8_t codes[64] = {}, scales[4] = {};
  EXPECT_FALSE(encodeRow(valueFormat(), x.data(), 48, codes, scales).ok());
  EXPECT_FALSE(encodeRow(valueFormat(), x.data(), -32, codes, scales).ok());
  EXPECT_FALSE(encodeRow(valueFormat(), x.data(), 32, codes, nullptr).ok());
  float out[48];
  EXPECT_FALSE(decodeRow(valueFormat(), codes, scales, 48, out).ok());
}

TEST(RowCodec, NearestEvenRowOption) {
  // s = 0.156 * 6.41 ~ 1 -> scale 1: the elements are coded as given.
  std::vector<float> x(32, 0.0f);
  x[0] = 6.41f;
  x[1] = -2.5f;
  x[2] = -0.25f;
  Format td = valueFormat(), ne = valueFormat();
  ne.rounding = Rounding::NearestEven;
  uint8_t a[16], b[16], sa, sb;
  ASSERT_TRUE(encodeRow(td, x.data(), 32, a, &sa).ok());
  ASSERT_TRUE(encodeRow(ne, x.data(), 32, b, &sb).ok());
  ASSERT_EQ(sa, 127);
  ASSERT_EQ(sb, 127);
  EXPECT_EQ(a[0], 0xD7); // 6 | -3 << 4
  EXPECT_EQ(b[0], 0xC7); // 6 | -2 << 4
  EXPECT_EQ(a[1] & 0xF, 9); // -0.25 -> -0.5
  EXPECT_EQ(b[1] & 0xF, 0); // -0.25 -> 0
}
