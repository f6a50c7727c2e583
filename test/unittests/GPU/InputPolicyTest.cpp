//===- InputPolicyTest.cpp - Out-of-range and non-finite kernel inputs ----===//
//
// The input policy of docs/kernel-input-policy.md, row by row, on every
// path: the reference (ref::cacheWrite / ref::pagedAttention), the linalg
// CPU path, the wave-level kernels on the CPU and the gfx950 kernels in the
// emulator (which reports any access outside a buffer as an error, and whose
// launches are checked against the kernel JSON's buffer sizes first).
//
//  - Out-of-range indices: block-table entries, sequence lengths, num_blocks
//    = 0, slot_mapping entries, too few partitions, oversized grids: no
//    fault, and the documented result.
//  - NaN/Inf in sinks, queries, keys, values and in a cache scale byte: the
//    same NaN pattern on every path (the harness counts an element whose
//    NaN-ness or infinite value differs from the reference as outside the
//    bound), and the pattern the policy documents.
//
//===----------------------------------------------------------------------===//

#include "uq/Harness/EmulatedAttention.h"

#include "uq/Emulator/KernelsJson.h"
#include "uq/Reference/Reference.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

using namespace uq;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// A small problem: 2 kv heads of GQA 2, D 64, block size 16, three
/// sequences (one empty), sinks, run-time sizes, f32 inputs.
AttentionProblem small(KVCacheKind format = KVCacheKind::UltraQuant) {
  AttentionProblem pb;
  pb.format = format;
  pb.numQHeads = 4;
  pb.numKVHeads = 2;
  pb.headDim = 64;
  pb.blockSize = 16;
  pb.seqLens = {40, 0, 300};
  pb.sinks = true;
  pb.dtype = "f32";
  pb.partitionSize = 64;
  pb.dynamicShapes = true;
  pb.spareColumns = 1;
  pb.spareBlocks = 2;
  pb.seed = 7;
  pb.checkLinalgCPU = true;
  pb.checkWaveCPU = true;
  return pb;
}

/// Blocks of the cache of \p pb (the harness's paging: the used blocks and
/// the spare ones).
int64_t numBlocks(const AttentionProblem &pb) {
  int64_t used = 0;
  for (int32_t len : pb.seqLens)
    used += (len + pb.blockSize - 1) / pb.blockSize;
  return used + std::max<int64_t>(pb.spareBlocks, 1);
}

/// Runs \p pb on every path; every path must agree with the reference
/// (cache bytes bit-exact, outputs within the bound, NaN where it is NaN).
/// The problems share compiled code (run-time sizes): one compilation per
/// format (E4M3 value scales or not) and sinks on/off, for the GPU and the
/// CPU paths.
llvm::Expected<AttentionReport> runShared(const AttentionProblem &pb) {
  // Never destroyed: the JIT-compiled CPU programs must not outlive LLVM's
  // own statics at exit.
  static auto &compiled =
      *new std::map<std::string, std::unique_ptr<CompiledAttention>>();
  if (!pb.dynamicShapes)
    return runEmulatedAttention(pb);
  std::string key = std::string(kvCacheKindName(pb.format)) +
                    (pb.sinks ? "+sinks" : "") +
                    (pb.vScaleE4M3 ? "+e4m3-values" : "") +
                    std::to_string(pb.numQHeads) +
                    std::to_string(pb.headDim) + pb.dtype;
  auto &c = compiled[key];
  if (!c) {
    auto co = CompiledAttention::compile(pb);
    if (!co)
      return co.takeError();
    c = std::move(*co);
  }
  return c->run(pb);
}

AttentionReport runEverywhere(const AttentionProblem &pb) {
  auto report = runShared(pb);
  EXPECT_TRUE(static_cast<bool>(report)) << llvm::toString(report.takeError());
  if (!report)
    return AttentionReport();
  EXPECT_EQ(report->cacheMismatches, 0) << "GPU cache write";
  EXPECT_EQ(report->outsideBound, 0)
      << "GPU vs reference; rel L2 " << report->relL2;
  for (const auto *run : {&report->linalgCPU, &report->waveCPU}) {
    const char *name = run == &report->linalgCPU ? "linalg" : "wave-level";
    if (!(run == &report->linalgCPU ? pb.checkLinalgCPU : pb.checkWaveCPU))
      continue;
    EXPECT_TRUE(run->ran) << name;
    EXPECT_EQ(run->cacheMismatches, 0) << name << " CPU cache write";
    EXPECT_EQ(run->outsideBound, 0) << name << " CPU vs reference";
    EXPECT_EQ(run->gpuMismatches, 0) << name << " CPU vs GPU";
  }
  return std::move(*report);
}

