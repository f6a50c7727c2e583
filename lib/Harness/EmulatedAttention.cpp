//===- EmulatedAttention.cpp - Compile, emulate, compare ------------------===//
//
// The decode problem: a uq.cache_write and a uq.decode_attention compiled
// for gfx950, run in the emulator from the kernel JSON, compared with the
// reference library and, on request, with the CPU paths.
//
//===----------------------------------------------------------------------===//

#include "Program.h"

#include "uq/Conversion/DecodePartitions.h"
#include "uq/Reference/Reference.h"
#include "uq/Runtime/CPURunner.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>

using namespace uq;
using namespace uq::harness;

namespace {

/// The uq program of a problem: a cache write and a decode attention.
std::string programIR(const AttentionProblem &pb, const Paging &p) {
  auto sz = [&](int64_t v) {
    return pb.dynamicShapes ? std::string("?") : std::to_string(v);
  };
  const int64_t hq = pb.numQHeads, hkv = pb.numKVHeads, d = pb.headDim,
                bs = pb.blockSize;
  std::string dt = pb.dtype;
  std::string cacheT =
      pb.headMajor ? llvm::formatv("tensor<{0}x{1}x{2}x{3}xi8>",
                                   sz(p.numBlocks), hkv, bs, p.slotBytes)
                         .str()
                   : llvm::formatv("tensor<{0}x{1}x{2}x{3}xi8>",
                                   sz(p.numBlocks), bs, hkv, p.slotBytes)
                         .str();
  std::string kvT =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}>", sz(p.tokens()), hkv, d, dt);
  std::string slotT = llvm::formatv("tensor<{0}xi64>", sz(p.tokens()));
  std::string qT =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}>", sz(p.seqs), hq, d, dt);
  std::string btT =
      llvm::formatv("tensor<{0}x{1}xi32>", sz(p.seqs), sz(p.maxBlocks));
  std::string lensT = llvm::formatv("tensor<{0}xi32>", sz(p.seqs));
  std::string outT =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}>", sz(p.seqs), hq, d, pb.outType);
  std::string sinkT = llvm::formatv("tensor<{0}xf32>", hq);
  std::string attrs = formatAttrs(pb);
  const float softmaxScale = pb.softmaxScale > 0
                                 ? pb.softmaxScale
                                 : 1.0f / std::sqrt(static_cast<float>(d));
  // The f32 bit pattern: the exact scale, whatever its decimal digits.
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &softmaxScale, 4);
  std::string scaleLiteral = llvm::formatv("{0:x8}", scaleBits).str();
  std::string ir;
  ir += llvm::formatv("func.func @write(%k: {0}, %v: {0}, %s: {1}, %c: {2}{3}) "
                      "-> {2} {{\n",
                      kvT, slotT, cacheT, meanArgs(pb, true));
  ir += llvm::formatv("  %r = uq.cache_write %k, %v, %s into %c{4} {0} : {1}, "
                      "{1}, {2} into {3}\n",
                      attrs, kvT, slotT, cacheT, meanOperands(pb, true));
  ir += llvm::formatv("  return %r : {0}\n}\n", cacheT);
  std::string decodeAttrs = attrs;
  if (pb.scaledQuery)
    decodeAttrs.insert(decodeAttrs.size() - 1,
                       ", query_precision = #uq<query_precision "
                       "fp8_e4m3_scaled>");
  ir += llvm::formatv("func.func @decode(%q: {0}, %c: {1}, %bt: {2}, "
                      "%lens: {3}{4}{6}) -> {5} {{\n",
                      qT, cacheT, btT, lensT,
                      pb.sinks ? ", %sinks: " + sinkT : "", outT,
                      meanArgs(pb, true));
  ir +=
      llvm::formatv("  %o = uq.decode_attention %q, %c, %bt, %lens{0}{9} "
                    "scale {1} {2} : ({3}, {4}, {5}, {6}{7}{10}) -> {8}\n",
                    pb.sinks ? " sinks %sinks" : "", scaleLiteral, decodeAttrs,
                    qT, cacheT, btT, lensT, pb.sinks ? ", " + sinkT : "", outT,
                    meanOperands(pb, false), meanArgs(pb, false));
  ir += llvm::formatv("  return %o : {0}\n}\n", outT);
  return ir;
}

} // namespace

//===----------------------------------------------------------------------===//
// CompiledAttention
//===----------------------------------------------------------------------===//

