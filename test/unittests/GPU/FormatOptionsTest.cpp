//===- FormatOptionsTest.cpp - The accuracy options on gfx950 ------------===//
//
// The accuracy study's format options (docs/accuracy.md) through the whole
// GPU path: convert-uq-to-wave, lane layouts, ROCDL, a gfx950 code object
// run in the emulator from its kernel JSON (uq::runEmulatedAttention),
// against the reference library:
//  - k_mean / v_mean: the cache-write kernel subtracts the channel means
//    before rotation and coding (every cache byte equals ref::cacheWrite's
//    with the same means); the attention adds q . rot(k_mean) to every
//    logit and v_mean times the keys' softmax share at the merge, which the
//    reference defines as the means added to every decoded row;
//  - query_precision = fp8_e4m3_scaled: per-32 UE8M0 query scales as the
//    scaled MFMA's A scales, including queries whose rotated elements pass
//    448 (scale-1 FP8 gives NaN there) and D = 64 (half-padded MFMA K);
//  - the same options on uq.paged_attention (prefill chunks and decodes in
//    one batch, 1 and 4 waves per workgroup, sliding window);
//  - E4M3 value scales (`scale = e4m3` on the value format);
//  - docs/accuracy.md's configurations: `uq:c=0.196,rotv,search,kmean,vmean`
//    (c = 0.196, mse_search, V rotated, K and V channel means) and the best
//    the dialect expresses, the same with E4M3 value scales (`vs=e4m3`):
//    the GPU cache write bit-exact, decode and paged attention within the
//    bound.
// Outputs must lie within ref::attentionErrorBounds (the kernels' rounding
// of P), as for every other configuration.
//
//===----------------------------------------------------------------------===//

#include "PagedBatches.h"
#include "uq/Harness/EmulatedAttention.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace uq;

namespace {

struct OptionCase {
  const char *name;
  int64_t hq, hkv, d;
  std::vector<int32_t> lens;
  bool sinks, kMean, vMean, scaledQuery, vRotated;
  float scale = 1.0f;
  double c = 0.156;
  bool mseSearch = false;
  bool vScaleE4M3 = false;
};

void PrintTo(const OptionCase &c, std::ostream *os) { *os << c.name; }

AttentionProblem problemOf(const OptionCase &c) {
  AttentionProblem pb;
  pb.numQHeads = c.hq;
  pb.numKVHeads = c.hkv;
  pb.headDim = c.d;
  pb.seqLens = c.lens;
  pb.sinks = c.sinks;
  pb.kMean = c.kMean;
  pb.vMean = c.vMean;
  pb.scaledQuery = c.scaledQuery;
  pb.vRotated = c.vRotated;
  pb.scale = c.scale;
  pb.c = c.c;
  pb.mseSearch = c.mseSearch;
  pb.vScaleE4M3 = c.vScaleE4M3;
  pb.seed = 99 + c.hq * 5 + c.d;
  return pb;
}

class GPUFormatOptions : public ::testing::TestWithParam<OptionCase> {};

} // namespace

TEST_P(GPUFormatOptions, MatchesReference) {
  AttentionProblem pb = problemOf(GetParam());
  auto report = runEmulatedAttention(pb);
  ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  EXPECT_EQ(report->cacheMismatches, 0)
      << "of " << report->cacheBytes << " cache bytes";
  EXPECT_EQ(report->outsideBound, 0)
      << "of " << report->numOutputs << " outputs; rel L2 " << report->relL2
      << ", max abs " << report->maxAbsError;
  EXPECT_LT(report->relL2, 3e-3);
  for (float x : report->output)
    ASSERT_TRUE(std::isfinite(x));
}

