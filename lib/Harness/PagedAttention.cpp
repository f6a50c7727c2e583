//===- PagedAttention.cpp - Prefill chunks and decodes, emulated ---------===//
//
// The paged problem: one uq.paged_attention (prefill chunks and decodes in
// one batch) compiled with run-time sizes, run whole against the reference
// (CompiledPagedAttention::run) or predicted by the timing model from a few
// sampled workgroups of each launch (CompiledPagedAttention::predict).
//
//===----------------------------------------------------------------------===//

#include "Program.h"

#include "uq/Emulator/TimingModel.h"
#include "uq/Reference/Reference.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <tuple>

using namespace uq;
using namespace uq::harness;

namespace {

/// The uq program of a paged problem: one uq.paged_attention, every size
/// that a serving engine changes per step dynamic.
std::string pagedProgramIR(const PagedAttentionProblem &pp, int64_t slotBytes) {
  const AttentionProblem &pb = pp.config;
  const int64_t hq = pb.numQHeads, hkv = pb.numKVHeads, d = pb.headDim,
                bs = pb.blockSize;
  std::string dt = pb.dtype;
  std::string cacheT =
      pb.headMajor
          ? llvm::formatv("tensor<?x{0}x{1}x{2}xi8>", hkv, bs, slotBytes).str()
          : llvm::formatv("tensor<?x{0}x{1}x{2}xi8>", bs, hkv, slotBytes).str();
  std::string qT = llvm::formatv("tensor<?x{0}x{1}x{2}>", hq, d, dt);
  std::string outT = llvm::formatv("tensor<?x{0}x{1}x{2}>", hq, d, pb.outType);
  std::string sinkT = llvm::formatv("tensor<{0}xf32>", hq);
  const float softmaxScale = pb.softmaxScale > 0
                                 ? pb.softmaxScale
                                 : 1.0f / std::sqrt(static_cast<float>(d));
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &softmaxScale, 4);
  std::string scaleLiteral = llvm::formatv("{0:x8}", scaleBits).str();
  std::string window =
      pp.window > 0 ? " window " + std::to_string(pp.window) : "";
  std::string attrs = formatAttrs(pb);
  if (pb.scaledQuery)
    attrs.insert(attrs.size() - 1, ", query_precision = #uq<query_precision "
                                   "fp8_e4m3_scaled>");
  std::string ir;
  ir +=
      llvm::formatv("func.func @paged(%q: {0}, %c: {1}, %bt: tensor<?x?xi32>, "
                    "%lens: tensor<?xi32>, %qsl: tensor<?xi32>{2}{4}) -> {3} "
                    "{{\n",
                    qT, cacheT, pb.sinks ? ", %sinks: " + sinkT : "", outT,
                    meanArgs(pb, true));
  ir += llvm::formatv(
      "  %o = uq.paged_attention %q, %c, %bt, %lens query_start_loc %qsl{0}{8} "
      "scale {1}{2} {3} : ({4}, {5}, tensor<?x?xi32>, tensor<?xi32>, "
      "tensor<?xi32>{6}{9}) -> {7}\n",
      pb.sinks ? " sinks %sinks" : "", scaleLiteral, window, attrs, qT, cacheT,
      pb.sinks ? ", " + sinkT : "", outT, meanOperands(pb, false),
      meanArgs(pb, false));
  ir += llvm::formatv("  return %o : {0}\n}\n", outT);
  return ir;
}

/// Everything a paged problem launches with.
struct PagedSetup {
  Paging paging;
  ref::Format kf, vf;
  ref::CacheGeometry geom;
  std::vector<uint8_t> cache;
  Tensor q;
  std::vector<float> sinks;
  /// Channel means (AttentionProblem::kMean / vMean), or empty.
  std::vector<float> kMean, vMean;
  std::vector<int32_t> qsl;
  int64_t numTokens = 0, parts = 1, tiles = 0, tokensPerTile = 1;
};

