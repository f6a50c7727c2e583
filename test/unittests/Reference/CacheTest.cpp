//===- CacheTest.cpp - Paged cache write and decode attention -------------===//
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
std::vector<float> randomVec(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float &v : x)
    v = dist(rng);
  return x;
}

/// Offset of (slot, head) computed from the vLLM layout
/// [numBlocks, blockSize, numKvHeads, slotBytes].
size_t layoutOffset(const CacheGeometry &g, int64_t block, int64_t off,
                    int64_t head) {
  return static_cast<size_t>(
      ((block * g.blockSize + off) * g.numKvHeads + head) * g.slotBytes);
}

Format bf16Format() {
  Format f;
  f.code = ElementCode::BF16;
  return f;
}
} // namespace

TEST(CacheWrite, MultipleBlocksPaddedSlotsAndSkippedTokens) {
  const Format kf = keyFormat(), vf = valueFormat();
  // slotBytes padded from 136 to 144.
  CacheGeometry g{3, 4, 2, 128, 144};
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0xAB);
  ASSERT_EQ(cache.size(), 3u * 4 * 2 * 144);
  const int64_t numTokens = 4;
  std::vector<float> k = randomVec(numTokens * 2 * 128, 1);
  std::vector<float> v = randomVec(numTokens * 2 * 128, 2);
  // Token 1 is padding; token 3 goes to block 2 offset 3 (the last slot).
  const int64_t slots[numTokens] = {5, -1, 0, 11};
  ASSERT_TRUE(cacheWrite(kf, vf, g, k.data(), v.data(), slots, numTokens,
                         cache.data())
                  .ok());

  std::vector<bool> written(cache.size(), false);
  for (int64_t t : {0, 2, 3}) {
    int64_t block = slots[t] / 4, off = slots[t] % 4;
    for (int64_t h = 0; h < 2; ++h) {
      uint8_t kc[64], ks[4], vc[64], vs[4];
      ASSERT_TRUE(encodeRow(kf, &k[(t * 2 + h) * 128], 128, kc, ks).ok());
      ASSERT_TRUE(encodeRow(vf, &v[(t * 2 + h) * 128], 128, vc, vs).ok());
      size_t base = layoutOffset(g, block, off, h);
      for (int i = 0; i < 64; ++i) {
        EXPECT_EQ(cache[base + i], kc[i]);
        EXPECT_EQ(cache[base + 68 + i], vc[i]);
      }
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(cache[base + 64 + i], ks[i]);
        EXPECT_EQ(cache[base + 132 + i], vs[i]);
      }
      for (int i = 0; i < 136; ++i)
        written[base + i] = true;
    }
  }
  // Everything else (skipped token, unused slots, the 8 pad bytes of every
  // slot) is untouched.
  for (size_t i = 0; i < cache.size(); ++i)
    if (!written[i]) {
      ASSERT_EQ(cache[i], 0xAB) << "byte " << i;
    }
}

TEST(CacheWrite, SlotBeyondTheCacheIsReportedAndWritesNothing) {
  CacheGeometry g{2, 4, 1, 64, 68};
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0xCD);
  std::vector<float> k = randomVec(2 * 64, 3), v = randomVec(2 * 64, 4);
  const int64_t slots[2] = {0, 8}; // 8 == numBlocks * blockSize
  Status st = cacheWrite(keyFormat(), valueFormat(), g, k.data(), v.data(),
                         slots, 2, cache.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("beyond"), std::string::npos);
  for (uint8_t b : cache)
    ASSERT_EQ(b, 0xCD);
  // All-negative mapping: nothing to do, success.
  const int64_t skip[2] = {-1, -100};
  EXPECT_TRUE(cacheWrite(keyFormat(), valueFormat(), g, k.data(), v.data(),
                         skip, 2, cache.data())
                  .ok());
  for (uint8_t b : cache)
    ASSERT_EQ(b, 0xCD);
}