/// Output element (seq, head, i) of a [S, Hq, D] output.
float at(const AttentionProblem &pb, const std::vector<float> &out, int64_t s,
         int64_t h, int64_t i) {
  return out[(s * pb.numQHeads + h) * pb.headDim + i];
}

/// Counts the NaN elements of row (s, h).
int64_t nanInRow(const AttentionProblem &pb, const std::vector<float> &out,
                 int64_t s, int64_t h) {
  int64_t n = 0;
  for (int64_t i = 0; i < pb.headDim; ++i)
    n += std::isnan(at(pb, out, s, h, i));
  return n;
}

//===----------------------------------------------------------------------===//
// Out-of-range indices
//===----------------------------------------------------------------------===//

// Block ids -1, INT32_MIN, num_blocks, 2^30, INT32_MAX in used and unused
// columns: clamped into [0, num_blocks - 1] on every path.
TEST(InputPolicy, BlockIdsOutOfRangeAreClamped) {
  AttentionProblem pb = small();
  const int32_t nb = int32_t(numBlocks(pb));
  pb.tableOverrides = {{0, 0, -1},
                       {0, 1, std::numeric_limits<int32_t>::min()},
                       {0, 3, nb}, // unused column
                       {2, 5, int32_t(1) << 30},
                       {2, 18, std::numeric_limits<int32_t>::max()},
                       {2, 19, -7}}; // the spare column
  AttentionReport r = runEverywhere(pb);
  EXPECT_EQ(r.nanOutputs + r.infOutputs, 0);
}

// Lengths above the table's capacity are clamped to it; negative ones
// (INT32_MIN included) to 0, which gives a zero row.
TEST(InputPolicy, SequenceLengthsAreClamped) {
  AttentionProblem pb = small();
  pb.seqLens = {40, 5, 300};
  const int32_t capacity = int32_t((19 + pb.spareColumns) * pb.blockSize);
  pb.decodeSeqLens = {std::numeric_limits<int32_t>::max(), -5,
                      capacity + 1000};
  AttentionReport r = runEverywhere(pb);
  // Sequence 1: length -5 -> 0 -> a zero row (sinks or not).
  for (int64_t h = 0; h < pb.numQHeads; ++h)
    for (int64_t i = 0; i < pb.headDim; ++i)
      ASSERT_EQ(at(pb, r.output, 1, h, i), 0.0f);
  // Sequence 2: the same as with its length set to the capacity, bit for
  // bit.
  AttentionProblem atCapacity = pb;
  atCapacity.decodeSeqLens = {capacity, 0, capacity};
  AttentionReport c = runEverywhere(atCapacity);
  for (int64_t s : {0, 2})
    for (int64_t h = 0; h < pb.numQHeads; ++h)
      for (int64_t i = 0; i < pb.headDim; ++i)
        ASSERT_EQ(at(pb, r.output, s, h, i), at(pb, c.output, s, h, i))
            << "seq " << s << " head " << h << " element " << i;
}

// num_blocks = 0 (an empty cache buffer) with nonzero lengths: every length
// is clamped to 0 and every row is 0, with or without sinks.
TEST(InputPolicy, EmptyCacheGivesZeroRows) {
  for (bool sinks : {false, true}) {
    AttentionProblem pb = small();
    pb.sinks = sinks;
    pb.decodeNumBlocks = 0;
    AttentionReport r = runEverywhere(pb);
    for (float x : r.output)
      ASSERT_EQ(x, 0.0f);
    // No key was read.
    EXPECT_EQ(r.partialStats.mfma, 0u);
  }
}

// Fewer cache blocks than the table names: ids clamp to the last block.
TEST(InputPolicy, CacheSmallerThanTableClampsToLastBlock) {
  AttentionProblem pb = small();
  pb.decodeNumBlocks = 3;
  AttentionReport r = runEverywhere(pb);
  EXPECT_EQ(r.nanOutputs, 0);
}

