//===- PagedAttentionTest.cpp - uq.paged_attention on the gfx950 path -----===//
//
// uq.paged_attention (prefill chunks and decodes in one launch) compiled
// through the compiler's stages to a gfx950 code object, run in the
// emulator from the kernel JSON, and compared with ref::pagedAttention:
// every output inside the per-element bound of ref::attentionErrorBounds
// (the kernels' rounding of P, derived as for decode in
// lib/Harness/EmulatedAttention.cpp). One code object per configuration
// (run-time sizes) serves every batch of a test.
//
//===----------------------------------------------------------------------===//

#include "PagedBatches.h"
#include "uq/Harness/EmulatedAttention.h"

#include "uq/Reference/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <set>

using namespace uq;
using uq::test::Batch;
using uq::test::runBatches;

namespace {

AttentionProblem config(int64_t hq, int64_t hkv, int64_t d,
                        KVCacheKind format = KVCacheKind::UltraQuant) {
  AttentionProblem pb;
  pb.numQHeads = hq;
  pb.numKVHeads = hkv;
  pb.headDim = d;
  pb.format = format;
  return pb;
}

/// One chunk of \p q new tokens over \p prefix cached ones in one split-K
/// partition, 16 / 8 heads, D 64, uq4: compiled into \p compiled and
/// predicted from 4 sampled workgroups per launch.
llvm::Expected<PagedAttentionTiming>
predictOneChunk(PagedAttentionProblem &pp,
                std::unique_ptr<CompiledPagedAttention> &compiled, int32_t q,
                int32_t prefix) {
  pp.config = config(16, 8, 64);
  auto c = CompiledPagedAttention::compile(pp);
  if (!c)
    return c.takeError();
  compiled = std::move(*c);
  pp.queryLens = {q};
  pp.seqLens = {q + prefix};
  pp.numPartitions = 1;
  return compiled->predict(pp, 4);
}

// A mixed batch: decodes (query length 1) and prefill chunks of 1..300
// tokens over contexts of 0..3000 tokens, with tokens no sequence covers.
TEST(PagedAttentionGPU, MixedBatchUQ4) {
  runBatches(config(8, 1, 128), 0,
             {{{1, 300, 1, 17, 0, 5}, {1, 1200, 3000, 17, 0, 5}, 2, 3},
              {{64, 1, 2}, {64, 1, 700}, 0, 0}});
}

// GQA ratios 1..16 (odd ones leave MFMA rows idle), D 64 and 256, sinks.
TEST(PagedAttentionGPU, GQARatiosHeadDimsSinks) {
  struct Case {
    int64_t hq, hkv, d;
  };
  for (Case c : {Case{2, 2, 64}, Case{6, 2, 128}, Case{5, 1, 64},
                 Case{16, 1, 256}}) {
    SCOPED_TRACE("Hq " + std::to_string(c.hq) + " Hkv " +
                 std::to_string(c.hkv) + " D " + std::to_string(c.d));
    AttentionProblem pb = config(c.hq, c.hkv, c.d);
    pb.sinks = true;
    runBatches(pb, 0, {{{1, 37, 9}, {200, 101, 9}, 1, 1}});
  }
}

// A sliding window: rows see only the last W keys (several rows of a tile
// start in different key tiles).
TEST(PagedAttentionGPU, SlidingWindow) {
  AttentionProblem pb = config(4, 1, 128);
  pb.sinks = true;
  runBatches(pb, 45, {{{1, 90, 3}, {400, 150, 3}, 0, 0}});
}

// The FP8-KV and BF16-KV baselines through the same kernels.
TEST(PagedAttentionGPU, FP8AndBF16Caches) {
  for (KVCacheKind k : {KVCacheKind::FP8, KVCacheKind::BF16}) {
    SCOPED_TRACE(kvCacheKindName(k));
    runBatches(config(8, 2, 128, k), 0, {{{1, 70, 33}, {500, 170, 33}, 1, 0}});
  }
}

// Rotated values (the output is rotated back by the merge) and a bf16
// result.
TEST(PagedAttentionGPU, RotatedValuesBF16Output) {
  AttentionProblem pb = config(8, 1, 128);
  pb.vRotated = true;
  pb.outType = "bf16";
  runBatches(pb, 0, {{{3, 1}, {50, 20}, 0, 2}});
}

// A chunked prefill in two calls gives the bits of one call: the second
// chunk's tokens sit at the same positions and see the same keys (with
// \p waves waves per prefill workgroup).
void checkChunkedEqualsWhole(int64_t waves) {
  const int32_t prefix = 260, chunk1 = 70, chunk2 = 45;
  const int32_t total = prefix + chunk1 + chunk2;
  PagedAttentionProblem one;
  one.config = config(8, 1, 128);
  one.config.sinks = true;
  one.config.prefillWaves = waves;
  one.cachedLens = {total};
  auto compiled = CompiledPagedAttention::compile(one);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  const int64_t row = 8 * 128;
  // The query of the chunk1 + chunk2 tokens, bf16-representable.
  std::vector<float> q(int64_t(chunk1 + chunk2) * row);
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = ref::bf16ToFloat(ref::floatToBf16(std::sin(0.37f * float(i))));
  one.queryLens = {chunk1 + chunk2};
  one.seqLens = {total};
  one.query = q;
  auto whole = (*compiled)->run(one);
  ASSERT_TRUE(static_cast<bool>(whole)) << llvm::toString(whole.takeError());
  EXPECT_EQ(whole->outsideBound, 0);

  PagedAttentionProblem first = one, second = one;
  first.queryLens = {chunk1};
  first.seqLens = {prefix + chunk1};
  first.query.assign(q.begin(), q.begin() + chunk1 * row);
  second.queryLens = {chunk2};
  second.seqLens = {total};
  second.query.assign(q.begin() + chunk1 * row, q.end());
  auto a = (*compiled)->run(first);
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  auto b = (*compiled)->run(second);
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(a->outsideBound, 0);
  EXPECT_EQ(b->outsideBound, 0);
  std::vector<float> joined = a->output;
  joined.insert(joined.end(), b->output.begin(), b->output.end());
  ASSERT_EQ(joined.size(), whole->output.size());
  int64_t differ = 0;
  for (size_t i = 0; i < joined.size(); ++i)
    differ += std::memcmp(&joined[i], &whole->output[i], 4) != 0;
  EXPECT_EQ(differ, 0) << "of " << joined.size() << " outputs";
}

// With 1, 2 and 4 waves per prefill workgroup (chunk boundaries fall inside
// a workgroup's tokens).
TEST(PagedAttentionGPU, ChunkedPrefillTwoCallsEqualOne) {
  for (int64_t waves : {1, 2, 4}) {
    SCOPED_TRACE("prefill waves " + std::to_string(waves));
    checkChunkedEqualsWhole(waves);
  }
}

// Workgroups of 1, 2, 4 and 8 waves (prefill-waves): mixed batches of
// decodes and chunks of 1..300 tokens, GQA 1, 4, 8, 16, D 64, 128, 256, a
// sliding window and sinks, all inside the bound. (The other tests run the
// default, 4 waves.)
TEST(PagedAttentionGPU, WavesPerWorkgroup) {
  struct Case {
    int64_t waves, hq, hkv, d, window;
  };
  for (Case c : {Case{1, 4, 1, 64, 45}, Case{2, 4, 1, 64, 45},
                 Case{2, 16, 1, 256, 0}, Case{2, 1, 1, 128, 0},
                 Case{8, 8, 1, 128, 0}, Case{1, 8, 2, 128, 0}}) {
    SCOPED_TRACE("W " + std::to_string(c.waves) + " Hq " +
                 std::to_string(c.hq) + " Hkv " + std::to_string(c.hkv) +
                 " D " + std::to_string(c.d) + " window " +
                 std::to_string(c.window));
    AttentionProblem pb = config(c.hq, c.hkv, c.d);
    pb.sinks = true;
    pb.prefillWaves = c.waves;
    runBatches(pb, c.window, {{{1, 300, 1, 17}, {40, 330, 2, 17}, 1, 2}});
  }
}

// The block table read one tile ahead (the multi-wave kernels with LDS
// copies): block sizes whose 32-token tile spans 4, 2 or 1 blocks (8, 16,
// 32, 64; 8 and 16 also split a tile between the waves' value shares) and
// 2 and 4 (per-token gathers, not read ahead), over sequences that end
// inside a block, on a tile boundary, inside the first tile and after
// several tiles, so that the entries carried into the last iterations
// belong to blocks past the end; uq4 (shared value tile) and fp8, 4 and
// 2 waves.
TEST(PagedAttentionGPU, BlockSizesWithTheTableReadAhead) {
  struct Case {
    int64_t bs, waves;
    KVCacheKind format;
  };
  const KVCacheKind uq4 = KVCacheKind::UltraQuant, fp8 = KVCacheKind::FP8;
  for (Case c : {Case{2, 4, uq4}, Case{4, 4, uq4}, Case{8, 4, uq4},
                 Case{16, 4, uq4}, Case{32, 4, uq4}, Case{64, 4, uq4},
                 Case{16, 2, uq4}, Case{8, 4, fp8}, Case{32, 4, fp8}}) {
    SCOPED_TRACE("bs " + std::to_string(c.bs) + " waves " +
                 std::to_string(c.waves) + " " + kvCacheKindName(c.format));
    AttentionProblem pb = config(8, 2, 64, c.format);
    pb.blockSize = c.bs;
    pb.prefillWaves = c.waves;
    // (The per-element bound is the check; FP8's relative L2 on the
    // second batch is 0.020 at every block size, at the heuristic's edge.)
    runBatches(pb, 0,
               {{{1, 40, 17, 5}, {9, 64, 300, 5}, 1, 0},
                {{96, 1}, {131, 77}, 0, 1}},
               c.format == fp8 ? 0.03 : 0.02);
  }
}

// Waves of 32 MFMA rows (prefill-rows: two 16-row tiles sharing every K
// and V operand of a key tile): mixed batches of decodes and chunks, GQA 1,
// 2, 4, 8, 16, D 64, 128, 256, windows and sinks, 1, 2 and 4 waves, all
// inside the bound.
TEST(PagedAttentionGPU, RowsPerWave) {
  struct Case {
    int64_t rows, waves, hq, hkv, d, window;
  };
  for (Case c : {Case{32, 4, 8, 1, 128, 0}, Case{32, 2, 4, 1, 64, 45},
                 Case{32, 1, 16, 1, 256, 0}, Case{32, 4, 1, 1, 128, 0},
                 Case{32, 2, 8, 4, 128, 0}, Case{32, 1, 8, 4, 64, 45}}) {
    SCOPED_TRACE("R " + std::to_string(c.rows) + " W " +
                 std::to_string(c.waves) + " Hq " + std::to_string(c.hq) +
                 " Hkv " + std::to_string(c.hkv) + " D " +
                 std::to_string(c.d) + " window " + std::to_string(c.window));
    AttentionProblem pb = config(c.hq, c.hkv, c.d);
    pb.sinks = true;
    pb.prefillWaves = c.waves;
    pb.prefillRows = c.rows;
    runBatches(pb, c.window, {{{1, 300, 1, 17}, {40, 330, 2, 17}, 1, 2}});
  }
}

// A key tile is read from memory once per workgroup, not once per wave:
// the same long prefill with 4 waves per workgroup (8 tokens per
// workgroup, GQA 8) reads about a quarter of the global bytes of 1 wave
// per workgroup (the key/value tiles dominate: 64 query tokens over 1024
// keys), with the shared value tile (the default) and without it.
TEST(PagedAttentionGPU, KeyTilesReadOncePerWorkgroup) {
  // 0: 1 wave; 1: 4 waves, shared value tile; 2: 4 waves without it.
  uint64_t bytes[3] = {0, 0, 0}, groups[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    PagedAttentionProblem pp;
    pp.config = config(8, 1, 128);
    pp.config.prefillWaves = i == 0 ? 1 : 4;
    pp.config.prefillSharedV = i != 2;
    auto compiled = CompiledPagedAttention::compile(pp);
    ASSERT_TRUE(static_cast<bool>(compiled))
        << llvm::toString(compiled.takeError());
    pp.queryLens = {64};
    pp.seqLens = {1024};
    auto report = (*compiled)->run(pp);
    ASSERT_TRUE(static_cast<bool>(report))
        << llvm::toString(report.takeError());
    EXPECT_EQ(report->outsideBound, 0);
    bytes[i] = report->prefillStats.globalBytesRead;
    groups[i] = report->prefillStats.workgroups;
  }
  // The keys alone: with 1 wave, each of the 32 two-token workgroups reads
  // the 961..1024 keys it sees, 136 bytes each.
  EXPECT_GT(bytes[0], uint64_t(32) * 960 * 136);
  // Without the shared value tile a 4-wave workgroup reads each 136-byte
  // slot once. With it the slot is read once too, but each wave's share
  // of the value scales (8 rows of 4 bytes over 64 lanes) is read by two
  // lanes a byte (+4 bytes a token, counted per lane) and each wave reads
  // one more block-table entry a tile (+0.5): 140.5 bytes a token.
  for (int i : {1, 2}) {
    double ratio = double(bytes[i]) / double(bytes[0]);
    double most = i == 1 ? 0.3 * 140.5 / 136 : 0.3;
    EXPECT_GT(ratio, 0.2) << i << ": " << bytes[i] << " / " << bytes[0];
    EXPECT_LT(ratio, most) << i << ": " << bytes[i] << " / " << bytes[0];
    // Per workgroup about the same bytes: a 4-wave workgroup reads each
    // tile once (its extra queries and outputs are small).
    double perGroup = (double(bytes[i]) / double(groups[i])) /
                      (double(bytes[0]) / double(groups[0]));
    EXPECT_LT(perGroup, 1.3) << groups[i] << " and " << groups[0]
                             << " workgroups";
  }
}

// Split-K over the keys (several partitions merged) gives results inside
// the same bound, and a sequence without keys gives zeros.
TEST(PagedAttentionGPU, PartitionsAndEmptySequences) {
  PagedAttentionProblem pp;
  pp.config = config(8, 1, 128);
  pp.config.sinks = true;
  pp.config.partitionSize = 64;
  auto compiled = CompiledPagedAttention::compile(pp);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  pp.queryLens = {40, 3, 1};
  pp.seqLens = {300, 0, 2};
  pp.trailingTokens = 2;
  for (int64_t parts : {int64_t(0), int64_t(1), int64_t(3)}) {
    pp.numPartitions = parts;
    auto report = (*compiled)->run(pp);
    ASSERT_TRUE(static_cast<bool>(report))
        << llvm::toString(report.takeError());
    EXPECT_EQ(report->outsideBound, 0) << parts << " partitions";
    // Tokens 40..42 (length-0 sequence) and the two trailing ones are 0.
    const int64_t row = 8 * 128;
    for (int64_t tok : {40, 41, 42, 44, 45})
      for (int64_t i = 0; i < row; ++i)
        ASSERT_EQ(report->output[tok * row + i], 0.0f)
            << "token " << tok << ", " << parts << " partitions";
  }
}

// A NaN sink makes the outputs of tokens that see a key NaN; a token that
// sees no key stays 0 (docs/dialect.md, input policy).
TEST(PagedAttentionGPU, NaNSinkPolicy) {
  PagedAttentionProblem pp;
  pp.config = config(2, 1, 64);
  pp.config.sinks = true;
  pp.config.sinkValues = {NAN, 0.5f};
  auto compiled = CompiledPagedAttention::compile(pp);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  pp.queryLens = {4};
  pp.seqLens = {2}; // tokens 0, 1 at positions -2, -1: no key
  auto report = (*compiled)->run(pp);
  ASSERT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  EXPECT_EQ(report->outsideBound, 0);
  const int64_t d = 64;
  for (int64_t tok = 0; tok < 4; ++tok)
    for (int64_t h = 0; h < 2; ++h) {
      float x = report->output[(tok * 2 + h) * d];
      if (tok < 2)
        EXPECT_EQ(x, 0.0f) << "token " << tok << " head " << h;
      else if (h == 0)
        EXPECT_TRUE(std::isnan(x)) << "token " << tok;
      else
        EXPECT_FALSE(std::isnan(x)) << "token " << tok;
    }
}


// The prefill launch's HBM bytes under an L2 per XCD: each of the 8 XCDs
// reads a (sequence, KV head)'s keys once for all its workgroups (workgroup
// i on XCD i % 8), not once per workgroup. 1024 new tokens over a 2048
// prefix, 16 / 8 heads, D 64, uq4, one partition: tiles of 32 tokens, the
// grid (1024 / 32 + 1 + 2 = 35 tiles, 8 heads); tile x = 1..32 holds tokens
// 32 (x - 1) .. 32 x - 1, which see keys [0, 2048 + 32 x). Workgroup
// x + 35 y: for each head an XCD gets 4 of the 32 tiles, and the largest
// of them, 25..32 over the 8 XCDs, covers the others: 8 x 2048 + 32 x
// (25 + .. + 32) = 23680 keys a head, 1480 blocks of 16. A slot is 68 B
// (K and V: 32 code bytes and 2 scale bytes each). Each workgroup reads its
// 2 x 32 query rows of 64 FP8 bytes and writes partial rows of 64 f32 +
// max + sum: 1024 x 16 x (64 + 264) bytes.
TEST(PrefillTiming, HbmBytesUnderAnL2PerXcd) {
  PagedAttentionProblem pp;
  std::unique_ptr<CompiledPagedAttention> compiled;
  auto sampled = predictOneChunk(pp, compiled, 1024, 2048);
  ASSERT_TRUE(static_cast<bool>(sampled))
      << llvm::toString(sampled.takeError());
  ASSERT_EQ(sampled->prefillWorkgroups, uint64_t(35 * 8));
  const double keys = 8.0 * (23680.0 * 68 + 1480.0 * 4);
  const double rows = 1024.0 * 16 * (64 + 64 * 4 + 8);
  EXPECT_DOUBLE_EQ(sampled->prefill.hbmBytes, keys + rows);
}

// The timing prediction of a prefill (CompiledPagedAttention::predict)
// traces workgroups that do work, over the KV heads. With 8 KV heads and
// GQA 2 the grid is (7 query tiles, 8 heads, 1 partition); the midpoints of
// 4 equal strata of the linear grid (the former rule) all fell on tile 0,
// which has no tokens. The sampled prediction agrees with a whole emulation
// of the same problem (every workgroup traced, output checked against the
// reference).
TEST(PrefillTiming, SampledWorkgroupsDoWorkOverTheKVHeads) {
  PagedAttentionProblem pp;
  std::unique_ptr<CompiledPagedAttention> compiled;
  auto sampled = predictOneChunk(pp, compiled, 128, 256);
  ASSERT_TRUE(static_cast<bool>(sampled))
      << llvm::toString(sampled.takeError());
  // 4 tokens per wave, 4 waves: 32 tokens per tile; 128 / 32 + 1 + 2 tiles.
  EXPECT_EQ(sampled->prefillWorkgroups, uint64_t(7 * 8));
  EXPECT_EQ(sampled->prefillWorking, uint64_t(4 * 8));
  std::set<uint32_t> heads;
  double weights = 0;
  for (auto [id, w] :
       llvm::zip(sampled->prefillTraced, sampled->prefillWeights)) {
    weights += w;
    // Tiles 1..4 hold the 128 tokens.
    if (id[0] >= 1 && id[0] <= 4)
      heads.insert(id[1]);
  }
  EXPECT_EQ(heads.size(), 4u);
  EXPECT_DOUBLE_EQ(weights, 7.0 * 8);
  EXPECT_GT(sampled->prefill.mfmaCycles, 0);
  EXPECT_GT(sampled->prefill.hbmBytes, 0);
  PagedPredictOptions all;
  all.whole = true;
  auto whole = compiled->predict(pp, all);
  ASSERT_TRUE(static_cast<bool>(whole)) << llvm::toString(whole.takeError());
  ASSERT_TRUE(whole->checked);
  EXPECT_EQ(whole->outsideBound, 0);
  EXPECT_EQ(whole->prefill.tracedWorkgroups, uint64_t(7 * 8));
  EXPECT_NEAR(sampled->prefillUs / whole->prefillUs, 1.0, 0.1)
      << sampled->prefillUs << " vs " << whole->prefillUs;
  EXPECT_NEAR(sampled->prefill.hbmBytes / whole->prefill.hbmBytes, 1.0, 0.1);
  // MFMA instructions: sampled (extrapolated) vs counted.
  ASSERT_EQ(sampled->mfmaByKind.size(), whole->mfmaByKind.size());
  for (auto [s, w] : llvm::zip(sampled->mfmaByKind, whole->mfmaByKind)) {
    EXPECT_EQ(s.first, w.first);
    EXPECT_NEAR(s.second / w.second, 1.0, 0.1) << s.first;
  }
}

// Split-K partitions past a short context leave workgroups that load their
// query and write empty rows but see no keys; they are traced as a class of
// their own (not with the tiles that return at once), so the sampled
// prediction still agrees with the whole emulation.
TEST(PrefillTiming, PartitionsWithoutKeysAreAClassOfTheirOwn) {
  PagedAttentionProblem pp;
  pp.config = config(16, 8, 64);
  auto compiled = CompiledPagedAttention::compile(pp);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  pp.queryLens = {64};
  pp.seqLens = {64 + 128};
  pp.numPartitions = 4; // keys only in partition 0 (256 tokens each)
  auto sampled = (*compiled)->predict(pp, 4);
  ASSERT_TRUE(static_cast<bool>(sampled))
      << llvm::toString(sampled.takeError());
  // Tiles 1, 2 hold the tokens: 2 x 8 heads with keys, of 5 x 8 x 4.
  EXPECT_EQ(sampled->prefillWorking, uint64_t(2 * 8));
  EXPECT_EQ(sampled->prefillWorkgroups, uint64_t(5 * 8 * 4));
  // A traced workgroup of partitions 1..3 at a tile with tokens, and one of
  // a tile without tokens.
  bool rowsOnly = false, none = false;
  for (const auto &id : sampled->prefillTraced) {
    rowsOnly |= id[2] > 0 && (id[0] == 1 || id[0] == 2);
    none |= id[0] == 0 || id[0] >= 3;
  }
  EXPECT_TRUE(rowsOnly);
  EXPECT_TRUE(none);
  PagedPredictOptions all;
  all.whole = true;
  auto whole = (*compiled)->predict(pp, all);
  ASSERT_TRUE(static_cast<bool>(whole)) << llvm::toString(whole.takeError());
  EXPECT_EQ(whole->outsideBound, 0);
  EXPECT_NEAR(sampled->prefillUs / whole->prefillUs, 1.0, 0.05)
      << sampled->prefillUs << " vs " << whole->prefillUs;
}

// distinctTokens (the kernel table's long contexts): only the first tokens
// of the cache are drawn and quantized, later ones repeat their bytes at
// their own addresses. The whole emulation still matches the reference
// (which reads the same cache), and the prediction is the one of the fully
// drawn cache to the last digit: the kernels' time does not depend on the
// values, and every address is the same.
TEST(PrefillTiming, RepeatedCacheTokensPredictTheSameTime) {
  PagedAttentionProblem pp;
  pp.config = config(16, 4, 64);
  auto compiled = CompiledPagedAttention::compile(pp);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  pp.queryLens = {1, 48};
  pp.seqLens = {700, 48 + 600};
  pp.numPartitions = 1;
  auto full = (*compiled)->predict(pp, 3);
  ASSERT_TRUE(static_cast<bool>(full)) << llvm::toString(full.takeError());
  pp.distinctTokens = 40;
  auto repeated = (*compiled)->predict(pp, 3);
  ASSERT_TRUE(static_cast<bool>(repeated))
      << llvm::toString(repeated.takeError());
  EXPECT_EQ(repeated->totalUs, full->totalUs);
  EXPECT_EQ(repeated->prefill.hbmBytes, full->prefill.hbmBytes);
  EXPECT_GT(repeated->prefill.mfmaCycles, 0);
  PagedPredictOptions all;
  all.whole = true;
  auto whole = (*compiled)->predict(pp, all);
  ASSERT_TRUE(static_cast<bool>(whole)) << llvm::toString(whole.takeError());
  ASSERT_TRUE(whole->checked);
  EXPECT_EQ(whole->outsideBound, 0);
  EXPECT_LT(whole->relL2, 0.05);
  pp.distinctTokens = -1;
  auto bad = (*compiled)->predict(pp, 3);
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("distinctTokens must be >= 0"),
            std::string::npos);
}

