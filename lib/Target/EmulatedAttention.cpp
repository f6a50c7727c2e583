//===- EmulatedAttention.cpp - Compile, emulate, compare ------------------===//

#include "uq/Target/EmulatedAttention.h"
#include "uq/Conversion/DecodePartitions.h"

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/Emulator/KernelsJson.h"
#include "uq/Emulator/TimingModel.h"
#include "uq/Reference/Reference.h"
#include "uq/Runtime/CPURunner.h"
#include "uq/Target/Compiler.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <random>

using namespace uq;

namespace uq {
/// A compiled problem: its kernel JSON, code object and kernels (the base
/// of both compiled harnesses' Impl).
struct EmulatedProgram {
  std::string json, hsaco;
  std::unique_ptr<emu::CodeObject> codeObject;
  std::vector<emu::KernelDescription> kernels;
};
} // namespace uq

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

/// Why the harness cannot build \p pb's problem ("" if it can): input
/// types it does not generate, options of UltraQuant caches given another
/// format (they would be ignored).
std::string configError(const AttentionProblem &pb) {
  if (pb.dtype != "bf16" && pb.dtype != "f32")
    return "the emulated-attention harness takes bf16 or f32 inputs, not " +
           pb.dtype;
  if ((pb.kMean || pb.vMean) && pb.format != KVCacheKind::UltraQuant)
    return "channel means are an UltraQuant option";
  if (pb.vScaleE4M3 && pb.format != KVCacheKind::UltraQuant)
    return "E4M3 value scales are an UltraQuant option";
  return "";
}
} // namespace