// slot_mapping entries negative, huge, or past the cache are skipped: the
// cache bytes equal the reference's, which writes only the valid slots, and
// every byte nobody writes keeps its value.
TEST(InputPolicy, SlotsOutsideTheCacheAreSkipped) {
  for (KVCacheKind f :
       {KVCacheKind::UltraQuant, KVCacheKind::FP8, KVCacheKind::BF16}) {
    AttentionProblem pb = small(f);
    const int64_t capacity = numBlocks(pb) * pb.blockSize;
    pb.extraSlots = {-1,
                     -(int64_t(1) << 40),
                     std::numeric_limits<int64_t>::min(),
                     capacity,
                     capacity + 7,
                     int64_t(1) << 40,
                     int64_t(1) << 31,
                     std::numeric_limits<int64_t>::max()};
    AttentionReport r = runEverywhere(pb);
    EXPECT_GT(r.cacheBytes, 0);
  }
}

// num_partitions smaller than the table needs (1 and 2 for 5 partitions'
// worth of tokens): the last partition covers the rest; the result is the
// same within the bound.
TEST(InputPolicy, FewerPartitionsCoverTheRest) {
  for (int64_t parts : {1, 2}) {
    AttentionProblem pb = small();
    pb.numPartitions = parts;
    AttentionReport r = runEverywhere(pb);
    EXPECT_EQ(r.numPartitions, parts);
  }
}

// Grids larger than the JSON's rule (more sequences, partitions, kv heads,
// tokens than the arguments say): the extra workgroups do nothing; the
// output is bit-identical.
TEST(InputPolicy, LargerGridsDoNothingExtra) {
  AttentionProblem pb = small();
  pb.checkLinalgCPU = pb.checkWaveCPU = false;
  AttentionReport plain = runEverywhere(pb);
  pb.extraGrid = {3, 2, 2};
  AttentionReport big = runEverywhere(pb);
  ASSERT_EQ(plain.output.size(), big.output.size());
  for (size_t i = 0; i < plain.output.size(); ++i)
    ASSERT_EQ(plain.output[i], big.output[i]) << i;
  EXPECT_GT(big.partialStats.workgroups, plain.partialStats.workgroups);
}

// The emulator reports an access outside a buffer as an error (no crash):
// the partial kernel launched without the JSON's checks, told the cache has
// more blocks than its buffer holds, with a table naming the last one. With
// the checks (as the harness launches), the launch is refused before it
// runs.
TEST(InputPolicy, EmulatorReportsOutOfBoundsAccess) {
  AttentionProblem pb = small();
  pb.sinks = false;
  pb.seqLens = {16};
  pb.spareColumns = 0;
  auto compiled = CompiledAttention::compile(pb);
  ASSERT_TRUE(static_cast<bool>(compiled))
      << llvm::toString(compiled.takeError());
  const std::string &hsaco = (*compiled)->codeObject();
  auto co = emu::CodeObject::load(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(hsaco.data()), hsaco.size()));
  ASSERT_TRUE(static_cast<bool>(co)) << llvm::toString(co.takeError());
  auto kernels = emu::parseKernelsJson((*compiled)->kernelsJson());
  ASSERT_TRUE(static_cast<bool>(kernels)) << llvm::toString(kernels.takeError());
  const emu::KernelDescription *partial = nullptr;
  for (const emu::KernelDescription &k : *kernels)
    if (k.name == "decode_0_partial")
      partial = &k;
  ASSERT_NE(partial, nullptr);
  auto [kf, vf] = std::make_pair(ref::keyFormat(), ref::valueFormat());
  const int64_t sb = ref::slotBytes(kf, vf, pb.headDim);
  const int64_t hq = pb.numQHeads, hkv = pb.numKVHeads, d = pb.headDim;
  // The cache buffer holds one block; the kernel is told 1000.
  const int32_t claimed = 1000, table = claimed - 1, len = 16;
  std::vector<emu::KernelArg> args;
  for (const emu::ArgSpec &a : partial->args) {
    std::vector<uint8_t> bytes;
    if (a.name == "query_prepared")
      bytes.assign(hq * d, 0);
    else if (a.name == "cache")
      bytes.assign(pb.blockSize * hkv * sb, 0);
    else if (a.name == "block_tables")
      bytes.assign(reinterpret_cast<const uint8_t *>(&table),
                   reinterpret_cast<const uint8_t *>(&table) + 4);
    else if (a.name == "seq_lens")
      bytes.assign(reinterpret_cast<const uint8_t *>(&len),
                   reinterpret_cast<const uint8_t *>(&len) + 4);
    else if (a.name == "partial_out")
      bytes.assign(hq * d * 4, 0);
    else if (a.name == "partial_max" || a.name == "partial_sum")
      bytes.assign(hq * 4, 0);
    if (a.isBuffer) {
      args.push_back(emu::KernelArg::buffer(bytes, a.name));
      continue;
    }
    int32_t v = a.name == "num_blocks" ? claimed : 1;
    args.push_back(emu::KernelArg::value<int32_t>(v));
  }
  emu::Emulator em(**co);
  emu::LaunchConfig cfg;
  cfg.grid = {1, uint32_t(hkv), 1};
  cfg.block = partial->block.value_or(std::array<uint32_t, 3>{64, 1, 1});
  llvm::Error unchecked = em.launch(partial->name, cfg, args);
  ASSERT_TRUE(static_cast<bool>(unchecked))
      << "reading block 999 of a 1-block cache must be reported";
  std::string msg = llvm::toString(std::move(unchecked));
  EXPECT_NE(msg.find("global load"), std::string::npos) << msg;
  cfg.argSpecs = partial->args;
  llvm::Error checked = em.launch(partial->name, cfg, args);
  ASSERT_TRUE(static_cast<bool>(checked));
  msg = llvm::toString(std::move(checked));
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
}