/// \p tokensPerTile: the prefill kernel's `tokens_per_tile` (its JSON
/// params): query tokens per workgroup.
llvm::Expected<PagedSetup> setUpPaged(const PagedAttentionProblem &pp,
                                      int64_t tokensPerTile) {
  const AttentionProblem &cfg = pp.config;
  const size_t ns = pp.seqLens.size();
  if (pp.queryLens.size() != ns)
    return makeError("queryLens and seqLens must have one entry per sequence");
  if (pp.leadingTokens < 0 || pp.trailingTokens < 0 || pp.window < 0 ||
      pp.numPartitions < 0)
    return makeError("negative token counts, window or partitions");
  AttentionProblem pagingPb = cfg;
  pagingPb.seqLens = pp.cachedLens.empty() ? pp.seqLens : pp.cachedLens;
  if (pagingPb.seqLens.size() != ns)
    return makeError("cachedLens must have one entry per sequence");
  PagedSetup su;
  std::mt19937_64 rng(cfg.seed);
  auto paging = makePaging(pagingPb, rng);
  if (!paging)
    return paging.takeError();
  su.paging = std::move(*paging);
  const Paging &p = su.paging;
  const int64_t hq = cfg.numQHeads, hkv = cfg.numKVHeads, d = cfg.headDim,
                bs = cfg.blockSize;
  const int64_t cached = p.tokens();
  // The sequences' tokens: the slots before the two skipped ones (and
  // any extra slots) at the end.
  const int64_t real =
      std::max<int64_t>(0, cached - 2 - int64_t(cfg.extraSlots.size()));
  if (pp.distinctTokens < 0)
    return makeError("distinctTokens must be >= 0");
  const bool repeat = pp.distinctTokens > 0 && pp.distinctTokens < real &&
                      cfg.extraSlots.empty() && cfg.tableOverrides.empty();
  const int64_t drawn = repeat ? pp.distinctTokens : cached;
  Tensor k = makeTensor(rng, drawn * hkv * d, cfg.scale, cfg.dtype);
  Tensor v = makeTensor(rng, drawn * hkv * d, cfg.scale, cfg.dtype);
  std::normal_distribution<float> sinkDist(1.0f, 1.0f);
  su.sinks.resize(hq);
  for (float &x : su.sinks)
    x = sinkDist(rng);
  if (!cfg.sinkValues.empty()) {
    if (cfg.sinkValues.size() != su.sinks.size())
      return makeError("sinkValues must have one value per query head");
    su.sinks = cfg.sinkValues;
  }
  drawMeans(cfg, rng, k, v, su.kMean, su.vMean);
  std::tie(su.kf, su.vf) = referenceFormats(cfg);
  su.geom =
      ref::CacheGeometry{p.numBlocks, bs, hkv, d, p.slotBytes, cfg.headMajor};
  su.cache.assign(ref::cacheBytes(su.geom), 0x5A);
  if (ref::Status st = ref::cacheWrite(
          su.kf, su.vf, su.geom, k.values.data(), v.values.data(),
          p.slots.data(), repeat ? drawn : cached - 1, su.cache.data(),
          su.kMean.empty() ? nullptr : su.kMean.data(),
          su.vMean.empty() ? nullptr : su.vMean.data());
      !st.ok())
    return makeError("reference cacheWrite: " + st.message());
  if (repeat) {
    // Token i's slots (K and V of every KV head) repeat token i mod drawn's.
    auto offset = [&](int64_t slot, int64_t h) {
      int64_t blk = slot / bs, off = slot % bs;
      return (cfg.headMajor ? (blk * hkv + h) * bs + off : slot * hkv + h) *
             p.slotBytes;
    };
    for (int64_t i = drawn; i < real; ++i) {
      const int64_t src = p.slots[i % drawn], dst = p.slots[i];
      if (src < 0 || dst < 0)
        continue;
      for (int64_t h = 0; h < hkv; ++h)
        std::memcpy(su.cache.data() + offset(dst, h),
                    su.cache.data() + offset(src, h), p.slotBytes);
    }
  }
  su.qsl.push_back(int32_t(pp.leadingTokens));
  for (int32_t q : pp.queryLens) {
    if (q < 0)
      return makeError("query lengths must be >= 0");
    su.qsl.push_back(su.qsl.back() + q);
  }
  su.numTokens = su.qsl.back() + pp.trailingTokens;
  // The query after the cache's data: its own generator, so that problems
  // with different token counts share the cache.
  std::mt19937_64 qrng(cfg.seed ^ 0x9E3779B97F4A7C15ull);
  su.q = makeTensor(qrng, su.numTokens * hq * d, cfg.scale, cfg.dtype);
  if (!pp.query.empty() && pp.query.size() != su.q.values.size())
    return makeError("the given query must have num_tokens * Hq * D values");
  if (llvm::Error err = overwrite(su.q, pp.query, 0, cfg.dtype, "query"))
    return std::move(err);
  su.parts =
      pp.numPartitions > 0
          ? pp.numPartitions
          : std::max<int64_t>(1, (p.maxBlocks * bs + cfg.partitionSize - 1) /
                                     cfg.partitionSize);
  if (tokensPerTile <= 0)
    return makeError("the prefill kernel's tokens_per_tile must be positive");
  su.tokensPerTile = tokensPerTile;
  su.tiles = su.numTokens / su.tokensPerTile + int64_t(ns) + 2;
  return su;
}

