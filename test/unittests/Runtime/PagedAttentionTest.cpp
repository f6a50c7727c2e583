//===- PagedAttentionTest.cpp - uq.paged_attention on the CPU -------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// uq.paged_attention compiled by the CPU path (run-time sizes: one program
// per static configuration, run on several batches) against
// ref::pagedAttention: mixed batches of decodes and prefill chunks, chunked
// prefill against one call, decode batches against uq.decode_attention, and
// the input policy of docs/dialect.md on adversarial inputs.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdio>
#include <limits>

using namespace uq;
using namespace uq::test;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Static configuration of a compiled paged_attention program.
struct Config {
  int64_t hq, hkv, d, bs;
  bool sinks = false, fp8Query = true, vRotated = false;
  int64_t window = 0; // 0: none
  /// k_mean / v_mean operands (the cache is written with the same means).
  bool means = false;

  ref::Format kf() const { return ref::keyFormat(); }
  ref::Format vf() const {
    ref::Format f = ref::valueFormat();
    f.rotate = vRotated;
    return f;
  }
  int64_t slot() const { return ref::slotBytes(kf(), vf(), d); }
  std::string formats() const {
    return std::string("{k_format = #uq.kv_format<fp4_e2m1, rotation = "
                       "hadamard>, v_format = #uq.kv_format<fp4_e2m1") +
           (vRotated ? ", rotation = hadamard" : "") +
           ">, layout = #uq.cache_layout<vllm_slot>" +
           (fp8Query ? "" : ", query_precision = #uq<query_precision f32>") +
           "}";
  }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(d)); }
  std::string scaleText() const {
    return llvm::formatv("{0:e9}", scale()).str();
  }
  std::string sinkArg() const {
    return sinks ? llvm::formatv(", %s: tensor<{0}xf32>", hq).str() : "";
  }
  std::string sinkType() const {
    return sinks ? llvm::formatv(", tensor<{0}xf32>", hq).str() : "";
  }
  std::string meanArgs() const {
    return means ? llvm::formatv(", %mk: tensor<{0}x{1}xf32>, %mv: "
                                 "tensor<{0}x{1}xf32>",
                                 hkv, d)
                       .str()
                 : "";
  }
  std::string meanTypes() const {
    return means ? llvm::formatv(", tensor<{0}x{1}xf32>, tensor<{0}x{1}xf32>",
                                 hkv, d)
                       .str()
                 : "";
  }
  std::string windowText() const {
    return window ? " window " + std::to_string(window) : "";
  }
  std::string pagedTypes() const {
    return llvm::formatv("tensor<?x{0}x{1}xbf16>, tensor<?x{2}x{3}x{4}xi8>, "
                         "tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>{5}{6}",
                         hq, d, bs, hkv, slot(), sinkType(), meanTypes())
        .str();
  }
  /// uq.paged_attention alone, every size that may be dynamic dynamic.
  std::string pagedIR() const {
    return llvm::formatv(R"(
func.func @main(%q: tensor<?x{0}x{1}xbf16>, %cache: tensor<?x{2}x{3}x{4}xi8>,
                %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>{5}{11})
    -> tensor<?x{0}x{1}xf32> {{
  %o = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl {6}{12}
      scale {7}{8} {9} : ({10}) -> tensor<?x{0}x{1}xf32>
  return %o : tensor<?x{0}x{1}xf32>
}
)",
                         hq, d, bs, hkv, slot(), sinkArg(),
                         sinks ? "sinks %s" : "", scaleText(), windowText(),
                         formats(), pagedTypes(), meanArgs(),
                         means ? " k_mean %mk v_mean %mv" : "")
        .str();
  }
};

struct Seq {
  int64_t len, queryLen;
};

/// A batch over a cache written by the reference: random bf16 K/V for every
/// context token, block tables over shuffled blocks (unused entries hold
/// out-of-range ids, which are never read), random bf16 queries and sinks.
struct Batch {
  Config c;
  std::vector<Seq> seqs;
  int64_t numBlocks, maxBlocks, numTokens = 0;
  std::vector<uint8_t> cache;
  std::vector<int32_t> tables, lens, starts;
  std::vector<float> q, sinks;
  /// Channel means [hkv, d] (Config::means), else empty.
  std::vector<float> kMean, vMean;