std::pair<ref::Format, ref::Format>
uq::referenceFormats(const AttentionProblem &pb) {
  ref::Format kf, vf;
  switch (pb.format) {
  case KVCacheKind::UltraQuant:
    kf = ref::keyFormat();
    vf = ref::valueFormat();
    kf.c = vf.c = pb.c;
    if (pb.mseSearch)
      kf.scaleRule = vf.scaleRule = ref::ScaleRule::MseSearch;
    vf.rotate = pb.vRotated;
    if (pb.vScaleE4M3)
      vf.scaleCode = ref::ScaleCode::E4M3;
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

namespace {

/// The #uq.kv_format attributes of a problem.
std::string formatAttrs(const AttentionProblem &pb) {
  std::string k, v;
  switch (pb.format) {
  case KVCacheKind::UltraQuant: {
    // The dialect's spelling of c (parses back to the same double), always
    // given: the default depends on the scale code (1/6 with E4M3 scales).
    std::string c = ", c = " + KVFormatAttr::formatScaleConstant(pb.c);
    std::string rule = pb.mseSearch ? ", scale_rule = mse_search" : "";
    k = "#uq.kv_format<fp4_e2m1" + c + ", rotation = hadamard" + rule + ">";
    v = "#uq.kv_format<fp4_e2m1" +
        std::string(pb.vScaleE4M3 ? ", scale = e4m3" : "") + c +
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
         ", layout = #uq.cache_layout<" +
         (pb.headMajor ? "head_major" : "vllm_slot") + ">}";
}

/// The optional operands of the accuracy options (docs/accuracy.md): ` k_mean %mk : T` style
/// text for the cache write (\p withTypes) or ` k_mean %mk` for the
/// attention.
std::string meanOperands(const AttentionProblem &pb, bool withTypes) {
  std::string t = llvm::formatv(" : tensor<{0}x{1}xf32>", pb.numKVHeads,
                                pb.headDim);
  std::string r;
  if (pb.kMean)
    r += " k_mean %mk" + (withTypes ? t : "");
  if (pb.vMean)
    r += " v_mean %mv" + (withTypes ? t : "");
  return r;
}

/// Function arguments (", %mk: T") or operand types (", T") of the means.
std::string meanArgs(const AttentionProblem &pb, bool names) {
  std::string t =
      llvm::formatv("tensor<{0}x{1}xf32>", pb.numKVHeads, pb.headDim);
  std::string r;
  if (pb.kMean)
    r += names ? ", %mk: " + t : ", " + t;
  if (pb.vMean)
    r += names ? ", %mv: " + t : ", " + t;
  return r;
}

/// Adds mean[h, :] to every (token, h) row of \p t ([tokens, hkv, d]) and
/// rounds to the element type (bf16 rows stay bf16).
void shiftByMean(Tensor &t, const std::vector<float> &mean, int64_t hkv,
                 int64_t d, llvm::StringRef dtype) {
  for (size_t i = 0; i < t.values.size(); ++i) {
    float x = t.values[i] + mean[i % (hkv * d)];
    if (dtype == "bf16") {
      uint16_t bits = ref::floatToBf16(x);
      t.values[i] = ref::bf16ToFloat(bits);
      std::memcpy(&t.bytes[i * 2], &bits, 2);
    } else {
      t.values[i] = x;
      std::memcpy(&t.bytes[i * 4], &x, 4);
    }
  }
}

/// The channel means of a problem (AttentionProblem::kMean / vMean):
/// drawn from \p rng (after everything else, so that problems without them
/// keep their data) and added to the key / value rows, which the cache
/// write then centres again. Each mean stays empty when its option is off
/// (configError has refused them on other formats).
void drawMeans(const AttentionProblem &pb, std::mt19937_64 &rng,
                      Tensor &k, Tensor &v, std::vector<float> &kMean,
                      std::vector<float> &vMean) {
  std::normal_distribution<float> meanDist(0.0f, pb.meanScale);
  for (auto [on, mean, rows] :
       {std::tuple<bool, std::vector<float> *, Tensor *>{pb.kMean, &kMean, &k},
        {pb.vMean, &vMean, &v}}) {
    if (!on)
      continue;
    mean->resize(pb.numKVHeads * pb.headDim);
    for (float &x : *mean)
      x = meanDist(rng);
    shiftByMean(*rows, *mean, pb.numKVHeads, pb.headDim, pb.dtype);
  }
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
  p.slots.insert(p.slots.end(), pb.extraSlots.begin(), pb.extraSlots.end());
  for (auto [s, col, id] : pb.tableOverrides) {
    if (s < 0 || s >= p.seqs || col < 0 || col >= p.maxBlocks)
      return makeError("table override outside the block table");
    p.tables[s * p.maxBlocks + col] = id;
  }
  auto [kf, vf] = referenceFormats(pb);
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
  ir += llvm::formatv("  %o = uq.decode_attention %q, %c, %bt, %lens{0}{9} "
                      "scale {1} {2} : ({3}, {4}, {5}, {6}{7}{10}) -> {8}\n",
                      pb.sinks ? " sinks %sinks" : "", scaleLiteral,
                      decodeAttrs, qT, cacheT, btT, lensT,
                      pb.sinks ? ", " + sinkT : "", outT,
                      meanOperands(pb, false), meanArgs(pb, false));
  ir += llvm::formatv("  return %o : {0}\n}\n", outT);
  return ir;
}

/// Compiles \p ir (named \p name in messages) through uq-compile's
/// pipeline and loads the code object and the kernel JSON.
llvm::Expected<EmulatedProgram> compileAndLoad(const std::string &ir,
                                             llvm::StringRef name,
                                             const CompileOptions &options) {
  auto compiled = compileSource(ir, name, options);
  if (!compiled)
    return makeError("compiling the problem: " +
                     llvm::toString(compiled.takeError()));
  EmulatedProgram p;
  p.json = compiled->kernelsJson;
  p.hsaco = compiled->output;
  auto co = emu::CodeObject::load(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(p.hsaco.data()), p.hsaco.size()));
  if (!co)
    return co.takeError();
  p.codeObject = std::move(*co);
  auto kernels = emu::parseKernelsJson(p.json);
  if (!kernels)
    return kernels.takeError();
  p.kernels = std::move(*kernels);
  return p;
}

/// Launches a kernel of the code object by the JSON's description: buffers
/// and scalars by argument name, the grid from the JSON's grid rule, every
/// argument checked against the JSON before the launch.
struct Launcher {
  emu::Emulator &em;
  const std::vector<emu::KernelDescription> &kernels;
  /// Workgroups added to each grid dimension (AttentionProblem::extraGrid).
  std::array<uint32_t, 3> extraGrid = {0, 0, 0};

  llvm::Error launch(llvm::StringRef name,
                     std::map<std::string, std::vector<uint8_t>> &buffers,
                     const std::map<std::string, int64_t> &scalars,
                     emu::Stats &stats) {
    auto it = llvm::find_if(kernels, [&](const emu::KernelDescription &k) {
      return k.name == name;
    });
    if (it == kernels.end())
      return makeError("the kernel JSON has no kernel " + name);
    // Copies: the caller's buffers change only when the launch succeeds.
    auto args = emu::bindArguments(*it, buffers, scalars, /*move=*/false);
    if (!args)
      return args.takeError();
    auto cfg = emu::launchConfig(*it, *args);
    if (!cfg)
      return cfg.takeError();
    // A launch with an empty grid is no launch (the JSON's rule).
    if (cfg->grid[0] == 0 || cfg->grid[1] == 0 || cfg->grid[2] == 0) {
      stats = emu::Stats();
      return llvm::Error::success();
    }
    for (int i = 0; i < 3; ++i)
      cfg->grid[i] += extraGrid[i];
    if (llvm::Error err = em.launch(name, *cfg, *args))
      return makeError("emulating " + name + ": " +
                       llvm::toString(std::move(err)));
    stats = em.stats();
    emu::returnBuffers(*it, *args, buffers);
    return llvm::Error::success();
  }
};

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
const std::string &CompiledAttention::kernelsJson() const {
  return impl->json;
}
const std::string &CompiledAttention::codeObject() const {
  return impl->hsaco;
}

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

llvm::Expected<AttentionReport>
CompiledAttention::run(const AttentionProblem &pb) const {
  const AttentionProblem &shape = impl->shape;
  if (pb.numQHeads != shape.numQHeads || pb.numKVHeads != shape.numKVHeads ||
      pb.headDim != shape.headDim || pb.blockSize != shape.blockSize ||
      pb.sinks != shape.sinks || pb.format != shape.format ||
      pb.dtype != shape.dtype || pb.outType != shape.outType ||
      pb.c != shape.c || pb.mseSearch != shape.mseSearch ||
      pb.vRotated != shape.vRotated || pb.softmaxScale != shape.softmaxScale ||
      pb.kMean != shape.kMean || pb.vMean != shape.vMean ||
      pb.scaledQuery != shape.scaledQuery || pb.vScaleE4M3 != shape.vScaleE4M3 ||
      pb.partitionSize != shape.partitionSize ||
      pb.headMajor != shape.headMajor ||
      pb.maxPartitionTokens != shape.maxPartitionTokens ||
      pb.minPartitionTokens != shape.minPartitionTokens ||
      pb.decodeWorkgroups != shape.decodeWorkgroups)
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
  std::vector<float> kMean, vMean;
  drawMeans(pb, rng, k, v, kMean, vMean);

  auto [kf, vf] = referenceFormats(pb);
  ref::CacheGeometry geom{p.numBlocks, bs, hkv, d, p.slotBytes,
                          pb.headMajor};
  const int64_t cacheBytes = ref::cacheBytes(geom);
  // The reference writes the tokens whose slot is inside the cache (the
  // kernels skip the others; the reference rejects a slot past the cache).
  const int64_t capacitySlots = p.numBlocks * bs;
  std::vector<float> refK, refV;
  std::vector<int64_t> refSlots;
  for (int64_t t = 0; t < numTokens; ++t) {
    if (p.slots[t] < 0 || p.slots[t] >= capacitySlots)
      continue;
    refSlots.push_back(p.slots[t]);
    refK.insert(refK.end(), k.values.begin() + t * hkv * d,
                k.values.begin() + (t + 1) * hkv * d);
    refV.insert(refV.end(), v.values.begin() + t * hkv * d,
                v.values.begin() + (t + 1) * hkv * d);
  }
  // A recognisable pattern: bytes nobody writes must survive.
  std::vector<uint8_t> refCache(cacheBytes, 0x5A);
  if (ref::Status st = ref::cacheWrite(kf, vf, geom, refK.data(), refV.data(),
                                       refSlots.data(), refSlots.size(),
                                       refCache.data(),
                                       pb.kMean ? kMean.data() : nullptr,
                                       pb.vMean ? vMean.data() : nullptr);
      !st.ok())
    return makeError("reference cacheWrite: " + st.message());

  AttentionReport report;
  report.ir = impl->ir;
  report.kernelsJson = impl->json;
  emu::Emulator em(*impl->codeObject);
  Launcher launcher{em, impl->kernels, pb.extraGrid};
  std::map<std::string, std::vector<uint8_t>> buffers;
  // 1. Cache write on the GPU (or the reference's bytes).
  if (pb.gpuCacheWrite) {
    buffers["key"] = k.bytes;
    buffers["value"] = v.bytes;
    buffers["slot_mapping"] = toBytes(p.slots);
    buffers["cache"] = std::vector<uint8_t>(cacheBytes, 0x5A);
    if (pb.kMean)
      buffers["k_mean"] = toBytes(kMean);
    if (pb.vMean)
      buffers["v_mean"] = toBytes(vMean);
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
  // The cache the decode reads: the written one, cut to or extended to
  // decodeNumBlocks blocks, with the problem's byte overrides.
  std::vector<uint8_t> cache = buffers["cache"];
  const int64_t decodeBlocks =
      pb.decodeNumBlocks >= 0 ? pb.decodeNumBlocks : p.numBlocks;
  ref::CacheGeometry decodeGeom = geom;
  decodeGeom.numBlocks = decodeBlocks;
  cache.resize(decodeBlocks * bs * hkv * p.slotBytes, 0x5A);
  for (auto [at, byte] : pb.cacheOverrides) {
    if (at < 0 || at >= int64_t(cache.size()))
      return makeError("cache override at byte " + llvm::Twine(at) +
                       " outside the cache of " + llvm::Twine(cache.size()) +
                       " bytes");
    cache[at] = byte;
  }
  std::vector<int32_t> lens = pb.seqLens;
  if (!pb.decodeSeqLens.empty()) {
    if (pb.decodeSeqLens.size() != lens.size())
      return makeError("decodeSeqLens must have one length per sequence");
    lens = pb.decodeSeqLens;
  }
  if (!shape.dynamicShapes && decodeBlocks != p.numBlocks)
    return makeError("decodeNumBlocks needs dynamicShapes");

  // 2. Query, partitions, merge.
  const int64_t parts =
      pb.numPartitions > 0
          ? pb.numPartitions
          : decodePartitionCount({pb.maxPartitionTokens, pb.minPartitionTokens,
                                  pb.decodeWorkgroups},
                                 s, hkv, p.maxBlocks * bs);
  report.numPartitions = parts;
  unsigned wsBytes = pb.format == KVCacheKind::BF16 ? 2 : 1;
  unsigned outBytes = pb.outType == "f32" ? 4 : 2;
  buffers["cache"] = cache;
  buffers["query"] = q.bytes;
  buffers["query_prepared"] = std::vector<uint8_t>(s * hq * d * wsBytes);
  buffers["block_tables"] = toBytes(p.tables);
  buffers["seq_lens"] = toBytes(lens);
  buffers["partial_out"] = std::vector<uint8_t>(s * hq * parts * d * 4);
  buffers["partial_max"] = std::vector<uint8_t>(s * hq * parts * 4);
  buffers["partial_sum"] = std::vector<uint8_t>(s * hq * parts * 4);
  buffers["sinks"] = toBytes(sinks);
  buffers["out"] = std::vector<uint8_t>(s * hq * d * outBytes);
  if (pb.kMean)
    buffers["k_mean"] = toBytes(kMean);
  if (pb.vMean)
    buffers["v_mean"] = toBytes(vMean);
  buffers["query_scales"] = std::vector<uint8_t>(s * hq * (d / 32), 0xFF);
  buffers["query_bias"] = std::vector<uint8_t>(s * hq * 4, 0xFF);
  std::map<std::string, int64_t> scalars = {{"num_seqs", s},
                                            {"num_blocks", decodeBlocks},
                                            {"max_blocks", p.maxBlocks},
                                            {"num_partitions", parts}};
  if (llvm::Error err = launcher.launch("decode_0_query", buffers, scalars,
                                        report.queryStats))
    return std::move(err);
  if (parts == 1 && pb.singlePass) {
    // The compiled host code's choice for one partition: no merge.
    if (llvm::Error err = launcher.launch("decode_0_single", buffers, scalars,
                                          report.partialStats))
      return std::move(err);
    report.mergeStats = emu::Stats();
  } else {
    if (llvm::Error err = launcher.launch("decode_0_partial", buffers,
                                          scalars, report.partialStats))
      return std::move(err);
    if (llvm::Error err = launcher.launch("decode_0_merge", buffers, scalars,
                                          report.mergeStats))
      return std::move(err);
  }
  auto resultFloats = [&](const std::vector<uint8_t> &bytes) {
    std::vector<float> o(s * hq * d);
    if (outBytes == 4) {
      o = fromBytes<float>(bytes);
    } else {
      std::vector<uint16_t> half = fromBytes<uint16_t>(bytes);
      for (size_t i = 0; i < half.size(); ++i)
        o[i] = pb.outType == "bf16" ? ref::bf16ToFloat(half[i])
                                    : halfToFloat(half[i]);
    }
    return o;
  };
  std::vector<float> out = resultFloats(buffers["out"]);

  // The reference (pagedAttention: decode with the kernels' index policy)
  // and the per-element bound of the kernels' rounding of P.
  const float softmaxScale = pb.softmaxScale > 0
                                 ? pb.softmaxScale
                                 : 1.0f / std::sqrt(static_cast<float>(d));
  ref::AttentionParams params;
  params.softmaxScale = softmaxScale;
  if (pb.scaledQuery)
    params.queryPrecision = ref::QueryPrecision::FP8_E4M3_Scaled;
  params.kMean = pb.kMean ? kMean.data() : nullptr;
  params.vMean = pb.vMean ? vMean.data() : nullptr;
  std::vector<int32_t> qsl(s + 1);
  std::iota(qsl.begin(), qsl.end(), 0);
  std::vector<float> expected(s * hq * d);
  if (ref::Status st = ref::pagedAttention(
          kf, vf, decodeGeom, cache.data(), params, 0, q.values.data(), s, hq,
          qsl.data(), s, p.tables.data(), p.maxBlocks, lens.data(),
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
          kf, vf, decodeGeom, cache.data(), params, 0, q.values.data(), s, hq,
          qsl.data(), s, p.tables.data(), p.maxBlocks, lens.data(),
          pb.sinks ? sinks.data() : nullptr, pError, bounds.data());
      !st.ok())
    return makeError("reference bounds: " + st.message());
  // Results rounded to bf16/f16 add half an ulp of the result.
  double outRound = pb.outType == "bf16"  ? std::ldexp(1.0, -9)
                    : pb.outType == "f16" ? std::ldexp(1.0, -12)
                                          : 0.0;
  auto boundAt = [&](size_t i) {
    return bounds[i] + outRound * std::fabs(double(expected[i]));
  };
  // Non-finite values must agree exactly (NaN with NaN, Inf with the same
  // Inf); finite ones within the bound.
  auto agree = [](double a, double b, double bound) {
    if (std::isnan(a) || std::isnan(b))
      return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b))
      return a == b;
    return std::fabs(a - b) <= bound;
  };
  struct Comparison {
    int64_t outside = 0;
    double relL2 = 0, maxAbs = 0;
  };
  // The reference's value as the result type holds it where that is not
  // finite: a result above the largest bf16/f16 is +-Inf in that type (the
  // kernels' and the CPU path's correctly rounded result).
  auto inResultType = [&](float x) -> double {
    if (pb.outType == "f16")
      return double(float(static_cast<_Float16>(x)));
    if (pb.outType == "bf16")
      return std::isinf(ref::bf16ToFloat(ref::floatToBf16(x)))
                 ? double(ref::bf16ToFloat(ref::floatToBf16(x)))
                 : double(x);
    return x;
  };
  auto compare = [&](const std::vector<float> &got) {
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
  };
  Comparison gpu = compare(out);
  report.outsideBound = gpu.outside;
  report.maxAbsError = gpu.maxAbs;
  report.relL2 = gpu.relL2;
  report.numOutputs = s * hq * d;
  for (float x : out) {
    report.nanOutputs += std::isnan(x);
    report.infOutputs += std::isinf(x);
  }

  // 3. The CPU paths: the same program's cache write (from the same inputs)
  // and decode (of the same cache as the GPU's decode).
  for (bool wave : {false, true}) {
    if (!(wave ? pb.checkWaveCPU : pb.checkLinalgCPU))
      continue;
    AttentionReport::CPURun &run = wave ? report.waveCPU : report.linalgCPU;
    auto cpuOr = impl->cpuPrograms(wave);
    if (!cpuOr)
      return cpuOr.takeError();
    auto [writeProg, decodeProg] = *cpuOr;
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
        tensor(inT, {numTokens, hkv, d}, k.bytes),
        tensor(inT, {numTokens, hkv, d}, v.bytes),
        tensor(DType::I64, {numTokens}, toBytes(p.slots)),
        tensor(DType::I8,
               pb.headMajor
                   ? std::vector<int64_t>{p.numBlocks, hkv, bs, p.slotBytes}
                   : std::vector<int64_t>{p.numBlocks, bs, hkv, p.slotBytes},
               std::vector<uint8_t>(cacheBytes, 0x5A))};
    auto written = writeProg->run(writeArgs);
    if (!written)
      return makeError(llvm::Twine(wave ? "wave-level" : "linalg") +
                       " CPU cache write: " +
                       llvm::toString(written.takeError()));
    const std::vector<uint8_t> &cpuCache = (*written)[0].data;
    if (cpuCache.size() != refCache.size())
      return makeError("CPU cache write returned a cache of the wrong size");
    for (int64_t i = 0; i < cacheBytes; ++i)
      run.cacheMismatches += cpuCache[i] != refCache[i];
    std::vector<HostTensor> decodeArgs = {
        tensor(inT, {s, hq, d}, q.bytes),
        tensor(DType::I8,
               pb.headMajor
                   ? std::vector<int64_t>{decodeBlocks, hkv, bs, p.slotBytes}
                   : std::vector<int64_t>{decodeBlocks, bs, hkv, p.slotBytes},
               cache),
        tensor(DType::I32, {s, p.maxBlocks}, toBytes(p.tables)),
        tensor(DType::I32, {s}, toBytes(lens))};
    if (pb.sinks)
      decodeArgs.push_back(tensor(DType::F32, {hq}, toBytes(sinks)));
    auto result = decodeProg->run(decodeArgs);
    if (!result)
      return makeError(llvm::Twine(wave ? "wave-level" : "linalg") +
                       " CPU decode: " + llvm::toString(result.takeError()));
    run.ran = true;
    run.output = resultFloats((*result)[0].data);
    Comparison c = compare(run.output);
    run.outsideBound = c.outside;
    run.relL2 = c.relL2;
    for (size_t i = 0; i < out.size(); ++i)
      run.gpuMismatches += !agree(out[i], run.output[i], 2 * boundAt(i));
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
      auto prog = runtime::CPUProgram::compile(
          ir, write ? "write" : "decode", options, "emulated-attention");
      if (!prog)
        return makeError(llvm::Twine("compiling the problem for the ") +
                         (wave ? "wave-level" : "linalg") + " CPU path: " +
                         llvm::toString(prog.takeError()));
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

//===----------------------------------------------------------------------===//
// Paged attention
//===----------------------------------------------------------------------===//

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
  ir += llvm::formatv("func.func @paged(%q: {0}, %c: {1}, %bt: tensor<?x?xi32>, "
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
  Tensor k = makeTensor(rng, cached * hkv * d, cfg.scale, cfg.dtype);
  Tensor v = makeTensor(rng, cached * hkv * d, cfg.scale, cfg.dtype);
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
  su.geom = ref::CacheGeometry{p.numBlocks, bs, hkv, d, p.slotBytes,
                               cfg.headMajor};
  su.cache.assign(ref::cacheBytes(su.geom), 0x5A);
  if (ref::Status st = ref::cacheWrite(
          su.kf, su.vf, su.geom, k.values.data(), v.values.data(),
          p.slots.data(), cached - 1, su.cache.data(),
          su.kMean.empty() ? nullptr : su.kMean.data(),
          su.vMean.empty() ? nullptr : su.vMean.data());
      !st.ok())
    return makeError("reference cacheWrite: " + st.message());
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
  su.parts = pp.numPartitions > 0
                 ? pp.numPartitions
                 : std::max<int64_t>(1, (p.maxBlocks * bs +
                                         cfg.partitionSize - 1) /
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
        a.prefillWaves != b.prefillWaves ||
        a.prefillRows != b.prefillRows || a.headMajor != b.headMajor ||
        shape.window != pp.window)
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
llvm::Error compareWithReference(
    const PagedAttentionProblem &pp, const PagedSetup &su,
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
          su.q.values.data(), t, hq, su.qsl.data(), ns,
          su.paging.tables.data(), su.paging.maxBlocks, pp.seqLens.data(),
          cfg.sinks ? su.sinks.data() : nullptr, expected.data());
      !st.ok())
    return makeError("reference attention: " + st.message());
  double pError = cfg.format == KVCacheKind::FP8
                      ? std::ldexp(1.0, -4) + std::ldexp(1.0, -8)
                      : std::ldexp(1.0, -8);
  std::vector<double> bounds(t * hq * d);
  if (ref::Status st = ref::attentionErrorBounds(
          su.kf, su.vf, su.geom, su.cache.data(), params, pp.window,
          su.q.values.data(), t, hq, su.qsl.data(), ns,
          su.paging.tables.data(), su.paging.maxBlocks, pp.seqLens.data(),
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
  if (llvm::Error err = launcher.launch("paged_0_query", buffers, scalars,
                                        report.queryStats))
    return std::move(err);
  if (llvm::Error err = launcher.launch("paged_0_prefill", buffers, scalars,
                                        report.prefillStats))
    return std::move(err);
  if (llvm::Error err = launcher.launch("paged_0_merge", buffers, scalars,
                                        report.mergeStats))
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
/// returns).
std::vector<int64_t> prefillKeys(const PagedAttentionProblem &pp,
                                 const PagedSetup &su, uint64_t tiles,
                                 uint64_t parts) {
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
  for (uint64_t x = 0; x < tiles; ++x) {
    const Ext *e = &ext.front();
    for (const Ext &c : ext)
      if (c.start <= int64_t(x))
        e = &c;
    int64_t tok0 = e->begin + (int64_t(x) - e->start) * tpt;
    int64_t tokEnd = std::min(e->end, tok0 + tpt);
    if (tok0 >= tokEnd)
      continue;
    if (e->seq < 0) {
      for (uint64_t z = 0; z < parts; ++z)
        keys[x + tiles * z] = -1;
      continue;
    }
    int64_t len = std::min<int64_t>(
        std::max<int64_t>(pp.seqLens[e->seq], 0), capacity);
    int64_t qLen = e->end - e->begin;
    int64_t posFirst = len + (tok0 - e->begin) - qLen;
    int64_t posLast = len + (tokEnd - 1 - e->begin) - qLen;
    int64_t lo = pp.window > 0
                     ? std::max<int64_t>(0, posFirst - pp.window + 1)
                     : 0;
    int64_t hi = std::max<int64_t>(posLast + 1, 0);
    for (uint64_t z = 0; z < parts; ++z) {
      int64_t pStart = int64_t(z) * cfg.partitionSize;
      int64_t pEnd = z + 1 == parts
                         ? hi
                         : std::min(hi, pStart + cfg.partitionSize);
      int64_t start = std::max(lo, pStart);
      keys[x + tiles * z] = pEnd > start ? pEnd - start : -1;
    }
  }
  return keys;
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
  for (llvm::StringRef name :
       {"paged_0_query", "paged_0_prefill", "paged_0_merge"}) {
    auto it = llvm::find_if(impl->kernels, [&](const auto &k) {
      return k.name == name;
    });
    if (it == impl->kernels.end())
      return makeError("the kernel JSON has no kernel " + name);
    std::vector<emu::KernelArg> args;
    for (const emu::ArgSpec &a : it->args) {
      if (a.isBuffer)
        args.push_back(emu::KernelArg::buffer(buffers[a.name], a.name));
      else
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
    if (isPrefill) {
      keys = prefillKeys(pp, su, (*grid)[0], (*grid)[2]);
      timing.prefillWorkgroups = total;
      for (int64_t k : keys)
        timing.prefillWorking += k > 0 ? (*grid)[1] : 0;
    }
    // The traced workgroups and the workgroups each stands for.
    std::map<uint64_t, double> chosen;
    if (options.whole) {
      // Every workgroup, weight 1.
    } else if (isPrefill && !options.prefillWorkgroups.empty()) {
      for (uint64_t i : options.prefillWorkgroups) {
        if (i >= total)
          return makeError(llvm::formatv("prefill workgroup {0} outside the "
                                         "grid of {1}",
                                         i, total));
        chosen[i] += double(total) / options.prefillWorkgroups.size();
      }
    } else if (isPrefill) {
      chosen = samplePrefill(keys, *grid, options.samples);
    } else {
      chosen = sampleRows(*grid, name.ends_with("_query") ? 0 : 1,
                          options.samples);
    }
    emu::TimingRecorder rec;
    emu::LaunchConfig lc;
    lc.grid = *grid;
    lc.block = it->block.value_or(std::array<uint32_t, 3>{64, 1, 1});
    lc.argSpecs = it->args;
    lc.trace = &rec;
    if (!options.whole) {
      std::vector<uint64_t> idx;
      for (auto &[i, w] : chosen)
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
      weights.push_back(options.whole ? 1.0 : chosen[p.index]);
    if (isPrefill) {
      // Work where the grid rule says there is some, and none of it missed.
      double mfmaTraced = 0, mfmaWeighted = 0;
      for (auto [p, w] : llvm::zip(rec.profiles(), weights)) {
        int64_t k = keys[p.id[0] + uint64_t((*grid)[0]) * p.id[2]];
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
            name, rec.profiles().size(), timing.prefillWorking, total));
      timing.prefillStats = em.stats();
      // Per kind, scaled as the MFMA cycles (every workgroup issues the
      // kinds in the same proportion).
      for (auto &[kind, cnt] : em.stats().mfmaByKind)
        timing.mfmaByKind.push_back(
            {kind, mfmaTraced > 0 ? double(cnt) * mfmaWeighted / mfmaTraced
                                  : 0.0});
    }
    auto est = emu::predictLaunch(**info, rec.profiles(), total, weights);
    if (!est)
      return est.takeError();
    timing.launchText.push_back(est->str());
    if (isPrefill) {
      timing.prefill = *est;
      timing.prefillUs = est->estimateMicroseconds();
      timing.prefillBoundUs = est->boundMicroseconds();
      timing.prefillBoundResource = est->boundResource;
      timing.prefillMfmaUs = est->mfmaCycles / (est->clockGHz * 1e3);
    } else if (name.ends_with("_query")) {
      timing.queryUs = est->estimateMicroseconds();
    } else {
      timing.mergeUs = est->estimateMicroseconds();
    }
    // Buffers the next launch reads (only the traced workgroups wrote).
    for (auto [a, spec] : llvm::zip(args, it->args))
      if (spec.isBuffer)
        buffers[spec.name] = a.bytes;
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
