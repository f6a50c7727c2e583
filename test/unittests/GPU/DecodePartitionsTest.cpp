//===- DecodePartitionsTest.cpp - Partition counts, merge, single pass ----===//
//
// uq.decode_attention's launch choices on the gfx950 path, run in the
// emulator from the kernel JSON and compared with the reference library:
//  - the partition-count rule (uq::decodePartitionCount) against values
//    worked out by hand;
//  - one code object (run-time sizes) decoding the same batch with the
//    single-pass kernel (no merge), and with the partial + merge kernels at
//    1, 2, 3, 16, 17 and 40 partitions (the merge reads 16 partitions per
//    step of its loop: 17 and 40 take two and three steps, with partitions
//    past the count masked), with sinks, rotated values, a bf16 result and
//    the value mean;
//  - #uq.cache_layout<head_major>: the GPU cache write's bytes equal the
//    reference's head-major cache bit for bit, decode and paged attention
//    read it within the bound, also for an FP8 cache.
//
//===----------------------------------------------------------------------===//

#include "PagedBatches.h"
#include "uq/Conversion/DecodePartitions.h"
#include "uq/Harness/EmulatedAttention.h"

#include "gtest/gtest.h"

#include <string>

using namespace uq;

namespace {

TEST(DecodePartitionRule, HandWorkedCounts) {
  DecodePartitionRule r; // at most 2048 tokens, at least 64, 1024 workgroups
  // Batch 1, 8 KV heads, 4096 tokens: 1024 / 8 = 128 wanted, 4096 / 64 = 64
  // allowed, 4096 / 2048 = 2 needed: 64.
  EXPECT_EQ(decodePartitionCount(r, 1, 8, 4096), 64);
  // Batch 1, 32K: 128 wanted, 512 allowed, 16 needed: 128.
  EXPECT_EQ(decodePartitionCount(r, 1, 8, 32768), 128);
  // Batch 64 (512 rows), 4K: 2 wanted, 1 needed: 2.
  EXPECT_EQ(decodePartitionCount(r, 64, 8, 4096), 2);
  // Batch 64, 128K: 2 wanted, 64 needed (2048 tokens each): 64.
  EXPECT_EQ(decodePartitionCount(r, 64, 8, 131072), 64);
  // Short contexts: 200 tokens at batch 64: 1 needed, 2 wanted,
  // ceil(200 / 64) = 4 allowed: 2.
  EXPECT_EQ(decodePartitionCount(r, 64, 8, 200), 2);
  // Batch 256 x 8 heads = 2048 rows: 1 wanted, one partition of 200 tokens:
  // the single pass.
  EXPECT_EQ(decodePartitionCount(r, 256, 8, 200), 1);
  // No tokens, no sequences: still one.
  EXPECT_EQ(decodePartitionCount(r, 0, 8, 0), 1);
  // At most 256 tokens per partition: 4K at batch 64 needs 16.
  DecodePartitionRule small{256, 64, 1024};
  EXPECT_EQ(decodePartitionCount(small, 64, 8, 4096), 16);
  // 32K at batch 64: 2 wanted, 16 needed.
  EXPECT_EQ(decodePartitionCount(r, 64, 8, 32768), 16);
}

struct MergeCase {
  const char *name;
  bool sinks = false, vRotated = false, vMean = false;
  const char *outType = "f32";
};

void PrintTo(const MergeCase &c, std::ostream *os) { *os << c.name; }

class DecodePartitionCounts : public ::testing::TestWithParam<MergeCase> {};

// One code object; the same batch (an empty sequence, short and long ones)
// decoded by every launch choice the host code may make, each within the
// reference's bound; the single pass runs no merge.
TEST_P(DecodePartitionCounts, EveryChoiceMatchesReference) {
  const MergeCase &c = GetParam();
  AttentionProblem config;
  config.numQHeads = 8;
  config.numKVHeads = 2;
  config.headDim = 128;
  config.blockSize = 16;
  config.sinks = c.sinks;
  config.vRotated = c.vRotated;
  config.vMean = c.vMean;
  config.outType = c.outType;
  config.dynamicShapes = true;
  config.seqLens = {1};
  auto compiled = CompiledAttention::compile(config);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  struct Choice {
    int64_t parts;
    bool single;
  };
  for (Choice ch : {Choice{1, true}, Choice{1, false}, Choice{2, false},
                    Choice{3, false}, Choice{16, false}, Choice{17, false},
                    Choice{40, false}}) {
    SCOPED_TRACE("partitions " + std::to_string(ch.parts) +
                 (ch.single ? " (single pass)" : " (partial + merge)"));
    AttentionProblem pb = config;
    pb.seqLens = {0, 1, 77, 700};
    pb.numPartitions = ch.parts;
    pb.singlePass = ch.single;
    pb.seed = 11;
    auto report = (*compiled)->run(pb);
    ASSERT_TRUE(static_cast<bool>(report))
        << llvm::toString(report.takeError());
    EXPECT_EQ(report->numPartitions, ch.parts);
    EXPECT_EQ(report->cacheMismatches, 0);
    EXPECT_EQ(report->outsideBound, 0)
        << "of " << report->numOutputs << " outputs; rel L2 "
        << report->relL2 << ", max abs " << report->maxAbsError;
    EXPECT_LT(report->relL2, 3e-3);
    if (ch.single)
      EXPECT_EQ(report->mergeStats.waveInstructions, 0u);
    else
      EXPECT_GT(report->mergeStats.waveInstructions, 0u);
    EXPECT_GT(report->partialStats.waveInstructions, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Options, DecodePartitionCounts,
    ::testing::Values(MergeCase{"plain"}, MergeCase{"sinks", true},
                      MergeCase{"rotated_values_bf16_sinks", true, true, false,
                                "bf16"},
                      MergeCase{"value_mean_sinks", true, false, true}),
    [](const ::testing::TestParamInfo<MergeCase> &info) {
      return std::string(info.param.name);
    });

// The compiler's own rule (numPartitions = 0) picks the single pass for a
// large batch of short sequences and partial + merge for one long one.
TEST(DecodePartitionCounts, CompilerRuleChoosesTheLaunch) {
  AttentionProblem config;
  config.numQHeads = 8;
  config.numKVHeads = 2;
  config.headDim = 64;
  config.dynamicShapes = true;
  config.decodeWorkgroups = 8;
  auto compiled = CompiledAttention::compile(config);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  // 4 sequences x 2 heads = 8 workgroups already: one partition.
  AttentionProblem many = config;
  many.seqLens = {100, 200, 3, 250};
  auto r1 = (*compiled)->run(many);
  ASSERT_TRUE(static_cast<bool>(r1)) << llvm::toString(r1.takeError());
  EXPECT_EQ(r1->numPartitions, 1);
  EXPECT_EQ(r1->mergeStats.waveInstructions, 0u);
  EXPECT_EQ(r1->outsideBound, 0);
  // One sequence of 900 tokens (a table of 57 blocks: 912): 8 / 2 = 4
  // wanted, ceil(912 / 64) = 15 allowed.
  AttentionProblem one = config;
  one.seqLens = {900};
  auto r2 = (*compiled)->run(one);
  ASSERT_TRUE(static_cast<bool>(r2)) << llvm::toString(r2.takeError());
  EXPECT_EQ(r2->numPartitions, 4);
  EXPECT_GT(r2->mergeStats.waveInstructions, 0u);
  EXPECT_EQ(r2->outsideBound, 0);
}

struct LayoutCase {
  const char *name;
  KVCacheKind format;
  int64_t hq, hkv, d, bs;
};

void PrintTo(const LayoutCase &c, std::ostream *os) { *os << c.name; }

class HeadMajorCache : public ::testing::TestWithParam<LayoutCase> {};

// The GPU cache write into a head-major cache equals the reference's
// head-major bytes; decode reads it within the bound: the single pass with
// static sizes, partial + merge (the rule's partition count) with run-time
// sizes. (Two of the four combinations: each run compiles the kernels.)
TEST_P(HeadMajorCache, CacheWriteAndDecode) {
  const LayoutCase &c = GetParam();
  for (bool dynamic : {false, true}) {
    for (int64_t parts : {int64_t(dynamic ? 0 : 1)}) {
      SCOPED_TRACE(std::string(dynamic ? "dynamic" : "static") +
                   ", partitions " + std::to_string(parts));
      AttentionProblem pb;
      pb.format = c.format;
      pb.numQHeads = c.hq;
      pb.numKVHeads = c.hkv;
      pb.headDim = c.d;
      pb.blockSize = c.bs;
      pb.headMajor = true;
      pb.sinks = true;
      pb.dynamicShapes = dynamic;
      pb.numPartitions = parts;
      pb.seqLens = {0, 45, 300};
      pb.seed = 21;
      auto report = runEmulatedAttention(pb);
      ASSERT_TRUE(static_cast<bool>(report))
          << llvm::toString(report.takeError());
      EXPECT_EQ(report->cacheMismatches, 0)
          << "of " << report->cacheBytes << " cache bytes";
      EXPECT_EQ(report->outsideBound, 0)
          << "of " << report->numOutputs << " outputs; rel L2 "
          << report->relL2;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, HeadMajorCache,
    ::testing::Values(
        LayoutCase{"uq4_gqa4_d128_bs16", KVCacheKind::UltraQuant, 8, 2, 128, 16},
        LayoutCase{"uq4_gqa2_d64_bs5", KVCacheKind::UltraQuant, 4, 2, 64, 5},
        LayoutCase{"uq4_gqa1_d256_bs64", KVCacheKind::UltraQuant, 3, 3, 256,
                   64},
        LayoutCase{"fp8_gqa4_d128_bs16", KVCacheKind::FP8, 8, 2, 128, 16},
        LayoutCase{"bf16_gqa2_d64_bs32", KVCacheKind::BF16, 4, 2, 64, 32}),
    [](const ::testing::TestParamInfo<LayoutCase> &info) {
      return std::string(info.param.name);
    });

// The two layouts hold the same slots in another order: the same problem
// decodes to the same output from either (the kernels' arithmetic does not
// depend on where a slot lies).
TEST(HeadMajorCache, SameOutputAsTokenMajor) {
  AttentionProblem pb;
  pb.numQHeads = 8;
  pb.numKVHeads = 4;
  pb.headDim = 128;
  pb.seqLens = {5, 260};
  pb.seed = 3;
  auto token = runEmulatedAttention(pb);
  ASSERT_TRUE(static_cast<bool>(token)) << llvm::toString(token.takeError());
  pb.headMajor = true;
  auto head = runEmulatedAttention(pb);
  ASSERT_TRUE(static_cast<bool>(head)) << llvm::toString(head.takeError());
  ASSERT_EQ(token->output.size(), head->output.size());
  EXPECT_EQ(token->output, head->output);
  EXPECT_EQ(head->cacheMismatches, 0);
}

// Paged attention (prefill chunks and decodes) over a head-major cache,
// with 1 and 4 waves per prefill workgroup (the LDS copy of a key tile).
TEST(HeadMajorCache, PagedAttention) {
  for (int64_t waves : {1, 4}) {
    SCOPED_TRACE("prefill waves " + std::to_string(waves));
    AttentionProblem pb;
    pb.numQHeads = 8;
    pb.numKVHeads = 2;
    pb.headDim = 128;
    pb.headMajor = true;
    pb.sinks = true;
    pb.prefillWaves = waves;
    uq::test::runBatches(pb, 0,
                         {{{1, 40, 1, 9}, {300, 600, 1, 9}, 1, 2},
                          {{16, 1}, {16, 50}, 0, 0}});
  }
}

} // namespace

namespace {
// The CPU paths (linalg and the wave-level kernels on the host) write and
// read the head-major cache like the GPU: cache bytes bit-exact with the
// reference, outputs within the bound and within twice it of the GPU's.
TEST(HeadMajorCache, CPUPaths) {
  AttentionProblem pb;
  pb.numQHeads = 4;
  pb.numKVHeads = 2;
  pb.headDim = 64;
  pb.headMajor = true;
  pb.sinks = true;
  pb.seqLens = {3, 70};
  pb.checkLinalgCPU = true;
  pb.checkWaveCPU = true;
  auto report = runEmulatedAttention(pb);
  ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  EXPECT_EQ(report->cacheMismatches, 0);
  for (const auto *run : {&report->linalgCPU, &report->waveCPU}) {
    ASSERT_TRUE(run->ran);
    EXPECT_EQ(run->cacheMismatches, 0);
    EXPECT_EQ(run->outsideBound, 0);
    EXPECT_EQ(run->gpuMismatches, 0);
  }
}
} // namespace