  Batch(const Config &cfg, std::vector<Seq> seqsIn, uint64_t seed)
      : c(cfg), seqs(std::move(seqsIn)) {
    Rng rng(seed);
    if (c.means) {
      Rng mrng(seed ^ 0x5EED);
      for (std::vector<float> *m : {&kMean, &vMean}) {
        m->resize(c.hkv * c.d);
        for (float &x : *m)
          x = mrng.normal(3.0f);
      }
    }
    maxBlocks = 1;
    for (const Seq &s : seqs)
      maxBlocks = std::max<int64_t>(maxBlocks, (s.len + c.bs - 1) / c.bs);
    int64_t numSeqs = seqs.size();
    numBlocks = numSeqs * maxBlocks + 1;
    cache.assign(numBlocks * c.bs * c.hkv * c.slot(), 0);
    std::vector<int32_t> ids(numBlocks);
    for (int64_t i = 0; i < numBlocks; ++i)
      ids[i] = static_cast<int32_t>(i);
    for (int64_t i = numBlocks; i-- > 1;)
      std::swap(ids[i], ids[rng.below(i + 1)]);
    tables.assign(numSeqs * maxBlocks, 1 << 30);
    starts.push_back(0);
    ref::CacheGeometry g = geometry();
    for (int64_t s = 0; s < numSeqs; ++s) {
      int64_t len = seqs[s].len;
      for (int64_t b = 0; b < (len + c.bs - 1) / c.bs; ++b)
        tables[s * maxBlocks + b] = ids[s * maxBlocks + b];
      std::vector<float> k(len * c.hkv * c.d), v(k.size());
      for (size_t i = 0; i < k.size(); ++i) {
        // With means, rows around them (the cache write centres them again).
        size_t m = i % (c.hkv * c.d);
        k[i] = bf16Round(rng.normal(1.0f) + (c.means ? kMean[m] : 0.0f));
        v[i] = bf16Round(rng.normal(1.0f) + (c.means ? vMean[m] : 0.0f));
      }
      std::vector<int64_t> slots(len);
      for (int64_t j = 0; j < len; ++j)
        slots[j] = int64_t(tables[s * maxBlocks + j / c.bs]) * c.bs + j % c.bs;
      EXPECT_TRUE(ref::cacheWrite(c.kf(), c.vf(), g, k.data(), v.data(),
                                  slots.data(), len, cache.data(),
                                  c.means ? kMean.data() : nullptr,
                                  c.means ? vMean.data() : nullptr)
                      .ok());
      lens.push_back(static_cast<int32_t>(len));
      numTokens += seqs[s].queryLen;
      starts.push_back(static_cast<int32_t>(numTokens));
    }
    q.resize(numTokens * c.hq * c.d);
    for (float &x : q)
      x = bf16Round(rng.normal(2.0f));
    sinks.resize(c.hq);
    for (float &x : sinks)
      x = rng.normal(3.0f);
  }

  ref::CacheGeometry geometry() const {
    return {numBlocks, c.bs, c.hkv, c.d, c.slot()};
  }

  ref::AttentionParams params() const {
    ref::AttentionParams p;
    p.softmaxScale = c.scale();
    p.queryPrecision =
        c.fp8Query ? ref::QueryPrecision::FP8_E4M3 : ref::QueryPrecision::F32;
    if (c.means) {
      p.kMean = kMean.data();
      p.vMean = vMean.data();
    }
    return p;
  }

  std::vector<HostTensor> args() const {
    std::vector<HostTensor> a = {
        bf16Tensor({numTokens, c.hq, c.d}, q),
        tensorOf(DType::I8, {numBlocks, c.bs, c.hkv, c.slot()}, cache),
        tensorOf(DType::I32, {int64_t(seqs.size()), maxBlocks}, tables),
        tensorOf(DType::I32, {int64_t(lens.size())}, lens),
        tensorOf(DType::I32, {int64_t(starts.size())}, starts)};
    if (c.sinks)
      a.push_back(f32Tensor({c.hq}, sinks));
    if (c.means) {
      a.push_back(f32Tensor({c.hkv, c.d}, kMean));
      a.push_back(f32Tensor({c.hkv, c.d}, vMean));
    }
    return a;
  }

