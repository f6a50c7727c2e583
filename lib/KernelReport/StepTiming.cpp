//===- StepTiming.cpp - Timing-model prediction of a decode step ----------===//
//
// Sampling (docs/performance.md): the workgroups of uq's decode kernels
// differ only in their data and their trip counts, and the trip counts
// follow from the sequence lengths alone (the kernels have no data-dependent
// control flow). So:
//  - sequences of equal length are alike: the emulated batch holds one
//    sequence per distinct length, standing for all sequences of that length
//    (the real grid sizes and block-table width are kept);
//  - the partitions of one sequence fall into groups of equal token counts
//    (full partitions, the last partial one, empty ones): a few partitions
//    of each group are traced, spread over the group and over the KV heads,
//    each weighted by the workgroups it stands for;
//  - the query and merge workgroups are alike: all of the emulated batch's
//    query workgroups, two merge workgroups per distinct length.
// The cache blocks of the emulated batch come from a pool of at most
// kMaxPoolBlocks distinct blocks filled with reference-quantized random
// rows; the block table cycles through the shuffled pool, so every
// partition (16 blocks) still reads distinct blocks and the model's HBM
// lines per workgroup are those of a real paged cache.
//
//===----------------------------------------------------------------------===//

#include "uq/KernelReport/StepTiming.h"

#include "uq/Conversion/DecodePartitions.h"
#include "uq/Emulator/KernelsJson.h"
#include "uq/Reference/Reference.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <random>

using namespace uq;
using namespace uq::report;

namespace {

/// Distinct cache blocks of a sampled step (aliased beyond).
constexpr int64_t kMaxPoolBlocks = 256;
/// The most bytes of buffers one emulated step may allocate.
constexpr double kMaxEmulatedBytes = 4.0 * (1ull << 30);

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Random bf16-representable values (as floats) and their bf16 bits.
void randomBf16(std::mt19937_64 &rng, size_t n, std::vector<float> &values,
                std::vector<uint8_t> *bytes) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  values.resize(n);
  if (bytes)
    bytes->resize(2 * n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits = ref::floatToBf16(dist(rng));
    values[i] = ref::bf16ToFloat(bits);
    if (bytes)
      std::memcpy(bytes->data() + 2 * i, &bits, 2);
  }
}

template <typename T> std::vector<uint8_t> toBytes(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

/// One traced launch: profile i stands for unitWeight[i] workgroups per
/// sequence of length class cls[i].
struct TracedLaunch {
  std::string name;
  std::vector<emu::WorkgroupProfile> profiles;
  std::vector<int64_t> cls;
  std::vector<double> unitWeight;
};

/// The workgroups to trace of a launch: workgroup index -> (length class,
/// unit weight).
using Samples = std::map<uint64_t, std::pair<int64_t, double>>;

} // namespace

struct StepPredictor::Impl {
  KernelConfig cfg;
  std::unique_ptr<CompiledAttention> compiled;
  std::unique_ptr<emu::CodeObject> codeObject;
  std::vector<emu::KernelDescription> kernels;
  double compileSeconds = 0;
  int64_t slotBytes = 0;
  ref::Format kf, vf;

  const emu::KernelDescription *describe(llvm::StringRef name) const {
    for (const auto &k : kernels)
      if (k.name == name)
        return &k;
    return nullptr;
  }

  /// Byte size of buffer argument \p a for the run-time sizes \p scalars.
  llvm::Expected<uint64_t>
  bufferBytes(const emu::KernelDescription &k, const emu::ArgSpec &a,
              const std::map<std::string, int64_t> &scalars) const {
    uint64_t n = a.elementSize;
    for (const emu::DimSpec &d : a.shape) {
      int64_t e = d.extent;
      if (d.argIndex >= 0) {
        const std::string &name = k.args[d.argIndex].name;
        auto it = scalars.find(name);
        if (it == scalars.end())
          return makeError("no value for size '" + name + "' of " + k.name);
        e = it->second;
      }
      n *= uint64_t(e);
    }
    return n;
  }

