//===- WaveKernelsTest.cpp - The GPU path's wave-level stage on the CPU ---===//
//
// The wave-level kernels of convert-uq-to-wave (the GPU path's tiling stage:
// paging, split-K, online softmax, sinks, GQA packing, every KV format) run
// on the host (uq-inline-kernels-on-host, uq-lower-tile-ops, the CPU
// pipeline) and are compared with the reference library before any lane
// layout exists:
//  - cache bytes bit for bit with ref::cacheWrite;
//  - attention outputs within the bound of the stage's one approximation,
//    the rounding of P before the PV product (AttentionBound.h);
//  - one compiled program (run-time `?` sizes) serving several batches,
//    block-table widths and cache sizes;
//  - out-of-range block-table entries: the same result as the linalg CPU
//    path (both clamp the ids into the cache).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "../AttentionBound.h"

#include "llvm/Support/FormatVariadic.h"

#include <charconv>
#include <numeric>
#include <tuple>

using namespace uq;
using namespace uq::test;

namespace {

struct Formats {
  std::string k, v;
  ref::Format kf, vf;
};

Formats ultraQuant(double c = 0.156, bool search = false,
                   bool vRotated = false, bool vE4M3 = false) {
  Formats f;
  f.kf = ref::keyFormat();
  f.vf = ref::valueFormat();
  f.kf.c = f.vf.c = c;
  if (search)
    f.kf.scaleRule = f.vf.scaleRule = ref::ScaleRule::MseSearch;
  f.vf.rotate = vRotated;
  if (vE4M3)
    f.vf.scaleCode = ref::ScaleCode::E4M3;
  // Shortest text that parses back to the same double ("{0}" would print
  // 0.196 as 0.20: the IR and the reference would disagree on c).
  char cText[32];
  std::string cStr(cText, std::to_chars(cText, cText + sizeof(cText), c).ptr);
  // c is always spelled out: its default depends on the scale code (1/6
  // with E4M3 scales).
  std::string extra =
      ", c = " + cStr + (search ? ", scale_rule = mse_search" : "");
  f.k = "#uq.kv_format<fp4_e2m1, rotation = hadamard" + extra + ">";
  f.v = "#uq.kv_format<fp4_e2m1" + std::string(vRotated ? ", rotation = hadamard" : "") +
        (vE4M3 ? ", scale = e4m3" : "") + extra + ">";
  return f;
}

Formats baseline(ref::ElementCode k, ref::ElementCode v) {
  auto name = [](ref::ElementCode c) {
    return c == ref::ElementCode::BF16 ? "#uq.kv_format<bf16>"
                                       : "#uq.kv_format<fp8_e4m3>";
  };
  Formats f;
  f.kf.code = k;
  f.vf.code = v;
  f.k = name(k);
  f.v = name(v);
  return f;
}

struct Problem {
  int64_t hq = 8, hkv = 1, d = 128, bs = 16;
  std::vector<int32_t> lens;
  bool sinks = false;
  Formats fmt = ultraQuant();
  /// Extra (unused) block-table columns and cache blocks.
  int64_t spareColumns = 0, spareBlocks = 1;
  /// The accuracy options: k_mean / v_mean operands (random means added to
  /// the rows), query_precision = fp8_e4m3_scaled with queries scaled by
  /// queryScale.
  bool kMean = false, vMean = false, scaledQuery = false;
  float queryScale = 1.0f;
};

/// Data of one problem: random bf16 K/V/Q, shuffled block tables.
struct Data {
  int64_t seqs, maxBlocks, numBlocks, slot, tokens;
  std::vector<int32_t> tables;
  std::vector<int64_t> slots;
  std::vector<float> k, v, q, sinks, kMean, vMean;
  std::vector<uint8_t> cache0, cache;
  ref::CacheGeometry geom;
};

Data makeData(const Problem &p, uint64_t seed) {
  Rng rng(seed);
  Data a;
  a.seqs = p.lens.size();
  a.maxBlocks = p.spareColumns;
  int64_t used = 0;
  for (int32_t len : p.lens) {
    int64_t nb = (len + p.bs - 1) / p.bs;
    a.maxBlocks = std::max(a.maxBlocks, nb + p.spareColumns);
    used += nb;
  }
  a.maxBlocks = std::max<int64_t>(a.maxBlocks, 1);
  a.numBlocks = used + p.spareBlocks;
  a.slot = ref::slotBytes(p.fmt.kf, p.fmt.vf, p.d);
  std::vector<int32_t> ids(a.numBlocks);
  std::iota(ids.begin(), ids.end(), 0);
  for (size_t i = ids.size(); i-- > 1;)
    std::swap(ids[i], ids[rng.below(i + 1)]);
  a.tables.assign(a.seqs * a.maxBlocks, 0);
  size_t next = 0;
  for (int64_t s = 0; s < a.seqs; ++s) {
    int64_t nb = (p.lens[s] + p.bs - 1) / p.bs;
    for (int64_t b = 0; b < nb; ++b)
      a.tables[s * a.maxBlocks + b] = ids[next++];
    for (int64_t t = 0; t < p.lens[s]; ++t)
      a.slots.push_back(int64_t(a.tables[s * a.maxBlocks + t / p.bs]) * p.bs +
                        t % p.bs);
  }
  a.slots.push_back(-1);                       // skipped
  a.slots.push_back(a.numBlocks * p.bs + 3);   // past the cache: skipped
  a.tokens = a.slots.size();
  size_t n = a.tokens * p.hkv * p.d;
  a.k.resize(n);
  a.v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    a.k[i] = bf16Round(rng.normal(1.5f));
    a.v[i] = bf16Round(rng.normal(1.0f));
  }
  a.q.resize(a.seqs * p.hq * p.d);
  for (float &x : a.q)
    x = bf16Round(rng.normal(1.0f));
  a.sinks.resize(p.hq);
  for (float &x : a.sinks)
    x = rng.normal(2.0f);
  a.geom = {a.numBlocks, p.bs, p.hkv, p.d, a.slot};
  a.cache0.resize(ref::cacheBytes(a.geom));
  for (uint8_t &b : a.cache0)
    b = static_cast<uint8_t>(rng.next()); // bytes nobody writes survive
  // Options drawn last: the other problems keep their data.
  for (float &x : a.q)
    x = bf16Round(x * p.queryScale);
  for (auto [on, mean, rows, sd] :
       {std::tuple<bool, std::vector<float> *, std::vector<float> *, float>{
            p.kMean, &a.kMean, &a.k, 3.0f},
        {p.vMean, &a.vMean, &a.v, 2.0f}}) {
    if (!on)
      continue;
    mean->resize(p.hkv * p.d);
    for (float &x : *mean)
      x = rng.normal(sd);
    for (size_t i = 0; i < rows->size(); ++i)
      (*rows)[i] = bf16Round((*rows)[i] + (*mean)[i % (p.hkv * p.d)]);
  }
  // The reference rejects a slot past the cache: write all but it.
  a.cache = a.cache0;
  EXPECT_TRUE(ref::cacheWrite(p.fmt.kf, p.fmt.vf, a.geom, a.k.data(),
                              a.v.data(), a.slots.data(), a.tokens - 1,
                              a.cache.data(),
                              p.kMean ? a.kMean.data() : nullptr,
                              p.vMean ? a.vMean.data() : nullptr)
                  .ok());
  return a;
}