struct CompiledAttention::Impl : EmulatedProgram {
  AttentionProblem shape;
  std::string ir;
  /// The program's @write and @decode compiled for the CPU paths, on first
  /// use: linalg and wave-level kernels.
  using CPUPair = std::pair<std::unique_ptr<runtime::CPUProgram>,
                            std::unique_ptr<runtime::CPUProgram>>;
  CPUPair linalgCPU, waveCPU;
  llvm::Expected<std::pair<runtime::CPUProgram *, runtime::CPUProgram *>>
  cpuPrograms(bool wave);
};

CompiledAttention::CompiledAttention() : impl(std::make_unique<Impl>()) {}
CompiledAttention::~CompiledAttention() = default;
const std::string &CompiledAttention::ir() const { return impl->ir; }
const std::string &CompiledAttention::kernelsJson() const { return impl->json; }
const std::string &CompiledAttention::codeObject() const { return impl->hsaco; }

llvm::Expected<std::unique_ptr<CompiledAttention>>
CompiledAttention::compile(const AttentionProblem &pb) {
  if (std::string why = configError(pb); !why.empty())
    return makeError(why);
  std::mt19937_64 rng(pb.seed);
  auto paging = makePaging(pb, rng);
  if (!paging)
    return paging.takeError();
  std::unique_ptr<CompiledAttention> c(new CompiledAttention());
  c->impl->shape = pb;
  c->impl->ir = programIR(pb, *paging);
  CompileOptions options;
  options.partitionSize = pb.partitionSize;
  options.maxPartitionTokens = pb.maxPartitionTokens;
  options.minPartitionTokens = pb.minPartitionTokens;
  options.decodeWorkgroups = pb.decodeWorkgroups;
  auto loaded = compileAndLoad(c->impl->ir, "emulated-attention", options);
  if (!loaded)
    return loaded.takeError();
  static_cast<EmulatedProgram &>(*c->impl) = std::move(*loaded);
  return c;
}

namespace {

using Buffers = std::map<std::string, std::vector<uint8_t>>;

/// Whether \p a and \p b have the same configuration (everything a code
/// object is compiled for but the sizes).
bool sameConfiguration(const AttentionProblem &a, const AttentionProblem &b) {
  return a.numQHeads == b.numQHeads && a.numKVHeads == b.numKVHeads &&
         a.headDim == b.headDim && a.blockSize == b.blockSize &&
         a.sinks == b.sinks && a.format == b.format && a.dtype == b.dtype &&
         a.outType == b.outType && a.c == b.c && a.mseSearch == b.mseSearch &&
         a.vRotated == b.vRotated && a.softmaxScale == b.softmaxScale &&
         a.kMean == b.kMean && a.vMean == b.vMean &&
         a.scaledQuery == b.scaledQuery && a.vScaleE4M3 == b.vScaleE4M3 &&
         a.partitionSize == b.partitionSize && a.headMajor == b.headMajor &&
         a.maxPartitionTokens == b.maxPartitionTokens &&
         a.minPartitionTokens == b.minPartitionTokens &&
         a.decodeWorkgroups == b.decodeWorkgroups;
}

/// A decode run's data: the paging, the inputs (random, or the problem's
/// given values), the formats, the cache the reference wrote, and what the
/// decode reads.
struct DecodeRun {
  const AttentionProblem &pb;
  Paging p;
  /// Keys and values of every slot of the paging ([tokens, Hkv, D]), the
  /// query ([seqs, Hq, D]), sinks and channel means (empty when off).
  Tensor k, v, q;
  std::vector<float> sinks, kMean, vMean;
  ref::Format kf, vf;
  ref::CacheGeometry geom;
  std::vector<uint8_t> refCache;
  /// The cache the decode reads (the written one, cut or extended to
  /// decodeNumBlocks blocks, with the problem's byte overrides), its
  /// geometry and the sequence lengths the decode is given.
  std::vector<uint8_t> decodeCache;
  int64_t decodeBlocks = 0;
  ref::CacheGeometry decodeGeom;
  std::vector<int32_t> lens;