  std::vector<float> reference() const {
    std::vector<float> out(numTokens * c.hq * c.d);
    ref::Status st = ref::pagedAttention(
        c.kf(), c.vf(), geometry(), cache.data(), params(), c.window, q.data(),
        numTokens, c.hq, starts.data(), int64_t(lens.size()), tables.data(),
        maxBlocks, lens.data(), c.sinks ? sinks.data() : nullptr, out.data());
    EXPECT_TRUE(st.ok()) << st.message();
    return out;
  }
};

/// CPU vs reference: the same NaNs, the same exact zeros (the policy's
/// zeros, and the empty-softmax zeros), and relative L2 below 1e-6 over the
/// rest: the lowering sums in the reference's order with the same expf
/// (bit-identical in practice); a wrong key, mask bound or code shows as
/// ~1e-2.
void expectMatchesReference(const std::vector<float> &got,
                            const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  std::vector<float> g, w;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || want[i] == 0.0f) {
      ASSERT_TRUE(sameFloat(got[i], want[i]))
          << "element " << i << ": " << got[i] << " vs " << want[i];
      continue;
    }
    ASSERT_FALSE(std::isnan(got[i])) << "element " << i;
    g.push_back(got[i]);
    w.push_back(want[i]);
  }
  EXPECT_LT(relL2(g, w), 1e-6);
  // Informational (docs/cpu-path.md quotes it): how many elements are the
  // same bit pattern.
  size_t same = 0;
  for (size_t i = 0; i < got.size(); ++i)
    same += std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
  std::printf("[paged] bit-identical to the reference: %zu of %zu\n", same,
              got.size());
}

struct MixedCase {
  const char *name;
  Config c;
  std::vector<Seq> seqs;
};

const MixedCase kMixed[] = {
    // Decodes (query 1) next to prefill chunks of 1..300 tokens over
    // contexts of 0..3000; GQA 1, 4, 6, 8, 16; D 64, 128, 256; sinks;
    // windows; both query precisions; rotated values.
    {"Gqa4_D128_Sinks",
     {4, 1, 128, 16, /*sinks=*/true},
     {{1000, 1}, {3000, 300}, {17, 17}, {0, 0}, {1, 1}, {64, 40}}},
    {"Gqa16_D64_Window64_F32Query",
     {16, 1, 64, 8, false, /*fp8Query=*/false, false, /*window=*/64},
     {{200, 1}, {150, 150}, {90, 33}, {5, 1}}},
    {"Gqa1_D256_Sinks_Window100",
     {2, 2, 256, 16, true, true, false, 100},
     {{500, 120}, {1, 1}, {260, 1}}},
    {"Gqa6_D128_RotatedV_Sinks",
     {12, 2, 128, 16, true, true, /*vRotated=*/true},
     {{77, 77}, {33, 1}, {300, 20}}},
    {"Gqa8_D128",
     {8, 1, 128, 16, false, false},
     {{129, 129}, {2000, 1}, {16, 5}}},
    // Channel means (k_mean, v_mean) with sinks, rotated values, GQA 4.
    {"Gqa4_D128_Means_Sinks_RotatedV",
     {8, 2, 128, 16, true, true, true, 0, /*means=*/true},
     {{300, 40}, {1, 1}, {64, 64}, {0, 0}}},
};

void PrintTo(const MixedCase &c, std::ostream *os) { *os << c.name; }

class CPUPagedAttention : public ::testing::TestWithParam<MixedCase> {};
} // namespace

TEST_P(CPUPagedAttention, MixedBatchMatchesReference) {
  const MixedCase &mc = GetParam();
  auto prog = compileOrDie(mc.c.pagedIR());
  ASSERT_TRUE(prog);
  Batch b(mc.c, mc.seqs, 17);
  auto out = runOrDie(*prog, b.args());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{b.numTokens, mc.c.hq, mc.c.d}));
  expectMatchesReference(valuesOf<float>(out[0]), b.reference());
  // The same program on a second batch of other run-time sizes.
  std::vector<Seq> other = {{40, 7}, {3, 1}};
  Batch b2(mc.c, other, 99);
  auto out2 = runOrDie(*prog, b2.args());
  ASSERT_EQ(out2.size(), 1u);
  expectMatchesReference(valuesOf<float>(out2[0]), b2.reference());
}

INSTANTIATE_TEST_SUITE_P(Cases, CPUPagedAttention, ::testing::ValuesIn(kMixed),
                         [](const ::testing::TestParamInfo<MixedCase> &info) {
                           return std::string(info.param.name);
                         });