  /// Launches \p name over the workgroups \p only (all when empty) of the
  /// grid the JSON's rule gives for \p scalars, tracing them.
  llvm::Expected<std::vector<emu::WorkgroupProfile>>
  launch(emu::Emulator &em, llvm::StringRef name,
         std::map<std::string, std::vector<uint8_t>> &buffers,
         const std::map<std::string, int64_t> &scalars,
         std::optional<std::vector<uint64_t>> only) const {
    const emu::KernelDescription *k = describe(name);
    if (!k)
      return makeError("the kernel JSON has no kernel " + name);
    // Moved in and given back after the launch (large caches).
    auto args = emu::bindArguments(*k, buffers, scalars, /*move=*/true);
    if (!args)
      return args.takeError();
    auto lc = emu::launchConfig(*k, *args);
    if (!lc) {
      emu::returnBuffers(*k, *args, buffers);
      return lc.takeError();
    }
    emu::TimingRecorder rec(cfg.params());
    lc->trace = &rec;
    lc->workgroupIndices = std::move(only);
    llvm::Error err = em.launch(name, *lc, *args);
    // Give the buffers back whatever happened.
    emu::returnBuffers(*k, *args, buffers);
    if (err)
      return makeError("emulating " + name + ": " +
                       llvm::toString(std::move(err)));
    return rec.profiles();
  }

  /// Launches \p name over the workgroups of \p smp (or all of the grid
  /// when \p all, which must be those of \p smp) and pairs each traced
  /// workgroup's profile with its length class and weight.
  llvm::Expected<TracedLaunch>
  traceLaunch(emu::Emulator &em, llvm::StringRef name, const Samples &smp,
              bool all, std::map<std::string, std::vector<uint8_t>> &buffers,
              const std::map<std::string, int64_t> &scalars) const;
};

int64_t KernelConfig::partitions(int64_t numSeqs, int64_t capacity) const {
  return decodePartitionCount(
      {maxPartitionTokens, minPartitionTokens, decodeWorkgroups}, numSeqs,
      numKVHeads, capacity);
}

StepPredictor::StepPredictor() : impl(std::make_unique<Impl>()) {}
StepPredictor::~StepPredictor() = default;
const KernelConfig &StepPredictor::config() const { return impl->cfg; }
double StepPredictor::compileSeconds() const { return impl->compileSeconds; }
int64_t StepPredictor::slotBytes() const { return impl->slotBytes; }

llvm::Expected<std::unique_ptr<StepPredictor>>
StepPredictor::create(const KernelConfig &cfg) {
  if (cfg.numKVHeads <= 0 || cfg.numQHeads <= 0 ||
      cfg.numQHeads % cfg.numKVHeads != 0)
    return makeError(llvm::formatv("{0} query heads are not a positive "
                                   "multiple of {1} KV heads",
                                   cfg.numQHeads, cfg.numKVHeads));
  std::unique_ptr<StepPredictor> sp(new StepPredictor());
  Impl &I = *sp->impl;
  I.cfg = cfg;
  AttentionProblem pb;
  pb.numQHeads = cfg.numQHeads;
  pb.numKVHeads = cfg.numKVHeads;
  pb.headDim = cfg.headDim;
  pb.blockSize = cfg.blockSize;
  pb.partitionSize = cfg.partitionSize;
  pb.maxPartitionTokens = cfg.maxPartitionTokens;
  pb.minPartitionTokens = cfg.minPartitionTokens;
  pb.decodeWorkgroups = cfg.decodeWorkgroups;
  pb.headMajor = cfg.headMajor;
  pb.format = cfg.format;
  pb.vScaleE4M3 = cfg.vScaleE4M3;
  pb.dynamicShapes = true;
  pb.gpuCacheWrite = false;
  pb.seqLens = {1};
  // The harness's formats: the cache this predictor writes is the one the
  // compiled kernels read.
  std::tie(I.kf, I.vf) = referenceFormats(pb);
  I.slotBytes = ref::slotBytes(I.kf, I.vf, cfg.headDim);
  if (I.slotBytes <= 0)
    return makeError(
        llvm::formatv("head dim {0} has no slot layout", cfg.headDim));
  double t0 = now();
  auto compiled = CompiledAttention::compile(pb);
  if (!compiled)
    return compiled.takeError();
  I.compileSeconds = now() - t0;
  I.compiled = std::move(*compiled);
  const std::string &hsaco = I.compiled->codeObject();
  auto co = emu::CodeObject::load(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(hsaco.data()), hsaco.size()));
  if (!co)
    return co.takeError();
  I.codeObject = std::move(*co);
  auto kernels = emu::parseKernelsJson(I.compiled->kernelsJson());
  if (!kernels)
    return kernels.takeError();
  I.kernels = std::move(*kernels);
  for (const char *k : {"decode_0_query", "decode_0_partial", "decode_0_merge",
                        "decode_0_single"})
    if (!I.describe(k))
      return makeError(llvm::Twine("the compiled decode has no kernel ") + k);
  return sp;
}