// A sampled prefill whose traced workgroups did no work while the grid has
// work is an error, not a number.
TEST(PrefillTiming, TracingOnlyIdleWorkgroupsIsAnError) {
  PagedAttentionProblem pp;
  pp.config = config(16, 8, 64);
  auto compiled = CompiledPagedAttention::compile(pp);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  pp.queryLens = {128};
  pp.seqLens = {256};
  pp.numPartitions = 1;
  PagedPredictOptions o;
  // Tile 0 of heads 0 and 5: the tokens before the first sequence (none).
  o.prefillWorkgroups = {0, 0 + 7 * 5};
  auto timing = (*compiled)->predict(pp, o);
  ASSERT_FALSE(static_cast<bool>(timing));
  std::string msg = llvm::toString(timing.takeError());
  EXPECT_NE(msg.find("did no work while 32 of the grid's 56 workgroups have "
                     "keys"),
            std::string::npos)
      << msg;
  // Tile 2 of head 3 has keys: traced alone, it is a number.
  o.prefillWorkgroups = {2 + 7 * 3};
  auto one = (*compiled)->predict(pp, o);
  ASSERT_TRUE(static_cast<bool>(one)) << llvm::toString(one.takeError());
  EXPECT_GT(one->prefill.mfmaCycles, 0);
}

} // namespace