// Query length 1 everywhere: uq.paged_attention gives uq.decode_attention's
// bits (both lower to the same logits/softmax on the same keys), with
// sinks, GQA 4, a length-0 sequence and rotated or plain values.
TEST(CPUPagedAttentionDecode, EqualsDecodeAttention) {
  for (bool vRotated : {false, true}) {
    Config c{8, 2, 128, 16, true, true, vRotated};
    Batch b(c, {{1, 1}, {50, 1}, {0, 1}, {333, 1}}, 5);
    std::string ir =
        llvm::formatv(R"(
func.func @main(%q: tensor<?x{0}x{1}xbf16>, %cache: tensor<?x{2}x{3}x{4}xi8>,
                %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>{5})
    -> (tensor<?x{0}x{1}xf32>, tensor<?x{0}x{1}xf32>) {{
  %p = uq.paged_attention %q, %cache, %bt, %lens query_start_loc %qsl sinks %s
      scale {6} {7} : ({8}) -> tensor<?x{0}x{1}xf32>
  %d = uq.decode_attention %q, %cache, %bt, %lens sinks %s scale {6} {7}
      : (tensor<?x{0}x{1}xbf16>, tensor<?x{2}x{3}x{4}xi8>, tensor<?x?xi32>,
         tensor<?xi32>{9}) -> tensor<?x{0}x{1}xf32>
  return %p, %d : tensor<?x{0}x{1}xf32>, tensor<?x{0}x{1}xf32>
}
)",
                      c.hq, c.d, c.bs, c.hkv, c.slot(), c.sinkArg(),
                      c.scaleText(), c.formats(), c.pagedTypes(), c.sinkType())
            .str();
    auto prog = compileOrDie(ir);
    ASSERT_TRUE(prog);
    // decode_attention reads the block table rows up to each length only.
    auto out = runOrDie(*prog, b.args());
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].data, out[1].data) << "vRotated " << vRotated;
    expectMatchesReference(valuesOf<float>(out[0]), b.reference());
  }
}

