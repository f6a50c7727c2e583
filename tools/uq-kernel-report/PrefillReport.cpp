//===- PrefillReport.cpp - uq-kernel-report --prefill ---------------------===//
//
// A benchmark, not a test: the timing model's prediction
// (docs/timing-model.md) of one uq.paged_attention call that prefills
// `new` tokens of one sequence over a cached prefix of `prefix` tokens,
// for the UltraQuant (FP4) cache and the FP8 cache through the same
// kernels. Each launch is predicted from a few evenly spaced sampled
// workgroups (all prefill workgroups of one sequence do alike work up to
// their causal trip count, which grows linearly along the grid). Before
// that, a small problem of the same configuration is run whole and
// compared with the reference, so the figures belong to a correct kernel.
//
//===----------------------------------------------------------------------===//

#include "PrefillReport.h"

#include "uq/Target/EmulatedAttention.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace uq;

namespace {

struct Figures {
  PagedAttentionTiming timing;
  int64_t outsideBound = 0;
  double relL2 = 0;
};

llvm::Expected<Figures> measure(const PrefillReportOptions &o,
                                KVCacheKind format) {
  PagedAttentionProblem pp;
  pp.config.numQHeads = o.numQHeads;
  pp.config.numKVHeads = o.numKVHeads;
  pp.config.headDim = o.headDim;
  pp.config.blockSize = o.blockSize;
  pp.config.format = format;
  pp.config.partitionSize = o.partitionSize;
  pp.config.prefillWaves = o.prefillWaves;
  auto compiled = CompiledPagedAttention::compile(pp);
  if (!compiled)
    return compiled.takeError();
  Figures f;
  // Correctness first, on a small problem of the same code object.
  PagedAttentionProblem small = pp;
  small.queryLens = {64, 1};
  small.seqLens = {64 + 512, 300};
  auto report = (*compiled)->run(small);
  if (!report)
    return report.takeError();
  f.outsideBound = report->outsideBound;
  f.relL2 = report->relL2;
  PagedAttentionProblem big = pp;
  big.queryLens = {int32_t(o.newTokens)};
  big.seqLens = {int32_t(o.prefix + o.newTokens)};
  big.numPartitions = 1;
  auto timing = (*compiled)->predict(big, o.samples);
  if (!timing)
    return timing.takeError();
  f.timing = std::move(*timing);
  return f;
}

} // namespace

int uq::runPrefillReport(const PrefillReportOptions &o) {
  llvm::outs() << llvm::formatv(
      "uq kernel report --prefill: gfx950 timing model, {0} new tokens over a "
      "{1}-token cached prefix, head_dim {2}, {3} query heads / {4} KV heads "
      "(GQA {5}), block size {6}, {7} waves per prefill workgroup, {8} "
      "sampled workgroups per launch\n\n",
      o.newTokens, o.prefix, o.headDim, o.numQHeads, o.numKVHeads,
      o.numQHeads / o.numKVHeads, o.blockSize, o.prefillWaves, o.samples);
  double uqUs = 0, fp8Us = 0;
  bool ok = true;
  for (KVCacheKind k : {KVCacheKind::UltraQuant, KVCacheKind::FP8}) {
    auto f = measure(o, k);
    if (!f) {
      llvm::errs() << "uq-kernel-report: " << kvCacheKindName(k) << ": "
                   << llvm::toString(f.takeError()) << "\n";
      return 1;
    }
    const PagedAttentionTiming &t = f->timing;
    llvm::outs() << llvm::formatv(
        "{0} KV cache (small check: rel L2 {1:e2}, {2} outputs outside the "
        "bound)\n",
        kvCacheKindName(k), f->relL2, f->outsideBound);
    for (const std::string &line : t.launchText)
      llvm::outs() << "  " << line << "\n";
    llvm::outs() << llvm::formatv(
        "  model estimate: query {0:f1} us + prefill {1:f1} us + merge {2:f1} "
        "us = {3:f1} us\n",
        t.queryUs, t.prefillUs, t.mergeUs, t.totalUs);
    llvm::outs() << llvm::formatv(
        "  prefill: bound {0:f1} us ({1}); MFMA-bound time {2:f1} us = "
        "{3:f1}% of the prefill estimate\n",
        t.prefillBoundUs, t.prefillBoundResource, t.prefillMfmaUs,
        100.0 * t.prefillMfmaUs / t.prefillUs);
    for (auto &[kind, n] : t.mfmaByKind)
      llvm::outs() << llvm::formatv("    {0,-40} {1,14:f0} per launch\n",
                                    kind, n);
    llvm::outs() << llvm::formatv("  emulated in {0:f1} s\n\n",
                                  t.emulatedSeconds);
    ok &= f->outsideBound == 0;
    (k == KVCacheKind::UltraQuant ? uqUs : fp8Us) = t.totalUs;
  }
  llvm::outs() << llvm::formatv(
      "uq4 / fp8 prefill (model estimate, whole call): {0:f3} (target <= "
      "1.05)\n",
      uqUs / fp8Us);
  return ok ? 0 : 1;
}