  int64_t seqs() const { return static_cast<int64_t>(pb.seqLens.size()); }
  int64_t outputs() const { return seqs() * pb.numQHeads * pb.headDim; }
};

/// Draws the inputs from \p rng in a fixed order (keys, values, query,
/// sinks, then the channel means) and puts the problem's given values over
/// them.
llvm::Error drawInputs(DecodeRun &r, std::mt19937_64 &rng) {
  const AttentionProblem &pb = r.pb;
  const int64_t s = r.seqs(), hq = pb.numQHeads, hkv = pb.numKVHeads,
                d = pb.headDim;
  const int64_t numTokens = r.p.tokens();
  r.k = makeTensor(rng, numTokens * hkv * d, pb.scale, pb.dtype);
  r.v = makeTensor(rng, numTokens * hkv * d, pb.scale, pb.dtype);
  r.q = makeTensor(rng, s * hq * d, pb.scale, pb.dtype);
  r.sinks.resize(hq);
  std::normal_distribution<float> sinkDist(1.0f, 1.0f);
  for (float &x : r.sinks)
    x = sinkDist(rng);
  if (llvm::Error err = overwrite(r.q, pb.query, 0, pb.dtype, "query"))
    return err;
  if (llvm::Error err = overwrite(r.k, pb.key, 0, pb.dtype, "key"))
    return err;
  if (llvm::Error err = overwrite(r.v, pb.value, 0, pb.dtype, "value"))
    return err;
  if (!pb.sinkValues.empty()) {
    if (pb.sinkValues.size() != r.sinks.size())
      return makeError("sinkValues must have one value per query head");
    r.sinks = pb.sinkValues;
  }
  drawMeans(pb, rng, r.k, r.v, r.kMean, r.vMean);
  return llvm::Error::success();
}

/// The reference's cacheWrite into bytes 0x5A (a recognisable pattern:
/// bytes nobody writes must survive) of the tokens whose slot is inside
/// the cache (the kernels skip the others; the reference rejects a slot
/// past the cache).
llvm::Error writeReferenceCache(DecodeRun &r) {
  const AttentionProblem &pb = r.pb;
  const Paging &p = r.p;
  const int64_t hkv = pb.numKVHeads, d = pb.headDim, bs = pb.blockSize;
  std::tie(r.kf, r.vf) = referenceFormats(pb);
  r.geom =
      ref::CacheGeometry{p.numBlocks, bs, hkv, d, p.slotBytes, pb.headMajor};
  const int64_t capacitySlots = p.numBlocks * bs;
  std::vector<float> refK, refV;
  std::vector<int64_t> refSlots;
  for (int64_t t = 0; t < p.tokens(); ++t) {
    if (p.slots[t] < 0 || p.slots[t] >= capacitySlots)
      continue;
    refSlots.push_back(p.slots[t]);
    refK.insert(refK.end(), r.k.values.begin() + t * hkv * d,
                r.k.values.begin() + (t + 1) * hkv * d);
    refV.insert(refV.end(), r.v.values.begin() + t * hkv * d,
                r.v.values.begin() + (t + 1) * hkv * d);
  }
  r.refCache.assign(ref::cacheBytes(r.geom), 0x5A);
  if (ref::Status st =
          ref::cacheWrite(r.kf, r.vf, r.geom, refK.data(), refV.data(),
                          refSlots.data(), refSlots.size(), r.refCache.data(),
                          pb.kMean ? r.kMean.data() : nullptr,
                          pb.vMean ? r.vMean.data() : nullptr);
      !st.ok())
    return makeError("reference cacheWrite: " + st.message());
  return llvm::Error::success();
}

/// Step 1: the cache write on the GPU, its bytes counted against the
/// reference's (AttentionReport::cacheMismatches), or the reference's
/// bytes when the problem does not write the cache on the GPU.
llvm::Error writeCache(const DecodeRun &r, Launcher &launcher, Buffers &buffers,
                       AttentionReport &report) {
  const AttentionProblem &pb = r.pb;
  if (!pb.gpuCacheWrite) {
    buffers["cache"] = r.refCache;
    return llvm::Error::success();
  }
  const int64_t cacheBytes = r.refCache.size();
  buffers["key"] = r.k.bytes;
  buffers["value"] = r.v.bytes;
  buffers["slot_mapping"] = toBytes(r.p.slots);
  buffers["cache"] = std::vector<uint8_t>(cacheBytes, 0x5A);
  if (pb.kMean)
    buffers["k_mean"] = toBytes(r.kMean);
  if (pb.vMean)
    buffers["v_mean"] = toBytes(r.vMean);
  if (llvm::Error err = launcher.launch(
          "write_0_cache_write", buffers,
          {{"num_tokens", r.p.tokens()}, {"num_blocks", r.p.numBlocks}},
          report.writeStats))
    return err;
  report.cacheBytes = cacheBytes;
  for (int64_t i = 0; i < cacheBytes; ++i)
    report.cacheMismatches += buffers["cache"][i] != r.refCache[i];
  return llvm::Error::success();
}

/// What the decode reads (DecodeRun::decodeCache and what follows it) from
/// the cache \p written.
llvm::Error prepareDecode(DecodeRun &r, const std::vector<uint8_t> &written,
                          bool dynamicShapes) {
  const AttentionProblem &pb = r.pb;
  r.decodeCache = written;
  r.decodeBlocks = pb.decodeNumBlocks >= 0 ? pb.decodeNumBlocks : r.p.numBlocks;
  r.decodeGeom = r.geom;
  r.decodeGeom.numBlocks = r.decodeBlocks;
  r.decodeCache.resize(
      r.decodeBlocks * pb.blockSize * pb.numKVHeads * r.p.slotBytes, 0x5A);
  for (auto [at, byte] : pb.cacheOverrides) {
    if (at < 0 || at >= int64_t(r.decodeCache.size()))
      return makeError("cache override at byte " + llvm::Twine(at) +
                       " outside the cache of " +
                       llvm::Twine(r.decodeCache.size()) + " bytes");
    r.decodeCache[at] = byte;
  }
  r.lens = pb.seqLens;
  if (!pb.decodeSeqLens.empty()) {
    if (pb.decodeSeqLens.size() != r.lens.size())
      return makeError("decodeSeqLens must have one length per sequence");
    r.lens = pb.decodeSeqLens;
  }
  if (!dynamicShapes && r.decodeBlocks != r.p.numBlocks)
    return makeError("decodeNumBlocks needs dynamicShapes");
  return llvm::Error::success();
}

/// Step 2: the query preparation, then the single-pass kernel (one
/// partition: the compiled host code's choice, no merge) or the partitions
/// and their merge, in \p parts partitions.
llvm::Error launchDecode(const DecodeRun &r, int64_t parts, Launcher &launcher,
                         Buffers &buffers, AttentionReport &report) {
  const AttentionProblem &pb = r.pb;
  const int64_t s = r.seqs(), hq = pb.numQHeads, d = pb.headDim;
  unsigned wsBytes = pb.format == KVCacheKind::BF16 ? 2 : 1;
  unsigned outBytes = pb.outType == "f32" ? 4 : 2;
  buffers["cache"] = r.decodeCache;
  buffers["query"] = r.q.bytes;
  buffers["query_prepared"] = std::vector<uint8_t>(s * hq * d * wsBytes);
  buffers["block_tables"] = toBytes(r.p.tables);
  buffers["seq_lens"] = toBytes(r.lens);
  buffers["partial_out"] = std::vector<uint8_t>(s * hq * parts * d * 4);
  buffers["partial_max"] = std::vector<uint8_t>(s * hq * parts * 4);
  buffers["partial_sum"] = std::vector<uint8_t>(s * hq * parts * 4);
  buffers["sinks"] = toBytes(r.sinks);
  buffers["out"] = std::vector<uint8_t>(s * hq * d * outBytes);
  if (pb.kMean)
    buffers["k_mean"] = toBytes(r.kMean);
  if (pb.vMean)
    buffers["v_mean"] = toBytes(r.vMean);
  buffers["query_scales"] = std::vector<uint8_t>(s * hq * (d / 32), 0xFF);
  buffers["query_bias"] = std::vector<uint8_t>(s * hq * 4, 0xFF);
  std::map<std::string, int64_t> scalars = {{"num_seqs", s},
                                            {"num_blocks", r.decodeBlocks},
                                            {"max_blocks", r.p.maxBlocks},
                                            {"num_partitions", parts}};
  if (llvm::Error err = launcher.launch("decode_0_query", buffers, scalars,
                                        report.queryStats))
    return err;
  if (parts == 1 && pb.singlePass) {
    if (llvm::Error err = launcher.launch("decode_0_single", buffers, scalars,
                                          report.partialStats))
      return err;
    report.mergeStats = emu::Stats();
    return llvm::Error::success();
  }
  if (llvm::Error err = launcher.launch("decode_0_partial", buffers, scalars,
                                        report.partialStats))
    return err;
  return launcher.launch("decode_0_merge", buffers, scalars, report.mergeStats);
}

/// The decode's reference output (ref::pagedAttention: decode with the
/// kernels' index policy) and the per-element bound of the kernels'
/// rounding of P (ref::attentionErrorBounds); compares an output with them.
class ReferenceOutput {
public:
  /// Relative L2 error, largest absolute error and the elements outside
  /// the bound of one output.
  struct Comparison {
    int64_t outside = 0;
    double relL2 = 0, maxAbs = 0;
  };

