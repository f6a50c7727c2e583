//===- ChannelMeanTest.cpp - Cache write / attention with channel means ---===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// uq.cache_write's k_mean / v_mean and the attention ops' k_mean / v_mean
// (the accuracy study's kmean / vmean, docs/accuracy.md): the cache codes
// x - mean, attention adds the mean back to every decoded row. Checked
// against quantities computed independently: a row equal to its mean codes
// as zeros, and rows whose deviation from the mean is exactly representable
// in FP4 give the attention of the unquantised rows (a BF16 cache).
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace uq::ref;

namespace {
Format fp4(double c = 1.0 / 6.0) {
  Format f;
  f.c = c;
  return f;
}
Format bf16() {
  Format f;
  f.code = ElementCode::BF16;
  return f;
}

/// Rows [n, heads, d] = mean[h] + dev, where every group of 32 of dev holds
/// FP4 levels times 2^e with one element at 6 * 2^e: with c = 1/6 the scale
/// byte is 2^e (float(1/6) * 6 rounds to 1) and the deviations code
/// exactly. Means are multiples of 2^-4 in [-4, 4], so mean + dev and the
/// decoded row + mean are exact in float and in bf16.
std::vector<float> exactRows(int64_t n, int64_t heads, int64_t d,
                             const std::vector<float> &mean, unsigned seed) {
  static const float kLevels[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  std::mt19937 rng(seed);
  std::vector<float> x(n * heads * d);
  for (int64_t r = 0; r < n * heads; ++r) {
    int64_t h = r % heads;
    for (int64_t g = 0; g < d / 32; ++g) {
      int e = static_cast<int>(rng() % 3) - 1; // 2^-1 .. 2^1
      for (int64_t i = 0; i < 32; ++i) {
        float lv = i == 0 ? 6.0f : kLevels[rng() % 8];
        float sign = (rng() & 1) ? -1.0f : 1.0f;
        x[r * d + g * 32 + i] = mean[h * d + g * 32 + i] + sign * std::ldexp(lv, e);
      }
    }
  }
  return x;
}

std::vector<float> meanOf(int64_t heads, int64_t d, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> m(heads * d);
  for (float &v : m)
    v = static_cast<float>(static_cast<int>(rng() % 129) - 64) / 16.0f;
  return m;
}
} // namespace

TEST(ChannelMean, RowEqualToItsMeanCodesAsZeros) {
  const int64_t d = 64, heads = 2;
  CacheGeometry g{1, 4, heads, d, 68};
  std::vector<float> k = meanOf(heads, d, 1), v = meanOf(heads, d, 2);
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0xAB);
  const int64_t slot = 2;
  Format kf = fp4(), vf = fp4();
  kf.rotate = true;
  ASSERT_TRUE(cacheWrite(kf, vf, g, k.data(), v.data(), &slot, 1, cache.data(),
                         k.data(), v.data())
                  .ok());
  // Both heads of slot 2: every code and scale byte is the zero sentinel.
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < 68; ++i)
      EXPECT_EQ(cache[(2 * heads + h) * 68 + i], 0) << h << " " << i;
  // Slot 0 untouched.
  EXPECT_EQ(cache[0], 0xAB);
}

TEST(ChannelMean, CacheWriteCodesTheDeviation) {
  // The bytes written with means equal those of the deviations written
  // without (x - mean computed here).
  const int64_t d = 128, heads = 2, n = 5;
  CacheGeometry g{2, 4, heads, d, 136};
  std::vector<float> mk = meanOf(heads, d, 3), mv = meanOf(heads, d, 4);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> k(n * heads * d), v(k.size()), kd(k.size()), vd(k.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = dist(rng);
    v[i] = dist(rng);
    kd[i] = k[i] - mk[i % (heads * d)];
    vd[i] = v[i] - mv[i % (heads * d)];
  }
  const int64_t slots[n] = {0, 3, -1, 7, 4};
  Format kf = keyFormat(), vf = valueFormat();
  std::vector<uint8_t> a(static_cast<size_t>(cacheBytes(g)), 0),
      b(a.size(), 0);
  ASSERT_TRUE(cacheWrite(kf, vf, g, k.data(), v.data(), slots, n, a.data(),
                         mk.data(), mv.data())
                  .ok());
  ASSERT_TRUE(
      cacheWrite(kf, vf, g, kd.data(), vd.data(), slots, n, b.data()).ok());
  EXPECT_EQ(a, b);
}