INSTANTIATE_TEST_SUITE_P(
    Options, GPUFormatOptions,
    ::testing::Values(
        OptionCase{"means_sinks_vrot_gqa4", 8, 2, 128, {300, 45}, true, true,
                   true, false, true, 1.0f, 0.196},
        OptionCase{"means_d64_no_sinks", 4, 1, 64, {90, 0}, false, true, true,
                   false, false},
        OptionCase{"kmean_only_sinks", 8, 1, 128, {130}, true, true, false,
                   false, false},
        OptionCase{"scaled_query_large", 8, 1, 128, {100}, true, false, false,
                   true, false, 300.0f},
        OptionCase{"scaled_query_means_d64", 4, 2, 64, {77, 20}, true, true,
                   true, true, true, 20.0f, 0.196},
        // docs/accuracy.md's configuration for every path:
        // uq:c=0.196,rotv,search,kmean,vmean (with and without sinks).
        OptionCase{"chosen_gqa8_sinks", 8, 1, 128, {700, 33, 1}, true, true,
                   true, false, true, 1.0f, 0.196, true},
        OptionCase{"chosen_gqa4_two_heads", 8, 2, 128, {257, 64}, false, true,
                   true, false, true, 3.0f, 0.196, true},
        OptionCase{"chosen_d64", 4, 1, 64, {129}, true, true, true, false,
                   true, 1.0f, 0.196, true},
        // E4M3 value scales (vs=e4m3): plain, large values, and the best
        // configuration the dialect expresses,
        // uq:c=0.196,rotv,search,vs=e4m3,kmean,vmean.
        OptionCase{"e4m3_values_d256", 4, 1, 256, {100, 7}, false, false,
                   false, false, false, 1.0f, 0.156, false, true},
        OptionCase{"e4m3_values_large_search", 8, 2, 128, {90}, true, false,
                   false, false, true, 30.0f, 0.196, true, true},
        OptionCase{"best_dialect_gqa8_sinks", 8, 1, 128, {700, 33, 1}, true,
                   true, true, false, true, 1.0f, 0.196, true, true},
        OptionCase{"best_dialect_d64_scaled_query", 4, 1, 64, {129}, true,
                   true, true, true, true, 1.0f, 0.196, true, true}),
    [](const ::testing::TestParamInfo<OptionCase> &info) {
      return std::string(info.param.name);
    });

// The means matter: the same problem with the means and without them in the
// attention gives a different output (the reference comparison above would
// not notice an option the kernels ignore if the means were ~0).
TEST(GPUFormatOptions, MeansChangeTheResult) {
  OptionCase c{"means", 8, 2, 128, {64}, true, true, true, false, false};
  AttentionProblem pb = problemOf(c);
  auto with = runEmulatedAttention(pb);
  ASSERT_TRUE(static_cast<bool>(with)) << llvm::toString(with.takeError());
  pb.kMean = pb.vMean = false;
  auto without = runEmulatedAttention(pb);
  ASSERT_TRUE(static_cast<bool>(without))
      << llvm::toString(without.takeError());
  ASSERT_EQ(with->output.size(), without->output.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < with->output.size(); ++i) {
    diff += std::fabs(with->output[i] - without->output[i]);
    norm += std::fabs(without->output[i]);
  }
  EXPECT_GT(diff, 0.1 * norm);
}

// E4M3 value scales too: an FP8 cache refuses them (they would be ignored).
TEST(GPUFormatOptions, E4M3ValueScalesOnOtherFormatsAreAnError) {
  OptionCase c{"fp8", 8, 1, 128, {16}, false, false, false, false, false};
  AttentionProblem pb = problemOf(c);
  pb.format = KVCacheKind::FP8;
  pb.vScaleE4M3 = true;
  auto r = runEmulatedAttention(pb);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("E4M3 value scales are an "
                                                "UltraQuant option"),
            std::string::npos);
  PagedAttentionProblem pp;
  pp.config = pb;
  auto p = runEmulatedPagedAttention(pp);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_NE(llvm::toString(p.takeError()).find("UltraQuant option"),
            std::string::npos);
}