std::string StepPredictor::resources(llvm::StringRef kernel) const {
  auto info = impl->codeObject->findKernel(kernel);
  if (!info) {
    llvm::consumeError(info.takeError());
    return "?";
  }
  const emu::KernelInfo &k = **info;
  emu::Occupancy occ = emu::occupancy(k, 1);
  return llvm::formatv("VGPR {0}, AGPR {1}, SGPR {2}, LDS {3} B, {4} "
                       "waves/SIMD ({5})",
                       k.vgprCount, k.agprCount, k.sgprCount,
                       k.groupSegmentSize, occ.wavesPerSimd, occ.limiter)
      .str();
}

struct StepPredictor::Traced {
  std::vector<int32_t> emuLens;
  int64_t maxBlocks = 1, numPartitions = 1;
  std::vector<TracedLaunch> launches;
  double seconds = 0;
  bool checked = false;
  double relL2 = 0;
};

namespace {

/// The emulated batch's paging: block tables [sequences, maxBlocks] whose
/// used columns cycle through a shuffled pool of blocks (at most
/// kMaxPoolBlocks distinct ones when sampling; one block per (sequence,
/// column) otherwise) and whose unused columns name the spare block.
struct EmulatedPaging {
  int64_t numBlocks = 1;
  std::vector<int32_t> tables;
};

EmulatedPaging pageBatch(llvm::ArrayRef<int32_t> emuLens, int64_t maxBlocks,
                         int64_t bs, bool sample, std::mt19937_64 &rng) {
  const int64_t Se = emuLens.size();
  int64_t needed = 0;
  for (int32_t l : emuLens)
    needed += (l + bs - 1) / bs;
  const int64_t poolSize =
      std::max<int64_t>(1, sample ? std::min(needed, kMaxPoolBlocks) : needed);
  EmulatedPaging pg;
  pg.numBlocks = poolSize + 1; // + the spare block of unused columns
  std::vector<int32_t> pool(pg.numBlocks);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  pg.tables.assign(Se * maxBlocks, pool.back());
  int64_t next = 0;
  for (int64_t e = 0; e < Se; ++e)
    for (int64_t b = 0; b < (emuLens[e] + bs - 1) / bs; ++b)
      pg.tables[e * maxBlocks + b] = pool[next++ % poolSize];
  return pg;
}

/// Refuses a step whose emulated buffers would not fit in memory (the
/// split-K workspaces grow with context x query heads) before allocating:
/// the cache, the block tables, the query and every other buffer of the
/// decode kernels sized by the JSON for \p sizes.
llvm::Error checkBufferBudget(llvm::ArrayRef<emu::KernelDescription> kernels,
                              const ref::CacheGeometry &geom,
                              size_t tableEntries, int64_t Se, int64_t hq,
                              int64_t d,
                              const std::map<std::string, int64_t> &sizes) {
  double total =
      double(ref::cacheBytes(geom)) + 4.0 * tableEntries + 2.0 * Se * hq * d;
  for (const auto &k : kernels) {
    if (!llvm::StringRef(k.name).starts_with("decode_0_"))
      continue;
    for (const auto &a : k.args)
      if (a.isBuffer && a.name != "query" && a.name != "cache" &&
          a.name != "block_tables" && a.name != "seq_lens") {
        double n = a.elementSize;
        for (const emu::DimSpec &dim : a.shape)
          n *= dim.argIndex >= 0
                   ? double(sizes.count(k.args[dim.argIndex].name)
                                ? sizes.at(k.args[dim.argIndex].name)
                                : 0)
                   : double(dim.extent);
        total += n;
      }
  }
  if (total > kMaxEmulatedBytes)
    return makeError(llvm::formatv(
        "the emulated step needs {0:f1} GiB of buffers (more than the "
        "{1:f0} GiB this tool allows): use shorter contexts or fewer heads",
        total / double(1ull << 30), kMaxEmulatedBytes / double(1ull << 30)));
  return llvm::Error::success();
}

/// The query launch's samples: grid (num_seqs, Hq); every workgroup of the
/// emulated batch.
Samples querySamples(int64_t Se, int64_t hq) {
  Samples s;
  for (int64_t e = 0; e < Se; ++e)
    for (int64_t h = 0; h < hq; ++h)
      s[e + Se * h] = {e, 1.0};
  return s;
}

/// The partial launch's samples: grid (P, Hkv, num_seqs); partitions
/// grouped by their tokens (the kernel's rule: partition p covers
/// [p * span, (p + 1) * span), span = tile * ceil(len / (tile * P))). The
/// single-pass kernel: grid (1, Hkv, num_seqs), the same grouping with
/// P = 1. With \p sample, at most \p fullSamples per group, spread over
/// the group's partitions and over the heads, each weighted by the
/// workgroups it stands for; without, every workgroup.
Samples partialSamples(llvm::ArrayRef<int32_t> emuLens, int64_t maxBlocks,
                       int64_t bs, int64_t P, int64_t hkv, bool sample,
                       unsigned fullSamples) {
  const int64_t tile = 32, Se = emuLens.size();
  Samples s;
  for (int64_t e = 0; e < Se; ++e) {
    const int64_t len = std::min<int64_t>(emuLens[e], maxBlocks * bs);
    const int64_t span = tile * ((len + tile * P - 1) / (tile * P));
    std::map<int64_t, std::vector<int64_t>> groups; // tokens -> partitions
    for (int64_t p = 0; p < P; ++p) {
      int64_t start = p * span;
      int64_t end = std::min(len, start + span);
      groups[std::max<int64_t>(end - start, 0)].push_back(p);
    }
    for (auto &[tokens, parts] : groups) {
      (void)tokens;
      const int64_t n = parts.size() * hkv;
      if (!sample) {
        for (int64_t p : parts)
          for (int64_t h = 0; h < hkv; ++h)
            s[p + P * (h + hkv * e)] = {e, 1.0};
        continue;
      }
      const int64_t k = std::min<int64_t>(fullSamples, n);
      for (int64_t j = 0; j < k; ++j) {
        // Spread over the group's partitions and over the heads.
        int64_t mi =
            k == 1 ? 0
                   : (j * int64_t(parts.size() - 1) + (k - 1) / 2) / (k - 1);
        int64_t h = j % hkv;
        auto &slot = s[parts[mi] + P * (h + hkv * e)];
        slot.first = e;
        slot.second += double(n) / k;
      }
    }
  }
  return s;
}

/// The merge launch's samples: grid (Hq, num_seqs); with \p sample, the
/// first and the last head of each sequence, standing for all heads.
Samples mergeSamples(int64_t Se, int64_t hq, bool sample) {
  Samples s;
  for (int64_t e = 0; e < Se; ++e) {
    if (!sample) {
      for (int64_t h = 0; h < hq; ++h)
        s[h + hq * e] = {e, 1.0};
      continue;
    }
    std::vector<int64_t> heads = {0};
    if (hq > 1)
      heads.push_back(hq - 1);
    for (int64_t h : heads)
      s[h + hq * e] = {e, double(hq) / heads.size()};
  }
  return s;
}

/// A cache of \p geom whose every slot of every block holds
/// reference-quantized random rows.
llvm::Expected<std::vector<uint8_t>> randomCache(const ref::Format &kf,
                                                 const ref::Format &vf,
                                                 const ref::CacheGeometry &geom,
                                                 std::mt19937_64 &rng) {
  std::vector<uint8_t> cache(ref::cacheBytes(geom));
  const int64_t tokens = geom.numBlocks * geom.blockSize;
  const int64_t n = tokens * geom.numKvHeads * geom.headDim;
  std::vector<float> k, v;
  randomBf16(rng, n, k, nullptr);
  randomBf16(rng, n, v, nullptr);
  std::vector<int64_t> slots(tokens);
  std::iota(slots.begin(), slots.end(), 0);
  if (ref::Status st = ref::cacheWrite(kf, vf, geom, k.data(), v.data(),
                                       slots.data(), tokens, cache.data());
      !st.ok())
    return makeError("reference cacheWrite: " + st.message());
  return cache;
}

/// The cache write of a step's new tokens (one per sequence, the last
/// token of each; none for an empty sequence): its buffers (random rows,
/// a copy of \p cache), sizes, and samples: grid (tokens, Hkv, 2), every
/// workgroup, all alike.
struct CacheWriteLaunch {
  std::map<std::string, std::vector<uint8_t>> buffers;
  std::map<std::string, int64_t> scalars;
  Samples samples;
};

CacheWriteLaunch cacheWriteLaunch(llvm::ArrayRef<int32_t> emuLens,
                                  const EmulatedPaging &pg, int64_t maxBlocks,
                                  int64_t bs, int64_t hkv, int64_t d,
                                  const std::vector<uint8_t> &cache,
                                  std::mt19937_64 &rng) {
  const int64_t Se = emuLens.size();
  std::vector<float> kv;
  std::vector<uint8_t> kb, vb;
  randomBf16(rng, Se * hkv * d, kv, &kb);
  randomBf16(rng, Se * hkv * d, kv, &vb);
  std::vector<int64_t> slots(Se, -1);
  for (int64_t e = 0; e < Se; ++e)
    if (emuLens[e] > 0) {
      int64_t t = emuLens[e] - 1;
      slots[e] = int64_t(pg.tables[e * maxBlocks + t / bs]) * bs + t % bs;
    }
  CacheWriteLaunch w;
  w.buffers["key"] = std::move(kb);
  w.buffers["value"] = std::move(vb);
  w.buffers["slot_mapping"] = toBytes(slots);
  w.buffers["cache"] = cache;
  w.scalars = {{"num_tokens", Se}, {"num_blocks", pg.numBlocks}};
  for (int64_t e = 0; e < Se; ++e)
    for (int64_t h = 0; h < hkv; ++h)
      for (int64_t z = 0; z < 2; ++z)
        w.samples[e + Se * (h + hkv * z)] = {e, 1.0};
  return w;
}

/// The relative L2 error of a wholly emulated step's output (buffer "out",
/// f32 [seqs, Hq, D]) against the reference's paged attention of the
/// same cache, query and block tables.
llvm::Expected<double>
wholeStepError(const ref::Format &kf, const ref::Format &vf,
               const ref::CacheGeometry &geom,
               std::map<std::string, std::vector<uint8_t>> &buffers,
               const std::vector<float> &q, int64_t Se, int64_t hq, int64_t d,
               const std::vector<int32_t> &tables, int64_t maxBlocks,
               const std::vector<int32_t> &lens) {
  std::vector<int32_t> qsl(Se + 1);
  std::iota(qsl.begin(), qsl.end(), 0);
  ref::AttentionParams params;
  params.softmaxScale = 1.0f / std::sqrt(float(d));
  std::vector<float> expected(Se * hq * d);
  if (ref::Status st =
          ref::pagedAttention(kf, vf, geom, buffers["cache"].data(), params, 0,
                              q.data(), Se, hq, qsl.data(), Se, tables.data(),
                              maxBlocks, lens.data(), nullptr, expected.data());
      !st.ok())
    return makeError("reference attention: " + st.message());
  const std::vector<uint8_t> &out = buffers["out"];
  if (out.size() != expected.size() * 4)
    return makeError("the output is not f32 [seqs, heads, D]");
  double err = 0, ref2 = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    float got;
    std::memcpy(&got, out.data() + 4 * i, 4);
    double diff = double(got) - expected[i];
    err += diff * diff;
    ref2 += double(expected[i]) * expected[i];
  }
  return ref2 > 0 ? std::sqrt(err / ref2) : std::sqrt(err);
}

} // namespace