  static llvm::Expected<ReferenceOutput> compute(const DecodeRun &r) {
    const AttentionProblem &pb = r.pb;
    const int64_t s = r.seqs(), hq = pb.numQHeads, d = pb.headDim;
    ReferenceOutput ro(pb.outType);
    const float softmaxScale = pb.softmaxScale > 0
                                   ? pb.softmaxScale
                                   : 1.0f / std::sqrt(static_cast<float>(d));
    ref::AttentionParams params;
    params.softmaxScale = softmaxScale;
    if (pb.scaledQuery)
      params.queryPrecision = ref::QueryPrecision::FP8_E4M3_Scaled;
    params.kMean = pb.kMean ? r.kMean.data() : nullptr;
    params.vMean = pb.vMean ? r.vMean.data() : nullptr;
    std::vector<int32_t> qsl(s + 1);
    std::iota(qsl.begin(), qsl.end(), 0);
    ro.expected.resize(s * hq * d);
    if (ref::Status st = ref::pagedAttention(
            r.kf, r.vf, r.decodeGeom, r.decodeCache.data(), params, 0,
            r.q.values.data(), s, hq, qsl.data(), s, r.p.tables.data(),
            r.p.maxBlocks, r.lens.data(), pb.sinks ? r.sinks.data() : nullptr,
            ro.expected.data());
        !st.ok())
      return makeError("reference attention: " + st.message());
    // P is rounded to bf16 (8 significant bits: 2^-9, plus v_exp_f32's ulp
    // and the f32 rescaling: 2^-8), to FP8 E4M3 for FP8 values (2^-4 +
    // 2^-8).
    double pError = pb.format == KVCacheKind::FP8
                        ? std::ldexp(1.0, -4) + std::ldexp(1.0, -8)
                        : std::ldexp(1.0, -8);
    ro.bounds.resize(s * hq * d);
    if (ref::Status st = ref::attentionErrorBounds(
            r.kf, r.vf, r.decodeGeom, r.decodeCache.data(), params, 0,
            r.q.values.data(), s, hq, qsl.data(), s, r.p.tables.data(),
            r.p.maxBlocks, r.lens.data(), pb.sinks ? r.sinks.data() : nullptr,
            pError, ro.bounds.data());
        !st.ok())
      return makeError("reference bounds: " + st.message());
    // Results rounded to bf16/f16 add half an ulp of the result.
    ro.outRound = pb.outType == "bf16"  ? std::ldexp(1.0, -9)
                  : pb.outType == "f16" ? std::ldexp(1.0, -12)
                                        : 0.0;
    return ro;
  }

