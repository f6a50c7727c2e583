//===- PrefillReport.cpp - uq-kernel-report --prefill ---------------------===//
//
// A benchmark, not a test: the timing model's prediction
// (docs/timing-model.md) of one uq.paged_attention call that prefills
// `new` tokens of one sequence over a cached prefix of `prefix` tokens
// (with `decodes` one-token sequences over the same prefix in the same
// batch), for each requested cache format through the same kernels.
//
// Each launch is predicted from a few traced workgroups
// (CompiledPagedAttention::predict): the prefill launch's are the midpoints
// of equal strata of its workgroups with keys, in order of their key
// count, spread over the KV heads and weighted by the workgroups they stand
// for, plus one workgroup without keys for those; a sampled prefill whose
// traced workgroups did no matrix work while the grid has work is an error.
//
// Before that, the check: the same batch shape (the decodes, one chunk, the
// KV heads, one partition) reduced to a short chunk over a short prefix is
// emulated whole, its output compared with the reference, and its sampled
// prediction compared with the whole one (the prefill launch's estimate
// within --check-tolerance), so the figures belong to a correct kernel and
// a sampling that agrees with a whole emulation of the same grid shape.
//
//===----------------------------------------------------------------------===//

#include "uq/KernelReport/PrefillReport.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

using namespace uq;
using namespace uq::report;

namespace {

/// One chunk of `newTokens` over `prefix` cached tokens after `decodes`
/// one-token sequences over `prefix`, in `partitions` split-K partitions
/// (0: the compiler's rule).
PagedAttentionProblem batch(const PagedAttentionProblem &shape, int64_t decodes,
                            int64_t newTokens, int64_t prefix,
                            int64_t partitions) {
  PagedAttentionProblem pp = shape;
  pp.queryLens.assign(decodes, 1);
  pp.seqLens.assign(decodes, int32_t(prefix + 1));
  pp.queryLens.push_back(int32_t(newTokens));
  pp.seqLens.push_back(int32_t(prefix + newTokens));
  pp.numPartitions = partitions;
  return pp;
}

/// Causal attention FLOPs: 4 * sum over query tokens of the keys it sees
/// * D * Hq (QK^T and PV, a multiply-add each).
double causalFlops(const PagedAttentionProblem &pp) {
  const AttentionProblem &c = pp.config;
  double keys = 0;
  for (size_t s = 0; s < pp.seqLens.size(); ++s) {
    double q = pp.queryLens[s], len = pp.seqLens[s];
    // Token i of q sees len - q + i + 1 keys.
    keys += q * (len - q) + q * (q + 1) / 2;
  }
  return 4.0 * keys * double(c.headDim) * double(c.numQHeads);
}

double relDiff(double whole, double sampled) {
  return whole == 0 ? (sampled == 0 ? 0.0 : 1.0) : (sampled - whole) / whole;
}

struct Figures {
  PagedAttentionTiming timing, checkWhole, checkSampled;
  double flops = 0;
};

/// The problem shape of \p o's configuration with \p format's cache.
PagedAttentionProblem shapeOf(const PrefillReportOptions &o,
                              KVCacheKind format) {
  PagedAttentionProblem pp;
  pp.config.numQHeads = o.numQHeads;
  pp.config.numKVHeads = o.numKVHeads;
  pp.config.headDim = o.headDim;
  pp.config.blockSize = o.blockSize;
  pp.config.format = format;
  pp.config.partitionSize = o.partitionSize;
  pp.config.prefillWaves = o.prefillWaves;
  pp.config.prefillRows = o.prefillRows;
  pp.config.prefillSharedV = o.prefillSharedV;
  pp.distinctTokens = o.distinctTokens;
  return pp;
}

/// The check, on the batch shape of \p o reduced: whole, then sampled.
llvm::Error check(const PrefillReportOptions &o,
                  const CompiledPagedAttention &compiled,
                  const PagedAttentionProblem &pp, Figures &f) {
  PagedAttentionProblem small =
      batch(pp, o.decodes, o.checkNewTokens, o.checkPrefix, o.partitions);
  PagedPredictOptions whole;
  whole.whole = true;
  auto w = compiled.predict(small, whole);
  if (!w)
    return w.takeError();
  f.checkWhole = std::move(*w);
  auto s = compiled.predict(small, o.samples);
  if (!s)
    return s.takeError();
  f.checkSampled = std::move(*s);
  return llvm::Error::success();
}

/// Whether the check passed: no output outside the bound, and the sampled
/// prefill launch within the tolerance of the whole one.
bool checkPassed(const PrefillReportOptions &o, const Figures &f) {
  return f.checkWhole.outsideBound == 0 &&
         std::fabs(relDiff(f.checkWhole.prefillUs, f.checkSampled.prefillUs)) <=
             o.checkTolerance;
}

llvm::Expected<Figures> measure(const PrefillReportOptions &o,
                                KVCacheKind format) {
  PagedAttentionProblem pp = shapeOf(o, format);
  auto compiled = CompiledPagedAttention::compile(pp);
  if (!compiled)
    return compiled.takeError();
  Figures f;
  if (llvm::Error e = check(o, **compiled, pp, f))
    return std::move(e);
  PagedAttentionProblem big =
      batch(pp, o.decodes, o.newTokens, o.prefix, o.partitions);
  f.flops = causalFlops(big);
  auto timing = (*compiled)->predict(big, o.samples);
  if (!timing)
    return timing.takeError();
  f.timing = std::move(*timing);
  return f;
}

} // namespace