// Chunked prefill through uq.cache_write + uq.paged_attention: writing and
// attending chunk 1, then chunk 2, gives the cache bytes and the outputs of
// writing and attending both at once, bit for bit; a decode sequence rides
// along in every call.
TEST(CPUPagedAttentionChunked, TwoChunksEqualOneCall) {
  Config c{8, 2, 64, 16, true, true};
  const int64_t prefix = 45, c1 = 70, c2 = 33, total = prefix + c1 + c2;
  // Sequence 0: the prompt (its first `prefix` tokens already cached);
  // sequence 1: a decode over 20 cached tokens.
  Batch b(c, {{prefix, 0}, {20, 0}}, 23);
  int64_t maxBlocks = (total + c.bs - 1) / c.bs;
  // Give sequence 0 room for the whole prompt: fresh blocks after the
  // batch's own.
  int64_t numBlocks = b.numBlocks + maxBlocks;
  std::vector<uint8_t> cache(numBlocks * c.bs * c.hkv * c.slot(), 0);
  std::copy(b.cache.begin(), b.cache.end(), cache.begin());
  std::vector<int32_t> tables(2 * maxBlocks, 1 << 30);
  for (int64_t i = 0; i < b.maxBlocks; ++i) {
    tables[i] = b.tables[i];
    tables[maxBlocks + i] = b.tables[b.maxBlocks + i];
  }
  int64_t usedByPrefix = (prefix + c.bs - 1) / c.bs;
  for (int64_t i = usedByPrefix; i < maxBlocks; ++i)
    tables[i] = static_cast<int32_t>(b.numBlocks + i);
  Rng rng(31);
  auto rows = [&](int64_t n) {
    std::vector<float> x(n * c.hkv * c.d);
    for (float &e : x)
      e = bf16Round(rng.normal(1.0f));
    return x;
  };
  std::vector<float> k = rows(total - prefix), v = rows(total - prefix);
  std::vector<float> q(total * c.hq * c.d), qd(c.hq * c.d);
  for (float &x : q)
    x = bf16Round(rng.normal(2.0f));
  for (float &x : qd)
    x = bf16Round(rng.normal(2.0f));

  std::string ir = llvm::formatv(R"(
func.func @main(%k: tensor<?x{3}x{1}xbf16>, %v: tensor<?x{3}x{1}xbf16>,
                %slots: tensor<?xi64>, %cache: tensor<?x{2}x{3}x{4}xi8>,
                %q: tensor<?x{0}x{1}xbf16>, %bt: tensor<?x?xi32>,
                %lens: tensor<?xi32>, %qsl: tensor<?xi32>{5})
    -> (tensor<?x{2}x{3}x{4}xi8>, tensor<?x{0}x{1}xf32>) {{
  %c = uq.cache_write %k, %v, %slots into %cache {6}
      : tensor<?x{3}x{1}xbf16>, tensor<?x{3}x{1}xbf16>, tensor<?xi64>
        into tensor<?x{2}x{3}x{4}xi8>
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl sinks %s
      scale {7} {6} : ({8}) -> tensor<?x{0}x{1}xf32>
  return %c, %o : tensor<?x{2}x{3}x{4}xi8>, tensor<?x{0}x{1}xf32>
}
)",
                                 c.hq, c.d, c.bs, c.hkv, c.slot(), c.sinkArg(),
                                 c.formats(), c.scaleText(), c.pagedTypes())
                       .str();
  auto prog = compileOrDie(ir);
  ASSERT_TRUE(prog);
  // One call: write prompt tokens [from, to), attend them and the decode.
  auto call = [&](const std::vector<uint8_t> &in, int64_t from, int64_t to,
                  std::vector<uint8_t> &outCache) -> std::vector<float> {
    int64_t n = to - from;
    std::vector<float> kc(k.begin() + (from - prefix) * c.hkv * c.d,
                          k.begin() + (to - prefix) * c.hkv * c.d);
    std::vector<float> vc(v.begin() + (from - prefix) * c.hkv * c.d,
                          v.begin() + (to - prefix) * c.hkv * c.d);
    std::vector<int64_t> slots;
    for (int64_t j = from; j < to; ++j)
      slots.push_back(int64_t(tables[j / c.bs]) * c.bs + j % c.bs);
    std::vector<float> qs(q.begin() + from * c.hq * c.d,
                          q.begin() + to * c.hq * c.d);
    qs.insert(qs.end(), qd.begin(), qd.end());
    std::vector<int32_t> lens = {int32_t(to), 20};
    std::vector<int32_t> starts = {0, int32_t(n), int32_t(n + 1)};
    std::vector<HostTensor> args = {
        bf16Tensor({n, c.hkv, c.d}, kc),
        bf16Tensor({n, c.hkv, c.d}, vc),
        tensorOf(DType::I64, {n}, slots),
        tensorOf(DType::I8, {numBlocks, c.bs, c.hkv, c.slot()}, in),
        bf16Tensor({n + 1, c.hq, c.d}, qs),
        tensorOf(DType::I32, {2, maxBlocks}, tables),
        tensorOf(DType::I32, {2}, lens),
        tensorOf(DType::I32, {3}, starts),
        f32Tensor({c.hq}, b.sinks)};
    auto out = runOrDie(*prog, args);
    EXPECT_EQ(out.size(), 2u);
    if (out.size() != 2)
      return {};
    outCache = valuesOf<uint8_t>(out[0]);
    std::vector<float> o = valuesOf<float>(out[1]);
    // Against the reference on the cache the call wrote.
    std::vector<float> want(o.size());
    ref::CacheGeometry g{numBlocks, c.bs, c.hkv, c.d, c.slot()};
    ref::AttentionParams p;
    p.softmaxScale = c.scale();
    EXPECT_TRUE(ref::pagedAttention(c.kf(), c.vf(), g, outCache.data(), p, 0,
                                    qs.data(), n + 1, c.hq, starts.data(), 2,
                                    tables.data(), maxBlocks, lens.data(),
                                    b.sinks.data(), want.data())
                    .ok());
    expectMatchesReference(o, want);
    return o;
  };
  std::vector<uint8_t> afterOne, afterTwo, afterAll;
  std::vector<float> o1 = call(cache, prefix, prefix + c1, afterOne);
  std::vector<float> o2 = call(afterOne, prefix + c1, total, afterTwo);
  std::vector<float> all = call(cache, prefix, total, afterAll);
  ASSERT_FALSE(o1.empty() || o2.empty() || all.empty());
  EXPECT_EQ(afterTwo, afterAll);
  const int64_t row = c.hq * c.d;
  std::vector<float> joined(o1.begin(), o1.begin() + c1 * row);
  joined.insert(joined.end(), o2.begin(), o2.begin() + c2 * row);
  EXPECT_TRUE(std::equal(joined.begin(), joined.end(), all.begin()));
  // The decode token: same bits in all three calls.
  EXPECT_TRUE(std::equal(o1.end() - row, o1.end(), all.end() - row));
  EXPECT_TRUE(std::equal(o2.end() - row, o2.end(), all.end() - row));
}

