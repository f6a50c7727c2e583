//===- RotatedValueTest.cpp - Attention over rotated values ---------------===//
//
// With a rotated value format, decodeAttention returns the output in the
// original domain. Values are built so that their rotated rows lie exactly
// on the FP4 grid with scale 1 (far from every rounding boundary), so the
// cache holds them without error and the output must equal plain attention
// over the original values, computed here in double.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <vector>

using namespace uq::ref;

TEST(RotatedValues, AttentionReturnsTheOriginalDomain) {
  const int64_t d = 128, tokens = 37, bs = 16, hq = 4;
  std::mt19937 rng(3);
  const float grid[] = {0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f};
  // v_rot: FP4 grid values, every group's absmax 6 (scale byte 127 for
  // c = 0.156: log2(0.936) + 0.5 floors to 0).
  std::vector<float> vrot(tokens * d), v(tokens * d), k(tokens * d);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < d; ++i) {
      float m = grid[rng() % 6];
      vrot[t * d + i] = (i % 32 == 0) ? 6.0f : (rng() % 2 ? m : -m);
      k[t * d + i] = n(rng);
    }
    // The original-domain row: H / sqrt(D) is its own inverse.
    std::copy(&vrot[t * d], &vrot[t * d] + d, &v[t * d]);
    ASSERT_TRUE(hadamardRotate(&v[t * d], d).ok());
  }
  Format kf = keyFormat(), vf = valueFormat();
  vf.rotate = true;
  CacheGeometry g{3, bs, 1, d, slotBytes(kf, vf, d)};
  std::vector<uint8_t> cache(cacheBytes(g), 0);
  std::vector<int64_t> slots(tokens);
  for (int64_t t = 0; t < tokens; ++t)
    slots[t] = t;
  ASSERT_TRUE(cacheWrite(kf, vf, g, k.data(), v.data(), slots.data(), tokens,
                         cache.data())
                  .ok());
  // The V part of every slot decodes to v_rot exactly.
  std::vector<float> dec(d);
  for (int64_t t = 0; t < tokens; ++t) {
    const uint8_t *slot = &cache[t * g.slotBytes];
    ASSERT_TRUE(
        decodeRow(vf, slot + d / 2 + d / 32, slot + d + d / 32, d, dec.data())
            .ok());
    for (int64_t i = 0; i < d; ++i)
      ASSERT_EQ(dec[i], vrot[t * d + i]) << "token " << t << " dim " << i;
  }
  std::vector<float> q(hq * d), out(hq * d);
  for (float &x : q)
    x = n(rng);
  std::vector<int32_t> table = {0, 1, 2};
  int32_t len = tokens;
  AttentionParams p;
  p.softmaxScale = 1.0f / std::sqrt(float(d));
  ASSERT_TRUE(decodeAttention(kf, vf, g, cache.data(), p, q.data(), 1, hq,
                              table.data(), 3, &len, nullptr, out.data())
                  .ok());
  // Expected: the softmax weights of the same (decoded) keys applied to the
  // ORIGINAL values, in double.
  for (int64_t h = 0; h < hq; ++h) {
    std::vector<float> qr(q.begin() + h * d, q.begin() + (h + 1) * d);
    ASSERT_TRUE(hadamardRotate(qr.data(), d).ok());
    for (float &x : qr)
      x = fp8e4m3Decode(fp8e4m3Encode(x));
    std::vector<double> logit(tokens);
    double mx = -INFINITY;
    for (int64_t t = 0; t < tokens; ++t) {
      const uint8_t *slot = &cache[t * g.slotBytes];
      ASSERT_TRUE(decodeRow(kf, slot, slot + d / 2, d, dec.data()).ok());
      double dot = 0;
      for (int64_t i = 0; i < d; ++i)
        dot += double(qr[i]) * dec[i];
      logit[t] = dot * p.softmaxScale;
      mx = std::max(mx, logit[t]);
    }
    double den = 0;
    std::vector<double> o(d, 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
      double w = std::exp(logit[t] - mx);
      den += w;
      for (int64_t i = 0; i < d; ++i)
        o[i] += w * v[t * d + i];
    }
    for (int64_t i = 0; i < d; ++i)
      EXPECT_NEAR(out[h * d + i], o[i] / den, 2e-5)
          << "head " << h << " dim " << i;
  }
}