TEST(CacheWrite, RejectsBadGeometry) {
  std::vector<float> k(128), v(128);
  std::vector<uint8_t> cache(4096);
  const int64_t slot = 0;
  CacheGeometry small{1, 1, 1, 128, 135}; // needs 136
  EXPECT_FALSE(cacheWrite(keyFormat(), valueFormat(), small, k.data(),
                          v.data(), &slot, 1, cache.data())
                   .ok());
  CacheGeometry zero{0, 1, 1, 128, 136};
  EXPECT_FALSE(validateGeometry(keyFormat(), valueFormat(), zero).ok());
  CacheGeometry odd{1, 1, 1, 96, 136}; // rotation needs a power of two
  EXPECT_FALSE(validateGeometry(keyFormat(), valueFormat(), odd).ok());
  CacheGeometry ok{1, 1, 1, 128, 136};
  EXPECT_TRUE(validateGeometry(keyFormat(), valueFormat(), ok).ok());
  EXPECT_FALSE(cacheWrite(keyFormat(), valueFormat(), ok, k.data(), v.data(),
                          &slot, -1, cache.data())
                   .ok());
}

// Attention on exactly representable bf16 K/V with an f32 query: the
// expected output is the softmax written out by hand.
TEST(DecodeAttention, HandComputedSoftmaxWithSink) {
  const int64_t d = 32;
  Format kf = bf16Format(), vf = bf16Format();
  CacheGeometry g{2, 2, 1, d, 2 * d * 2};
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0);
  // Three tokens: keys e0, e1, e0+e1; values 1, 2, 4 times e2.
  std::vector<float> k(3 * d, 0.0f), v(3 * d, 0.0f);
  k[0] = 1;
  k[d + 1] = 1;
  k[2 * d] = 1;
  k[2 * d + 1] = 1;
  v[2] = 1;
  v[d + 2] = 2;
  v[2 * d + 2] = 4;
  // Tokens in block 1 then block 0 (the table says [1, 0]).
  const int64_t slots[3] = {2, 3, 0};
  ASSERT_TRUE(
      cacheWrite(kf, vf, g, k.data(), v.data(), slots, 3, cache.data()).ok());
  std::vector<float> q(d, 0.0f);
  q[0] = 1.0f;
  q[1] = 2.0f;
  const int32_t table[2] = {1, 0};
  const int32_t len = 3;
  AttentionParams p;
  p.softmaxScale = 0.5f;
  p.queryPrecision = QueryPrecision::F32;
  // Logits 0.5, 1.0, 1.5; sink 0.25.
  const double l[3] = {0.5, 1.0, 1.5}, sink = 0.25;
  for (bool withSink : {false, true}) {
    for (bool f64 : {false, true}) {
      p.accumulateF64 = f64;
      std::vector<float> out(d, -1.0f);
      const float sinkF = static_cast<float>(sink);
      ASSERT_TRUE(decodeAttention(kf, vf, g, cache.data(), p, q.data(), 1, 1,
                                  table, 2, &len, withSink ? &sinkF : nullptr,
                                  out.data())
                      .ok());
      double den = std::exp(l[0]) + std::exp(l[1]) + std::exp(l[2]) +
                   (withSink ? std::exp(sink) : 0.0);
      double expect =
          (1 * std::exp(l[0]) + 2 * std::exp(l[1]) + 4 * std::exp(l[2])) / den;
      EXPECT_NEAR(out[2], expect, 1e-6 * expect);
      for (int64_t i = 0; i < d; ++i)
        if (i != 2) {
          EXPECT_EQ(out[i], 0.0f);
        }
    }
  }
}