// The input policy on adversarial inputs, one compiled program: decreasing,
// negative and too large query_start_loc, tokens before the first and after
// the last sequence, seq_lens negative / above capacity / shorter than the
// query, block ids outside the cache, NaN and Inf in queries and sinks, a
// cache without blocks, no tokens, and run-time operand sizes that disagree.
TEST(CPUPagedAttentionPolicy, AdversarialInputsMatchTheReference) {
  Config c{4, 2, 64, 4, true, true};
  c.window = 6;
  auto prog = compileOrDie(c.pagedIR());
  ASSERT_TRUE(prog);
  Batch base(c, {{20, 4}, {9, 1}, {13, 5}}, 41);
  const int64_t row = c.hq * c.d;
  auto check = [&](const Batch &b, const char *what) {
    SCOPED_TRACE(what);
    auto out = runOrDie(*prog, b.args());
    ASSERT_EQ(out.size(), 1u);
    expectMatchesReference(valuesOf<float>(out[0]), b.reference());
  };
  {
    Batch b = base;
    b.starts = {-3, 4, 2, 99};
    check(b, "query_start_loc negative, decreasing, beyond num_tokens");
  }
  {
    Batch b = base;
    b.starts = {2, 4, 5, 8};
    check(b, "tokens before the first and after the last sequence");
  }
  {
    Batch b = base;
    int32_t capacity = static_cast<int32_t>(b.maxBlocks * c.bs);
    b.lens = {capacity + 77, -1, 2};
    check(b, "seq_lens above capacity, negative, shorter than the query");
  }
  {
    Batch b = base;
    b.tables[0] = -5;
    b.tables[b.maxBlocks + 1] = static_cast<int32_t>(b.numBlocks + 3);
    b.tables[2 * b.maxBlocks] = std::numeric_limits<int32_t>::min();
    check(b, "block ids outside the cache");
  }
  {
    Batch b = base;
    b.q[3 * row + 1 * c.d + 7] = kNaN;
    b.q[6 * row + 2 * c.d] = kInf;
    b.sinks[0] = kNaN;
    b.sinks[1] = kInf;
    b.sinks[2] = -kInf;
    b.lens = {20, 9, 2};
    check(b, "NaN and Inf in queries and sinks");
  }
  {
    // No tokens at all (every sequence empty).
    Batch b(c, {{5, 0}, {0, 0}}, 43);
    check(b, "no query tokens");
  }
  {
    // A cache without blocks: no keys, every output 0.
    Batch b = base;
    b.numBlocks = 0;
    b.cache.clear();
    auto out = runOrDie(*prog, b.args());
    ASSERT_EQ(out.size(), 1u);
    for (float x : valuesOf<float>(out[0]))
      ASSERT_EQ(x, 0.0f);
  }
  {
    // Run-time sizes that disagree: 3 lengths, 2 table rows, 4 + 1 starts:
    // the program reads 2 sequences (the shortest operand).
    Batch b = base;
    std::vector<HostTensor> args = b.args();
    args[2] =
        tensorOf(DType::I32, {2, b.maxBlocks},
                 std::vector<int32_t>(b.tables.begin(),
                                      b.tables.begin() + 2 * b.maxBlocks));
    args[4] = tensorOf(DType::I32, {5}, std::vector<int32_t>{0, 4, 5, 10, 10});
    auto out = runOrDie(*prog, args);
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> want(b.numTokens * row);
    ASSERT_TRUE(
        ref::pagedAttention(c.kf(), c.vf(), b.geometry(), b.cache.data(),
                            b.params(), c.window, b.q.data(), b.numTokens, c.hq,
                            b.starts.data(), 2, b.tables.data(), b.maxBlocks,
                            b.lens.data(), b.sinks.data(), want.data())
            .ok());
    expectMatchesReference(valuesOf<float>(out[0]), want);
  }
}