  /// The result bytes ([seqs, Hq, D] of the output type) as floats.
  std::vector<float> resultFloats(const std::vector<uint8_t> &bytes) const {
    std::vector<float> o(expected.size());
    if (outType == "f32") {
      o = fromBytes<float>(bytes);
    } else {
      std::vector<uint16_t> half = fromBytes<uint16_t>(bytes);
      for (size_t i = 0; i < half.size(); ++i)
        o[i] = outType == "bf16" ? ref::bf16ToFloat(half[i])
                                 : halfToFloat(half[i]);
    }
    return o;
  }

  double boundAt(size_t i) const {
    return bounds[i] + outRound * std::fabs(double(expected[i]));
  }

  /// Non-finite values must agree exactly (NaN with NaN, Inf with the same
  /// Inf); finite ones within the bound.
  static bool agree(double a, double b, double bound) {
    if (std::isnan(a) || std::isnan(b))
      return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b))
      return a == b;
    return std::fabs(a - b) <= bound;
  }

  Comparison compare(const std::vector<float> &got) const {
    Comparison c;
    double errSq = 0, refSq = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      double want = expected[i], g = got[i];
      if (std::isinf(inResultType(expected[i])))
        want = inResultType(expected[i]);
      if (!agree(g, want, boundAt(i)))
        ++c.outside;
      if (!std::isfinite(want) || !std::isfinite(g))
        continue;
      double diff = std::fabs(g - want);
      c.maxAbs = std::max(c.maxAbs, diff);
      errSq += diff * diff;
      refSq += want * want;
    }
    c.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
    return c;
  }

