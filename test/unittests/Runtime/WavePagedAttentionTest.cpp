//===- WavePagedAttentionTest.cpp - uq.paged_attention's wave kernels -----===//
//
// The wave-level kernels of uq.paged_attention (convert-uq-to-wave:
// query, prefill, merge; docs/gpu-kernels.md, "Paged attention") run on the
// host (CPURunner option waveKernels) before any lane layout, against
// ref::pagedAttention within ref::attentionErrorBounds' bound for the
// kernels' bf16 rounding of P (2^-8, as the gfx950 harness derives it):
// a mixed batch of decodes and prefill chunks with a window and sinks, and
// tokens that no sequence covers.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace uq;
using namespace uq::test;

namespace {

TEST(WavePagedAttention, MixedBatchWindowSinksOnTheHost) {
  const int64_t hq = 8, hkv = 2, d = 128, bs = 16, window = 40;
  ref::Format kf = ref::keyFormat(), vf = ref::valueFormat();
  const int64_t slot = ref::slotBytes(kf, vf, d);
  // Sequences: (context length, query length); one token before the first
  // and two after the last belong to none.
  const std::vector<std::pair<int32_t, int32_t>> seqs = {
      {1, 1}, {90, 37}, {300, 1}, {5, 9}, {0, 2}};
  const int64_t lead = 1, trail = 2;
  int64_t maxBlocks = 1;
  for (auto [len, q] : seqs)
    maxBlocks = std::max<int64_t>(maxBlocks, (len + bs - 1) / bs);
  const int64_t ns = seqs.size(), numBlocks = ns * maxBlocks + 1;
  Rng rng(7);
  std::vector<uint8_t> cache(numBlocks * bs * hkv * slot, 0);
  std::vector<int32_t> tables(ns * maxBlocks, 0), lens, starts = {int32_t(lead)};
  ref::CacheGeometry g{numBlocks, bs, hkv, d, slot};
  for (int64_t s = 0; s < ns; ++s) {
    auto [len, q] = seqs[s];
    for (int64_t b = 0; b < maxBlocks; ++b)
      tables[s * maxBlocks + b] = int32_t(numBlocks - 1 - (s * maxBlocks + b));
    std::vector<float> k(len * hkv * d), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = bf16Round(rng.normal(1.0f));
      v[i] = bf16Round(rng.normal(1.0f));
    }
    std::vector<int64_t> slots(len);
    for (int32_t j = 0; j < len; ++j)
      slots[j] = int64_t(tables[s * maxBlocks + j / bs]) * bs + j % bs;
    ASSERT_TRUE(ref::cacheWrite(kf, vf, g, k.data(), v.data(), slots.data(),
                                len, cache.data())
                    .ok());
    lens.push_back(len);
    starts.push_back(starts.back() + q);
  }
  const int64_t t = starts.back() + trail;
  std::vector<float> q(t * hq * d), sinks(hq);
  for (float &x : q)
    x = bf16Round(rng.normal(1.0f));
  for (float &x : sinks)
    x = rng.normal(1.0f);
  const float scale = 1.0f / std::sqrt(float(d));

  std::string ir = llvm::formatv(R"(
func.func @main(%q: tensor<?x{0}x{1}xbf16>, %c: tensor<?x{2}x{3}x{4}xi8>,
                %bt: tensor<?x?xi32>, %lens: tensor<?xi32>, %qsl: tensor<?xi32>,
                %s: tensor<{0}xf32>) -> tensor<?x{0}x{1}xf32> {{
  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl sinks %s
      scale {5:e9} window {6} {{k_format = #uq.kv_format<fp4_e2m1, rotation = hadamard>,
      v_format = #uq.kv_format<fp4_e2m1>, layout = #uq.cache_layout<vllm_slot>}
      : (tensor<?x{0}x{1}xbf16>, tensor<?x{2}x{3}x{4}xi8>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?xi32>, tensor<{0}xf32>) -> tensor<?x{0}x{1}xf32>
  return %o : tensor<?x{0}x{1}xf32>
}
)",
                                 hq, d, bs, hkv, slot, scale, window)
                       .str();
  runtime::CPURunOptions o;
  o.waveKernels = true;
  o.partitionSize = 64;
  o.optLevel = 1;
  auto prog = compileOrDie(ir, o);
  ASSERT_TRUE(prog);
  auto out = runOrDie(
      *prog, {bf16Tensor({t, hq, d}, q),
              tensorOf(DType::I8, {numBlocks, bs, hkv, slot}, cache),
              tensorOf(DType::I32, {ns, maxBlocks}, tables),
              tensorOf(DType::I32, {ns}, lens),
              tensorOf(DType::I32, {ns + 1}, starts), f32Tensor({hq}, sinks)});
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> got = valuesOf<float>(out[0]);

  ref::AttentionParams params;
  params.softmaxScale = scale;
  std::vector<float> want(t * hq * d);
  ASSERT_TRUE(ref::pagedAttention(kf, vf, g, cache.data(), params, window,
                                  q.data(), t, hq, starts.data(), ns,
                                  tables.data(), maxBlocks, lens.data(),
                                  sinks.data(), want.data())
                  .ok());
  std::vector<double> bound(t * hq * d);
  ASSERT_TRUE(ref::attentionErrorBounds(
                  kf, vf, g, cache.data(), params, window, q.data(), t, hq,
                  starts.data(), ns, tables.data(), maxBlocks, lens.data(),
                  sinks.data(), std::ldexp(1.0, -8), bound.data())
                  .ok());
  ASSERT_EQ(got.size(), want.size());
  int64_t outside = 0, zerosWrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    outside += !(std::fabs(double(got[i]) - want[i]) <= bound[i]);
    zerosWrong += want[i] == 0.0f && got[i] != 0.0f;
  }
  EXPECT_EQ(outside, 0) << "of " << got.size();
  EXPECT_EQ(zerosWrong, 0);
}

} // namespace
