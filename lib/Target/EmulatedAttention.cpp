//===- EmulatedAttention.cpp - Compile, emulate, compare ------------------===//

#include "uq/Target/EmulatedAttention.h"

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/Reference/Reference.h"
#include "uq/Target/Compiler.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using namespace uq;

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

llvm::Error launch(emu::Emulator &em, llvm::StringRef kernel,
                   std::array<uint32_t, 3> grid,
                   std::vector<emu::KernelArg> &args, emu::Stats &stats) {
  emu::LaunchConfig cfg;
  cfg.grid = grid;
  cfg.block = {64, 1, 1};
  if (llvm::Error err = em.launch(kernel, cfg, args))
    return makeError("emulating " + kernel + ": " +
                     llvm::toString(std::move(err)));
  stats = em.stats();
  return llvm::Error::success();
}

} // namespace

llvm::Expected<AttentionReport>
uq::runEmulatedAttention(const AttentionProblem &pb) {
  if (pb.dtype != "bf16" && pb.dtype != "f32")
    return makeError("the emulated-attention harness takes bf16 or f32 "
                     "inputs, not " +
                     pb.dtype);
  if (pb.seqLens.empty())
    return makeError("at least one sequence is needed");
  const int64_t s = pb.seqLens.size(), hq = pb.numQHeads, hkv = pb.numKVHeads,
                d = pb.headDim, bs = pb.blockSize;
  std::mt19937_64 rng(pb.seed);

  // Paging: each sequence gets its blocks from a shuffled pool, plus one
  // spare block nobody uses.
  int64_t maxBlocks = 1, numBlocks = 1;
  for (int32_t len : pb.seqLens) {
    if (len < 0)
      return makeError("sequence lengths must be >= 0");
    int64_t nb = std::max<int64_t>(1, (len + bs - 1) / bs);
    maxBlocks = std::max(maxBlocks, nb);
    numBlocks += nb;
  }
  std::vector<int32_t> pool(numBlocks);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<int32_t> tables(s * maxBlocks, 0);
  size_t next = 0;
  for (int64_t i = 0; i < s; ++i) {
    int64_t nb = std::max<int64_t>(1, (pb.seqLens[i] + bs - 1) / bs);
    for (int64_t b = 0; b < nb; ++b)
      tables[i * maxBlocks + b] = pool[next++];
  }

  // New K/V rows of every token, one extra token with slot -1 (skipped).
  std::vector<int64_t> slots;
  for (int64_t i = 0; i < s; ++i)
    for (int32_t j = 0; j < pb.seqLens[i]; ++j)
      slots.push_back(int64_t(tables[i * maxBlocks + j / bs]) * bs + j % bs);
  slots.push_back(-1);
  const int64_t numTokens = slots.size();
  Tensor k = makeTensor(rng, numTokens * hkv * d, pb.scale, pb.dtype);
  Tensor v = makeTensor(rng, numTokens * hkv * d, pb.scale, pb.dtype);
  Tensor q = makeTensor(rng, s * hq * d, pb.scale, pb.dtype);
  std::vector<float> sinks(hq);
  std::normal_distribution<float> sinkDist(1.0f, 1.0f);
  for (float &x : sinks)
    x = sinkDist(rng);
  // Given data replaces the random values (the skipped extra token keeps
  // its random row).
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

  ref::Format kf = ref::keyFormat(), vf = ref::valueFormat();
  kf.c = vf.c = pb.c;
  if (pb.mseSearch)
    kf.scaleRule = vf.scaleRule = ref::ScaleRule::MseSearch;
  vf.rotate = pb.vRotated;
  const int64_t slotBytes = ref::slotBytes(kf, vf, d);
  if (slotBytes < 0)
    return makeError("head dim " + llvm::Twine(d) + " has no slot layout");
  ref::CacheGeometry geom{numBlocks, bs, hkv, d, slotBytes};
  const int64_t cacheBytes = ref::cacheBytes(geom);
  // A recognisable pattern: bytes nobody writes must survive.
  std::vector<uint8_t> refCache(cacheBytes, 0x5A);
  if (ref::Status st =
          ref::cacheWrite(kf, vf, geom, k.values.data(), v.values.data(),
                          slots.data(), numTokens, refCache.data());
      !st.ok())
    return makeError("reference cacheWrite: " + st.message());

  // The uq program: one cache write, one decode attention.
  AttentionReport report;
  const float softmaxScale = pb.softmaxScale > 0
                                 ? pb.softmaxScale
                                 : 1.0f / std::sqrt(static_cast<float>(d));
  std::string dt = pb.dtype;
  std::string cacheT = llvm::formatv("tensor<{0}x{1}x{2}x{3}xi8>", numBlocks,
                                     bs, hkv, slotBytes);
  std::string kvT =
      llvm::formatv("tensor<{0}x{1}x{2}x{3}>", numTokens, hkv, d, dt);
  std::string qT = llvm::formatv("tensor<{0}x{1}x{2}x{3}>", s, hq, d, dt);
  std::string btT = llvm::formatv("tensor<{0}x{1}xi32>", s, maxBlocks);
  std::string lensT = llvm::formatv("tensor<{0}xi32>", s);
  std::string outT = llvm::formatv("tensor<{0}x{1}x{2}xf32>", s, hq, d);
  std::string sinkT = llvm::formatv("tensor<{0}xf32>", hq);
  // The dialect's spelling of c: parses back to the same double.
  std::string cField =
      pb.c == 0.156 ? "" : ", c = " + KVFormatAttr::formatScaleConstant(pb.c);
  std::string ruleField = pb.mseSearch ? ", scale_rule = mse_search" : "";
  std::string attrs = "{k_format = #uq.kv_format<fp4_e2m1" + cField +
                      ", rotation = hadamard" + ruleField +
                      ">, v_format = #uq.kv_format<fp4_e2m1" + cField +
                      (pb.vRotated ? ", rotation = hadamard" : "") + ruleField +
                      ">, layout = #uq.cache_layout<vllm_slot>}";
  // The f32 bit pattern: the exact scale, whatever its decimal digits.
  uint32_t scaleBits;
  std::memcpy(&scaleBits, &softmaxScale, 4);
  std::string scaleLiteral = llvm::formatv("{0:x8}", scaleBits).str();
  std::string ir;
  ir += llvm::formatv("func.func @write(%k: {0}, %v: {0}, %s: tensor<{1}xi64>, "
                      "%c: {2}) -> {2} {{\n",
                      kvT, numTokens, cacheT);
  ir += llvm::formatv("  %r = uq.cache_write %k, %v, %s into %c {0} : {1}, "
                      "{1}, tensor<{2}xi64> into {3}\n",
                      attrs, kvT, numTokens, cacheT);
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
  report.ir = ir;

  CompileOptions options;
  options.partitionSize = pb.partitionSize;
  auto compiled = compileSource(ir, "emulated-attention", options);
  if (!compiled)
    return makeError("compiling the problem: " +
                     llvm::toString(compiled.takeError()));
  report.kernelsJson = compiled->kernelsJson;
  auto co = emu::CodeObject::load(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(compiled->output.data()),
      compiled->output.size()));
  if (!co)
    return co.takeError();
  emu::Emulator em(**co);

  // 1. Cache write on the GPU (or the reference's bytes).
  std::vector<uint8_t> cache;
  if (pb.gpuCacheWrite) {
    std::vector<emu::KernelArg> args = {
        emu::KernelArg::buffer(k.bytes, "key"),
        emu::KernelArg::buffer(v.bytes, "value"),
        emu::KernelArg::buffer(toBytes(slots), "slot_mapping"),
        emu::KernelArg::buffer(std::vector<uint8_t>(cacheBytes, 0x5A),
                               "cache")};
    if (llvm::Error err = launch(em, "write_0_cache_write",
                                 {uint32_t(numTokens), uint32_t(hkv), 2}, args,
                                 report.writeStats))
      return std::move(err);
    cache = args[3].bytes;
    report.cacheBytes = cacheBytes;
    for (int64_t i = 0; i < cacheBytes; ++i)
      report.cacheMismatches += cache[i] != refCache[i];
  } else {
    cache = refCache;
  }

  // 2. Partitions, 3. merge.
  const int64_t parts = std::max<int64_t>(
      1, (maxBlocks * bs + pb.partitionSize - 1) / pb.partitionSize);
  report.numPartitions = parts;
  std::vector<emu::KernelArg> pargs = {
      emu::KernelArg::buffer(q.bytes, "query"),
      emu::KernelArg::buffer(cache, "cache"),
      emu::KernelArg::buffer(toBytes(tables), "block_tables"),
      emu::KernelArg::buffer(toBytes(pb.seqLens), "seq_lens"),
      emu::KernelArg::buffer(std::vector<uint8_t>(s * hq * parts * d * 4),
                             "partial_out"),
      emu::KernelArg::buffer(std::vector<uint8_t>(s * hq * parts * 4),
                             "partial_max"),
      emu::KernelArg::buffer(std::vector<uint8_t>(s * hq * parts * 4),
                             "partial_sum")};
  if (llvm::Error err = launch(em, "decode_0_partial",
                               {uint32_t(parts), uint32_t(hkv), uint32_t(s)},
                               pargs, report.partialStats))
    return std::move(err);
  std::vector<emu::KernelArg> margs = {pargs[4], pargs[5], pargs[6]};
  if (pb.sinks)
    margs.push_back(emu::KernelArg::buffer(toBytes(sinks), "sinks"));
  margs.push_back(
      emu::KernelArg::buffer(std::vector<uint8_t>(s * hq * d * 4), "out"));
  if (llvm::Error err =
          launch(em, "decode_0_merge", {uint32_t(hq), uint32_t(s), 1}, margs,
                 report.mergeStats))
    return std::move(err);
  std::vector<float> out = fromBytes<float>(margs.back().bytes);

  // Reference output, and the per-element bound: the kernel rounds the
  // probabilities to bf16 for the PV MFMA (relative error <= 2^-9 each;
  // 2^-8 leaves room for v_exp_f32's 1 ulp and the f32 rescaling chain),
  // and accumulates in f32 in another order (1e-5 relative).
  ref::AttentionParams params;
  params.softmaxScale = softmaxScale;
  std::vector<float> expected(s * hq * d);
  if (ref::Status st = ref::decodeAttention(
          kf, vf, geom, cache.data(), params, q.values.data(), s, hq,
          tables.data(), maxBlocks, pb.seqLens.data(),
          pb.sinks ? sinks.data() : nullptr, expected.data());
      !st.ok())
    return makeError("reference decodeAttention: " + st.message());

  const int64_t group = hq / hkv;
  double errSq = 0, refSq = 0;
  std::vector<float> qrow(d), krow(d), vrow(d), logits;
  for (int64_t si = 0; si < s; ++si) {
    const int64_t len = pb.seqLens[si];
    for (int64_t h = 0; h < hq; ++h) {
      std::memcpy(qrow.data(), &q.values[(si * hq + h) * d], d * 4);
      (void)ref::hadamardRotate(qrow.data(), d);
      for (float &x : qrow)
        x = ref::fp8e4m3Decode(ref::fp8e4m3Encode(x));
      const int64_t kvh = h / group;
      logits.assign(len, 0);
      double m = pb.sinks ? sinks[h] : -INFINITY;
      std::vector<double> weighted(d, 0.0);
      for (int64_t t = 0; t < len; ++t) {
        int64_t blk = tables[si * maxBlocks + t / bs];
        const uint8_t *slot =
            &cache[((blk * bs + t % bs) * hkv + kvh) * slotBytes];
        (void)ref::decodeRow(kf, slot, slot + d / 2, d, krow.data());
        double dot = 0;
        for (int64_t i = 0; i < d; ++i)
          dot += double(qrow[i]) * krow[i];
        logits[t] = dot * softmaxScale;
        m = std::max(m, double(logits[t]));
      }
      double denom = pb.sinks ? std::exp(sinks[h] - m) : 0.0;
      for (int64_t t = 0; t < len; ++t) {
        int64_t blk = tables[si * maxBlocks + t / bs];
        const uint8_t *slot =
            &cache[((blk * bs + t % bs) * hkv + kvh) * slotBytes];
        (void)ref::decodeRow(vf, slot + d / 2 + d / 32, slot + d + d / 32, d,
                             vrow.data());
        double w = std::exp(logits[t] - m);
        denom += w;
        for (int64_t i = 0; i < d; ++i)
          weighted[i] += w * std::fabs(vrow[i]);
      }
      // Bounds of the coded-domain output; with rotated values the kernel
      // rotates the output back (H / sqrt(D)), which mixes the errors of all
      // dims: each output dim is then bounded by sum_i b_i / sqrt(D).
      std::vector<double> bounds(d);
      double boundSum = 0;
      for (int64_t i = 0; i < d; ++i) {
        bounds[i] = denom > 0
                        ? (std::ldexp(1.0, -8) + 1e-5) * weighted[i] / denom
                        : 0.0;
        boundSum += bounds[i];
      }
      if (pb.vRotated)
        std::fill(bounds.begin(), bounds.end(),
                  boundSum / std::sqrt(static_cast<double>(d)));
      for (int64_t i = 0; i < d; ++i) {
        int64_t idx = (si * hq + h) * d + i;
        double bound = bounds[i] + 1e-6;
        double diff = std::fabs(double(out[idx]) - expected[idx]);
        if (!(diff <= bound))
          ++report.outsideBound;
        report.maxAbsError = std::max(report.maxAbsError, diff);
        errSq += diff * diff;
        refSq += double(expected[idx]) * expected[idx];
      }
    }
  }
  report.numOutputs = s * hq * d;
  report.output = out;
  report.relL2 = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  return report;
}