private:
  explicit ReferenceOutput(std::string outType) : outType(std::move(outType)) {}

  /// The reference's value as the result type holds it where that is not
  /// finite: a result above the largest bf16/f16 is +-Inf in that type (the
  /// kernels' and the CPU path's correctly rounded result).
  double inResultType(float x) const {
    if (outType == "f16")
      return double(float(static_cast<_Float16>(x)));
    if (outType == "bf16")
      return std::isinf(ref::bf16ToFloat(ref::floatToBf16(x)))
                 ? double(ref::bf16ToFloat(ref::floatToBf16(x)))
                 : double(x);
    return x;
  }

  std::string outType;
  std::vector<float> expected;
  std::vector<double> bounds;
  double outRound = 0;
};

/// Step 3: one CPU path (\p wave: the wave-level kernels, else linalg): the
/// same program's cache write (from the same inputs, compared with the
/// reference's bytes) and decode (of the same cache as the GPU's decode,
/// compared with the reference and with the GPU's output \p gpuOut).
llvm::Error
runCPUPath(const DecodeRun &r, bool wave, runtime::CPUProgram &writeProg,
           runtime::CPUProgram &decodeProg, const ReferenceOutput &check,
           const std::vector<float> &gpuOut, AttentionReport::CPURun &run) {
  const AttentionProblem &pb = r.pb;
  const Paging &p = r.p;
  const int64_t s = r.seqs(), hq = pb.numQHeads, hkv = pb.numKVHeads,
                d = pb.headDim, bs = pb.blockSize, numTokens = p.tokens();
  const int64_t cacheBytes = r.refCache.size();
  using runtime::DType;
  using runtime::HostTensor;
  auto tensor = [](DType t, std::vector<int64_t> shape,
                   std::vector<uint8_t> bytes) {
    HostTensor h;
    h.dtype = t;
    h.shape = std::move(shape);
    h.data = std::move(bytes);
    return h;
  };
  const DType inT = pb.dtype == "bf16" ? DType::BF16 : DType::F32;
  std::vector<HostTensor> writeArgs = {
      tensor(inT, {numTokens, hkv, d}, r.k.bytes),
      tensor(inT, {numTokens, hkv, d}, r.v.bytes),
      tensor(DType::I64, {numTokens}, toBytes(p.slots)),
      tensor(DType::I8,
             pb.headMajor
                 ? std::vector<int64_t>{p.numBlocks, hkv, bs, p.slotBytes}
                 : std::vector<int64_t>{p.numBlocks, bs, hkv, p.slotBytes},
             std::vector<uint8_t>(cacheBytes, 0x5A))};
  auto written = writeProg.run(writeArgs);
  if (!written)
    return makeError(
        llvm::Twine(wave ? "wave-level" : "linalg") +
        " CPU cache write: " + llvm::toString(written.takeError()));
  const std::vector<uint8_t> &cpuCache = (*written)[0].data;
  if (cpuCache.size() != r.refCache.size())
    return makeError("CPU cache write returned a cache of the wrong size");
  for (int64_t i = 0; i < cacheBytes; ++i)
    run.cacheMismatches += cpuCache[i] != r.refCache[i];
  const int64_t blocks = r.decodeBlocks;
  std::vector<HostTensor> decodeArgs = {
      tensor(inT, {s, hq, d}, r.q.bytes),
      tensor(DType::I8,
             pb.headMajor ? std::vector<int64_t>{blocks, hkv, bs, p.slotBytes}
                          : std::vector<int64_t>{blocks, bs, hkv, p.slotBytes},
             r.decodeCache),
      tensor(DType::I32, {s, p.maxBlocks}, toBytes(p.tables)),
      tensor(DType::I32, {s}, toBytes(r.lens))};
  if (pb.sinks)
    decodeArgs.push_back(tensor(DType::F32, {hq}, toBytes(r.sinks)));
  auto result = decodeProg.run(decodeArgs);
  if (!result)
    return makeError(llvm::Twine(wave ? "wave-level" : "linalg") +
                     " CPU decode: " + llvm::toString(result.takeError()));
  run.ran = true;
  run.output = check.resultFloats((*result)[0].data);
  ReferenceOutput::Comparison c = check.compare(run.output);
  run.outsideBound = c.outside;
  run.relL2 = c.relL2;
  for (size_t i = 0; i < gpuOut.size(); ++i)
    run.gpuMismatches +=
        !ReferenceOutput::agree(gpuOut[i], run.output[i], 2 * check.boundAt(i));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<AttentionReport>
CompiledAttention::run(const AttentionProblem &pb) const {
  const AttentionProblem &shape = impl->shape;
  if (!sameConfiguration(pb, shape))
    return makeError("the problem's configuration differs from the compiled "
                     "one");
  if (pb.seqLens.empty())
    return makeError("at least one sequence is needed");
  std::mt19937_64 rng(pb.seed);
  auto pagingOr = makePaging(pb, rng);
  if (!pagingOr)
    return pagingOr.takeError();
  DecodeRun r{pb, std::move(*pagingOr)};
  if (!shape.dynamicShapes && programIR(pb, r.p) != impl->ir)
    return makeError("the problem's sizes differ from the statically "
                     "compiled ones");
  if (llvm::Error err = drawInputs(r, rng))
    return std::move(err);
  if (llvm::Error err = writeReferenceCache(r))
    return std::move(err);

  AttentionReport report;
  report.ir = impl->ir;
  report.kernelsJson = impl->json;
  emu::Emulator em(*impl->codeObject);
  Launcher launcher{em, impl->kernels, pb.extraGrid};
  Buffers buffers;
  if (llvm::Error err = writeCache(r, launcher, buffers, report))
    return std::move(err);
  if (llvm::Error err = prepareDecode(r, buffers["cache"], shape.dynamicShapes))
    return std::move(err);
  const int64_t parts =
      pb.numPartitions > 0
          ? pb.numPartitions
          : decodePartitionCount({pb.maxPartitionTokens, pb.minPartitionTokens,
                                  pb.decodeWorkgroups},
                                 r.seqs(), pb.numKVHeads,
                                 r.p.maxBlocks * pb.blockSize);
  report.numPartitions = parts;
  if (llvm::Error err = launchDecode(r, parts, launcher, buffers, report))
    return std::move(err);

  auto check = ReferenceOutput::compute(r);
  if (!check)
    return check.takeError();
  std::vector<float> out = check->resultFloats(buffers["out"]);
  ReferenceOutput::Comparison gpu = check->compare(out);
  report.outsideBound = gpu.outside;
  report.maxAbsError = gpu.maxAbs;
  report.relL2 = gpu.relL2;
  report.numOutputs = r.outputs();
  for (float x : out) {
    report.nanOutputs += std::isnan(x);
    report.infOutputs += std::isinf(x);
  }
  for (bool wave : {false, true}) {
    if (!(wave ? pb.checkWaveCPU : pb.checkLinalgCPU))
      continue;
    auto cpuOr = impl->cpuPrograms(wave);
    if (!cpuOr)
      return cpuOr.takeError();
    auto [writeProg, decodeProg] = *cpuOr;
    if (llvm::Error err =
            runCPUPath(r, wave, *writeProg, *decodeProg, *check, out,
                       wave ? report.waveCPU : report.linalgCPU))
      return std::move(err);
  }
  report.output = std::move(out);
  return report;
}

llvm::Expected<std::pair<runtime::CPUProgram *, runtime::CPUProgram *>>
CompiledAttention::Impl::cpuPrograms(bool wave) {
  auto &progs = wave ? waveCPU : linalgCPU;
  if (!progs.first) {
    runtime::CPURunOptions options;
    options.waveKernels = wave;
    options.partitionSize = shape.partitionSize;
    for (bool write : {true, false}) {
      auto prog = runtime::CPUProgram::compile(ir, write ? "write" : "decode",
                                               options, "emulated-attention");
      if (!prog)
        return makeError(llvm::Twine("compiling the problem for the ") +
                         (wave ? "wave-level" : "linalg") +
                         " CPU path: " + llvm::toString(prog.takeError()));
      (write ? progs.first : progs.second) = std::move(*prog);
    }
  }
  return std::make_pair(progs.first.get(), progs.second.get());
}

llvm::Expected<AttentionReport>
uq::runEmulatedAttention(const AttentionProblem &problem) {
  auto compiled = CompiledAttention::compile(problem);
  if (!compiled)
    return compiled.takeError();
  return (*compiled)->run(problem);
}
