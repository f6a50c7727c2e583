//===- QueryScaleTest.cpp - FP8 queries with per-32 UE8M0 scales ----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// QueryPrecision::FP8_E4M3_Scaled (query_precision fp8_e4m3_scaled): each
// 32 channels of the rotated query are coded as fp8(q / 2^e) * 2^e, e the
// smallest exponent with absmax / 2^e <= 448. Expected values by hand.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace uq::ref;

TEST(QueryScale, BlockExponent) {
  EXPECT_EQ(fp8BlockExponent(448.0f), 0);   // 448 / 1 fits
  EXPECT_EQ(fp8BlockExponent(449.0f), 1);   // 224.5
  EXPECT_EQ(fp8BlockExponent(896.0f), 1);   // exactly 448 * 2
  EXPECT_EQ(fp8BlockExponent(10.0f), -5);   // 320
  EXPECT_EQ(fp8BlockExponent(14.0f), -5);   // 448 exactly
  EXPECT_EQ(fp8BlockExponent(14.001f), -4); // just above: 224.0...
  EXPECT_EQ(fp8BlockExponent(1000.0f), 2);  // 250
  EXPECT_EQ(fp8BlockExponent(3e38f), 120);  // 3e38 / 2^120 = 225.7
  EXPECT_EQ(fp8BlockExponent(1e-40f), -127); // subnormal: clamped
  EXPECT_EQ(fp8BlockExponent(0.0f), 0);
  EXPECT_EQ(fp8BlockExponent(std::numeric_limits<float>::infinity()), 0);
  EXPECT_EQ(fp8BlockExponent(std::nanf("")), 0);
}

TEST(QueryScale, LargeQueriesStayFinite) {
  // The query that overflows with scale 1 (all 1000: the rotation puts 8000
  // in channel 0) is finite with per-32 scales and close to the f32 query's
  // attention; a small query gives the scale-1 result exactly when no
  // element is subnormal in E4M3 (every |q'| >= 2^-6 here).
  const int64_t d = 64;
  CacheGeometry g{1, 4, 1, d, 68};
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(3 * d), v(3 * d);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = dist(rng);
    v[i] = dist(rng);
  }
  const int64_t slots[3] = {0, 1, 2};
  ASSERT_TRUE(cacheWrite(keyFormat(), valueFormat(), g, k.data(), v.data(),
                         slots, 3, cache.data())
                  .ok());
  const int32_t table = 0, len = 3;
  auto run = [&](const std::vector<float> &q, QueryPrecision qp) {
    AttentionParams p;
    p.softmaxScale = 1e-3f;
    p.queryPrecision = qp;
    std::vector<float> out(d);
    EXPECT_TRUE(decodeAttention(keyFormat(), valueFormat(), g, cache.data(), p,
                                q.data(), 1, 1, &table, 1, &len, nullptr,
                                out.data())
                    .ok());
    return out;
  };
  std::vector<float> big(d, 1000.0f);
  EXPECT_TRUE(std::isnan(run(big, QueryPrecision::FP8_E4M3)[0]));
  std::vector<float> scaled = run(big, QueryPrecision::FP8_E4M3_Scaled);
  std::vector<float> exact = run(big, QueryPrecision::F32);
  for (int64_t i = 0; i < d; ++i) {
    ASSERT_TRUE(std::isfinite(scaled[i]));
    // Channel 0 (8000, e = 5: 250 rounds to 256) is coded as 8192 (+2.4%),
    // the other channels are 0: the logits differ by 2.4%, the
    // probabilities a little, the output stays within 0.05 of f32's.
    EXPECT_NEAR(scaled[i], exact[i], 0.05f) << i;
  }
  // Moderate queries: scaling by a power of two keeps E4M3's relative
  // precision, so the two codings differ only for elements that are
  // subnormal in one of them: the outputs agree to well under 0.1%.
  std::vector<float> q(d);
  for (float &x : q)
    x = 3.0f * dist(rng);
  std::vector<float> a = run(q, QueryPrecision::FP8_E4M3);
  std::vector<float> b = run(q, QueryPrecision::FP8_E4M3_Scaled);
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < d; ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    ref += double(a[i]) * a[i];
  }
  EXPECT_LT(std::sqrt(diff / ref), 1e-3);
}