llvm::Expected<std::vector<PrefillChunkTiming>>
uq::report::predictPrefillChunks(
    const PrefillReportOptions &o, KVCacheKind format,
    llvm::ArrayRef<std::pair<int64_t, int64_t>> chunks,
    double *compileSeconds) {
  PagedAttentionProblem pp = shapeOf(o, format);
  const auto t0 = std::chrono::steady_clock::now();
  auto compiled = CompiledPagedAttention::compile(pp);
  if (!compiled)
    return compiled.takeError();
  if (compileSeconds)
    *compileSeconds = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
  Figures f;
  if (llvm::Error e = check(o, **compiled, pp, f))
    return std::move(e);
  if (!checkPassed(o, f))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("the prefill check failed ({0} new tokens over {1}: {2} "
                      "outputs outside the bound; prefill launch whole {3:f2} "
                      "us vs sampled {4:f2} us, tolerance {5:f1}%)",
                      o.checkNewTokens, o.checkPrefix,
                      f.checkWhole.outsideBound, f.checkWhole.prefillUs,
                      f.checkSampled.prefillUs, 100 * o.checkTolerance));
  std::vector<PrefillChunkTiming> out;
  for (auto [newTokens, context] : chunks) {
    if (newTokens < 1 || context < newTokens)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("a prefill chunk of {0} new tokens over a context of "
                        "{1} (need 1 <= new tokens <= context)",
                        newTokens, context));
    auto t = (*compiled)->predict(
        batch(pp, o.decodes, newTokens, context - newTokens, o.partitions),
        o.samples);
    if (!t)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0} new tokens over a context of {1}: {2}", newTokens,
                        context, llvm::toString(t.takeError())));
    out.push_back({newTokens, context, std::move(*t)});
  }
  return out;
}