TEST(DecodeAttention, GqaHeadMappingAndEmptySequence) {
  const int64_t d = 32, hq = 4, hkv = 2;
  Format kf = bf16Format(), vf = bf16Format();
  CacheGeometry g{1, 4, hkv, d, 4 * d};
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0);
  // One token; kv head 0's value is all 3, kv head 1's all -7.
  std::vector<float> k(hkv * d, 0.5f), v(hkv * d);
  for (int64_t i = 0; i < d; ++i) {
    v[i] = 3.0f;
    v[d + i] = -7.0f;
  }
  const int64_t slot = 1;
  ASSERT_TRUE(
      cacheWrite(kf, vf, g, k.data(), v.data(), &slot, 1, cache.data()).ok());
  std::vector<float> q = randomVec(2 * hq * d, 9);
  const int32_t table[2] = {0, 0};
  const int32_t lens[2] = {2, 0}; // token 0 (zeros) and token 1
  AttentionParams p;
  p.softmaxScale = 0.1f;
  std::vector<float> out(2 * hq * d, -1.0f);
  ASSERT_TRUE(decodeAttention(kf, vf, g, cache.data(), p, q.data(), 2, hq,
                              table, 1, lens, nullptr, out.data())
                  .ok());
  // Sequence 0: token 0 has K = V = 0 (zeroed cache), token 1 has V = 3 or
  // -7; query heads 0,1 read kv head 0, heads 2,3 kv head 1.
  for (int64_t h = 0; h < hq; ++h) {
    float val = h < 2 ? 3.0f : -7.0f;
    float o = out[h * d];
    EXPECT_GT(std::fabs(o), 0.0f);
    EXPECT_EQ(std::signbit(o), std::signbit(val)) << h;
    EXPECT_LT(std::fabs(o), std::fabs(val)) << h;
    for (int64_t i = 1; i < d; ++i)
      EXPECT_EQ(out[h * d + i], o);
  }
  // Sequence 1 is empty: zeros.
  for (int64_t i = hq * d; i < 2 * hq * d; ++i)
    EXPECT_EQ(out[i], 0.0f);
}

TEST(DecodeAttention, Fp8QueryOverflowGivesNaNLikeTheReference) {
  const int64_t d = 64;
  CacheGeometry g{1, 1, 1, d, 68};
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0);
  std::vector<float> k = randomVec(d, 1), v = randomVec(d, 2);
  const int64_t slot = 0;
  ASSERT_TRUE(cacheWrite(keyFormat(), valueFormat(), g, k.data(), v.data(),
                         &slot, 1, cache.data())
                  .ok());
  // All-equal query: the rotation puts 8 * 1000 = 8000 > 448 in element 0.
  std::vector<float> q(d, 1000.0f), out(d);
  const int32_t table = 0, len = 1;
  AttentionParams p;
  p.softmaxScale = 0.125f;
  ASSERT_TRUE(decodeAttention(keyFormat(), valueFormat(), g, cache.data(), p,
                              q.data(), 1, 1, &table, 1, &len, nullptr,
                              out.data())
                  .ok());
  EXPECT_TRUE(std::isnan(out[0]));
  p.queryPrecision = QueryPrecision::F32;
  ASSERT_TRUE(decodeAttention(keyFormat(), valueFormat(), g, cache.data(), p,
                              q.data(), 1, 1, &table, 1, &len, nullptr,
                              out.data())
                  .ok());
  for (float o : out)
    EXPECT_FALSE(std::isnan(o));
}

TEST(DecodeAttention, RejectsBadTablesAndHeads) {
  const int64_t d = 64;
  CacheGeometry g{2, 4, 2, d, 68};
  std::vector<uint8_t> cache(static_cast<size_t>(cacheBytes(g)), 0);
  std::vector<float> q(3 * d, 1.0f), out(3 * d, 42.0f);
  AttentionParams p;
  p.softmaxScale = 1.0f;
  const Format kf = keyFormat(), vf = valueFormat();
  int32_t table[2] = {0, 1};
  int32_t len = 8;
  // 3 query heads over 2 kv heads.
  EXPECT_FALSE(decodeAttention(kf, vf, g, cache.data(), p, q.data(), 1, 3,
                               table, 2, &len, nullptr, out.data())
                   .ok());
  // Block id outside the cache.
  table[1] = 2;
  Status st = decodeAttention(kf, vf, g, cache.data(), p, q.data(), 1, 2,
                              table, 2, &len, nullptr, out.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("block 2"), std::string::npos);
  // The bad block is past the sequence: not read, so accepted.
  len = 4;
  EXPECT_TRUE(decodeAttention(kf, vf, g, cache.data(), p, q.data(), 1, 2,
                              table, 2, &len, nullptr, out.data())
                  .ok());
  // Sequence longer than its table.
  table[1] = 1;
  len = 9;
  EXPECT_FALSE(decodeAttention(kf, vf, g, cache.data(), p, q.data(), 1, 2,
                               table, 2, &len, nullptr, out.data())
                   .ok());
  len = -1;
  EXPECT_FALSE(decodeAttention(kf, vf, g, cache.data(), p, q.data(), 1, 2,
                               table, 2, &len, nullptr, out.data())
                   .ok());
}
