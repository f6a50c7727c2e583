//===- ScaleRuleTest.cpp - The MseSearch scale rule -----------------------===//
//
// ScaleRule::MseSearch picks, per group, the exponent among e0-1, e0, e0+1
// with the least squared error. Checked against a hand-computed group and
// against the rule's defining property on random rows; the error is
// recomputed here independently of the library's search.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <random>
#include <vector>

using namespace uq::ref;

namespace {

/// Squared error of decoding group `grp` (32 values) of a coded row.
double codedError(const std::vector<float> &x,
                  const std::vector<uint8_t> &codes,
                  const std::vector<uint8_t> &scales, int grp) {
  double err = 0;
  for (int i = 0; i < 32; ++i) {
    int idx = grp * 32 + i;
    uint8_t nib = (codes[idx / 2] >> (4 * (idx % 2))) & 0xF;
    double v =
        scales[grp] ? fp4Decode(nib) * std::ldexp(1.0, scales[grp] - 127) : 0.0;
    err += (v - x[idx]) * (v - x[idx]);
  }
  return err;
}

// 7.5 with 31 zeros: c * m = 1.17 gives e0 = 0, codes 7.5 -> 6 (error 2.25);
// e = 1 codes 7.5 / 2 = 3.75 -> 4, i.e. 8 (error 0.25): the search keeps 1.
TEST(ScaleRule, HandComputedGroupPicksLargerExponent) {
  std::vector<float> x(32, 0.0f);
  x[0] = 7.5f;
  Format lr, ms;
  ms.scaleRule = ScaleRule::MseSearch;
  std::vector<uint8_t> c1(16), s1(1), c2(16), s2(1);
  ASSERT_TRUE(encodeRow(lr, x.data(), 32, c1.data(), s1.data()).ok());
  ASSERT_TRUE(encodeRow(ms, x.data(), 32, c2.data(), s2.data()).ok());
  EXPECT_EQ(s1[0], 127);     // 2^0
  EXPECT_EQ(c1[0] & 0xF, 7); // 6
  EXPECT_EQ(s2[0], 128);     // 2^1
  EXPECT_EQ(c2[0] & 0xF, 6); // 4, times 2 = 8
  std::vector<float> out(32);
  ASSERT_TRUE(decodeRow(ms, c2.data(), s2.data(), 32, out.data()).ok());
  EXPECT_EQ(out[0], 8.0f);
}

// The defining property on random rows (Gaussian and heavy-tailed, rotated
// and not): every group's error is the least of the three candidates and
// never above LogRound's; zero groups keep the sentinel; some groups move.
TEST(ScaleRule, SearchMinimisesGroupErrorOnRandomRows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::student_t_distribution<float> t(2.0f);
  int moved = 0;
  for (int row = 0; row < 200; ++row) {
    std::vector<float> x(128);
    for (float &v : x)
      v = row % 2 ? t(rng) : n(rng);
    if (row % 7 == 0)
      std::fill(x.begin(), x.begin() + 32, 0.0f); // a zero group
    for (bool rotate : {false, true}) {
      Format lr, ms;
      lr.rotate = ms.rotate = rotate;
      lr.c = ms.c = 0.196;
      ms.scaleRule = ScaleRule::MseSearch;
      std::vector<uint8_t> c1(64), s1(4), c2(64), s2(4);
      ASSERT_TRUE(encodeRow(lr, x.data(), 128, c1.data(), s1.data()).ok());
      ASSERT_TRUE(encodeRow(ms, x.data(), 128, c2.data(), s2.data()).ok());
      std::vector<float> xr = x;
      if (rotate) {
        ASSERT_TRUE(hadamardRotate(xr.data(), 128).ok());
      }
      for (int g = 0; g < 4; ++g) {
        if (s1[g] == 0) {
          EXPECT_EQ(s2[g], 0);
          continue;
        }
        EXPECT_LE(std::abs(int(s2[g]) - int(s1[g])), 1);
        double e1 = codedError(xr, c1, s1, g), e2 = codedError(xr, c2, s2, g);
        EXPECT_LE(e2, e1 * (1 + 1e-12));
        // Recode the group with each candidate: none beats the choice.
        for (int de = -1; de <= 1; ++de) {
          int e = int(s1[g]) - 127 + de;
          double err = 0;
          for (int i = 0; i < 32; ++i) {
            float xv = xr[g * 32 + i];
            float q = fp4Decode(fp4Encode(std::ldexp(xv, -e)));
            err += (std::ldexp(double(q), e) - xv) *
                   (std::ldexp(double(q), e) - xv);
          }
          EXPECT_LE(e2, err * (1 + 1e-12)) << "row " << row << " group " << g;
        }
        moved += s2[g] != s1[g];
      }
    }
  }
  EXPECT_GT(moved, 10);
}

TEST(ScaleRule, NeedsPowerOfTwoGroups) {
  Format f;
  f.scaleRule = ScaleRule::MseSearch;
  f.groupSize = 48;
  EXPECT_FALSE(validateFormat(f, 96).ok());
}

} // namespace