/// The buffers and scalars of the three launches.
void pagedBuffers(const PagedAttentionProblem &pp, const PagedSetup &su,
                  std::map<std::string, std::vector<uint8_t>> &buffers,
                  std::map<std::string, int64_t> &scalars) {
  const AttentionProblem &cfg = pp.config;
  const int64_t t = su.numTokens, hq = cfg.numQHeads, d = cfg.headDim;
  unsigned wsBytes = cfg.format == KVCacheKind::BF16 ? 2 : 1;
  unsigned outBytes = cfg.outType == "f32" ? 4 : 2;
  buffers["query"] = su.q.bytes;
  buffers["query_prepared"] = std::vector<uint8_t>(t * hq * d * wsBytes);
  buffers["cache"] = su.cache;
  buffers["block_tables"] = toBytes(su.paging.tables);
  buffers["seq_lens"] = toBytes(pp.seqLens);
  buffers["query_start_loc"] = toBytes(su.qsl);
  buffers["partial_out"] = std::vector<uint8_t>(t * hq * su.parts * d * 4);
  buffers["partial_max"] = std::vector<uint8_t>(t * hq * su.parts * 4);
  buffers["partial_sum"] = std::vector<uint8_t>(t * hq * su.parts * 4);
  buffers["sinks"] = toBytes(su.sinks);
  buffers["out"] = std::vector<uint8_t>(t * hq * d * outBytes);
  if (cfg.kMean)
    buffers["k_mean"] = toBytes(su.kMean);
  if (cfg.vMean)
    buffers["v_mean"] = toBytes(su.vMean);
  buffers["query_scales"] = std::vector<uint8_t>(t * hq * (d / 32), 0xFF);
  buffers["query_bias"] = std::vector<uint8_t>(t * hq * 4, 0xFF);
  scalars = {{"num_tokens", t},
             {"num_seqs", int64_t(pp.seqLens.size())},
             {"num_query_starts", int64_t(su.qsl.size())},
             {"num_blocks", su.paging.numBlocks},
             {"max_blocks", su.paging.maxBlocks},
             {"num_query_tiles", su.tiles},
             {"num_partitions", su.parts}};
}

} // namespace

struct CompiledPagedAttention::Impl : EmulatedProgram {
  PagedAttentionProblem shape;
  std::string ir;
  /// The prefill kernel's `tokens_per_tile` from the kernel JSON.
  int64_t tokensPerTile = 0;

  llvm::Error checkShape(const PagedAttentionProblem &pp) const {
    const AttentionProblem &a = shape.config, &b = pp.config;
    if (a.numQHeads != b.numQHeads || a.numKVHeads != b.numKVHeads ||
        a.headDim != b.headDim || a.blockSize != b.blockSize ||
        a.sinks != b.sinks || a.format != b.format || a.dtype != b.dtype ||
        a.outType != b.outType || a.c != b.c || a.mseSearch != b.mseSearch ||
        a.vRotated != b.vRotated || a.softmaxScale != b.softmaxScale ||
        a.kMean != b.kMean || a.vMean != b.vMean ||
        a.scaledQuery != b.scaledQuery || a.vScaleE4M3 != b.vScaleE4M3 ||
        a.partitionSize != b.partitionSize ||
        a.prefillWaves != b.prefillWaves || a.prefillRows != b.prefillRows ||
        a.prefillSharedV != b.prefillSharedV ||
        a.headMajor != b.headMajor || shape.window != pp.window)
      return makeError("the problem's configuration differs from the "
                       "compiled one");
    return llvm::Error::success();
  }
};

CompiledPagedAttention::CompiledPagedAttention()
    : impl(std::make_unique<Impl>()) {}
CompiledPagedAttention::~CompiledPagedAttention() = default;
const std::string &CompiledPagedAttention::ir() const { return impl->ir; }
const std::string &CompiledPagedAttention::kernelsJson() const {
  return impl->json;
}

llvm::Expected<std::unique_ptr<CompiledPagedAttention>>
CompiledPagedAttention::compile(const PagedAttentionProblem &pp) {
  const AttentionProblem &cfg = pp.config;
  if (std::string why = configError(cfg); !why.empty())
    return makeError(why);
  if (cfg.numKVHeads <= 0 || cfg.numQHeads % cfg.numKVHeads != 0)
    return makeError("query heads must be a multiple of KV heads");
  auto [kf, vf] = referenceFormats(cfg);
  int64_t slotBytes = ref::slotBytes(kf, vf, cfg.headDim);
  if (slotBytes < 0)
    return makeError("head dim " + llvm::Twine(cfg.headDim) +
                     " has no slot layout");
  std::unique_ptr<CompiledPagedAttention> c(new CompiledPagedAttention());
  c->impl->shape = pp;
  c->impl->ir = pagedProgramIR(pp, slotBytes);
  CompileOptions options;
  options.partitionSize = cfg.partitionSize;
  options.prefillWaves = cfg.prefillWaves;
  options.prefillRows = cfg.prefillRows;
  options.prefillSharedV = cfg.prefillSharedV;
  auto loaded =
      compileAndLoad(c->impl->ir, "emulated-paged-attention", options);
  if (!loaded)
    return loaded.takeError();
  static_cast<EmulatedProgram &>(*c->impl) = std::move(*loaded);
  // The grid rule's tokens per workgroup, as the JSON gives it.
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(c->impl->json);
  if (!doc)
    return doc.takeError();
  if (const llvm::json::Array *ks =
          doc->getAsObject() ? doc->getAsObject()->getArray("kernels")
                             : nullptr)
    for (const llvm::json::Value &k : *ks)
      if (const llvm::json::Object *o = k.getAsObject())
        if (o->getString("name") == llvm::StringRef("paged_0_prefill"))
          if (const llvm::json::Object *ps = o->getObject("params"))
            c->impl->tokensPerTile =
                ps->getInteger("tokens_per_tile").value_or(0);
  if (c->impl->tokensPerTile <= 0)
    return makeError("the kernel JSON gives no tokens_per_tile for "
                     "paged_0_prefill");
  return c;
}