TEST(ChannelMean, AttentionAddsTheMeansBack) {
  // Deviations exactly representable: the attention over the FP4 cache with
  // means equals the attention over a BF16 cache of the original rows, with
  // and without sinks (the sink compares with the full logits, mean term
  // included), for both query precisions' shared f32 path.
  const int64_t d = 64, heads = 2, hq = 4, n = 9, bs = 4;
  std::vector<float> mk = meanOf(heads, d, 6), mv = meanOf(heads, d, 7);
  std::vector<float> k = exactRows(n, heads, d, mk, 8);
  std::vector<float> v = exactRows(n, heads, d, mv, 9);
  CacheGeometry g{3, bs, heads, d, 2 * d * 2};
  // Token t lives in block table[t / bs] (blocks handed out in a shuffled
  // order), offset t % bs.
  const int32_t table[3] = {2, 0, 1};
  std::vector<int64_t> slots(n);
  for (int64_t t = 0; t < n; ++t)
    slots[t] = table[t / bs] * bs + t % bs;
  std::vector<uint8_t> q4(static_cast<size_t>(cacheBytes(g)), 0),
      q16(q4.size(), 0);
  ASSERT_TRUE(cacheWrite(fp4(), fp4(), g, k.data(), v.data(), slots.data(), n,
                         q4.data(), mk.data(), mv.data())
                  .ok());
  ASSERT_TRUE(cacheWrite(bf16(), bf16(), g, k.data(), v.data(), slots.data(),
                         n, q16.data())
                  .ok());
  std::mt19937 rng(10);
  std::normal_distribution<float> dist(0.0f, 0.3f);
  std::vector<float> q(hq * d), sinks(hq);
  for (float &x : q)
    x = dist(rng);
  for (float &x : sinks)
    x = 4.0f * dist(rng);
  const int32_t len = n;
  for (bool withSinks : {false, true}) {
    SCOPED_TRACE(withSinks ? "sinks" : "no sinks");
    AttentionParams p;
    p.softmaxScale = 0.125f;
    p.queryPrecision = QueryPrecision::F32;
    std::vector<float> expect(hq * d), got(hq * d), without(hq * d);
    ASSERT_TRUE(decodeAttention(bf16(), bf16(), g, q16.data(), p, q.data(), 1,
                                hq, table, 3, &len,
                                withSinks ? sinks.data() : nullptr,
                                expect.data())
                    .ok());
    ASSERT_TRUE(decodeAttention(fp4(), fp4(), g, q4.data(), p, q.data(), 1, hq,
                                table, 3, &len,
                                withSinks ? sinks.data() : nullptr,
                                without.data())
                    .ok());
    p.kMean = mk.data();
    p.vMean = mv.data();
    ASSERT_TRUE(decodeAttention(fp4(), fp4(), g, q4.data(), p, q.data(), 1, hq,
                                table, 3, &len,
                                withSinks ? sinks.data() : nullptr, got.data())
                    .ok());
    double err = 0, ref = 0, errWithout = 0;
    for (int64_t i = 0; i < hq * d; ++i) {
      err += (double(got[i]) - expect[i]) * (double(got[i]) - expect[i]);
      errWithout +=
          (double(without[i]) - expect[i]) * (double(without[i]) - expect[i]);
      ref += double(expect[i]) * expect[i];
    }
    // Same rows, same arithmetic order: equal up to float rounding of the
    // dot products (the BF16 path decodes the same values).
    EXPECT_LT(std::sqrt(err / ref), 1e-6);
    // Reading the cache without the means is far off.
    EXPECT_GT(std::sqrt(errWithout / ref), 0.1);
  }
}