llvm::Expected<TracedLaunch> StepPredictor::Impl::traceLaunch(
    emu::Emulator &em, llvm::StringRef name, const Samples &smp, bool all,
    std::map<std::string, std::vector<uint8_t>> &buffers,
    const std::map<std::string, int64_t> &scalars) const {
  std::optional<std::vector<uint64_t>> only;
  if (!all) {
    only.emplace();
    for (auto &kv : smp)
      only->push_back(kv.first);
  }
  auto prof = launch(em, name, buffers, scalars, std::move(only));
  if (!prof)
    return prof.takeError();
  TracedLaunch tl;
  tl.name = name.str();
  for (const emu::WorkgroupProfile &p : *prof) {
    auto it = smp.find(p.index);
    if (it == smp.end())
      return makeError(llvm::formatv("{0}: workgroup {1} was traced but not "
                                     "sampled",
                                     name, p.index));
    tl.cls.push_back(it->second.first);
    tl.unitWeight.push_back(it->second.second);
  }
  if (prof->size() != smp.size())
    return makeError(llvm::formatv("{0}: {1} workgroups sampled, {2} traced",
                                   name, smp.size(), prof->size()));
  tl.profiles = std::move(*prof);
  return tl;
}

llvm::Expected<StepPredictor::Traced>
StepPredictor::trace(llvm::ArrayRef<int32_t> emuLens, int64_t maxLen,
                     int64_t numPartitions, bool sample,
                     unsigned fullSamples) const {
  const Impl &I = *impl;
  const KernelConfig &c = I.cfg;
  const double t0 = now();
  if (emuLens.empty())
    return makeError("a step needs at least one sequence");
  if (fullSamples == 0)
    return makeError("at least one sample per group of partitions");
  for (int32_t l : emuLens)
    if (l < 0)
      return makeError("sequence lengths must be >= 0");
  const int64_t hq = c.numQHeads, hkv = c.numKVHeads, d = c.headDim,
                bs = c.blockSize;
  Traced tr;
  tr.emuLens.assign(emuLens.begin(), emuLens.end());
  const int64_t Se = emuLens.size();
  const int64_t maxBlocks = std::max<int64_t>(1, (maxLen + bs - 1) / bs);
  const int64_t P = std::max<int64_t>(1, numPartitions);
  // One partition: the single-pass kernel, no merge (the host code's rule).
  const bool single = P == 1;
  tr.maxBlocks = maxBlocks;
  tr.numPartitions = P;

  std::mt19937_64 rng(1);
  const EmulatedPaging pg = pageBatch(emuLens, maxBlocks, bs, sample, rng);
  const int64_t numBlocks = pg.numBlocks;
  ref::CacheGeometry geom{numBlocks, bs, hkv, d, I.slotBytes, c.headMajor};
  std::map<std::string, int64_t> scalars = {{"num_seqs", Se},
                                            {"num_blocks", numBlocks},
                                            {"max_blocks", maxBlocks},
                                            {"num_partitions", P}};
  if (llvm::Error err = checkBufferBudget(I.kernels, geom, pg.tables.size(), Se,
                                          hq, d, scalars))
    return std::move(err);
  auto cache = randomCache(I.kf, I.vf, geom, rng);
  if (!cache)
    return cache.takeError();
  std::vector<float> q;
  std::vector<uint8_t> qBytes;
  randomBf16(rng, Se * hq * d, q, &qBytes);

  std::map<std::string, std::vector<uint8_t>> buffers;
  buffers["query"] = std::move(qBytes);
  buffers["cache"] = std::move(*cache);
  buffers["block_tables"] = toBytes(pg.tables);
  buffers["seq_lens"] = toBytes(tr.emuLens);
  // Outputs and workspaces of the attention kernels, sized by the JSON (the
  // cache write has its own buffers, below).
  for (const auto &k : I.kernels) {
    if (!llvm::StringRef(k.name).starts_with("decode_0_"))
      continue;
    for (const auto &a : k.args)
      if (a.isBuffer && !buffers.count(a.name)) {
        auto n = I.bufferBytes(k, a, scalars);
        if (!n)
          return n.takeError();
        buffers[a.name] = std::vector<uint8_t>(*n);
      }
  }

  // The attention launches: query, partial (or single), merge.
  emu::Emulator em(*I.codeObject);
  auto run = [&](llvm::StringRef name, const Samples &smp,
                 bool all) -> llvm::Error {
    auto tl = I.traceLaunch(em, name, smp, all, buffers, scalars);
    if (!tl)
      return tl.takeError();
    tr.launches.push_back(std::move(*tl));
    return llvm::Error::success();
  };
  if (llvm::Error err = run("decode_0_query", querySamples(Se, hq), true))
    return std::move(err);
  if (llvm::Error err = run(
          single ? "decode_0_single" : "decode_0_partial",
          partialSamples(emuLens, maxBlocks, bs, P, hkv, sample, fullSamples),
          !sample))
    return std::move(err);
  if (!single)
    if (llvm::Error err =
            run("decode_0_merge", mergeSamples(Se, hq, sample), !sample))
      return std::move(err);

  // The cache write of the step's new tokens, after the attention so the
  // check below reads the cache the reference wrote.
  {
    CacheWriteLaunch w = cacheWriteLaunch(emuLens, pg, maxBlocks, bs, hkv, d,
                                          buffers["cache"], rng);
    auto tl = I.traceLaunch(em, "write_0_cache_write", w.samples,
                            /*all=*/true, w.buffers, w.scalars);
    if (!tl)
      return tl.takeError();
    tr.launches.push_back(std::move(*tl));
  }

  if (!sample) {
    // The whole batch ran: check the output against the reference.
    auto relL2 = wholeStepError(I.kf, I.vf, geom, buffers, q, Se, hq, d,
                                pg.tables, maxBlocks, tr.emuLens);
    if (!relL2)
      return relL2.takeError();
    tr.checked = true;
    tr.relL2 = *relL2;
    if (!(tr.relL2 < 0.05))
      return makeError(llvm::formatv("the emulated step's output differs from "
                                     "the reference (relative L2 {0:e2})",
                                     tr.relL2));
  }
  tr.seconds = now() - t0;
  return tr;
}

