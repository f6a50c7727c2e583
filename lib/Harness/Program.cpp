//===- Program.cpp - What the harness's decode and paged runs share -------===//

#include "Program.h"

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/Reference/Reference.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

using namespace uq;
using namespace uq::harness;

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

namespace uq::harness {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

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

std::string meanOperands(const AttentionProblem &pb, bool withTypes) {
  std::string t =
      llvm::formatv(" : tensor<{0}x{1}xf32>", pb.numKVHeads, pb.headDim);
  std::string r;
  if (pb.kMean)
    r += " k_mean %mk" + (withTypes ? t : "");
  if (pb.vMean)
    r += " v_mean %mv" + (withTypes ? t : "");
  return r;
}

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
static void shiftByMean(Tensor &t, const std::vector<float> &mean, int64_t hkv,
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

void drawMeans(const AttentionProblem &pb, std::mt19937_64 &rng, Tensor &k,
               Tensor &v, std::vector<float> &kMean,
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

llvm::Error Launcher::launch(
    llvm::StringRef name, std::map<std::string, std::vector<uint8_t>> &buffers,
    const std::map<std::string, int64_t> &scalars, emu::Stats &stats) {
  auto it = llvm::find_if(
      kernels, [&](const emu::KernelDescription &k) { return k.name == name; });
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

} // namespace uq::harness