//===----------------------------------------------------------------------===//
// NaN and Inf
//===----------------------------------------------------------------------===//

// A NaN or +Inf sink makes every row of its head NaN (exp(sink - max) is
// NaN: NaN - max, or Inf - Inf), except rows with no key (empty sequences),
// which are 0. A -Inf sink is no sink.
TEST(NaNPolicy, Sinks) {
  for (float sink : {kNaN, kInf, -kInf}) {
    SCOPED_TRACE("sink " + std::to_string(sink));
    AttentionProblem pb = small();
    pb.sinkValues = {sink, 0.5f, -1.0f, 2.0f};
    AttentionReport r = runEverywhere(pb);
    for (int64_t s = 0; s < 3; ++s) {
      bool empty = pb.seqLens[s] == 0;
      EXPECT_EQ(nanInRow(pb, r.output, s, 0),
                std::isnan(sink) || sink > 0 ? (empty ? 0 : pb.headDim) : 0)
          << "seq " << s;
      for (int64_t h = 1; h < pb.numQHeads; ++h)
        EXPECT_EQ(nanInRow(pb, r.output, s, h), 0) << "seq " << s;
      if (empty) {
        for (int64_t i = 0; i < pb.headDim; ++i) {
          EXPECT_EQ(at(pb, r.output, s, 0, i), 0.0f);
        }
      }
    }
    EXPECT_EQ(r.infOutputs, 0);
  }
}

// A NaN, Inf or too large (|q| >= 464: FP8 E4M3 overflows to NaN) query
// element makes its row NaN -- and only its row, on every format (the
// rotation spreads it over the row; FP8 and bf16 keys meet it in every
// dot product).
TEST(NaNPolicy, QueryElements) {
  for (KVCacheKind f :
       {KVCacheKind::UltraQuant, KVCacheKind::FP8, KVCacheKind::BF16}) {
    for (float x : {kNaN, kInf, -kInf, 4096.0f}) {
      SCOPED_TRACE(std::string(kvCacheKindName(f)) + " query element " +
                   std::to_string(x));
      AttentionProblem pb = small(f);
      // Row (seq 2, head 1): element 3.
      pb.query.assign((2 * pb.numQHeads + 1) * pb.headDim + 4, 0.25f);
      pb.query.back() = x;
      AttentionReport r = runEverywhere(pb);
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t h = 0; h < pb.numQHeads; ++h)
          EXPECT_EQ(nanInRow(pb, r.output, s, h),
                    s == 2 && h == 1 ? pb.headDim : 0)
              << "seq " << s << " head " << h;
    }
  }
}