llvm::Expected<StepPrediction>
StepPredictor::estimate(const Traced &tr, llvm::ArrayRef<uint64_t> mult,
                        uint64_t totalTokens) const {
  const Impl &I = *impl;
  const KernelConfig &c = I.cfg;
  uint64_t S = 0;
  for (uint64_t m : mult)
    S += m;
  StepPrediction out;
  out.sequences = S;
  out.numPartitions = tr.numPartitions;
  out.totalTokens = totalTokens;
  auto totalOf = [&](llvm::StringRef kernel) -> uint64_t {
    if (kernel.ends_with("_query") || kernel.ends_with("_merge"))
      return S * c.numQHeads;
    if (kernel.ends_with("_partial"))
      return uint64_t(tr.numPartitions) * c.numKVHeads * S;
    if (kernel.ends_with("_single"))
      return uint64_t(c.numKVHeads) * S;
    return S * c.numKVHeads * 2; // the cache write
  };
  std::vector<emu::LaunchEstimate> launches;
  for (auto [i, tl] : llvm::enumerate(tr.launches)) {
    const uint64_t total = totalOf(tl.name);
    auto info = I.codeObject->findKernel(tl.name);
    if (!info)
      return info.takeError();
    std::vector<double> w;
    for (auto [cls, uw] : llvm::zip(tl.cls, tl.unitWeight))
      w.push_back(uw * mult[cls]);
    auto est = emu::predictLaunch(**info, tl.profiles, total, w,
                                  /*dynamicLds=*/0, c.params());
    if (!est)
      return est.takeError();
    out.sampling.push_back({tl.name, total, tl.profiles.size()});
    launches.push_back(std::move(*est));
  }
  out.cacheWrite = launches.back();
  launches.pop_back();
  out.step = emu::predictStep(std::move(launches));
  out.cacheBytes = double(totalTokens) * c.numKVHeads * I.slotBytes;
  out.floorMicroseconds =
      out.cacheBytes / (emu::TimingParams::gfx950().hbmAchievableTBs * 1e12) *
      1e6;
  out.partialHbmBytesPerTokenHead =
      totalTokens
          ? out.step.launches[1].hbmBytes / (double(totalTokens) * c.numKVHeads)
          : 0.0;
  out.emulatedSeconds = tr.seconds;
  out.checked = tr.checked;
  out.relL2 = tr.relL2;
  return out;
}