/// One program: the cache write of all tokens, then decode attention. Sizes
/// that a serving engine changes per step are `?` when \p dynamic.
std::string programIR(const Problem &p, const Data &a, bool dynamic) {
  auto sz = [&](int64_t v) {
    return dynamic ? std::string("?") : std::to_string(v);
  };
  std::string kv = llvm::formatv("tensor<{0}x{1}x{2}xbf16>", sz(a.tokens),
                                 p.hkv, p.d);
  std::string cache = llvm::formatv("tensor<{0}x{1}x{2}x{3}xi8>",
                                    sz(a.numBlocks), p.bs, p.hkv, a.slot);
  std::string q = llvm::formatv("tensor<{0}x{1}x{2}xbf16>", sz(a.seqs), p.hq,
                                p.d);
  std::string bt =
      llvm::formatv("tensor<{0}x{1}xi32>", sz(a.seqs), sz(a.maxBlocks));
  std::string lens = llvm::formatv("tensor<{0}xi32>", sz(a.seqs));
  std::string out = llvm::formatv("tensor<{0}x{1}x{2}xf32>", sz(a.seqs), p.hq,
                                  p.d);
  std::string sinkT = llvm::formatv("tensor<{0}xf32>", p.hq);
  std::string attrs = "{k_format = " + p.fmt.k + ", v_format = " + p.fmt.v +
                      ", layout = #uq.cache_layout<vllm_slot>}";
  std::string attnAttrs = attrs;
  if (p.scaledQuery)
    attnAttrs.insert(attnAttrs.size() - 1,
                     ", query_precision = #uq<query_precision "
                     "fp8_e4m3_scaled>");
  std::string meanT = llvm::formatv("tensor<{0}x{1}xf32>", p.hkv, p.d);
  std::string meanArgs, writeMeans, attnMeans, attnMeanTypes;
  for (auto [on, name, var] : {std::tuple<bool, const char *, const char *>{
                                   p.kMean, "k_mean", "%mk"},
                               {p.vMean, "v_mean", "%mv"}}) {
    if (!on)
      continue;
    meanArgs += llvm::formatv(", {0}: {1}", var, meanT).str();
    writeMeans += llvm::formatv(" {0} {1} : {2}", name, var, meanT).str();
    attnMeans += llvm::formatv(" {0} {1}", name, var).str();
    attnMeanTypes += ", " + meanT;
  }
  return llvm::formatv(R"(
func.func @main(%k: {0}, %v: {0}, %slots: tensor<{1}xi64>, %c: {2}, %q: {3},
                %bt: {4}, %lens: {5}{6}{11}) -> ({2}, {7}) {{
  %c2 = uq.cache_write %k, %v, %slots into %c{12} {8} : {0}, {0}, tensor<{1}xi64> into {2}
  %o = uq.decode_attention %q, %c2, %bt, %lens{9}{13} scale 0.0883883461 {15}
      : ({3}, {2}, {4}, {5}{10}{14}) -> {7}
  return %c2, %o : {2}, {7}
}
)",
                       kv, sz(a.tokens), cache, q, bt, lens,
                       p.sinks ? ", %s: " + sinkT : "", out, attrs,
                       p.sinks ? " sinks %s" : "",
                       p.sinks ? ", " + sinkT : "", meanArgs, writeMeans,
                       attnMeans, attnMeanTypes, attnAttrs)
      .str();
}