// NaN/Inf in a key or value row written by the cache write. UltraQuant: the
// group's absmax is not finite, so the group is coded as the zero sentinel
// (scale byte 0, codes 0): keys are rotated, so the whole key row becomes 0
// (logit 0); an unrotated value row loses the 32-channel group, a rotated one
// the whole row. FP8 (no Inf: E4M3 NaN) and bf16 store them; a NaN/Inf key
// element makes the logits NaN/Inf for every head of its kv head in its
// sequence, a NaN value makes its channel NaN there.
TEST(NaNPolicy, KeysAndValuesThroughTheCacheWrite) {
  for (KVCacheKind f :
       {KVCacheKind::UltraQuant, KVCacheKind::FP8, KVCacheKind::BF16}) {
    for (bool inValue : {false, true}) {
      for (float x : {kNaN, kInf}) {
        SCOPED_TRACE(std::string(kvCacheKindName(f)) +
                     (inValue ? " value " : " key ") + std::to_string(x));
        AttentionProblem pb = small(f);
        // Token 0 of sequence 0, kv head 0, channel 5.
        std::vector<float> row(6, 0.5f);
        row.back() = x;
        (inValue ? pb.value : pb.key) = row;
        AttentionReport r = runEverywhere(pb);
        if (f == KVCacheKind::UltraQuant) {
          EXPECT_EQ(r.nanOutputs + r.infOutputs, 0);
          continue;
        }
        // Sequence 0, heads 0 and 1 (kv head 0) only.
        for (int64_t s = 0; s < 3; ++s)
          for (int64_t h = 0; h < pb.numQHeads; ++h) {
            int64_t n = nanInRow(pb, r.output, s, h);
            // (Braces: EXPECT_EQ is an if/else of its own.)
            if (s != 0 || h > 1) {
              EXPECT_EQ(n, 0) << "seq " << s << " head " << h;
            } else if (inValue && (std::isnan(x) || f == KVCacheKind::FP8)) {
              EXPECT_EQ(n, 1) << "seq " << s << " head " << h;
            } else if (!inValue && (std::isnan(x) || f == KVCacheKind::FP8)) {
              EXPECT_EQ(n, pb.headDim) << "seq " << s << " head " << h;
            }
          }
      }
    }
  }
}

// A cache scale byte 255 (E8M0 NaN) placed in the cache: the group decodes
// as NaN. In the key scales of offset 0 of every block (kv head 0): the
// logits of those keys are NaN, so every row of kv head 0 with a key is
// NaN. In the first value scale: channels 0..31 of those rows are NaN.
TEST(NaNPolicy, CacheScaleByteNaN) {
  for (bool inValue : {false, true}) {
    SCOPED_TRACE(inValue ? "value scale" : "key scale");
    AttentionProblem pb = small();
    const int64_t d = pb.headDim;
    const int64_t sb =
        ref::slotBytes(ref::keyFormat(), ref::valueFormat(), d);
    ASSERT_EQ(sb, d + d / 16); // [K codes][K scales][V codes][V scales]
    const int64_t off = inValue ? d / 2 + d / 32 + d / 2 : d / 2;
    for (int64_t b = 0; b < numBlocks(pb); ++b)
      pb.cacheOverrides.push_back(
          {(b * pb.blockSize * pb.numKVHeads + 0) * sb + off, 255});
    AttentionReport r = runEverywhere(pb);
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t h = 0; h < pb.numQHeads; ++h) {
        int64_t want =
            pb.seqLens[s] == 0 || h > 1 ? 0 : inValue ? 32 : pb.headDim;
        EXPECT_EQ(nanInRow(pb, r.output, s, h), want)
            << "seq " << s << " head " << h;
      }
  }
}

// E4M3 value scales (scale = e4m3): every byte of the E4M3 range decodes as
// uq::ref::fp8e4m3Decode on every path, including the two NaN bytes 0x7F /
// 0xFF, negative scales and subnormals, which no encoder writes. One scale
// byte of each block's first slot (kv head 0) is overwritten, cycling
// through the groups; the run must agree with the reference everywhere
// (NaN where it is NaN) and the NaN bytes must reach the output.
TEST(NaNPolicy, E4M3ValueScaleBytes) {
  AttentionProblem pb = small();
  pb.vScaleE4M3 = true;
  const int64_t d = pb.headDim;
  const int64_t sb = d + d / 16; // [K codes][K scales][V codes][V scales]
  const int64_t vScales = d / 2 + d / 32 + d / 2;
  const uint8_t bytes[] = {0x7F, 0x80, 0x87, 0xF7, 0x7E, 0x01, 0xFF, 0x08};
  for (int64_t b = 0; b < numBlocks(pb); ++b)
    pb.cacheOverrides.push_back(
        {b * pb.blockSize * pb.numKVHeads * sb + vScales + b % (d / 32),
         bytes[b % 8]});
  AttentionReport r = runEverywhere(pb);
  EXPECT_GT(r.nanOutputs, 0);
}

} // namespace
