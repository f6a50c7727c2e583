//===- DynamicShapesTest.cpp - One code object, many problems -------------===//
//
// The GPU path compiles with run-time sizes: one code object per
// configuration (heads, head dim, block size, formats) serves every batch
// size, sequence length, block-table width and cache size, the sizes coming
// from the kernel JSON's symbolic shapes and grid rules at launch. Each test
// compiles once and runs several problems of different sizes in the
// emulator, comparing each with the reference library (the same checks as
// EmulatedAttentionTest: cache bytes bit-exact, every output inside the
// per-element bound of ref::attentionErrorBounds).
//
// FP8 and BF16 caches go through the same passes and are checked the same
// way (their cache writes are exact conversions; their decode kernels round
// P to FP8 resp. bf16, which the bound accounts for).
//
//===----------------------------------------------------------------------===//

#include "uq/Harness/EmulatedAttention.h"

#include "gtest/gtest.h"

#include <numeric>

using namespace uq;

namespace {

struct Sizes {
  std::vector<int32_t> lens;
  int64_t spareColumns, spareBlocks;
};

void runAll(const AttentionProblem &config, const std::vector<Sizes> &runs) {
  AttentionProblem shape = config;
  shape.dynamicShapes = true;
  auto compiled = CompiledAttention::compile(shape);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  // One code object for all runs: its JSON has run-time sizes.
  EXPECT_NE((*compiled)->kernelsJson().find("\"num_seqs\""), std::string::npos)
      << (*compiled)->kernelsJson();
  uint64_t seed = 17;
  for (const Sizes &sz : runs) {
    AttentionProblem pb = config;
    pb.seqLens = sz.lens;
    pb.spareColumns = sz.spareColumns;
    pb.spareBlocks = sz.spareBlocks;
    pb.seed = seed++;
    std::string what = "batch " + std::to_string(sz.lens.size()) +
                       ", tokens " +
                       std::to_string(std::accumulate(sz.lens.begin(),
                                                      sz.lens.end(), 0)) +
                       ", spare columns " + std::to_string(sz.spareColumns) +
                       ", spare blocks " + std::to_string(sz.spareBlocks);
    auto report = (*compiled)->run(pb);
    ASSERT_TRUE(static_cast<bool>(report))
        << what << ": " << llvm::toString(report.takeError());
    EXPECT_EQ(report->cacheMismatches, 0)
        << what << ": of " << report->cacheBytes << " cache bytes";
    EXPECT_EQ(report->outsideBound, 0)
        << what << ": of " << report->numOutputs << " outputs; rel L2 "
        << report->relL2 << ", max abs " << report->maxAbsError;
    EXPECT_EQ(report->numOutputs,
              int64_t(sz.lens.size()) * config.numQHeads * config.headDim)
        << what;
  }
}

struct HeadsCase {
  int64_t hq, hkv, d;
};

void PrintTo(const HeadsCase &c, std::ostream *os) {
  *os << "gqa" << c.hq / c.hkv << "_d" << c.d;
}

class DynamicShapes : public ::testing::TestWithParam<HeadsCase> {};

// Batches of 1, 3 and 7 sequences, lengths from 0 to 5000 (the longest only
// for the small head dims, to keep the emulated work bounded), two block-table
// widths and two cache sizes -- all through one compiled code object per
// configuration.
TEST_P(DynamicShapes, OneCodeObjectServesManySizes) {
  const HeadsCase &c = GetParam();
  AttentionProblem config;
  config.numQHeads = c.hq;
  config.numKVHeads = c.hkv;
  config.headDim = c.d;
  config.blockSize = 16;
  config.sinks = c.hq % 2 == 0;
  const int32_t longest = c.d <= 64 ? 5000 : c.d == 128 ? 1500 : 700;
  runAll(config, {{{longest}, 0, 1},
                  {{0, 33, 257}, 3, 9},
                  {{1, 2, 31, 32, 0, 16, 100}, 0, 2}});
}

INSTANTIATE_TEST_SUITE_P(Heads, DynamicShapes,
                         ::testing::Values(HeadsCase{1, 1, 64},
                                           HeadsCase{2, 1, 128},
                                           HeadsCase{4, 1, 256},
                                           HeadsCase{8, 1, 64},
                                           HeadsCase{16, 1, 128},
                                           HeadsCase{4, 2, 64},
                                           HeadsCase{16, 2, 256},
                                           HeadsCase{8, 1, 128},
                                           HeadsCase{2, 2, 256}),
                         [](const ::testing::TestParamInfo<HeadsCase> &info) {
                           std::ostringstream os;
                           PrintTo(info.param, &os);
                           return os.str();
                         });

// Block sizes other than 16 with run-time sizes: 32 (table read per 32-token
// tile) and 64 (one uniform table read per tile), 8 (a gather per token).
TEST(DynamicShapes, OtherBlockSizes) {
  for (int64_t bs : {8, 32, 64}) {
    SCOPED_TRACE("block size " + std::to_string(bs));
    AttentionProblem config;
    config.numQHeads = 8;
    config.numKVHeads = 2;
    config.headDim = 128;
    config.blockSize = bs;
    runAll(config, {{{300}, 0, 1}, {{5, 0, 129}, 2, 4}});
  }
}

struct FormatCase {
  KVCacheKind format;
  int64_t hq, hkv, d, bs;
  const char *dtype;
  bool sinks;
};

void PrintTo(const FormatCase &c, std::ostream *os) {
  *os << kvCacheKindName(c.format) << "_gqa" << c.hq / c.hkv << "_d" << c.d
      << "_bs" << c.bs << "_" << c.dtype;
}

class OtherFormats : public ::testing::TestWithParam<FormatCase> {};

// FP8 and BF16 caches: the cache-write kernel's bytes equal the reference's
// conversion, the decode output lies within the bound, statically and with
// run-time sizes.
TEST_P(OtherFormats, CacheWriteAndDecode) {
  const FormatCase &c = GetParam();
  AttentionProblem pb;
  pb.format = c.format;
  pb.numQHeads = c.hq;
  pb.numKVHeads = c.hkv;
  pb.headDim = c.d;
  pb.blockSize = c.bs;
  pb.dtype = c.dtype;
  pb.sinks = c.sinks;
  pb.seqLens = {300, 17};
  auto report = runEmulatedAttention(pb);
  ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  EXPECT_GT(report->cacheBytes, 0);
  EXPECT_EQ(report->cacheMismatches, 0)
      << "of " << report->cacheBytes << " cache bytes";
  EXPECT_EQ(report->outsideBound, 0)
      << "of " << report->numOutputs << " outputs; rel L2 " << report->relL2;
  // FP8 rounds P to E4M3 (3 mantissa bits), bf16 to 8 bits.
  EXPECT_LT(report->relL2, c.format == KVCacheKind::FP8 ? 3e-2 : 3e-3);
  // BF16 runs on bf16 MFMAs only; FP8 runs its QK on the f8f6f4 MFMA with
  // FP8 operands and unit scales.
  const auto &kinds = report->partialStats.mfmaByKind;
  EXPECT_GT(kinds.size(), 0u);
  for (const auto &[kind, n] : kinds) {
    if (c.format == KVCacheKind::BF16)
      EXPECT_NE(kind.find("bf16"), std::string::npos) << kind;
    else
      EXPECT_TRUE(kind.find("f8f6f4") != std::string::npos ||
                  kind.find("fp8") != std::string::npos)
          << kind;
  }

  runAll(pb, {{{1, 1000, 0}, 1, 2}, {{64}, 0, 1}});
}

INSTANTIATE_TEST_SUITE_P(
    Formats, OtherFormats,
    ::testing::Values(
        FormatCase{KVCacheKind::FP8, 8, 1, 128, 16, "bf16", true},
        FormatCase{KVCacheKind::FP8, 4, 2, 64, 32, "f32", false},
        FormatCase{KVCacheKind::FP8, 16, 1, 256, 16, "bf16", false},
        FormatCase{KVCacheKind::BF16, 8, 1, 128, 16, "bf16", true},
        FormatCase{KVCacheKind::BF16, 2, 2, 64, 64, "f32", false},
        FormatCase{KVCacheKind::BF16, 4, 1, 256, 16, "bf16", true}),
    [](const ::testing::TestParamInfo<FormatCase> &info) {
      std::ostringstream os;
      PrintTo(info.param, &os);
      return os.str();
    });

} // namespace