std::vector<HostTensor> programArgs(const Problem &p, const Data &a) {
  std::vector<HostTensor> args = {
      bf16Tensor({a.tokens, p.hkv, p.d}, a.k),
      bf16Tensor({a.tokens, p.hkv, p.d}, a.v),
      tensorOf(DType::I64, {a.tokens}, a.slots),
      tensorOf(DType::I8, {a.numBlocks, p.bs, p.hkv, a.slot}, a.cache0),
      bf16Tensor({a.seqs, p.hq, p.d}, a.q),
      tensorOf(DType::I32, {a.seqs, a.maxBlocks}, a.tables),
      tensorOf(DType::I32, {a.seqs}, p.lens)};
  if (p.sinks)
    args.push_back(f32Tensor({p.hq}, a.sinks));
  if (p.kMean)
    args.push_back(f32Tensor({p.hkv, p.d}, a.kMean));
  if (p.vMean)
    args.push_back(f32Tensor({p.hkv, p.d}, a.vMean));
  return args;
}

runtime::CPURunOptions waveOptions(int64_t partition = 256) {
  runtime::CPURunOptions o;
  o.waveKernels = true;
  o.partitionSize = partition;
  o.optLevel = 1;
  return o;
}

/// Runs \p prog on \p p and checks cache bytes and outputs.
void expectMatchesReference(CPUProgram &prog, const Problem &p,
                            const Data &a) {
  auto out = runOrDie(prog, programArgs(p, a));
  ASSERT_EQ(out.size(), 2u);
  auto cache = valuesOf<uint8_t>(out[0]);
  ASSERT_EQ(cache.size(), a.cache.size());
  int64_t diff = 0;
  for (size_t i = 0; i < cache.size(); ++i)
    diff += cache[i] != a.cache[i];
  EXPECT_EQ(diff, 0) << "cache bytes differ from ref::cacheWrite";

  const float scale = 0.0883883461f;
  ref::AttentionParams params;
  params.softmaxScale = scale;
  if (p.scaledQuery)
    params.queryPrecision = ref::QueryPrecision::FP8_E4M3_Scaled;
  params.kMean = p.kMean ? a.kMean.data() : nullptr;
  params.vMean = p.vMean ? a.vMean.data() : nullptr;
  std::vector<float> want(a.seqs * p.hq * p.d);
  ASSERT_TRUE(ref::decodeAttention(p.fmt.kf, p.fmt.vf, a.geom, a.cache.data(),
                                   params, a.q.data(), a.seqs, p.hq,
                                   a.tables.data(), a.maxBlocks, p.lens.data(),
                                   p.sinks ? a.sinks.data() : nullptr,
                                   want.data())
                  .ok());
  std::vector<double> bounds = attentionBounds(
      p.fmt.kf, p.fmt.vf, a.geom, a.cache.data(), a.q, a.seqs, p.hq,
      a.tables, a.maxBlocks, p.lens, p.sinks ? a.sinks.data() : nullptr,
      scale, probabilityError(p.fmt.vf), &params);
  std::vector<float> got = valuesOf<float>(out[1]);
  EXPECT_EQ(countOutside(got, want, bounds), 0)
      << "rel L2 " << relL2(got, want);
}