llvm::Expected<StepPrediction>
StepPredictor::predict(llvm::ArrayRef<int32_t> seqLens, bool sample,
                       unsigned fullSamples) const {
  if (seqLens.empty())
    return makeError("a step needs at least one sequence");
  std::vector<int32_t> emuLens;
  std::vector<uint64_t> mult;
  uint64_t tokens = 0;
  for (int32_t l : seqLens)
    tokens += std::max(l, 0);
  if (sample) {
    std::map<int32_t, uint64_t> classes;
    for (int32_t l : seqLens)
      ++classes[l];
    for (auto [l, n] : classes) {
      emuLens.push_back(l);
      mult.push_back(n);
    }
  } else {
    emuLens.assign(seqLens.begin(), seqLens.end());
    mult.assign(seqLens.size(), 1);
  }
  int32_t maxLen = *std::max_element(seqLens.begin(), seqLens.end());
  const int64_t bs = impl->cfg.blockSize;
  const int64_t parts = impl->cfg.partitions(
      seqLens.size(), std::max<int64_t>(1, (maxLen + bs - 1) / bs) * bs);
  auto tr = trace(emuLens, maxLen, parts, sample, fullSamples);
  if (!tr)
    return tr.takeError();
  return estimate(*tr, mult, tokens);
}

llvm::Expected<std::vector<StepPrediction>>
StepPredictor::predictUniform(int32_t seqLen, llvm::ArrayRef<uint64_t> batches,
                              unsigned fullSamples) const {
  // One trace per partition count the batches' rule gives.
  const int64_t bs = impl->cfg.blockSize;
  const int64_t capacity =
      std::max<int64_t>(1, (int64_t(seqLen) + bs - 1) / bs) * bs;
  std::map<int64_t, Traced> traced;
  std::vector<StepPrediction> out;
  for (uint64_t b : batches) {
    if (b == 0)
      return makeError("a batch of 0 sequences");
    const int64_t parts = impl->cfg.partitions(int64_t(b), capacity);
    auto it = traced.find(parts);
    if (it == traced.end()) {
      auto tr = trace({seqLen}, seqLen, parts, /*sample=*/true, fullSamples);
      if (!tr)
        return tr.takeError();
      it = traced.emplace(parts, std::move(*tr)).first;
    }
    auto p = estimate(it->second, {b}, b * uint64_t(std::max(seqLen, 0)));
    if (!p)
      return p.takeError();
    out.push_back(std::move(*p));
  }
  return out;
}
