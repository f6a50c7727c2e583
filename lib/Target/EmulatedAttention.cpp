//===- EmulatedAttention.cpp - Compile, emulate, compare ------------------===//

#include "uq/Target/EmulatedAttention.h"

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/Emulator/KernelsJson.h"
#include "uq/Reference/Reference.h"
#include "uq/Target/Compiler.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>

using namespace uq;

const char *uq::kvCacheKindName(KVCacheKind k) {
  switch (k) {
  case KVCacheKind::UltraQuant:
    return "uq4";
  case KVCacheKind::FP8:
    return "fp8";
  case KVCacheKind::BF16:
    return "bf16";
  }
  return "?";
}

namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

template <typename T> std::vector<uint8_t> toBytes(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T> std::vector<T> fromBytes(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

/// An IEEE half (bits) as a float.
float halfToFloat(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  float v;
  if (exp == 0)
    v = std::ldexp(float(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(float(mant | 1024), exp - 25);
  return sign ? -v : v;
}

/// Random values as the kernels see them (rounded to the element type) and
/// as floats for the reference.
struct Tensor {
  std::vector<float> values;
  std::vector<uint8_t> bytes;
};

Tensor makeTensor(std::mt19937_64 &rng, size_t n, float scale,
                  llvm::StringRef dtype) {
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t;
  t.values.resize(n);
  if (dtype == "bf16") {
    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; ++i) {
      bits[i] = ref::floatToBf16(dist(rng));
      t.values[i] = ref::bf16ToFloat(bits[i]);
    }
    t.bytes = toBytes(bits);
  } else {
    for (size_t i = 0; i < n; ++i)
      t.values[i] = dist(rng);
    t.bytes = toBytes(t.values);
  }
  return t;
}

/// Replaces the first `given.size()` values of `t` (element type `dtype`).
llvm::Error overwrite(Tensor &t, const std::vector<float> &given, size_t offset,
                      llvm::StringRef dtype, llvm::StringRef what) {
  if (given.empty())
    return llvm::Error::success();
  if (offset + given.size() > t.values.size())
    return makeError("too many " + what +
                     " values: " + llvm::Twine(given.size()) + " for " +
                     llvm::Twine(t.values.size() - offset));
  for (size_t i = 0; i < given.size(); ++i) {
    float x = given[i];
    t.values[offset + i] = x;
    if (dtype == "bf16") {
      uint16_t bits = ref::floatToBf16(x);
      if (ref::bf16ToFloat(bits) != x && !std::isnan(x))
        return makeError(what + " value " + llvm::Twine(i) +
                         " is not bf16-representable");
      std::memcpy(&t.bytes[(offset + i) * 2], &bits, 2);
    } else {
      std::memcpy(&t.bytes[(offset + i) * 4], &x, 4);
    }
  }
  return llvm::Error::success();
}

/// The reference formats of a problem.
std::pair<ref::Format, ref::Format> formats(const AttentionProblem &pb) {
  ref::Format kf, vf;
  switch (pb.format) {
  case KVCacheKind::UltraQuant:
    kf = ref::keyFormat();
    vf = ref::valueFormat();
    kf.c = vf.c = pb.c;
    if (pb.mseSearch)
      kf.scaleRule = vf.scaleRule = ref::ScaleRule::MseSearch;
    vf.rotate = pb.vRotated;
    break;
  case KVCacheKind::FP8:
    kf.code = vf.code = ref::ElementCode::FP8_E4M3;
    break;
  case KVCacheKind::BF16:
    kf.code = vf.code = ref::ElementCode::BF16;
    break;
  }
  return {kf, vf};
}

/// The #uq.kv_format attributes of a problem.
std::string formatAttrs(const AttentionProblem &pb) {
  std::string k, v;
  switch (pb.format) {
  case KVCacheKind::UltraQuant: {
    // The dialect's spelling of c: parses back to the same double.
    std::string c =
        pb.c == 0.156 ? "" : ", c = " + KVFormatAttr::formatScaleConstant(pb.c);
    std::string rule = pb.mseSearch ? ", scale_rule = mse_search" : "";
    k = "#uq.kv_format<fp4_e2m1" + c + ", rotation = hadamard" + rule + ">";
    v = "#uq.kv_format<fp4_e2m1" + c +
        (pb.vRotated ? ", rotation = hadamard" : "") + rule + ">";
    break;
  }
  case KVCacheKind::FP8:
    k = v = "#uq.kv_format<fp8_e4m3>";
    break;
  case KVCacheKind::BF16:
    k = v = "#uq.kv_format<bf16>";
    break;
  }
  return "{k_format = " + k + ", v_format = " + v +
         ", layout = #uq.cache_layout<vllm_slot>}";
}

/// Paging of a problem: block tables over a shuffled pool, slots.
struct Paging {
  int64_t seqs = 0, maxBlocks = 1, numBlocks = 1, slotBytes = 0;
  std::vector<int32_t> tables;
  /// One slot per token (sequence-major), then one skipped (-1) and one past
  /// the cache (also skipped).
  std::vector<int64_t> slots;
  int64_t tokens() const { return static_cast<int64_t>(slots.size()); }
};

llvm::Expected<Paging> makePaging(const AttentionProblem &pb,
                                  std::mt19937_64 &rng) {
  Paging p;
  p.seqs = pb.seqLens.size();
  const int64_t bs = pb.blockSize;
  int64_t used = 0;
  p.maxBlocks = std::max<int64_t>(1, pb.spareColumns);
  for (int32_t len : pb.seqLens) {
    if (len < 0)
      return makeError("sequence lengths must be >= 0");
    int64_t nb = (len + bs - 1) / bs;
    p.maxBlocks = std::max(p.maxBlocks, nb + pb.spareColumns);
    used += nb;
  }
  p.numBlocks = used + std::max<int64_t>(pb.spareBlocks, 1);
  std::vector<int32_t> pool(p.numBlocks);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  // Unused table entries point at the spare block pool's first entry.
  p.tables.assign(p.seqs * p.maxBlocks, pool.back());
  size_t next = 0;
  for (int64_t s = 0; s < p.seqs; ++s) {
    int64_t nb = (pb.seqLens[s] + bs - 1) / bs;
    for (int64_t b = 0; b < nb; ++b)
      p.tables[s * p.maxBlocks + b] = pool[next++];
    for (int32_t j = 0; j < pb.seqLens[s]; ++j)
      p.slots.push_back(int64_t(p.tables[s * p.maxBlocks + j / bs]) * bs +
                        j % bs);
  }
  p.slots.push_back(-1);
  p.slots.push_back(p.numBlocks * bs + 1);
  for (auto [s, col, id] : pb.tableOverrides) {
    if (s < 0 || s >= p.seqs || col < 0 || col >= p.maxBlocks)
      return makeError("table override outside the block table");
    p.tables[s * p.maxBlocks + col] = id;
  }
  auto [kf, vf] = formats(pb);
  p.slotBytes = ref::slotBytes(kf, vf, pb.headDim);
  if (p.slotBytes < 0)
    return makeError("head dim " + llvm::Twine(pb.headDim) +
                     " has no slot layout");
  return p;
}

/// The uq program of a problem: a cache write and a decode attention.
std::string programIR(const AttentionProblem &pb, const Paging &p) {
  auto sz = [&](int64_t v) {
    return pb.dynamicShapes ? std::string("?") : std::to_string(v);
  };
  const int64_t hq = pb.numQHeads, hkv = pb.numKVHeads, d = pb.headDim,
                bs = pb.blockSize;
  std::string dt = pb.dtype;
  std::string cacheT = llvm::formatv("tensor<{0}x{1}x{2}x{3}xi8>",
                                     sz(p.numBlocks), bs, hkv, p.slotBytes);
  std::string kvT =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}>", sz(p.tokens()), hkv, d, dt);
  std::string slotT = llvm::formatv("tensor<{0}xi64>", sz(p.tokens()));
  std::string qT =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}>", sz(p.seqs), hq, d, dt);
  std::string btT =
      llvm::formatv("tensor<{0}x{1}xi32>", sz(p.seqs), sz(p.maxBlocks));
  std::string lensT = llvm::formatv("tensor<{0}xi32>", sz(p.seqs));
  std::string outT = llvm::formatv("tensor<{0}x{1}x{2}x{3}>", sz(p.seqs), hq,
                                   d, pb.outType);
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
  ir += llvm::formatv("func.func @write(%k: {0}, %v: {0}, %s: {1}, %c: {2}) "
                      "-> {2} {{\n",
                      kvT, slotT, cacheT);
  ir += llvm::formatv("  %r = uq.cache_write %k, %v, %s into %c {0} : {1}, "
                      "{1}, {2} into {3}\n",
                      attrs, kvT, slotT, cacheT);
  ir += llvm::formatv("  return %r : {0}\n}\n", cacheT);
  ir += llvm::formatv("func.func @decode(%q: {0}, %c: {1}, %bt: {2}, "
                      "%lens: {3}{4}) -> {5} {{\n",
                      qT, cacheT, btT, lensT,
                      pb.sinks ? ", %sinks: " + sinkT : "", outT);
  ir += llvm::formatv("  %o = uq.decode_attention %q, %c, %bt, %lens{0} scale "
                      "{1} {2} : ({3}, {4}, {5}, {6}{7}) -> {8}\n",
                      pb.sinks ? " sinks %sinks" : "", scaleLiteral, attrs, qT,
                      cacheT, btT, lensT, pb.sinks ? ", " + sinkT : "", outT);
  ir += llvm::formatv("  return %o : {0}\n}\n", outT);
  return ir;
}

/// Launches a kernel of the code object by the JSON's description: buffers
/// and scalars by argument name, the grid from the JSON's grid rule, every
/// argument checked against the JSON before the launch.
struct Launcher {
  emu::Emulator &em;
  const std::vector<emu::KernelDescription> &kernels;

  llvm::Error launch(llvm::StringRef name,
                     std::map<std::string, std::vector<uint8_t>> &buffers,
                     const std::map<std::string, int64_t> &scalars,
                     emu::Stats &stats) {
    auto it = llvm::find_if(kernels, [&](const emu::KernelDescription &k) {
      return k.name == name;
    });
    if (it == kernels.end())
      return makeError("the kernel JSON has no kernel " + name);
    std::vector<emu::KernelArg> args;
    for (const emu::ArgSpec &a : it->args) {
      if (a.isBuffer) {
        auto b = buffers.find(a.name);
        if (b == buffers.end())
          return makeError("no buffer for argument '" + a.name + "' of " +
                           name);
        args.push_back(emu::KernelArg::buffer(b->second, a.name));
      } else {
        auto s = scalars.find(a.name);
        if (s == scalars.end())
          return makeError("no value for argument '" + a.name + "' of " +
                           name);
        args.push_back(emu::KernelArg::value<int32_t>(int32_t(s->second)));
      }
    }
    auto grid = emu::resolveGrid(*it, args);
    if (!grid)
      return grid.takeError();
    emu::LaunchConfig cfg;
    cfg.grid = *grid;
    cfg.block = it->block.value_or(std::array<uint32_t, 3>{64, 1, 1});
    cfg.argSpecs = it->args;
    cfg.requiredBlock = it->block;
    // A launch with an empty grid is no launch (the JSON's rule).
    if ((*grid)[0] == 0 || (*grid)[1] == 0 || (*grid)[2] == 0) {
      stats = emu::Stats();
      return llvm::Error::success();
    }
    if (llvm::Error err = em.launch(name, cfg, args))
      return makeError("emulating " + name + ": " +
                       llvm::toString(std::move(err)));
    stats = em.stats();
    for (auto [a, spec] : llvm::zip(args, it->args))
      if (spec.isBuffer)
        buffers[spec.name] = a.bytes;
    return llvm::Error::success();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// CompiledAttention
//===----------------------------------------------------------------------===//

struct CompiledAttention::Impl {
  AttentionProblem shape;
  std::string ir, json, hsaco;
  std::unique_ptr<emu::CodeObject> codeObject;
  std::vector<emu::KernelDescription> kernels;
};

CompiledAttention::CompiledAttention() : impl(std::make_unique<Impl>()) {}
CompiledAttention::~CompiledAttention() = default;
const std::string &CompiledAttention::ir() const { return impl->ir; }
const std::string &CompiledAttention::kernelsJson() const {
  return impl->json;
}
const std::string &CompiledAttention::codeObject() const {
  return impl->hsaco;
}

llvm::Expected<std::unique_ptr<CompiledAttention>>
CompiledAttention::compile(const AttentionProblem &pb) {
  if (pb.dtype != "bf16" && pb.dtype != "f32")
    return makeError("the emulated-attention harness takes bf16 or f32 "
                     "inputs, not " +
                     pb.dtype);
  std::mt19937_64 rng(pb.seed);
  auto paging = makePaging(pb, rng);
  if (!paging)
    return paging.takeError();
  std::unique_ptr<CompiledAttention> c(new CompiledAttention());
  c->impl->shape = pb;
  c->impl->ir = programIR(pb, *paging);
  CompileOptions options;
  options.partitionSize = pb.partitionSize;
  auto compiled = compileSource(c->impl->ir, "emulated-attention", options);
  if (!compiled)
    return makeError("compiling the problem: " +
                     llvm::toString(compiled.takeError()));
  c->impl->json = compiled->kernelsJson;
  c->impl->hsaco = compiled->output;
  auto co = emu::CodeObject::load(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(c->impl->hsaco.data()),
      c->impl->hsaco.size()));
  if (!co)
    return co.takeError();
  c->impl->codeObject = std::move(*co);
  auto kernels = emu::parseKernelsJson(c->impl->json);
  if (!kernels)
    return kernels.takeError();
  c->impl->kernels = std::move(*kernels);
  return c;
}

llvm::Expected<AttentionReport>
CompiledAttention::run(const AttentionProblem &pb) const {
  const AttentionProblem &shape = impl->shape;
  if (pb.numQHeads != shape.numQHeads || pb.numKVHeads != shape.numKVHeads ||
      pb.headDim != shape.headDim || pb.blockSize != shape.blockSize ||
      pb.sinks != shape.sinks || pb.format != shape.format ||
      pb.dtype != shape.dtype || pb.outType != shape.outType ||
      pb.c != shape.c || pb.mseSearch != shape.mseSearch ||
      pb.vRotated != shape.vRotated || pb.softmaxScale != shape.softmaxScale)
    return makeError("the problem's configuration differs from the compiled "
                     "one");
  if (pb.seqLens.empty())
    return makeError("at least one sequence is needed");
  const int64_t s = pb.seqLens.size(), hq = pb.numQHeads,
                hkv = pb.numKVHeads, d = pb.headDim, bs = pb.blockSize;
  std::mt19937_64 rng(pb.seed);
  auto pagingOr = makePaging(pb, rng);
  if (!pagingOr)
    return pagingOr.takeError();
  const Paging &p = *pagingOr;
  if (!shape.dynamicShapes && programIR(pb, p) != impl->ir)
    return makeError("the problem's sizes differ from the statically "
                     "compiled ones");
  const int64_t numTokens = p.tokens();
  Tensor k = makeTensor(rng, numTokens * hkv * d, pb.scale, pb.dtype);
  Tensor v = makeTensor(rng, numTokens * hkv * d, pb.scale, pb.dtype);
  Tensor q = makeTensor(rng, s * hq * d, pb.scale, pb.dtype);
  std::vector<float> sinks(hq);
  std::normal_distribution<float> sinkDist(1.0f, 1.0f);
  for (float &x : sinks)
    x = sinkDist(rng);
  if (llvm::Error err = overwrite(q, pb.query, 0, pb.dtype, "query"))
    return std::move(err);
  if (llvm::Error err = overwrite(k, pb.key, 0, pb.dtype, "key"))
    return std::move(err);
  if (llvm::Error err = overwrite(v, pb.value, 0, pb.dtype, "value"))
    return std::move(err);
  if (!pb.sinkValues.empty()) {
    if (pb.sinkValues.size() != sinks.size())
      return makeError("sinkValues must have one value per query head");
    sinks = pb.sinkValues;
  }

  auto [kf, vf] = formats(pb);
  ref::CacheGeometry geom{p.numBlocks, bs, hkv, d, p.slotBytes};
  const int64_t cacheBytes = ref::cacheBytes(geom);
  // A recognisable pattern: bytes nobody writes must survive. The reference
  // rejects the slot past the cache (the kernels skip it): it writes all
  // but that one.
  std::vector<uint8_t> refCache(cacheBytes, 0x5A);
  if (ref::Status st =
          ref::cacheWrite(kf, vf, geom, k.values.data(), v.values.data(),
                          p.slots.data(), numTokens - 1, refCache.data());
      !st.ok())
    return makeError("reference cacheWrite: " + st.message());

  AttentionReport report;
  report.ir = impl->ir;
  report.kernelsJson = impl->json;
  emu::Emulator em(*impl->codeObject);
  Launcher launcher{em, impl->kernels};
  std::map<std::string, std::vector<uint8_t>> buffers;
  // 1. Cache write on the GPU (or the reference's bytes).
  if (pb.gpuCacheWrite) {
    buffers["key"] = k.bytes;
    buffers["value"] = v.bytes;
    buffers["slot_mapping"] = toBytes(p.slots);
    buffers["cache"] = std::vector<uint8_t>(cacheBytes, 0x5A);
    if (llvm::Error err = launcher.launch(
            "write_0_cache_write", buffers,
            {{"num_tokens", numTokens}, {"num_blocks", p.numBlocks}},
            report.writeStats))
      return std::move(err);
    report.cacheBytes = cacheBytes;
    for (int64_t i = 0; i < cacheBytes; ++i)
      report.cacheMismatches += buffers["cache"][i] != refCache[i];
  } else {
    buffers["cache"] = refCache;
  }
  const std::vector<uint8_t> cache = buffers["cache"];

  // 2. Query, partitions, merge.
  const int64_t parts = std::max<int64_t>(
      1, (p.maxBlocks * bs + pb.partitionSize - 1) / pb.partitionSize);
  report.numPartitions = parts;
  unsigned wsBytes = pb.format == KVCacheKind::BF16 ? 2 : 1;
  unsigned outBytes = pb.outType == "f32" ? 4 : 2;
  buffers["query"] = q.bytes;
  buffers["query_prepared"] = std::vector<uint8_t>(s * hq * d * wsBytes);
  buffers["block_tables"] = toBytes(p.tables);
  buffers["seq_lens"] = toBytes(pb.seqLens);
  buffers["partial_out"] = std::vector<uint8_t>(s * hq * parts * d * 4);
  buffers["partial_max"] = std::vector<uint8_t>(s * hq * parts * 4);
  buffers["partial_sum"] = std::vector<uint8_t>(s * hq * parts * 4);
  buffers["sinks"] = toBytes(sinks);
  buffers["out"] = std::vector<uint8_t>(s * hq * d * outBytes);
  std::map<std::string, int64_t> scalars = {{"num_seqs", s},
                                            {"num_blocks", p.numBlocks},
                                            {"max_blocks", p.maxBlocks},
                                            {"num_partitions", parts}};
  if (llvm::Error err = launcher.launch("decode_0_query", buffers, scalars,
                                        report.queryStats))
    return std::move(err);
  if (llvm::Error err = launcher.launch("decode_0_partial", buffers, scalars,
                                        report.partialStats))
    return std::move(err);
  if (llvm::Error err = launcher.launch("decode_0_merge", buffers, scalars,
                                        report.mergeStats))
    return std::move(err);
  std::vector<float> out(s * hq * d);
  if (outBytes == 4) {
    out = fromBytes<float>(buffers["out"]);
  } else {
    std::vector<uint16_t> half = fromBytes<uint16_t>(buffers["out"]);
    for (size_t i = 0; i < half.size(); ++i)
      out[i] = pb.outType == "bf16" ? ref::bf16ToFloat(half[i])
                                    : halfToFloat(half[i]);
  }

  // The reference (pagedAttention: decode with the kernels' index policy)
  // and the per-element bound of the kernels' rounding of P.
  const float softmaxScale = pb.softmaxScale > 0
                                 ? pb.softmaxScale
                                 : 1.0f / std::sqrt(static_cast<float>(d));
  ref::AttentionParams params;
  params.softmaxScale = softmaxScale;
  std::vector<int32_t> qsl(s + 1);
  std::iota(qsl.begin(), qsl.end(), 0);
  std::vector<float> expected(s * hq * d);
  if (ref::Status st = ref::pagedAttention(
          kf, vf, geom, cache.data(), params, 0, q.values.data(), s, hq,
          qsl.data(), s, p.tables.data(), p.maxBlocks, pb.seqLens.data(),
          pb.sinks ? sinks.data() : nullptr, expected.data());
      !st.ok())
    return makeError("reference attention: " + st.message());
  // P is rounded to bf16 (8 significant bits: 2^-9, plus v_exp_f32's ulp
  // and the f32 rescaling: 2^-8), to FP8 E4M3 for FP8 values (2^-4 + 2^-8).
  double pError = pb.format == KVCacheKind::FP8
                      ? std::ldexp(1.0, -4) + std::ldexp(1.0, -8)
                      : std::ldexp(1.0, -8);
  std::vector<double> bounds(s * hq * d);
  if (ref::Status st = ref::attentionErrorBounds(
          kf, vf, geom, cache.data(), params, 0, q.values.data(), s, hq,
          qsl.data(), s, p.tables.data(), p.maxBlocks, pb.seqLens.data(),
          pb.sinks ? sinks.data() : nullptr, pError, bounds.data());
      !st.ok())
    return makeError("reference bounds: " + st.message());
  // Results rounded to bf16/f16 add half an ulp of the result.
  double outRound = pb.outType == "bf16"  ? std::ldexp(1.0, -9)
                    : pb.outType == "f16" ? std::ldexp(1.0, -12)
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
  report.numOutputs = s * hq * d;
  report.output = out;
  report.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  return report;
}

llvm::Expected<AttentionReport>
uq::runEmulatedAttention(const AttentionProblem &problem) {
  auto compiled = CompiledAttention::compile(problem);
  if (!compiled)
    return compiled.takeError();
  return (*compiled)->run(problem);
}