struct Case {
  const char *name;
  Problem p;
  int64_t partition = 256;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

Problem make(int64_t hq, int64_t hkv, int64_t d, int64_t bs,
             std::vector<int32_t> lens, bool sinks, Formats f = ultraQuant()) {
  Problem p;
  p.hq = hq;
  p.hkv = hkv;
  p.d = d;
  p.bs = bs;
  p.lens = std::move(lens);
  p.sinks = sinks;
  p.fmt = std::move(f);
  return p;
}

const Case kCases[] = {
    {"uq_gqa8_d128", make(8, 1, 128, 16, {300, 1, 0}, false)},
    {"uq_gqa1_d64_sinks", make(4, 4, 64, 16, {77, 33}, true), 64},
    {"uq_gqa16_d256", make(16, 1, 256, 16, {129}, true)},
    {"uq_gqa4_d128_block5", make(8, 2, 128, 5, {61, 7}, false), 32},
    {"uq_block1", make(2, 1, 64, 1, {40}, false), 32},
    {"uq_block3_odd", make(6, 1, 128, 3, {50, 4}, true), 32},
    {"uq_mse_c196_vrot", make(8, 2, 128, 16, {200, 45}, true,
                              ultraQuant(0.196, true, true)),
     64},
    {"fp8_kv", make(8, 1, 128, 16, {150, 9}, true,
                    baseline(ref::ElementCode::FP8_E4M3,
                             ref::ElementCode::FP8_E4M3)),
     64},
    {"bf16_kv_d64", make(4, 2, 64, 16, {70}, false,
                         baseline(ref::ElementCode::BF16,
                                  ref::ElementCode::BF16))},
    {"bf16_k_fp8_v_d256", make(4, 1, 256, 8, {90}, true,
                               baseline(ref::ElementCode::BF16,
                                        ref::ElementCode::FP8_E4M3))},
};

/// \p p with the accuracy options.
Problem withOptions(Problem p, bool kMean, bool vMean, bool scaledQuery,
                    float queryScale = 1.0f) {
  p.kMean = kMean;
  p.vMean = vMean;
  p.scaledQuery = scaledQuery;
  p.queryScale = queryScale;
  return p;
}

// The accuracy options (docs/accuracy.md) through the wave-level
// kernels: channel means in the cache write (bytes bit-exact) and in the
// attention (k_mean as a logit bias, v_mean at the merge, with and without
// sinks, rotated and plain values), per-32 query scales (queries 300 times
// larger pass FP8's 448 after the rotation), D = 64 (padded MFMA K).
const Case kOptionCases[] = {
    {"means_sinks_vrot",
     withOptions(make(8, 2, 128, 16, {200, 45, 0}, true,
                      ultraQuant(0.196, false, true)),
                 true, true, false),
     64},
    {"means_d64_no_sinks",
     withOptions(make(4, 1, 64, 16, {90}, false), true, true, false)},
    {"kmean_only_sinks",
     withOptions(make(8, 1, 128, 16, {130}, true), true, false, false), 64},
    {"scaled_query_large",
     withOptions(make(8, 2, 128, 16, {150, 7}, true), false, false, true,
                 300.0f),
     64},
    {"scaled_query_means_d64",
     withOptions(make(4, 2, 64, 16, {77}, true, ultraQuant(0.196, true)), true,
                 true, true, 20.0f)},
    // E4M3 value scales (scale = e4m3), with docs/accuracy.md's best
    // dialect configuration uq:c=0.196,rotv,search,vs=e4m3,kmean,vmean.
    {"e4m3_values",
     make(4, 1, 128, 16, {100}, false, ultraQuant(0.156, false, false, true))},
    {"best_dialect_sinks",
     withOptions(make(8, 2, 128, 16, {200, 45, 0}, true,
                      ultraQuant(0.196, true, true, true)),
                 true, true, false),
     64},
};

class WaveKernels : public ::testing::TestWithParam<Case> {};

} // namespace