// Channel means are an UltraQuant option of the harness: FP8 caches refuse
// them with an error, not a wrong comparison.
TEST(GPUFormatOptions, MeansOnOtherFormatsAreAnError) {
  OptionCase c{"fp8", 8, 1, 128, {16}, false, true, false, false, false};
  AttentionProblem pb = problemOf(c);
  pb.format = KVCacheKind::FP8;
  auto r = runEmulatedAttention(pb);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("UltraQuant"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// uq.paged_attention
//===----------------------------------------------------------------------===//

namespace {

struct PagedOptionCase {
  const char *name;
  OptionCase options;
  int64_t waves, window;
};

void PrintTo(const PagedOptionCase &c, std::ostream *os) { *os << c.name; }

class GPUPagedFormatOptions
    : public ::testing::TestWithParam<PagedOptionCase> {};

} // namespace

// Prefill chunks, decodes and tokens no sequence covers in one batch; one
// code object per configuration serves every batch.
TEST_P(GPUPagedFormatOptions, MatchesReference) {
  const PagedOptionCase &c = GetParam();
  AttentionProblem config = problemOf(c.options);
  config.prefillWaves = c.waves;
  test::runBatches(config, c.window,
                   {{{1, 1, 1}, {1, 40, 333}, 0, 0},
                    {{70, 1, 17}, {70, 300, 200}, 3, 5},
                    {{129}, {400}, 0, 0}},
                   /*maxRelL2=*/3e-3, /*finite=*/true);
}

INSTANTIATE_TEST_SUITE_P(
    Options, GPUPagedFormatOptions,
    ::testing::Values(
        PagedOptionCase{"chosen_gqa8_sinks_w4",
                        {"", 8, 1, 128, {}, true, true, true, false, true,
                         1.0f, 0.196, true},
                        4, 0},
        PagedOptionCase{"chosen_gqa4_w1_window",
                        {"", 8, 2, 128, {}, false, true, true, false, true,
                         2.0f, 0.196, true},
                        1, 100},
        PagedOptionCase{"kmean_only_sinks_d64",
                        {"", 4, 1, 64, {}, true, true, false, false, false},
                        2, 0},
        PagedOptionCase{"best_dialect_gqa8_sinks_w4",
                        {"", 8, 1, 128, {}, true, true, true, false, true,
                         1.0f, 0.196, true, true},
                        4, 0},
        PagedOptionCase{"e4m3_values_gqa4_w2_window",
                        {"", 8, 2, 128, {}, false, false, false, false, false,
                         2.0f, 0.156, false, true},
                        2, 64},
        PagedOptionCase{"scaled_query_large_means",
                        {"", 8, 1, 128, {}, true, true, true, true, false,
                         300.0f},
                        4, 0}),
    [](const ::testing::TestParamInfo<PagedOptionCase> &info) {
      return std::string(info.param.name);
    });

// The paged means matter as decode's do: without them in the attention the
// output moves by more than 10 % of its magnitude.
TEST(GPUPagedFormatOptions, MeansChangeTheResult) {
  OptionCase c{"means", 8, 2, 128, {}, true, true, true, false, false};
  PagedAttentionProblem pp;
  pp.config = problemOf(c);
  pp.queryLens = {20, 1};
  pp.seqLens = {50, 90};
  auto with = runEmulatedPagedAttention(pp);
  ASSERT_TRUE(static_cast<bool>(with)) << llvm::toString(with.takeError());
  EXPECT_EQ(with->outsideBound, 0);
  // The same draws without the means (rows not shifted, so the cache holds
  // nearly the same bytes): kernels that ignored the means would give
  // nearly the same output.
  PagedAttentionProblem without = pp;
  without.config.kMean = without.config.vMean = false;
  auto other = runEmulatedPagedAttention(without);
  ASSERT_TRUE(static_cast<bool>(other)) << llvm::toString(other.takeError());
  ASSERT_EQ(with->output.size(), other->output.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < with->output.size(); ++i) {
    diff += std::fabs(with->output[i] - other->output[i]);
    norm += std::fabs(other->output[i]);
  }
  EXPECT_GT(diff, 0.1 * norm);
}
