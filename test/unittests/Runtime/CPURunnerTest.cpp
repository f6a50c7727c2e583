//===- CPURunnerTest.cpp - The CPU path against uq::ref -------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Every uq op is written as IR text, lowered with uq-cpu-pipeline, run in
// process by CPUProgram and compared with the reference library: codes,
// scales, decoded values and cache bytes bit for bit; attention within a
// relative L2 error stated per test.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <limits>

using namespace uq;
using namespace uq::test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::string kvFormat(bool rotate) {
  return rotate ? "#uq.kv_format<fp4_e2m1, rotation = hadamard>"
                : "#uq.kv_format<fp4_e2m1>";
}

/// quantize + dequantize of [n, d] rows of element type \p elem in \p fmt.
std::string codecIR(int64_t n, int64_t d, const std::string &elem,
                    const std::string &fmt, int64_t group = 32) {
  return llvm::formatv(R"(
func.func @main(%x: tensor<{0}x{1}x{2}>)
    -> (tensor<{0}x{3}xi8>, tensor<{0}x{4}xi8>, tensor<{0}x{1}xf32>) {{
  %c, %s = uq.quantize %x {{format = {5}}
      : tensor<{0}x{1}x{2}> -> tensor<{0}x{3}xi8>, tensor<{0}x{4}xi8>
  %d = uq.dequantize %c, %s {{format = {5}}
      : tensor<{0}x{3}xi8>, tensor<{0}x{4}xi8> -> tensor<{0}x{1}xf32>
  return %c, %s, %d : tensor<{0}x{3}xi8>, tensor<{0}x{4}xi8>, tensor<{0}x{1}xf32>
}
)",
                       n, d, elem, d / 2, d / group, fmt)
      .str();
}

/// Runs the FP4 codec on \p rows and compares with ref::encodeRow /
/// decodeRow bit for bit. Returns the number of rows checked.
void expectCodecMatches(const ref::Format &f, const std::string &fmt,
                        const std::vector<float> &x, int64_t d, bool bf16) {
  int64_t n = static_cast<int64_t>(x.size()) / d;
  auto prog =
      compileOrDie(codecIR(n, d, bf16 ? "bf16" : "f32", fmt, f.groupSize));
  ASSERT_TRUE(prog);
  HostTensor in = bf16 ? bf16Tensor({n, d}, x) : f32Tensor({n, d}, x);
  auto out = runOrDie(*prog, {in});
  ASSERT_EQ(out.size(), 3u);
  auto codes = valuesOf<uint8_t>(out[0]);
  auto scales = valuesOf<uint8_t>(out[1]);
  auto dec = valuesOf<float>(out[2]);
  int64_t cb = d / 2, sb = d / f.groupSize;
  std::vector<uint8_t> rc(cb), rs(sb);
  std::vector<float> rd(d);
  int64_t bad = 0;
  for (int64_t r = 0; r < n && bad < 5; ++r) {
    ASSERT_TRUE(ref::encodeRow(f, &x[r * d], d, rc.data(), rs.data()).ok());
    ASSERT_TRUE(ref::decodeRow(f, rc.data(), rs.data(), d, rd.data()).ok());
    for (int64_t i = 0; i < sb; ++i)
      if (scales[r * sb + i] != rs[i]) {
        ++bad;
        ADD_FAILURE() << "row " << r << " group " << i << ": scale byte "
                      << int(scales[r * sb + i]) << ", reference "
                      << int(rs[i]);
      }
    for (int64_t i = 0; i < cb; ++i)
      if (codes[r * cb + i] != rc[i]) {
        ++bad;
        ADD_FAILURE() << "row " << r << " byte " << i << ": code 0x" << std::hex
                      << int(codes[r * cb + i]) << ", reference 0x"
                      << int(rc[i]) << std::dec << " (x = " << x[r * d + 2 * i]
                      << ", " << x[r * d + 2 * i + 1] << ")";
      }
    for (int64_t i = 0; i < d; ++i)
      if (!sameFloat(dec[r * d + i], rd[i])) {
        ++bad;
        ADD_FAILURE() << "row " << r << " element " << i << ": decoded "
                      << dec[r * d + i] << ", reference " << rd[i];
      }
  }
  EXPECT_EQ(bad, 0);
}

/// Groups of 32 whose elements sit exactly on FP4 midpoints and levels of
/// their scale, plus zero, Inf/NaN, huge, tiny and -0 groups.
std::vector<float> adversarialRows(int64_t d) {
  static const float kTies[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f,
                                0.5f,  1.0f,  1.5f,  2.0f,  3.0f, 4.0f, 6.0f};
  std::vector<std::vector<float>> groups;
  for (int k : {-130, -20, -1, 0, 3, 60, 120}) {
    std::vector<float> g(32, 0.0f);
    float p = std::ldexp(1.0f, k);
    // Max magnitude 6 * 2^k gives scale 2^k (log2(0.156 * 6) = -0.095).
    g[0] = 6.0f * p;
    for (int i = 1; i < 32; ++i)
      g[i] = (i % 2 ? -1.0f : 1.0f) * kTies[(i - 1) % 14] * p;
    groups.push_back(g);
  }
  groups.push_back(std::vector<float>(32, 0.0f));
  groups.push_back(std::vector<float>(32, -0.0f));
  {
    std::vector<float> g(32, 1.0f);
    g[5] = kInf;
    groups.push_back(g);
    g[5] = -kInf;
    groups.push_back(g);
    g[5] = kNaN;
    groups.push_back(g);
  }
  {
    std::vector<float> g(32, 3.0e38f);
    g[1] = -3.4e38f;
    groups.push_back(g); // c * m near the top: clamps to 127.
    std::vector<float> t(32, fromBits(1));
    t[3] = fromBits(0x007FFFFF);
    groups.push_back(t); // subnormals: clamps to -126.
  }
  // Maxima at the log-domain rounding boundary: c * m straddling
  // 2^E * sqrt(2) (mantissa bits 0x3504F3 / 0x3504F4).
  for (uint32_t mant : {0x3504F2u, 0x3504F3u, 0x3504F4u, 0x3504F5u}) {
    for (int e : {-10, 0, 7}) {
      float s = fromBits(static_cast<uint32_t>(e + 127) << 23 | mant);
      float m = static_cast<float>(s / 0.156);
      for (int delta = -2; delta <= 2; ++delta) {
        uint32_t mb;
        std::memcpy(&mb, &m, 4);
        std::vector<float> g(32, 0.1f * m);
        g[7] = fromBits(mb + delta);
        groups.push_back(g);
      }
    }
  }
  std::vector<float> rows;
  for (const auto &g : groups)
    rows.insert(rows.end(), g.begin(), g.end());
  while (rows.size() % d)
    rows.push_back(0.0f);
  return rows;
}

} // namespace

//===----------------------------------------------------------------------===//
// Quantize / dequantize
//===----------------------------------------------------------------------===//

// Ties, zeros, Inf/NaN, huge/tiny and the scale-rounding boundary: the value
// format (no rotation, so the adversarial groups reach the coder unchanged)
// codes and decodes bit-exactly as the reference.
TEST(CPUQuantize, AdversarialGroupsBitExact) {
  std::vector<float> x = adversarialRows(128);
  expectCodecMatches(ref::valueFormat(), kvFormat(false), x, 128, false);
}

// The same groups through the rotated key format.
TEST(CPUQuantize, AdversarialGroupsRotatedBitExact) {
  std::vector<float> x = adversarialRows(128);
  expectCodecMatches(ref::keyFormat(), kvFormat(true), x, 128, false);
}

// Random bf16 rows, D = 64, 128, 256, keys (rotated) and values.
TEST(CPUQuantize, RandomRowsBitExact) {
  for (int64_t d : {64, 128, 256}) {
    for (bool rotate : {false, true}) {
      Rng rng(d * 2 + rotate);
      std::vector<float> x(256 * d);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = bf16Round(rng.normal(i % 97 == 0 ? 40.0f : 1.0f));
      SCOPED_TRACE("d = " + std::to_string(d) +
                   (rotate ? ", rotated" : ", not rotated"));
      expectCodecMatches(rotate ? ref::keyFormat() : ref::valueFormat(),
                         kvFormat(rotate), x, d, /*bf16=*/true);
    }
  }
}

// Non-default fields: group 16, c = 0.1666, round-to-nearest-even ties.
TEST(CPUQuantize, NonDefaultFormatBitExact) {
  ref::Format f;
  f.groupSize = 16;
  f.c = 0.1666;
  f.rounding = ref::Rounding::NearestEven;
  std::vector<float> x = adversarialRows(64);
  Rng rng(7);
  for (int i = 0; i < 64 * 64; ++i)
    x.push_back(rng.normal(3.0f));
  expectCodecMatches(f,
                     "#uq.kv_format<fp4_e2m1, c = 0.1666, group = 16, rounding "
                     "= nearest_even>",
                     x, 64, false);
}

//===----------------------------------------------------------------------===//
// scale_rule = mse_search
//===----------------------------------------------------------------------===//

namespace {

/// Groups of 32 where the exponent search has something to decide: a single
/// non-zero value (often coded exactly by two candidates: an exact tie), two
/// values far apart, levels and midpoints of neighbouring scales, maxima near
/// the top of the f32 range (candidates whose decoded values overflow to
/// Inf) and subnormal maxima (candidates clamped to -126), then the generic
/// adversarial groups (zero, -0, Inf/NaN sentinels, scale boundaries).
std::vector<float> mseAdversarialRows(int64_t d) {
  std::vector<float> rows;
  auto group = [&](std::vector<float> g) {
    rows.insert(rows.end(), g.begin(), g.end());
  };
  const float kVals[] = {1.0f,  1.5f,  2.0f,  3.0f,   6.0f,  7.5f, 0.5f,
                         0.75f, 5.0f,  2.5f,  0.25f,  1.25f, 7.0f, 12.0f,
                         -1.0f, -3.0f, -7.5f, -0.75f, 4.5f,  1.75f};
  for (int k : {-140, -126, -60, -3, 0, 1, 9, 100, 125, 126, 127}) {
    for (float v : kVals) {
      std::vector<float> g(32, 0.0f);
      g[(k + 200) % 32] = std::ldexp(v, k);
      group(g);
    }
  }
  Rng rng(11);
  for (int i = 0; i < 64; ++i) {
    std::vector<float> g(32, 0.0f);
    float big = std::ldexp(1.0f + static_cast<float>(rng.uniform()),
                           static_cast<int>(rng.below(20)) - 10);
    g[rng.below(32)] = big;
    g[rng.below(32)] = -big * static_cast<float>(rng.uniform()) * 0.3f;
    group(g);
  }
  // Levels and midpoints of scales 2^k and 2^(k+1) mixed, so that the
  // candidates' errors are close (and often equal).
  static const float kGrid[] = {0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f,
                                2.0f,  2.5f, 3.0f,  3.5f, 4.0f,  5.0f, 6.0f};
  for (int k : {-5, 0, 4}) {
    for (int rep = 0; rep < 8; ++rep) {
      std::vector<float> g(32);
      for (float &v : g)
        v = (rng.below(2) ? -1.0f : 1.0f) *
            std::ldexp(kGrid[rng.below(14)],
                       k + static_cast<int>(rng.below(2)));
      group(g);
    }
  }
  for (float top : {3.0e38f, 3.4e38f, 1.7e38f, 2.2e38f, 1.0e38f}) {
    std::vector<float> g(32, 0.0f);
    for (int i = 0; i < 32; ++i)
      g[i] = top * static_cast<float>(rng.uniform()) * (i % 2 ? -1.0f : 1.0f);
    g[5] = top;
    group(g);
  }
  for (uint32_t m : {1u, 3u, 0x400000u, 0x7FFFFFu, 0x800000u, 0x1000000u}) {
    std::vector<float> g(32, 0.0f);
    for (int i = 0; i < 32; ++i)
      g[i] = fromBits(static_cast<uint32_t>(rng.below(m + 1)) |
                      (i % 3 ? 0u : 0x80000000u));
    g[9] = fromBits(m);
    group(g);
  }
  while (rows.size() % d)
    rows.push_back(0.0f);
  std::vector<float> more = adversarialRows(d);
  rows.insert(rows.end(), more.begin(), more.end());
  return rows;
}

/// Heavy-tailed rows: Gaussian times a log-normal factor with a wide spread
/// (magnitudes over ~20 binades), a few large outliers.
std::vector<float> heavyTailedRows(int64_t n, int64_t d, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(n * d);
  for (size_t i = 0; i < x.size(); ++i) {
    float v = rng.normal() * std::exp(2.5f * rng.normal());
    if (rng.below(61) == 0)
      v *= 300.0f;
    x[i] = v;
  }
  return x;
}

/// \p c as an attribute literal that parses back to the same double
/// (formatv's default for a double keeps 2 decimals only).
std::string cLiteral(double c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", c);
  return buf;
}

std::string mseFormat(bool rotate, double c) {
  return llvm::formatv("#uq.kv_format<fp4_e2m1, c = {0}{1}, "
                       "scale_rule = mse_search>",
                       cLiteral(c), rotate ? ", rotation = hadamard" : "")
      .str();
}

/// Groups whose MseSearch byte differs from the LogRound byte (reference
/// only), so that a test can show the search decides something.
int64_t movedGroups(ref::Format f, const std::vector<float> &x, int64_t d) {
  ref::Format lr = f;
  lr.scaleRule = ref::ScaleRule::LogRound;
  f.scaleRule = ref::ScaleRule::MseSearch;
  int64_t sb = d / f.groupSize, moved = 0;
  std::vector<uint8_t> c(d / 2), s1(sb), s2(sb);
  for (size_t r = 0; r * d < x.size(); ++r) {
    EXPECT_TRUE(ref::encodeRow(lr, &x[r * d], d, c.data(), s1.data()).ok());
    EXPECT_TRUE(ref::encodeRow(f, &x[r * d], d, c.data(), s2.data()).ok());
    for (int64_t i = 0; i < sb; ++i)
      moved += s1[i] != s2[i];
  }
  return moved;
}

} // namespace

// Random (bf16 Gaussian with outliers), heavy-tailed (f32) and adversarial
// rows; D = 64, 128, 256; rotated and not; c = 0.156 and 0.196: codes,
// scales and decoded values bit-exact with ref::encodeRow/decodeRow under
// ScaleRule::MseSearch.
TEST(CPUQuantizeMseSearch, RandomHeavyTailedAndAdversarialRowsBitExact) {
  for (int64_t d : {64, 128, 256}) {
    for (bool rotate : {false, true}) {
      for (double c : {0.156, 0.196}) {
        SCOPED_TRACE("d = " + std::to_string(d) +
                     (rotate ? ", rotated" : ", not rotated") +
                     ", c = " + std::to_string(c));
        ref::Format f;
        f.rotate = rotate;
        f.c = c;
        f.scaleRule = ref::ScaleRule::MseSearch;
        Rng rng(d * 4 + rotate * 2 + (c > 0.16));
        std::vector<float> gauss(128 * d);
        for (size_t i = 0; i < gauss.size(); ++i)
          gauss[i] = bf16Round(rng.normal(i % 97 == 0 ? 40.0f : 1.0f));
        std::vector<float> heavy = heavyTailedRows(128, d, d + rotate + 5);
        std::vector<float> adv = mseAdversarialRows(d);
        {
          SCOPED_TRACE("gaussian bf16");
          EXPECT_GT(movedGroups(f, gauss, d), 0);
          expectCodecMatches(f, mseFormat(rotate, c), gauss, d, true);
        }
        std::vector<float> rest = heavy;
        rest.insert(rest.end(), adv.begin(), adv.end());
        SCOPED_TRACE("heavy-tailed and adversarial f32");
        EXPECT_GT(movedGroups(f, heavy, d), 0);
        // (Rotated, the adversarial groups are smeared over the row and
        // rows holding an Inf/NaN become sentinels: no move guaranteed.)
        if (!rotate) {
          EXPECT_GT(movedGroups(f, adv, d), 0);
        }
        expectCodecMatches(f, mseFormat(rotate, c), rest, d, false);
      }
    }
  }
}

// Exact ties between candidates: a lone power of two is coded exactly by
// all three exponents (levels 1, 2, 4 or 2, 4, ... up to 6), and the
// reference keeps the first; the lowering must agree on each of them.
TEST(CPUQuantizeMseSearch, ExactTiesKeepTheEarlierCandidate) {
  ref::Format f;
  f.scaleRule = ref::ScaleRule::MseSearch;
  std::vector<float> x;
  for (int k = -130; k <= 127; k += 3) {
    for (float v : {1.0f, -2.0f, 0.5f, 3.0f, 1.5f, -6.0f, 6.0f}) {
      std::vector<float> g(32, 0.0f);
      g[(k + 130) % 32] = std::ldexp(v, k);
      x.insert(x.end(), g.begin(), g.end());
    }
  }
  while (x.size() % 128)
    x.push_back(0.0f);
  // Independent check that ties occur: some group's chosen byte codes the
  // value exactly while another candidate does as well.
  int64_t ties = 0;
  for (size_t gi = 0; gi * 32 < x.size(); ++gi) {
    float m = 0;
    for (int i = 0; i < 32; ++i)
      m = std::max(m, std::fabs(x[gi * 32 + i]));
    uint8_t b0 = ref::ue8m0ScaleByte(m, f.c);
    if (!b0)
      continue;
    int exact = 0;
    for (int de = -1; de <= 1; ++de) {
      int e = std::min(127, std::max(-126, int(b0) - 127 + de));
      bool ok = true;
      for (int i = 0; i < 32; ++i) {
        float v = x[gi * 32 + i];
        float q = ref::fp4Decode(ref::fp4Encode(std::ldexp(v, -e)));
        ok &= std::ldexp(double(q), e) == double(v);
      }
      exact += ok;
    }
    ties += exact >= 2;
  }
  EXPECT_GT(ties, 10);
  expectCodecMatches(f, mseFormat(false, 0.156), x, 128, false);
}

// Non-default fields with the search: group 16 and 64, nearest-even ties.
TEST(CPUQuantizeMseSearch, NonDefaultFormatBitExact) {
  for (int group : {16, 64}) {
    SCOPED_TRACE("group " + std::to_string(group));
    ref::Format f;
    f.groupSize = group;
    f.c = 0.1666;
    f.rounding = ref::Rounding::NearestEven;
    f.scaleRule = ref::ScaleRule::MseSearch;
    std::vector<float> x = mseAdversarialRows(128);
    std::vector<float> h = heavyTailedRows(64, 128, group);
    x.insert(x.end(), h.begin(), h.end());
    EXPECT_GT(movedGroups(f, x, 128), 0);
    expectCodecMatches(
        f,
        llvm::formatv("#uq.kv_format<fp4_e2m1, c = 0.1666, group = {0}, "
                      "rounding = nearest_even, scale_rule = mse_search>",
                      group)
            .str(),
        x, 128, false);
  }
}

// FP4 with E4M3 group scales (#uq.kv_format<fp4_e2m1, scale = e4m3>, the
// accuracy study's value format), with and without the search, groups 16
// and 32, rotated and not: codes, scale bytes and decoded values bit-exact
// with ref::encodeRow/decodeRow. The adversarial rows hold groups whose
// c * absmax saturates at 448 (2^120) or underflows to byte 1 (2^-130),
// zero and non-finite groups and FP4 midpoints.
TEST(CPUQuantizeE4M3Scales, RandomHeavyTailedAndAdversarialRowsBitExact) {
  for (int group : {16, 32}) {
    for (bool rotate : {false, true}) {
      for (bool search : {false, true}) {
        SCOPED_TRACE("group " + std::to_string(group) +
                     (rotate ? ", rotated" : "") + (search ? ", search" : ""));
        ref::Format f;
        f.scaleCode = ref::ScaleCode::E4M3;
        f.c = 1.0 / 6.0;
        f.groupSize = group;
        f.rotate = rotate;
        f.scaleRule =
            search ? ref::ScaleRule::MseSearch : ref::ScaleRule::LogRound;
        Rng rng(group * 4 + rotate * 2 + search);
        std::vector<float> gauss(64 * 128);
        for (size_t i = 0; i < gauss.size(); ++i)
          gauss[i] = bf16Round(rng.normal(i % 89 == 0 ? 30.0f : 1.0f));
        std::vector<float> rest = heavyTailedRows(64, 128, group + 11);
        std::vector<float> adv = adversarialRows(128);
        rest.insert(rest.end(), adv.begin(), adv.end());
        if (search) {
          EXPECT_GT(movedGroups(f, gauss, 128), 0);
        }
        std::string fmt =
            llvm::formatv("#uq.kv_format<fp4_e2m1, scale = e4m3, group = "
                          "{0}{1}{2}>",
                          group, rotate ? ", rotation = hadamard" : "",
                          search ? ", scale_rule = mse_search" : "")
                .str();
        {
          SCOPED_TRACE("gaussian bf16");
          expectCodecMatches(f, fmt, gauss, 128, true);
        }
        SCOPED_TRACE("heavy-tailed and adversarial f32");
        expectCodecMatches(f, fmt, rest, 128, false);
      }
    }
  }
}

// FP8 E4M3 and bf16 codes of special and random values, and the decode of
// every FP8 byte, against the reference's scalar conversions.
TEST(CPUQuantize, Fp8AndBf16CodesBitExact) {
  std::vector<float> x = {0.0f,
                          -0.0f,
                          448.0f,
                          -448.0f,
                          464.0f,
                          464.0001f,
                          465.0f,
                          480.0f,
                          1e6f,
                          kInf,
                          -kInf,
                          kNaN,
                          std::ldexp(1.0f, -6),
                          std::ldexp(1.0f, -7),
                          std::ldexp(1.0f, -9),
                          std::ldexp(1.0f, -10),
                          std::ldexp(3.0f, -11),
                          -std::ldexp(1.0f, -12),
                          fromBits(1),
                          1.0625f,
                          1.1875f,
                          17.0f,
                          19.0f,
                          240.0f,
                          3.4e38f,
                          -2.5e-5f};
  Rng rng(3);
  while (x.size() % 64)
    x.push_back(rng.normal(30.0f));
  for (int i = 0; i < 64 * 30; ++i)
    x.push_back(std::ldexp(rng.normal(), static_cast<int>(rng.below(40)) - 20));
  int64_t n = static_cast<int64_t>(x.size()) / 64;
  std::string ir = llvm::formatv(R"(
func.func @main(%x: tensor<{0}x64xf32>, %b: tensor<16x16xi8>)
    -> (tensor<{0}x64xi8>, tensor<{0}x64xbf16>, tensor<16x16xf32>) {{
  %c = uq.quantize %x {{format = #uq.kv_format<fp8_e4m3>} : tensor<{0}x64xf32> -> tensor<{0}x64xi8>
  %h = uq.quantize %x {{format = #uq.kv_format<bf16>} : tensor<{0}x64xf32> -> tensor<{0}x64xbf16>
  %d = uq.dequantize %b {{format = #uq.kv_format<fp8_e4m3>} : tensor<16x16xi8> -> tensor<16x16xf32>
  return %c, %h, %d : tensor<{0}x64xi8>, tensor<{0}x64xbf16>, tensor<16x16xf32>
}
)",
                                 n)
                       .str();
  auto prog = compileOrDie(ir);
  ASSERT_TRUE(prog);
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i)
    all[i] = static_cast<uint8_t>(i);
  auto out = runOrDie(
      *prog, {f32Tensor({n, 64}, x), tensorOf(DType::I8, {16, 16}, all)});
  ASSERT_EQ(out.size(), 3u);
  auto f8 = valuesOf<uint8_t>(out[0]);
  auto b16 = valuesOf<uint16_t>(out[1]);
  auto dec = valuesOf<float>(out[2]);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(f8[i], ref::fp8e4m3Encode(x[i])) << "x = " << x[i];
    EXPECT_EQ(b16[i], ref::floatToBf16(x[i])) << "x = " << x[i];
  }
  for (int i = 0; i < 256; ++i)
    EXPECT_TRUE(sameFloat(dec[i], ref::fp8e4m3Decode(i))) << "byte " << i;
}

// Dequantize of every code byte under scale bytes 0 (sentinel), 1, 127,
// 200, 254 and 255 (NaN), as ref::decodeRow.
TEST(CPUDequantize, AllCodesAndScaleBytes) {
  std::vector<uint8_t> codes, scales;
  const uint8_t kScales[] = {0, 1, 127, 200, 254, 255};
  for (uint8_t s : kScales)
    for (int half = 0; half < 2; ++half) {
      // One row of 128 elements: 64 code bytes (128 values of which cover
      // all 256 bytes over two rows), 4 groups with scale s.
      for (int i = 0; i < 64; ++i)
        codes.push_back(static_cast<uint8_t>(half * 128 + i * 2 + (i & 1)));
      for (int g = 0; g < 4; ++g)
        scales.push_back(s);
    }
  int64_t n = static_cast<int64_t>(scales.size()) / 4;
  std::string ir = llvm::formatv(R"(
func.func @main(%c: tensor<{0}x64xi8>, %s: tensor<{0}x4xi8>) -> tensor<{0}x128xbf16> {{
  %d = uq.dequantize %c, %s {{format = #uq.kv_format<fp4_e2m1>}
      : tensor<{0}x64xi8>, tensor<{0}x4xi8> -> tensor<{0}x128xbf16>
  return %d : tensor<{0}x128xbf16>
}
)",
                                 n)
                       .str();
  auto prog = compileOrDie(ir);
  ASSERT_TRUE(prog);
  auto out = runOrDie(*prog, {tensorOf(DType::I8, {n, 64}, codes),
                              tensorOf(DType::I8, {n, 4}, scales)});
  ASSERT_EQ(out.size(), 1u);
  auto got = valuesOf<uint16_t>(out[0]);
  std::vector<float> rd(128);
  for (int64_t r = 0; r < n; ++r) {
    ASSERT_TRUE(ref::decodeRow(ref::valueFormat(), &codes[r * 64],
                               &scales[r * 4], 128, rd.data())
                    .ok());
    for (int i = 0; i < 128; ++i)
      EXPECT_TRUE(sameFloat(ref::bf16ToFloat(got[r * 128 + i]),
                            ref::bf16ToFloat(ref::floatToBf16(rd[i]))))
          << "row " << r << " element " << i;
  }
}

// uq.rotate equals ref::hadamardRotate bit for bit in both arithmetics.
TEST(CPURotate, BothArithmeticsBitExact) {
  for (auto [arith, refArith] :
       {std::pair{RotationArithmetic::ExactF64,
                  ref::RotationArithmetic::ExactF64},
        std::pair{RotationArithmetic::ButterflyF32,
                  ref::RotationArithmetic::ButterflyF32}}) {
    for (int64_t d : {64, 256}) {
      Rng rng(d);
      std::vector<float> x(3 * 5 * d);
      for (float &v : x)
        v = rng.normal(std::ldexp(1.0f, static_cast<int>(rng.below(30)) - 15));
      std::string ir = llvm::formatv(R"(
func.func @main(%x: tensor<3x5x{0}xf32>) -> tensor<3x5x{0}xf32> {{
  %r = uq.rotate %x : tensor<3x5x{0}xf32>
  return %r : tensor<3x5x{0}xf32>
}
)",
                                     d)
                           .str();
      runtime::CPURunOptions opts;
      opts.rotation = arith;
      auto prog = compileOrDie(ir, opts);
      ASSERT_TRUE(prog);
      auto out = runOrDie(*prog, {f32Tensor({3, 5, d}, x)});
      ASSERT_EQ(out.size(), 1u);
      auto got = valuesOf<float>(out[0]);
      for (int64_t r = 0; r < 15; ++r) {
        std::vector<float> row(x.begin() + r * d, x.begin() + (r + 1) * d);
        ASSERT_TRUE(ref::hadamardRotate(row.data(), d, refArith).ok());
        for (int64_t i = 0; i < d; ++i)
          ASSERT_EQ(got[r * d + i], row[i])
              << "d = " << d << " row " << r << " element " << i;
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Cache write
//===----------------------------------------------------------------------===//

namespace {
std::string cacheWriteIR(int64_t t, int64_t h, int64_t d, int64_t blocks,
                         int64_t bs, int64_t slot, const std::string &elem) {
  return llvm::formatv(R"(
func.func @main(%k: tensor<{0}x{1}x{2}x{6}>, %v: tensor<{0}x{1}x{2}x{6}>,
                %slots: tensor<{0}xi64>, %cache: tensor<{3}x{4}x{1}x{5}xi8>)
    -> tensor<{3}x{4}x{1}x{5}xi8> {{
  %c = uq.cache_write %k, %v, %slots into %cache
      {{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<{0}x{1}x{2}x{6}>, tensor<{0}x{1}x{2}x{6}>, tensor<{0}xi64>
        into tensor<{3}x{4}x{1}x{5}xi8>
  return %c : tensor<{3}x{4}x{1}x{5}xi8>
}
)",
                       t, h, d, blocks, bs, slot, elem)
      .str();
}
} // namespace

// Random tokens into a cache full of random bytes, padded slots, negative
// (skipped) slots: every byte of the cache equals ref::cacheWrite's.
TEST(CPUCacheWrite, MatchesReferenceByteForByte) {
  struct Case {
    int64_t t, h, d, blocks, bs, slot;
  };
  for (Case c : {Case{37, 8, 128, 4, 16, 144}, Case{5, 1, 64, 2, 16, 68},
                 Case{9, 2, 256, 3, 8, 272}}) {
    SCOPED_TRACE("T = " + std::to_string(c.t) + ", D = " + std::to_string(c.d));
    Rng rng(c.t * c.d);
    size_t n = c.t * c.h * c.d;
    std::vector<float> k(n), v(n);
    for (size_t i = 0; i < n; ++i) {
      k[i] = bf16Round(rng.normal(2.0f));
      v[i] = bf16Round(rng.normal(0.5f));
    }
    k[3] = kNaN; // one sentinel group
    std::vector<int64_t> slots(c.t);
    std::vector<int64_t> perm(c.blocks * c.bs);
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = static_cast<int64_t>(i);
    for (size_t i = perm.size(); i-- > 1;)
      std::swap(perm[i], perm[rng.below(i + 1)]);
    for (int64_t i = 0; i < c.t; ++i)
      slots[i] = (i % 7 == 3) ? -1 : perm[i];
    std::vector<uint8_t> cache(c.blocks * c.bs * c.h * c.slot);
    for (uint8_t &b : cache)
      b = static_cast<uint8_t>(rng.next());
    std::vector<uint8_t> expect = cache;
    ref::CacheGeometry g{c.blocks, c.bs, c.h, c.d, c.slot};
    ASSERT_TRUE(ref::cacheWrite(ref::keyFormat(), ref::valueFormat(), g,
                                k.data(), v.data(), slots.data(), c.t,
                                expect.data())
                    .ok());
    auto prog = compileOrDie(
        cacheWriteIR(c.t, c.h, c.d, c.blocks, c.bs, c.slot, "bf16"));
    ASSERT_TRUE(prog);
    auto out = runOrDie(
        *prog, {bf16Tensor({c.t, c.h, c.d}, k), bf16Tensor({c.t, c.h, c.d}, v),
                tensorOf(DType::I64, {c.t}, slots),
                tensorOf(DType::I8, {c.blocks, c.bs, c.h, c.slot}, cache)});
    ASSERT_EQ(out.size(), 1u);
    auto got = valuesOf<uint8_t>(out[0]);
    ASSERT_EQ(got.size(), expect.size());
    int64_t diff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      diff += got[i] != expect[i];
    EXPECT_EQ(diff, 0);
  }
}

// Channel means (k_mean, v_mean: the accuracy study's kmean / vmean): the
// cache codes x - mean; every byte equals ref::cacheWrite's with the same
// means, keys rotated, values with E4M3 scales in one case.
TEST(CPUCacheWrite, ChannelMeansMatchReferenceByteForByte) {
  for (bool e4m3 : {false, true}) {
    SCOPED_TRACE(e4m3 ? "E4M3 V scales" : "UE8M0 V scales");
    const int64_t t = 11, h = 2, d = 128, blocks = 2, bs = 8, slot = 136;
    Rng rng(77 + e4m3);
    std::vector<float> k(t * h * d), v(k.size()), mk(h * d), mv(h * d);
    for (size_t i = 0; i < mk.size(); ++i) {
      mk[i] = rng.normal(3.0f);
      mv[i] = rng.normal(1.0f);
    }
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = bf16Round(mk[i % (h * d)] + rng.normal(1.0f));
      v[i] = bf16Round(mv[i % (h * d)] + rng.normal(0.5f));
    }
    std::vector<int64_t> slots(t);
    for (int64_t i = 0; i < t; ++i)
      slots[i] = i == 4 ? -1 : (i * 5) % (blocks * bs);
    std::vector<uint8_t> cache(blocks * bs * h * slot);
    for (uint8_t &b : cache)
      b = static_cast<uint8_t>(rng.next());
    std::vector<uint8_t> expect = cache;
    ref::Format vf = ref::valueFormat();
    if (e4m3) {
      vf.scaleCode = ref::ScaleCode::E4M3;
      vf.c = 1.0 / 6.0;
    }
    ref::CacheGeometry g{blocks, bs, h, d, slot};
    ASSERT_TRUE(ref::cacheWrite(ref::keyFormat(), vf, g, k.data(), v.data(),
                                slots.data(), t, expect.data(), mk.data(),
                                mv.data())
                    .ok());
    std::string ir = llvm::formatv(R"(
func.func @main(%k: tensor<11x2x128xbf16>, %v: tensor<11x2x128xbf16>,
                %slots: tensor<11xi64>, %cache: tensor<2x8x2x136xi8>,
                %mk: tensor<2x128xf32>, %mv: tensor<2x128xf32>)
    -> tensor<2x8x2x136xi8> {{
  %c = uq.cache_write %k, %v, %slots into %cache k_mean %mk : tensor<2x128xf32>
      v_mean %mv : tensor<2x128xf32>
      {{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
       v_format = #uq.kv_format<fp4_e2m1{0}>, layout = #uq.cache_layout<vllm_slot>}
      : tensor<11x2x128xbf16>, tensor<11x2x128xbf16>, tensor<11xi64>
        into tensor<2x8x2x136xi8>
  return %c : tensor<2x8x2x136xi8>
}
)",
                                   e4m3 ? ", scale = e4m3" : "")
                         .str();
    auto prog = compileOrDie(ir);
    ASSERT_TRUE(prog);
    auto out = runOrDie(*prog, {bf16Tensor({t, h, d}, k),
                                bf16Tensor({t, h, d}, v),
                                tensorOf(DType::I64, {t}, slots),
                                tensorOf(DType::I8, {blocks, bs, h, slot}, cache),
                                f32Tensor({h, d}, mk), f32Tensor({h, d}, mv)});
    ASSERT_EQ(out.size(), 1u);
    auto got = valuesOf<uint8_t>(out[0]);
    ASSERT_EQ(got.size(), expect.size());
    int64_t diff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      diff += got[i] != expect[i];
    EXPECT_EQ(diff, 0);
  }
}

// scale_rule = mse_search in the cache: K (rotated) and V coded with the
// search, c = 0.156 and 0.196, one of them with the search and the other
// log_round, Gaussian and heavy-tailed tokens; every cache byte equals
// ref::cacheWrite's with ScaleRule::MseSearch.
TEST(CPUCacheWrite, MseSearchMatchesReferenceByteForByte) {
  struct Case {
    int64_t t, h, d, blocks, bs, slot;
    double c;
    bool kSearch, vSearch, heavy;
  };
  for (Case c : {Case{37, 8, 128, 4, 16, 144, 0.156, true, true, false},
                 Case{21, 2, 64, 2, 16, 68, 0.196, true, true, true},
                 Case{9, 2, 256, 3, 8, 272, 0.196, true, false, true},
                 Case{13, 4, 128, 2, 8, 136, 0.156, false, true, true}}) {
    SCOPED_TRACE("T = " + std::to_string(c.t) + ", D = " + std::to_string(c.d) +
                 ", c = " + std::to_string(c.c));
    Rng rng(c.t * c.d + 1);
    size_t n = c.t * c.h * c.d;
    std::vector<float> k(n), v(n);
    if (c.heavy) {
      k = heavyTailedRows(c.t * c.h, c.d, c.t);
      v = heavyTailedRows(c.t * c.h, c.d, c.t + 1);
    } else {
      for (size_t i = 0; i < n; ++i) {
        k[i] = bf16Round(rng.normal(2.0f));
        v[i] = bf16Round(rng.normal(0.5f));
      }
    }
    for (size_t i = 0; i < 32; ++i)
      v[32 + i] = i == 7 ? 3.0f : 0.0f; // a lone value: an exact tie
    k[3] = kNaN;                        // one sentinel group
    std::vector<int64_t> slots(c.t);
    std::vector<int64_t> perm(c.blocks * c.bs);
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = static_cast<int64_t>(i);
    for (size_t i = perm.size(); i-- > 1;)
      std::swap(perm[i], perm[rng.below(i + 1)]);
    for (int64_t i = 0; i < c.t; ++i)
      slots[i] = (i % 7 == 3) ? -1 : perm[i];
    std::vector<uint8_t> cache(c.blocks * c.bs * c.h * c.slot);
    for (uint8_t &b : cache)
      b = static_cast<uint8_t>(rng.next());
    ref::Format kf = ref::keyFormat(), vf = ref::valueFormat();
    kf.c = vf.c = c.c;
    if (c.kSearch)
      kf.scaleRule = ref::ScaleRule::MseSearch;
    if (c.vSearch)
      vf.scaleRule = ref::ScaleRule::MseSearch;
    // The search must decide something here, or this test shows nothing.
    EXPECT_GT((c.kSearch ? movedGroups(kf, k, c.d) : 0) +
                  (c.vSearch ? movedGroups(vf, v, c.d) : 0),
              0);
    std::vector<uint8_t> expect = cache;
    ref::CacheGeometry g{c.blocks, c.bs, c.h, c.d, c.slot};
    ASSERT_TRUE(ref::cacheWrite(kf, vf, g, k.data(), v.data(), slots.data(),
                                c.t, expect.data())
                    .ok());
    auto fmt = [&](bool rotate, bool search) {
      return llvm::formatv("#uq.kv_format<fp4_e2m1, c = {0}{1}{2}>",
                           cLiteral(c.c), rotate ? ", rotation = hadamard" : "",
                           search ? ", scale_rule = mse_search" : "")
          .str();
    };
    std::string elem = c.heavy ? "f32" : "bf16";
    std::string ir = llvm::formatv(R"(
func.func @main(%k: tensor<{0}x{1}x{2}x{6}>, %v: tensor<{0}x{1}x{2}x{6}>,
                %slots: tensor<{0}xi64>, %cache: tensor<{3}x{4}x{1}x{5}xi8>)
    -> tensor<{3}x{4}x{1}x{5}xi8> {{
  %c = uq.cache_write %k, %v, %slots into %cache
      {{k_format = {7}, v_format = {8}, layout = #uq.cache_layout<vllm_slot>}
      : tensor<{0}x{1}x{2}x{6}>, tensor<{0}x{1}x{2}x{6}>, tensor<{0}xi64>
        into tensor<{3}x{4}x{1}x{5}xi8>
  return %c : tensor<{3}x{4}x{1}x{5}xi8>
}
)",
                                   c.t, c.h, c.d, c.blocks, c.bs, c.slot, elem,
                                   fmt(true, c.kSearch), fmt(false, c.vSearch))
                         .str();
    auto prog = compileOrDie(ir);
    ASSERT_TRUE(prog);
    auto tensorFor = [&](const std::vector<float> &x) {
      return c.heavy ? f32Tensor({c.t, c.h, c.d}, x)
                     : bf16Tensor({c.t, c.h, c.d}, x);
    };
    auto out = runOrDie(
        *prog, {tensorFor(k), tensorFor(v), tensorOf(DType::I64, {c.t}, slots),
                tensorOf(DType::I8, {c.blocks, c.bs, c.h, c.slot}, cache)});
    ASSERT_EQ(out.size(), 1u);
    auto got = valuesOf<uint8_t>(out[0]);
    ASSERT_EQ(got.size(), expect.size());
    int64_t diff = 0;
    for (size_t i = 0; i < got.size(); ++i)
      diff += got[i] != expect[i];
    EXPECT_EQ(diff, 0);
  }
}

// A slot beyond the cache is skipped (the reference rejects the whole call;
// compiled code must not write out of bounds), the other tokens are written.
TEST(CPUCacheWrite, OutOfRangeSlotIsSkipped) {
  std::vector<float> k(2 * 64, 1.0f), v(2 * 64, -1.0f);
  std::vector<int64_t> slots = {1000, 3};
  std::vector<uint8_t> cache(2 * 2 * 1 * 68, 0xAB);
  auto prog = compileOrDie(cacheWriteIR(2, 1, 64, 2, 2, 68, "f32"));
  ASSERT_TRUE(prog);
  auto out =
      runOrDie(*prog, {f32Tensor({2, 1, 64}, k), f32Tensor({2, 1, 64}, v),
                       tensorOf(DType::I64, {2}, slots),
                       tensorOf(DType::I8, {2, 2, 1, 68}, cache)});
  ASSERT_EQ(out.size(), 1u);
  auto got = valuesOf<uint8_t>(out[0]);
  std::vector<uint8_t> expect = cache;
  ref::CacheGeometry g{2, 2, 1, 64, 68};
  int64_t only3 = 3;
  ASSERT_TRUE(ref::cacheWrite(ref::keyFormat(), ref::valueFormat(), g,
                              k.data() + 64, v.data() + 64, &only3, 1,
                              expect.data())
                  .ok());
  EXPECT_EQ(got, expect);
}

//===----------------------------------------------------------------------===//
// Decode attention
//===----------------------------------------------------------------------===//

namespace {
struct AttnCase {
  int64_t seqs, hq, hkv, d, bs, maxBlocks;
  std::vector<int32_t> lens;
  bool sinks;
  bool fp8Query;
  /// Values coded in the Hadamard-rotated domain (the output is rotated
  /// back by decode_attention).
  bool vRotated = false;
  /// Values with E4M3 group scales (c = 1/6) and the search.
  bool vE4M3 = false;
  /// k_mean / v_mean operands (the cache is written with the same means).
  bool means = false;
  /// query_precision fp8_e4m3_scaled (per-32 UE8M0 query scales), with the
  /// queries multiplied by qScale (large ones overflow scale-1 FP8).
  bool scaledQuery = false;
  float qScale = 1.0f;
};

ref::Format valueFormatOf(const AttnCase &c) {
  ref::Format vf = ref::valueFormat();
  vf.rotate = c.vRotated;
  if (c.vE4M3) {
    vf.scaleCode = ref::ScaleCode::E4M3;
    vf.c = 1.0 / 6.0;
    vf.scaleRule = ref::ScaleRule::MseSearch;
  }
  return vf;
}

struct AttnData {
  std::vector<float> q, sinks, kMean, vMean;
  std::vector<uint8_t> cache;
  std::vector<int32_t> tables;
  int64_t numBlocks, slot;
};

/// A cache written by the reference with random K/V, block tables that use
/// the blocks in a shuffled order, random bf16 queries and sinks.
AttnData makeAttention(const AttnCase &c, uint64_t seed) {
  Rng rng(seed);
  AttnData a;
  a.numBlocks = c.seqs * c.maxBlocks + 1;
  a.slot = ref::slotBytes(ref::keyFormat(), ref::valueFormat(), c.d);
  a.cache.assign(a.numBlocks * c.bs * c.hkv * a.slot, 0);
  std::vector<int32_t> ids(a.numBlocks);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<int32_t>(i);
  for (size_t i = ids.size(); i-- > 1;)
    std::swap(ids[i], ids[rng.below(i + 1)]);
  a.tables.resize(c.seqs * c.maxBlocks);
  for (size_t i = 0; i < a.tables.size(); ++i)
    a.tables[i] = ids[i];
  // Unused table entries beyond a sequence's length hold garbage ids.
  ref::CacheGeometry g{a.numBlocks, c.bs, c.hkv, c.d, a.slot};
  if (c.means) {
    a.kMean.resize(c.hkv * c.d);
    a.vMean.resize(c.hkv * c.d);
    for (size_t i = 0; i < a.kMean.size(); ++i) {
      a.kMean[i] = rng.normal(2.0f);
      a.vMean[i] = rng.normal(1.0f);
    }
  }
  for (int64_t s = 0; s < c.seqs; ++s) {
    int64_t len = c.lens[s];
    std::vector<float> k(len * c.hkv * c.d), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      float mk = c.means ? a.kMean[i % (c.hkv * c.d)] : 0.0f;
      float mv = c.means ? a.vMean[i % (c.hkv * c.d)] : 0.0f;
      k[i] = bf16Round(mk + rng.normal(1.0f));
      v[i] = bf16Round(mv + rng.normal(1.0f));
    }
    std::vector<int64_t> slots(len);
    for (int64_t t = 0; t < len; ++t)
      slots[t] =
          int64_t(a.tables[s * c.maxBlocks + t / c.bs]) * c.bs + t % c.bs;
    EXPECT_TRUE(ref::cacheWrite(ref::keyFormat(), valueFormatOf(c), g, k.data(),
                                v.data(), slots.data(), len, a.cache.data(),
                                c.means ? a.kMean.data() : nullptr,
                                c.means ? a.vMean.data() : nullptr)
                    .ok());
    int64_t used = (len + c.bs - 1) / c.bs;
    for (int64_t b = used; b < c.maxBlocks; ++b)
      a.tables[s * c.maxBlocks + b] = 1 << 30;
  }
  a.q.resize(c.seqs * c.hq * c.d);
  for (float &x : a.q)
    x = bf16Round(c.qScale * rng.normal(2.0f));
  a.sinks.resize(c.hq);
  for (float &x : a.sinks)
    x = rng.normal(3.0f);
  return a;
}

std::vector<float> referenceAttention(const AttnCase &c, const AttnData &a,
                                      float scale) {
  ref::CacheGeometry g{a.numBlocks, c.bs, c.hkv, c.d, a.slot};
  ref::AttentionParams p;
  p.softmaxScale = scale;
  p.queryPrecision =
      c.fp8Query ? ref::QueryPrecision::FP8_E4M3 : ref::QueryPrecision::F32;
  if (c.scaledQuery)
    p.queryPrecision = ref::QueryPrecision::FP8_E4M3_Scaled;
  if (c.means) {
    p.kMean = a.kMean.data();
    p.vMean = a.vMean.data();
  }
  std::vector<float> out(c.seqs * c.hq * c.d);
  // The reference validates every used block id; give it a table whose
  // unused entries are 0.
  std::vector<int32_t> tables = a.tables;
  for (int32_t &id : tables)
    if (id >= a.numBlocks)
      id = 0;
  ref::Status st = ref::decodeAttention(
      ref::keyFormat(), valueFormatOf(c), g, a.cache.data(), p, a.q.data(),
      c.seqs, c.hq, tables.data(), c.maxBlocks, c.lens.data(),
      c.sinks ? a.sinks.data() : nullptr, out.data());
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

std::string attentionTypes(const AttnCase &c, const AttnData &a) {
  return llvm::formatv("tensor<{0}x{1}x{2}xbf16>, tensor<{3}x{4}x{5}x{6}xi8>, "
                       "tensor<{0}x{7}xi32>, tensor<{0}xi32>",
                       c.seqs, c.hq, c.d, a.numBlocks, c.bs, c.hkv, a.slot,
                       c.maxBlocks)
      .str();
}

/// The k_mean / v_mean operands, their function arguments and types (empty
/// without means); they follow the sinks.
std::string meanOperands(const AttnCase &c) {
  return c.means ? " k_mean %mk v_mean %mv" : "";
}
std::string meanArgs(const AttnCase &c) {
  return c.means ? llvm::formatv(", %mk: tensor<{0}x{1}xf32>, %mv: "
                                 "tensor<{0}x{1}xf32>",
                                 c.hkv, c.d)
                       .str()
                 : "";
}
std::string meanTypes(const AttnCase &c) {
  return c.means
             ? llvm::formatv(", tensor<{0}x{1}xf32>, tensor<{0}x{1}xf32>",
                             c.hkv, c.d)
                   .str()
             : "";
}

std::string attrs(const AttnCase &c) {
  return std::string("{k_format = #uq.kv_format<fp4_e2m1, rotation = "
                     "hadamard>, v_format = #uq.kv_format<fp4_e2m1") +
         (c.vRotated ? ", rotation = hadamard" : "") +
         (c.vE4M3 ? ", scale = e4m3, scale_rule = mse_search" : "") +
         ">, layout = #uq.cache_layout<vllm_slot>" +
         (c.scaledQuery ? ", query_precision = #uq<query_precision "
                          "fp8_e4m3_scaled>"
          : c.fp8Query  ? ""
                        : ", query_precision = #uq<query_precision f32>") +
         "}";
}

std::vector<HostTensor> attentionArgs(const AttnCase &c, const AttnData &a) {
  std::vector<HostTensor> args = {
      bf16Tensor({c.seqs, c.hq, c.d}, a.q),
      tensorOf(DType::I8, {a.numBlocks, c.bs, c.hkv, a.slot}, a.cache),
      tensorOf(DType::I32, {c.seqs, c.maxBlocks}, a.tables),
      tensorOf(DType::I32, {c.seqs}, c.lens)};
  if (c.sinks)
    args.push_back(f32Tensor({c.hq}, a.sinks));
  if (c.means) {
    args.push_back(f32Tensor({c.hkv, c.d}, a.kMean));
    args.push_back(f32Tensor({c.hkv, c.d}, a.vMean));
  }
  return args;
}

std::string caseName(const AttnCase &c) {
  std::string s = "S" + std::to_string(c.seqs) + "_Hq" + std::to_string(c.hq) +
                  "_Hkv" + std::to_string(c.hkv) + "_D" + std::to_string(c.d) +
                  "_len";
  for (int32_t l : c.lens)
    s += "_" + std::to_string(l);
  return s + (c.sinks ? "_sinks" : "") + (c.fp8Query ? "" : "_f32q") +
         (c.vRotated ? "_vrot" : "") + (c.vE4M3 ? "_ve4m3" : "") +
         (c.means ? "_means" : "") + (c.scaledQuery ? "_qscaled" : "");
}

const AttnCase kAttnCases[] = {
    // GQA 1, 2, 6, 8, 16; D 64, 128, 256; lengths 1, not a multiple of the
    // block size, 0, several thousand (one case); sinks; both query modes.
    {2, 8, 8, 64, 16, 4, {1, 50}, false, true},
    {2, 4, 2, 128, 16, 3, {33, 0}, true, true},
    {1, 6, 1, 128, 16, 200, {3001}, false, true},
    {3, 16, 2, 128, 16, 5, {77, 16, 1}, true, false},
    {1, 16, 1, 256, 16, 6, {90}, true, true},
    {2, 32, 2, 64, 8, 4, {29, 17}, false, false},
    // Rotated values: the output comes back to the original domain.
    {2, 8, 2, 128, 16, 4, {45, 9}, true, true, /*vRotated=*/true},
    // Values with E4M3 group scales (the accuracy study's value format),
    // rotated and not.
    {2, 8, 2, 128, 16, 4, {45, 9}, true, true, /*vRotated=*/true,
     /*vE4M3=*/true},
    {1, 4, 2, 64, 16, 3, {40}, false, true, /*vRotated=*/false,
     /*vE4M3=*/true},
    // Channel means (k_mean, v_mean), with sinks and rotated values, and
    // without sinks; an empty sequence stays zero.
    {2, 8, 2, 128, 16, 4, {45, 0}, true, true, /*vRotated=*/true,
     /*vE4M3=*/false, /*means=*/true},
    {1, 4, 1, 64, 8, 5, {37}, false, false, /*vRotated=*/false,
     /*vE4M3=*/true, /*means=*/true},
    // Per-32 UE8M0 query scales: ordinary queries, and queries 300 times
    // larger (their rotated elements pass 464, where scale-1 FP8 gives NaN).
    {2, 8, 2, 128, 16, 4, {45, 9}, true, true, false, false, false,
     /*scaledQuery=*/true},
    {1, 16, 1, 256, 16, 6, {90}, false, true, false, false, false,
     /*scaledQuery=*/true, /*qScale=*/300.0f},
};

class CPUAttention : public ::testing::TestWithParam<AttnCase> {};
} // namespace

// uq.decode_attention against ref::decodeAttention with f32 accumulation.
// The lowering follows the reference's order of every sum (dot products over
// D, softmax sums and PV over tokens) and uses the same expf, so the result
// is expected to be bit-identical; the bound is 1e-6 relative L2 (f32
// accumulation with the order changed would still pass, a wrong code or a
// wrong token would give ~1e-2).
TEST_P(CPUAttention, DecodeMatchesReference) {
  const AttnCase &c = GetParam();
  AttnData a = makeAttention(c, c.seqs * 1000 + c.d + c.hq);
  float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  std::string ir =
      llvm::formatv(
          R"(
func.func @main(%q: tensor<{0}x{1}x{2}xbf16>, %cache: tensor<{3}x{4}x{5}x{6}xi8>,
                %bt: tensor<{0}x{7}xi32>, %lens: tensor<{0}xi32>{8})
    -> tensor<{0}x{1}x{2}xf32> {{
  %o = uq.decode_attention %q, %cache, %bt, %lens {9} scale {10} {11}
      : ({12}{13}) -> tensor<{0}x{1}x{2}xf32>
  return %o : tensor<{0}x{1}x{2}xf32>
}
)",
          c.seqs, c.hq, c.d, a.numBlocks, c.bs, c.hkv, a.slot, c.maxBlocks,
          (c.sinks ? llvm::formatv(", %s: tensor<{0}xf32>", c.hq).str()
                   : std::string()) +
              meanArgs(c),
          std::string(c.sinks ? "sinks %s" : "") + meanOperands(c),
          llvm::formatv("{0:e9}", scale).str(), attrs(c), attentionTypes(c, a),
          (c.sinks ? llvm::formatv(", tensor<{0}xf32>", c.hq).str()
                   : std::string()) +
              meanTypes(c))
          .str();
  auto prog = compileOrDie(ir);
  ASSERT_TRUE(prog);
  auto out = runOrDie(*prog, attentionArgs(c, a));
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> got = valuesOf<float>(out[0]);
  std::vector<float> expect = referenceAttention(c, a, scale);
  EXPECT_LT(relL2(got, expect), 1e-6);
  // A length-0 sequence gives exact zeros.
  for (int64_t s = 0; s < c.seqs; ++s)
    if (c.lens[s] == 0) {
      for (int64_t i = 0; i < c.hq * c.d; ++i) {
        ASSERT_EQ(got[s * c.hq * c.d + i], 0.0f);
      }
    }
}

// decode_attention_partial + merge_partitions (flash decoding) against the
// same reference. Bound 5e-6 relative L2: each partition's output is
// normalised, rounded and re-weighted by sum_p * exp(max_p - M), so the f32
// rounding differs from the one-pass reference by a few ulps per partition
// (1.1e-6 measured with 94 partitions of 3001 tokens); a wrong token, code
// or weight would be ~1e-2.
TEST_P(CPUAttention, SplitKMatchesReference) {
  const AttnCase &c = GetParam();
  AttnData a = makeAttention(c, c.seqs * 1000 + c.d + c.hq);
  float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  int64_t ps = 32;
  int64_t parts = (c.maxBlocks * c.bs + ps - 1) / ps;
  std::string ir =
      llvm::formatv(
          R"(
func.func @main(%q: tensor<{0}x{1}x{2}xbf16>, %cache: tensor<{3}x{4}x{5}x{6}xi8>,
                %bt: tensor<{0}x{7}xi32>, %lens: tensor<{0}xi32>{8})
    -> (tensor<{0}x{1}x{2}xf32>, tensor<{0}x{1}x{13}xf32>, tensor<{0}x{1}x{13}xf32>) {{
  %o, %m, %l = uq.decode_attention_partial %q, %cache, %bt, %lens{17}
      scale {9} partition_size {14} {10}
      : ({11}) -> (tensor<{0}x{1}x{13}x{2}xf32>, tensor<{0}x{1}x{13}xf32>,
                   tensor<{0}x{1}x{13}xf32>)
  %r = uq.merge_partitions %o, %m, %l {12}
      : (tensor<{0}x{1}x{13}x{2}xf32>, tensor<{0}x{1}x{13}xf32>,
         tensor<{0}x{1}x{13}xf32>{15}) -> tensor<{0}x{1}x{2}xf32>
  {16}
  return %r2, %m, %l : tensor<{0}x{1}x{2}xf32>, tensor<{0}x{1}x{13}xf32>, tensor<{0}x{1}x{13}xf32>
}
)",
          c.seqs, c.hq, c.d, a.numBlocks, c.bs, c.hkv, a.slot, c.maxBlocks,
          (c.sinks ? llvm::formatv(", %s: tensor<{0}xf32>", c.hq).str()
                   : std::string()) +
              meanArgs(c),
          llvm::formatv("{0:e9}", scale).str(), attrs(c),
          attentionTypes(c, a) + meanTypes(c), c.sinks ? "sinks %s" : "",
          parts, ps,
          c.sinks ? llvm::formatv(", tensor<{0}xf32>", c.hq).str() : "",
          // The partitions stay in V's coded domain:
          // rotated values are rotated back after the
          // merge, as decode_attention does.
          c.vRotated
              ? llvm::formatv("%r2 = uq.rotate %r : "
                              "tensor<{0}x{1}x{2}xf32>",
                              c.seqs, c.hq, c.d)
                    .str()
              : "%r2 = tensor.cast %r : tensor<" + std::to_string(c.seqs) +
                    "x" + std::to_string(c.hq) + "x" + std::to_string(c.d) +
                    "xf32> to tensor<" + std::to_string(c.seqs) + "x" +
                    std::to_string(c.hq) + "x" + std::to_string(c.d) + "xf32>",
          meanOperands(c))
          .str();
  auto prog = compileOrDie(ir);
  ASSERT_TRUE(prog);
  auto out = runOrDie(*prog, attentionArgs(c, a));
  ASSERT_EQ(out.size(), 3u);
  std::vector<float> got = valuesOf<float>(out[0]);
  std::vector<float> expect = referenceAttention(c, a, scale);
  EXPECT_LT(relL2(got, expect), 5e-6);
  // Partitions past a sequence's length are empty: max -inf, sum 0; the
  // others have sum >= 1 (the max term contributes exp(0)).
  auto mx = valuesOf<float>(out[1]), sm = valuesOf<float>(out[2]);
  for (int64_t s = 0; s < c.seqs; ++s)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t p = 0; p < parts; ++p) {
        size_t i = (s * c.hq + h) * parts + p;
        if (p * ps >= c.lens[s]) {
          EXPECT_EQ(mx[i], -kInf);
          EXPECT_EQ(sm[i], 0.0f);
        } else {
          EXPECT_GE(sm[i], 1.0f);
          EXPECT_TRUE(std::isfinite(mx[i]));
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Cases, CPUAttention, ::testing::ValuesIn(kAttnCases),
                         [](const ::testing::TestParamInfo<AttnCase> &info) {
                           return caseName(info.param);
                         });

// The baseline formats in the cache: bf16 keys and FP8 E4M3 values. The
// cache bytes equal ref::cacheWrite's, and decode attention (f32 query, the
// keys are not rotated) matches ref::decodeAttention within 1e-6 relative
// L2 (same order of every f32 sum; a wrong byte would show as ~1e-2).
TEST(CPUBaselineFormats, CacheWriteAndAttention) {
  const int64_t t = 45, h = 2, d = 64, blocks = 4, bs = 16, hq = 4;
  const int64_t slot = 2 * d + d; // bf16 K codes, FP8 V codes, no scales
  ref::Format kf, vf;
  kf.code = ref::ElementCode::BF16;
  vf.code = ref::ElementCode::FP8_E4M3;
  Rng rng(11);
  std::vector<float> k(t * h * d), v(t * h * d), q(1 * hq * d);
  for (float &x : k)
    x = rng.normal(3.0f);
  // FP8 values up to +-400 (above 448 the code is NaN and so is the output).
  for (float &x : v)
    x = std::fmin(std::fmax(rng.normal(100.0f), -400.0f), 400.0f);
  for (float &x : q)
    x = bf16Round(rng.normal(1.0f));
  std::vector<int64_t> slots(t);
  for (int64_t i = 0; i < t; ++i)
    slots[i] = i + 3; // tokens 0..44 of the sequence at slots 3..47
  std::vector<uint8_t> cache(blocks * bs * h * slot, 0);
  std::vector<uint8_t> expect = cache;
  ref::CacheGeometry g{blocks, bs, h, d, slot};
  ASSERT_TRUE(ref::cacheWrite(kf, vf, g, k.data(), v.data(), slots.data(), t,
                              expect.data())
                  .ok());
  std::string fmts = "{k_format = #uq.kv_format<bf16>, v_format = "
                     "#uq.kv_format<fp8_e4m3>, layout = "
                     "#uq.cache_layout<vllm_slot>";
  std::string ir = llvm::formatv(R"(
func.func @main(%k: tensor<45x2x64xf32>, %v: tensor<45x2x64xf32>, %slots: tensor<45xi64>,
                %cache: tensor<4x16x2x192xi8>, %q: tensor<1x4x64xbf16>,
                %bt: tensor<1x4xi32>, %lens: tensor<1xi32>)
    -> (tensor<4x16x2x192xi8>, tensor<1x4x64xf32>) {{
  %c = uq.cache_write %k, %v, %slots into %cache {0}}
      : tensor<45x2x64xf32>, tensor<45x2x64xf32>, tensor<45xi64> into tensor<4x16x2x192xi8>
  %o = uq.decode_attention %q, %c, %bt, %lens scale 0.125
      {0}, query_precision = #uq<query_precision f32>}
      : (tensor<1x4x64xbf16>, tensor<4x16x2x192xi8>, tensor<1x4xi32>, tensor<1xi32>)
      -> tensor<1x4x64xf32>
  return %c, %o : tensor<4x16x2x192xi8>, tensor<1x4x64xf32>
}
)",
                                 fmts)
                       .str();
  auto prog = compileOrDie(ir);
  ASSERT_TRUE(prog);
  // The sequence: 48 tokens in blocks 0..2 (slots 0..2 hold zero bytes).
  std::vector<int32_t> table = {0, 1, 2, 3};
  std::vector<int32_t> lens = {48};
  auto out = runOrDie(*prog, {f32Tensor({t, h, d}, k), f32Tensor({t, h, d}, v),
                              tensorOf(DType::I64, {t}, slots),
                              tensorOf(DType::I8, {blocks, bs, h, slot}, cache),
                              bf16Tensor({1, hq, d}, q),
                              tensorOf(DType::I32, {1, 4}, table),
                              tensorOf(DType::I32, {1}, lens)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(valuesOf<uint8_t>(out[0]), expect);
  ref::AttentionParams p;
  p.softmaxScale = 0.125f;
  p.queryPrecision = ref::QueryPrecision::F32;
  std::vector<float> want(hq * d);
  ASSERT_TRUE(ref::decodeAttention(kf, vf, g, expect.data(), p, q.data(), 1, hq,
                                   table.data(), 4, lens.data(), nullptr,
                                   want.data())
                  .ok());
  EXPECT_LT(relL2(valuesOf<float>(out[1]), want), 1e-6);
}