// Static shapes: every case's cache bytes and outputs.
TEST_P(WaveKernels, StaticShapesMatchReference) {
  const Case &c = GetParam();
  Data a = makeData(c.p, 7 + c.p.d + c.p.bs);
  auto prog = compileOrDie(programIR(c.p, a, /*dynamic=*/false),
                           waveOptions(c.partition));
  ASSERT_TRUE(prog);
  expectMatchesReference(*prog, c.p, a);
}

INSTANTIATE_TEST_SUITE_P(Cases, WaveKernels, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.name);
                         });

INSTANTIATE_TEST_SUITE_P(FormatOptions, WaveKernels,
                         ::testing::ValuesIn(kOptionCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.name);
                         });

// One program with `?` sizes serves batches of 1, 3 and 7 sequences, two
// block-table widths and cache sizes, lengths 0 to 700, without recompiling.
TEST(WaveKernelsRuntimeShapes, OneProgramManyProblems) {
  Problem base = make(8, 2, 128, 16, {1}, true);
  Data shapeOnly = makeData(base, 1);
  auto prog = compileOrDie(programIR(base, shapeOnly, /*dynamic=*/true),
                           waveOptions(128));
  ASSERT_TRUE(prog);
  std::vector<std::pair<std::vector<int32_t>, int64_t>> problems = {
      {{700}, 0},
      {{0, 129, 5}, 3},
      {{1, 2, 3, 256, 257, 31, 64}, 1}};
  for (auto &[lens, spare] : problems) {
    Problem p = base;
    p.lens = lens;
    p.spareColumns = spare;
    p.spareBlocks = 1 + spare;
    Data a = makeData(p, lens.size() * 31 + spare);
    SCOPED_TRACE(llvm::formatv("{0} sequences, table width {1}, {2} blocks",
                               a.seqs, a.maxBlocks, a.numBlocks)
                     .str());
    expectMatchesReference(*prog, p, a);
  }
}

// Block-table entries of -1 and past the cache: the wave-level kernels clamp
// them into the cache like the linalg CPU path does (the reference rejects
// such tables), so both paths agree within the P-rounding bound.
TEST(WaveKernelsInputPolicy, OutOfRangeBlockIdsAgreeWithLinalgPath) {
  Problem p = make(8, 1, 128, 16, {100, 40}, false);
  Data a = makeData(p, 99);
  // Sequence 0: its second and fourth blocks are -1 and far past the cache.
  a.tables[1] = -1;
  a.tables[3] = 1 << 29;
  a.tables[a.maxBlocks] = static_cast<int32_t>(a.numBlocks); // one past
  std::string ir = programIR(p, a, /*dynamic=*/true);
  auto wave = compileOrDie(ir, waveOptions(64));
  auto linalg = compileOrDie(ir);
  ASSERT_TRUE(wave && linalg);
  auto w = runOrDie(*wave, programArgs(p, a));
  auto l = runOrDie(*linalg, programArgs(p, a));
  ASSERT_EQ(w.size(), 2u);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(valuesOf<uint8_t>(w[0]), valuesOf<uint8_t>(l[0]));
  auto cache = valuesOf<uint8_t>(l[0]);
  std::vector<double> bounds = attentionBounds(
      p.fmt.kf, p.fmt.vf, a.geom, cache.data(), a.q, a.seqs, p.hq, a.tables,
      a.maxBlocks, p.lens, nullptr, 0.0883883461f,
      probabilityError(p.fmt.vf));
  EXPECT_EQ(countOutside(valuesOf<float>(w[1]), valuesOf<float>(l[1]), bounds),
            0);
}