namespace {

/// The output in `buffers` against ref::pagedAttention with
/// ref::attentionErrorBounds' bound (the output, relL2, maxAbsError,
/// outsideBound and numOutputs of \p report).
llvm::Error
compareWithReference(const PagedAttentionProblem &pp, const PagedSetup &su,
                     std::map<std::string, std::vector<uint8_t>> &buffers,
                     PagedAttentionReport &report) {
  const AttentionProblem &cfg = pp.config;
  const int64_t t = su.numTokens, hq = cfg.numQHeads, d = cfg.headDim;
  unsigned outBytes = cfg.outType == "f32" ? 4 : 2;
  std::vector<float> out(t * hq * d);
  if (outBytes == 4) {
    out = fromBytes<float>(buffers["out"]);
  } else {
    std::vector<uint16_t> half = fromBytes<uint16_t>(buffers["out"]);
    for (size_t i = 0; i < half.size(); ++i)
      out[i] = cfg.outType == "bf16" ? ref::bf16ToFloat(half[i])
                                     : halfToFloat(half[i]);
  }

  // The reference and the bound, as for decode (CompiledAttention::run).
  const float softmaxScale = cfg.softmaxScale > 0
                                 ? cfg.softmaxScale
                                 : 1.0f / std::sqrt(static_cast<float>(d));
  ref::AttentionParams params;
  params.softmaxScale = softmaxScale;
  if (cfg.scaledQuery)
    params.queryPrecision = ref::QueryPrecision::FP8_E4M3_Scaled;
  params.kMean = su.kMean.empty() ? nullptr : su.kMean.data();
  params.vMean = su.vMean.empty() ? nullptr : su.vMean.data();
  const int64_t ns = pp.seqLens.size();
  std::vector<float> expected(t * hq * d);
  if (ref::Status st = ref::pagedAttention(
          su.kf, su.vf, su.geom, su.cache.data(), params, pp.window,
          su.q.values.data(), t, hq, su.qsl.data(), ns, su.paging.tables.data(),
          su.paging.maxBlocks, pp.seqLens.data(),
          cfg.sinks ? su.sinks.data() : nullptr, expected.data());
      !st.ok())
    return makeError("reference attention: " + st.message());
  double pError = cfg.format == KVCacheKind::FP8
                      ? std::ldexp(1.0, -4) + std::ldexp(1.0, -8)
                      : std::ldexp(1.0, -8);
  std::vector<double> bounds(t * hq * d);
  if (ref::Status st = ref::attentionErrorBounds(
          su.kf, su.vf, su.geom, su.cache.data(), params, pp.window,
          su.q.values.data(), t, hq, su.qsl.data(), ns, su.paging.tables.data(),
          su.paging.maxBlocks, pp.seqLens.data(),
          cfg.sinks ? su.sinks.data() : nullptr, pError, bounds.data());
      !st.ok())
    return makeError("reference bounds: " + st.message());
  double outRound = cfg.outType == "bf16"  ? std::ldexp(1.0, -9)
                    : cfg.outType == "f16" ? std::ldexp(1.0, -12)
                                           : 0.0;
  double errSq = 0, refSq = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double want = expected[i], got = out[i];
    double bound = bounds[i] + outRound * std::fabs(want);
    if (std::isnan(want) || std::isnan(got)) {
      report.outsideBound += std::isnan(want) != std::isnan(got);
      continue;
    }
    double diff = std::fabs(got - want);
    if (!(diff <= bound))
      ++report.outsideBound;
    report.maxAbsError = std::max(report.maxAbsError, diff);
    errSq += diff * diff;
    refSq += want * want;
  }
  report.numOutputs = t * hq * d;
  report.output = std::move(out);
  report.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<PagedAttentionReport>
CompiledPagedAttention::run(const PagedAttentionProblem &pp) const {
  if (llvm::Error err = impl->checkShape(pp))
    return std::move(err);
  auto suOr = setUpPaged(pp, impl->tokensPerTile);
  if (!suOr)
    return suOr.takeError();
  const PagedSetup &su = *suOr;
  const int64_t t = su.numTokens;
  std::map<std::string, std::vector<uint8_t>> buffers;
  std::map<std::string, int64_t> scalars;
  pagedBuffers(pp, su, buffers, scalars);
  PagedAttentionReport report;
  report.kernelsJson = impl->json;
  report.numTokens = t;
  report.numPartitions = su.parts;
  report.numQueryTiles = su.tiles;
  emu::Emulator em(*impl->codeObject);
  Launcher launcher{em, impl->kernels};
  if (llvm::Error err =
          launcher.launch("paged_0_query", buffers, scalars, report.queryStats))
    return std::move(err);
  if (llvm::Error err = launcher.launch("paged_0_prefill", buffers, scalars,
                                        report.prefillStats))
    return std::move(err);
  if (llvm::Error err =
          launcher.launch("paged_0_merge", buffers, scalars, report.mergeStats))
    return std::move(err);
  if (llvm::Error err = compareWithReference(pp, su, buffers, report))
    return std::move(err);
  return report;
}

namespace {

/// The keys each prefill workgroup (x, z) sees by the kernel's grid rule
/// (PrefillKernels.cpp, buildPrefillKernel): query tile x belongs to the
/// last extended sequence e whose first tile b(e) / tokens_per_tile + e is
/// <= x; its tokens see the keys [lo, hi) of their sequence, intersected
/// with partition z. Index x + tiles * z; -1: tokens but no keys (the
/// workgroup loads its query and writes empty rows), 0: no tokens (it
/// returns). With \p ranges, also each (x, z)'s sequence, key range and
/// query tokens (PrefillRange).
struct PrefillRange {
  int64_t seq = -1, start = 0, end = 0, tokens = 0;
};
std::vector<int64_t> prefillKeys(const PagedAttentionProblem &pp,
                                 const PagedSetup &su, uint64_t tiles,
                                 uint64_t parts,
                                 std::vector<PrefillRange> *ranges = nullptr) {
  const AttentionProblem &cfg = pp.config;
  const int64_t numTokens = su.numTokens, tpt = su.tokensPerTile;
  const int64_t ns = int64_t(pp.seqLens.size());
  // The sanitised query_start_loc: a running maximum clamped to the tokens.
  std::vector<int64_t> b(ns + 1, numTokens);
  for (int64_t s = 0; s <= ns && ns > 0; ++s) {
    int64_t v = std::min<int64_t>(std::max<int64_t>(su.qsl[s], 0), numTokens);
    b[s] = s == 0 ? v : std::max(b[s - 1], v);
  }
  struct Ext {
    int64_t begin, end, start, seq;
  };
  std::vector<Ext> ext;
  ext.push_back({0, b[0], 0, -1});
  for (int64_t s = 0; s < ns; ++s)
    ext.push_back({b[s], b[s + 1], b[s] / tpt + s + 1, s});
  ext.push_back({b[ns], numTokens, b[ns] / tpt + ns + 1, -1});
  const int64_t capacity =
      su.paging.numBlocks <= 0
          ? 0
          : std::max<int64_t>(su.paging.maxBlocks, 0) * cfg.blockSize;
  std::vector<int64_t> keys(tiles * parts, 0);
  if (ranges)
    ranges->assign(tiles * parts, PrefillRange());
  for (uint64_t x = 0; x < tiles; ++x) {
    const Ext *e = &ext.front();
    for (const Ext &c : ext)
      if (c.start <= int64_t(x))
        e = &c;
    int64_t tok0 = e->begin + (int64_t(x) - e->start) * tpt;
    int64_t tokEnd = std::min(e->end, tok0 + tpt);
    if (tok0 >= tokEnd)
      continue;
    if (ranges)
      for (uint64_t z = 0; z < parts; ++z)
        (*ranges)[x + tiles * z].tokens = tokEnd - tok0;
    if (e->seq < 0) {
      for (uint64_t z = 0; z < parts; ++z)
        keys[x + tiles * z] = -1;
      continue;
    }
    int64_t len =
        std::min<int64_t>(std::max<int64_t>(pp.seqLens[e->seq], 0), capacity);
    int64_t qLen = e->end - e->begin;
    int64_t posFirst = len + (tok0 - e->begin) - qLen;
    int64_t posLast = len + (tokEnd - 1 - e->begin) - qLen;
    int64_t lo =
        pp.window > 0 ? std::max<int64_t>(0, posFirst - pp.window + 1) : 0;
    int64_t hi = std::max<int64_t>(posLast + 1, 0);
    for (uint64_t z = 0; z < parts; ++z) {
      int64_t pStart = int64_t(z) * cfg.partitionSize;
      int64_t pEnd =
          z + 1 == parts ? hi : std::min(hi, pStart + cfg.partitionSize);
      int64_t start = std::max(lo, pStart);
      keys[x + tiles * z] = pEnd > start ? pEnd - start : -1;
      if (ranges && pEnd > start) {
        PrefillRange &r = (*ranges)[x + tiles * z];
        r.seq = e->seq;
        r.start = start;
        r.end = pEnd;
      }
    }
  }
  return keys;
}

/// The prefill launch's HBM footprint under an L2 per XCD
/// (TimingParams::hbmFootprintBytes, as uq-kernel-report --calibrate
/// computes it for AITER's forward kernel): workgroup i (linear, x
/// fastest) runs on XCD i % numXcds; each XCD reads once the cache slots
/// (K and V of one KV head: \p slotBytes a token) of the union of the key
/// ranges its workgroups see per (sequence, KV head), with their
/// block-table entries, and every workgroup its own query rows
/// (\p queryRowBytes) and writes its partial rows (\p partialRowBytes).
double prefillFootprint(const std::vector<PrefillRange> &ranges,
                        std::array<uint32_t, 3> grid, int64_t groupHeads,
                        int64_t slotBytes, int64_t blockSize,
                        double queryRowBytes, double partialRowBytes,
                        unsigned numXcds) {
  const uint64_t gx = grid[0], gy = grid[1], gz = grid[2];
  // (XCD, sequence, KV head) -> key ranges.
  std::map<std::tuple<unsigned, int64_t, uint64_t>,
           std::vector<std::pair<int64_t, int64_t>>>
      seen;
  double rows = 0;
  for (uint64_t i = 0, n = gx * gy * gz; i < n; ++i) {
    uint64_t x = i % gx, y = (i / gx) % gy, z = i / (gx * gy);
    const PrefillRange &r = ranges[x + gx * z];
    rows += double(r.tokens) * double(groupHeads);
    if (r.seq >= 0 && r.end > r.start)
      seen[{unsigned(i % numXcds), r.seq, y}].push_back({r.start, r.end});
  }
  double keys = 0, blocks = 0;
  for (auto &[key, iv] : seen) {
    llvm::sort(iv);
    int64_t lo = iv[0].first, hi = iv[0].second;
    auto flush = [&] {
      keys += double(hi - lo);
      blocks += double((hi + blockSize - 1) / blockSize - lo / blockSize);
    };
    for (auto [a, b] : llvm::drop_begin(iv)) {
      if (a > hi) {
        flush();
        lo = a;
      }
      hi = std::max(hi, b);
    }
    flush();
  }
  return keys * double(slotBytes) + blocks * 4.0 +
         rows * (queryRowBytes + partialRowBytes);
}

/// The prefill launch's traced workgroups (linear index -> workgroups it
/// stands for): the midpoints of n equal strata of the (x, z) with keys in
/// order of their key count, the i-th at KV head (2i + 1) Hkv / 2n, each
/// standing for its stratum times Hkv; one (x, z) with tokens but no keys
/// stands for all of those, and one without tokens for those.
std::map<uint64_t, double> samplePrefill(const std::vector<int64_t> &keys,
                                         std::array<uint32_t, 3> grid,
                                         unsigned n) {
  const uint64_t gx = grid[0], gy = grid[1];
  std::vector<uint64_t> working, rowsOnly, idle;
  for (uint64_t i = 0; i < keys.size(); ++i)
    (keys[i] > 0 ? working : keys[i] < 0 ? rowsOnly : idle).push_back(i);
  llvm::stable_sort(working,
                    [&](uint64_t a, uint64_t b) { return keys[a] < keys[b]; });
  std::map<uint64_t, double> w;
  auto linear = [&](uint64_t xz, uint64_t y) {
    uint64_t x = xz % gx, z = xz / gx;
    return x + gx * (y + gy * z);
  };
  uint64_t m = std::min<uint64_t>(n, working.size());
  for (uint64_t i = 0; i < m; ++i) {
    uint64_t lo = i * working.size() / m, hi = (i + 1) * working.size() / m;
    uint64_t y = (2 * i + 1) * gy / (2 * m);
    w[linear(working[(lo + hi) / 2], y)] += double(hi - lo) * gy;
  }
  for (const std::vector<uint64_t> *c : {&rowsOnly, &idle})
    if (!c->empty())
      w[linear((*c)[c->size() / 2], gy / 2)] += double(c->size()) * gy;
  return w;
}

/// A row launch's traced workgroups: the midpoints of n equal strata of the
/// rows (grid dimension rowDim), the i-th at head (2i + 1) H / 2n of the
/// other dimension, each standing for total / n.
std::map<uint64_t, double> sampleRows(std::array<uint32_t, 3> grid,
                                      unsigned rowDim, unsigned n) {
  const uint64_t rows = grid[rowDim], heads = grid[1 - rowDim];
  const uint64_t total = uint64_t(grid[0]) * grid[1] * grid[2];
  uint64_t m = std::min<uint64_t>(n, rows * heads);
  std::map<uint64_t, double> w;
  for (uint64_t i = 0; i < m; ++i) {
    uint64_t r = std::min(rows - 1, (2 * i + 1) * rows / (2 * m));
    uint64_t h = std::min(heads - 1, (2 * i + 1) * heads / (2 * m));
    uint64_t idx = rowDim == 0 ? r + grid[0] * h : h + grid[0] * r;
    w[idx] += double(total) / double(m);
  }
  return w;
}

/// The workgroups of one launch that PagedPredictOptions chooses (linear
/// index -> workgroups it stands for); empty with options.whole (every
/// workgroup, weight 1).
llvm::Expected<std::map<uint64_t, double>>
chooseWorkgroups(llvm::StringRef name, const std::vector<int64_t> &keys,
                 std::array<uint32_t, 3> grid, uint64_t total,
                 const PagedPredictOptions &options) {
  const bool isPrefill = name.ends_with("_prefill");
  std::map<uint64_t, double> chosen;
  if (options.whole)
    return chosen;
  if (isPrefill && !options.prefillWorkgroups.empty()) {
    for (uint64_t i : options.prefillWorkgroups) {
      if (i >= total)
        return makeError(llvm::formatv("prefill workgroup {0} outside the "
                                       "grid of {1}",
                                       i, total));
      chosen[i] += double(total) / options.prefillWorkgroups.size();
    }
    return chosen;
  }
  if (isPrefill)
    return samplePrefill(keys, grid, options.samples);
  return sampleRows(grid, name.ends_with("_query") ? 0 : 1, options.samples);
}

/// The prefill launch's traced workgroups into \p timing (ids, weights,
/// instructions, MFMA kinds), checking that they did matrix work where the
/// grid rule gives them keys and that the sampling did not miss the work.
llvm::Error recordPrefill(llvm::StringRef name,
                          const std::vector<emu::WorkgroupProfile> &profiles,
                          const std::vector<double> &weights,
                          const std::vector<int64_t> &keys,
                          std::array<uint32_t, 3> grid, uint64_t total,
                          const emu::Stats &stats,
                          PagedAttentionTiming &timing) {
  double mfmaTraced = 0, mfmaWeighted = 0;
  for (auto [p, w] : llvm::zip(profiles, weights)) {
    int64_t k = keys[p.id[0] + uint64_t(grid[0]) * p.id[2]];
    if (k > 0 && p.mfmaCycles == 0)
      return makeError(llvm::formatv(
          "{0}: traced workgroup ({1}, {2}, {3}) has {4} keys by the "
          "grid rule but did no matrix work",
          name, p.id[0], p.id[1], p.id[2], k));
    mfmaTraced += double(p.mfmaCycles);
    mfmaWeighted += w * double(p.mfmaCycles);
    timing.prefillTraced.push_back(p.id);
    timing.prefillWeights.push_back(w);
    timing.prefillWaveTiles += double(p.waves) * double((k + 31) / 32);
  }
  if (mfmaTraced == 0 && timing.prefillWorking > 0)
    return makeError(llvm::formatv(
        "{0}: the {1} traced workgroups did no work while {2} of the "
        "grid's {3} workgroups have keys (the sampling missed the work)",
        name, profiles.size(), timing.prefillWorking, total));
  timing.prefillStats = stats;
  // Per kind, scaled as the MFMA cycles (every workgroup issues the
  // kinds in the same proportion).
  for (auto &[kind, cnt] : stats.mfmaByKind)
    timing.mfmaByKind.push_back(
        {kind, mfmaTraced > 0 ? double(cnt) * mfmaWeighted / mfmaTraced : 0.0});
  return llvm::Error::success();
}

/// A launch's estimate into \p timing's per-launch figures.
void recordEstimate(llvm::StringRef name, const emu::LaunchEstimate &est,
                    PagedAttentionTiming &timing) {
  timing.launchText.push_back(est.str());
  if (name.ends_with("_prefill")) {
    timing.prefill = est;
    timing.prefillUs = est.estimateMicroseconds();
    timing.prefillBoundUs = est.boundMicroseconds();
    timing.prefillBoundResource = est.boundResource;
    timing.prefillMfmaUs = est.mfmaCycles / (est.clockGHz * 1e3);
  } else if (name.ends_with("_query")) {
    timing.queryUs = est.estimateMicroseconds();
  } else {
    timing.mergeUs = est.estimateMicroseconds();
  }
}

} // namespace

llvm::Expected<PagedAttentionTiming>
CompiledPagedAttention::predict(const PagedAttentionProblem &pp,
                                const PagedPredictOptions &options) const {
  if (llvm::Error err = impl->checkShape(pp))
    return std::move(err);
  if (options.samples == 0 && !options.whole)
    return makeError("at least one sampled workgroup per launch is needed");
  auto suOr = setUpPaged(pp, impl->tokensPerTile);
  if (!suOr)
    return suOr.takeError();
  const PagedSetup &su = *suOr;
  std::map<std::string, std::vector<uint8_t>> buffers;
  std::map<std::string, int64_t> scalars;
  pagedBuffers(pp, su, buffers, scalars);
  // Arguments by name, as Launcher does; the grid from the JSON.
  emu::Emulator em(*impl->codeObject);
  PagedAttentionTiming timing;
  std::vector<emu::LaunchEstimate> launches;
  // The prepared query's bytes per row of D (FP8 or bf16), for the prefill
  // launch's HBM footprint (read before the launches take the buffers).
  const int64_t rowsAll = su.numTokens * pp.config.numQHeads;
  const double queryRowBytes =
      rowsAll ? double(buffers["query_prepared"].size()) / double(rowsAll)
              : 0.0;
  for (llvm::StringRef name :
       {"paged_0_query", "paged_0_prefill", "paged_0_merge"}) {
    auto it = llvm::find_if(impl->kernels,
                            [&](const auto &k) { return k.name == name; });
    if (it == impl->kernels.end())
      return makeError("the kernel JSON has no kernel " + name);
    std::vector<emu::KernelArg> args;
    // Buffers are moved in and back after the launch (the query and
    // workspaces of a long chunk are hundreds of MB; a copy each way
    // dominated); a name a kernel lists twice is copied the second time.
    std::map<std::string, size_t> first;
    for (const emu::ArgSpec &a : it->args) {
      if (a.isBuffer) {
        auto [at, isNew] = first.emplace(a.name, args.size());
        args.push_back(emu::KernelArg::buffer(isNew ? std::move(buffers[a.name])
                                                    : args[at->second].bytes,
                                              a.name));
      } else
        args.push_back(
            emu::KernelArg::value<int32_t>(int32_t(scalars[a.name])));
    }
    auto grid = emu::resolveGrid(*it, args);
    if (!grid)
      return grid.takeError();
    uint64_t total = uint64_t((*grid)[0]) * (*grid)[1] * (*grid)[2];
    if (total == 0)
      return makeError("the launch of " + name + " has no workgroups");
    const bool isPrefill = name.ends_with("_prefill");
    std::vector<int64_t> keys;
    emu::TimingParams tp = emu::TimingParams::gfx950();
    if (isPrefill) {
      std::vector<PrefillRange> ranges;
      keys = prefillKeys(pp, su, (*grid)[0], (*grid)[2], &ranges);
      // Rows of D: the prepared query's bytes and the partial's f32 row
      // with its maximum and sum.
      const AttentionProblem &c = pp.config;
      tp.hbmFootprintBytes = prefillFootprint(
          ranges, *grid, c.numQHeads / std::max<int64_t>(1, c.numKVHeads),
          su.geom.slotBytes, c.blockSize, queryRowBytes,
          double(c.headDim) * 4 + 8, tp.numXcds);
      timing.prefillWorkgroups = total;
      for (int64_t k : keys)
        timing.prefillWorking += k > 0 ? (*grid)[1] : 0;
    }
    // The traced workgroups and the workgroups each stands for.
    auto chosen = chooseWorkgroups(name, keys, *grid, total, options);
    if (!chosen)
      return chosen.takeError();
    emu::TimingRecorder rec;
    emu::LaunchConfig lc;
    lc.grid = *grid;
    lc.block = it->block.value_or(std::array<uint32_t, 3>{64, 1, 1});
    lc.argSpecs = it->args;
    lc.trace = &rec;
    if (!options.whole) {
      std::vector<uint64_t> idx;
      for (auto &[i, w] : *chosen)
        idx.push_back(i);
      lc.workgroupIndices = idx;
    }
    if (llvm::Error err = em.launch(name, lc, args))
      return makeError("emulating " + name + ": " +
                       llvm::toString(std::move(err)));
    timing.emulatedSeconds += em.stats().seconds;
    auto info = impl->codeObject->findKernel(name);
    if (!info)
      return info.takeError();
    // Weights in the recorder's order.
    std::vector<double> weights;
    for (const emu::WorkgroupProfile &p : rec.profiles())
      weights.push_back(options.whole ? 1.0 : (*chosen)[p.index]);
    if (isPrefill)
      if (llvm::Error err = recordPrefill(name, rec.profiles(), weights, keys,
                                          *grid, total, em.stats(), timing))
        return std::move(err);
    auto est =
        emu::predictLaunch(**info, rec.profiles(), total, weights, 0, tp);
    if (!est)
      return est.takeError();
    recordEstimate(name, *est, timing);
    // Buffers the next launch reads (only the traced workgroups wrote).
    for (auto [i, spec] : llvm::enumerate(it->args))
      if (spec.isBuffer && first[spec.name] == i)
        buffers[spec.name] = std::move(args[i].bytes);
    launches.push_back(std::move(*est));
  }
  timing.totalUs = emu::predictStep(std::move(launches)).estimateMicroseconds;
  if (options.whole) {
    PagedAttentionReport r;
    if (llvm::Error err = compareWithReference(pp, su, buffers, r))
      return std::move(err);
    timing.checked = true;
    timing.relL2 = r.relL2;
    timing.maxAbsError = r.maxAbsError;
    timing.outsideBound = r.outsideBound;
    timing.numOutputs = r.numOutputs;
  }
  return timing;
}

llvm::Expected<PagedAttentionReport>
uq::runEmulatedPagedAttention(const PagedAttentionProblem &problem) {
  auto compiled = CompiledPagedAttention::compile(problem);
  if (!compiled)
    return compiled.takeError();
  return (*compiled)->run(problem);
}