llvm::Expected<bool> uq::report::runPrefillReport(
    const PrefillReportOptions &o, llvm::raw_ostream &os,
    llvm::function_ref<void(const llvm::Twine &)> warn) {
  os << llvm::formatv(
      "uq kernel report --prefill: gfx950 timing model (model, "
      "uncalibrated unless docs/timing-model.md says otherwise), {0} new "
      "tokens over a {1}-token cached prefix{9}, head_dim {2}, {3} query "
      "heads / {4} KV heads (GQA {5}), block size {6}, {7} waves of {10} "
      "MFMA rows per prefill workgroup{12}, {11} split-K partitions, {8} "
      "sampled workgroups per launch\n\n",
      o.newTokens, o.prefix, o.headDim, o.numQHeads, o.numKVHeads,
      o.numQHeads / o.numKVHeads, o.blockSize, o.prefillWaves, o.samples,
      o.decodes
          ? llvm::formatv(" and {0} decodes over the prefix", o.decodes).str()
          : std::string(),
      o.prefillRows,
      o.partitions ? std::to_string(o.partitions)
                   : std::string("the compiler's rule of"),
      o.prefillSharedV ? " (shared value tile)" : "");
  double uqUs = 0, fp8Us = 0;
  bool ok = true;
  for (KVCacheKind k : o.formats) {
    auto f = measure(o, k);
    if (!f)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::Twine(kvCacheKindName(k)) + ": " +
                                         llvm::toString(f.takeError()));
    const PagedAttentionTiming &t = f->timing;
    const PagedAttentionTiming &cw = f->checkWhole, &cs = f->checkSampled;
    double diff = relDiff(cw.prefillUs, cs.prefillUs);
    bool checkOk = checkPassed(o, *f);
    os << llvm::formatv(
        "{0} KV cache\n  check ({1} new tokens over {2}, same grid shape: "
        "{3} workgroups of {4} with keys): whole emulation vs reference rel "
        "L2 {5:e2}, {6} outputs outside the bound; prefill launch whole "
        "{7:f2} us vs sampled {8:f2} us ({9:f1}%, tolerance {10:f1}%)\n",
        kvCacheKindName(k), o.checkNewTokens, o.checkPrefix, cw.prefillWorking,
        cw.prefillWorkgroups, cw.relL2, cw.outsideBound, cw.prefillUs,
        cs.prefillUs, 100 * diff, 100 * o.checkTolerance);
    if (!checkOk)
      warn(llvm::Twine(kvCacheKindName(k)) +
           ": the check failed (outputs outside the bound, or the sampled "
           "prediction differs from the whole emulation by more than the "
           "tolerance)");
    ok &= checkOk;
    os << llvm::formatv("  prefill: {0} of {1} workgroups have "
                        "keys; traced",
                        t.prefillWorking, t.prefillWorkgroups);
    for (auto [id, wt] : llvm::zip(t.prefillTraced, t.prefillWeights))
      os << llvm::formatv(" ({0},{1},{2})x{3:f0}", id[0], id[1], id[2], wt);
    os << "\n";
    for (const std::string &line : t.launchText)
      os << "  " << line << "\n";
    os << llvm::formatv(
        "  model estimate: query {0:f1} us + prefill {1:f1} us + merge {2:f1} "
        "us = {3:f1} us\n",
        t.queryUs, t.prefillUs, t.mergeUs, t.totalUs);
    os << llvm::formatv(
        "  prefill: bound {0:f1} us ({1}); MFMA-bound time {2:f1} us = "
        "{3:f1}% of the prefill estimate\n",
        t.prefillBoundUs, t.prefillBoundResource, t.prefillMfmaUs,
        100.0 * t.prefillMfmaUs / t.prefillUs);
    os << llvm::formatv(
        "  causal FLOPs {0:e3}: {1:f3} PFLOP/s over the whole call, {2:f3} "
        "over the prefill launch (model)\n",
        f->flops, f->flops / (t.totalUs * 1e-6) / 1e15,
        f->flops / (t.prefillUs * 1e-6) / 1e15);
    for (auto &[kind, n] : t.mfmaByKind)
      os << llvm::formatv("    {0,-40} {1,14:f0} per launch\n", kind, n);
    // The traced workgroups' instructions per wave and 32-key tile (the
    // loop's cost, with the per-workgroup set-up spread over its tiles).
    if (t.prefillWaveTiles > 0) {
      const emu::Stats &st = t.prefillStats;
      double n = t.prefillWaveTiles;
      os << llvm::formatv(
          "  prefill instructions per wave and 32-key tile (traced "
          "workgroups): VALU {0:f1} (transcendental {1:f1}), MFMA {2:f1}, "
          "LDS {3:f1}, SALU {4:f1}, SMEM {5:f1}, global {6:f1}, waitcnt "
          "{7:f1}, branch {8:f1}, all {9:f1}\n",
          st.valu / n, st.valuTrans / n, st.mfma / n, st.lds / n, st.salu / n,
          st.smem / n, st.global / n, st.waitcnts / n, st.branch / n,
          st.waveInstructions / n);
    }
    os << llvm::formatv("  emulated in {0:f1} s (check {1:f1} s "
                        "whole, {2:f1} s sampled)\n\n",
                        t.emulatedSeconds, cw.emulatedSeconds,
                        cs.emulatedSeconds);
    if (k == KVCacheKind::UltraQuant)
      uqUs = t.totalUs;
    if (k == KVCacheKind::FP8)
      fp8Us = t.totalUs;
  }
  if (uqUs > 0 && fp8Us > 0)
    os << llvm::formatv(
        "uq4 / fp8 prefill (model estimate, whole call): {0:f3} (target <= "
        "0.9)\n",
        uqUs / fp8Us);
  return ok;
}
