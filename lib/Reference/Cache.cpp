//===- Cache.cpp - vLLM-layout paged cache and decode attention -----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The slot layout and the decode attention definition follow
// docs/ultraquant-format.md ("Cache layout compatible with vLLM", "Query
// path"); docs/reference-numerics.md says how the attention arithmetic was
// checked against the golden attn_* cases.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace uq::ref;

namespace {
/// a * b, or -1 on int64 overflow or a negative operand.
int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    return -1;
  return r;
}

/// Byte offsets of the four parts of a slot.
struct SlotParts {
  int64_t kCodes, kScales, vCodes, vScales;
};

SlotParts slotParts(const Format &kf, const Format &vf, int64_t d) {
  SlotParts p;
  p.kCodes = 0;
  p.kScales = codeBytes(kf, d);
  p.vCodes = p.kScales + scaleBytes(kf, d);
  p.vScales = p.vCodes + codeBytes(vf, d);
  return p;
}

/// Number of slots (numBlocks * blockSize) of a validated geometry.
int64_t numSlots(const CacheGeometry &g) {
  return checkedMul(g.numBlocks, g.blockSize);
}

/// Byte offset of (slot, head) in a validated geometry.
int64_t slotOffset(const CacheGeometry &g, int64_t slot, int64_t head) {
  return (slot * g.numKvHeads + head) * g.slotBytes;
}
} // namespace

int64_t uq::ref::slotBytes(const Format &kf, const Format &vf, int64_t d) {
  int64_t kc = codeBytes(kf, d), ks = scaleBytes(kf, d);
  int64_t vc = codeBytes(vf, d), vs = scaleBytes(vf, d);
  if (kc < 0 || ks < 0 || vc < 0 || vs < 0)
    return -1;
  return kc + ks + vc + vs;
}

int64_t uq::ref::cacheBytes(const CacheGeometry &g) {
  return checkedMul(checkedMul(numSlots(g), g.numKvHeads), g.slotBytes);
}

Status uq::ref::validateGeometry(const Format &kf, const Format &vf,
                                 const CacheGeometry &g) {
  if (g.numBlocks <= 0 || g.blockSize <= 0 || g.numKvHeads <= 0 ||
      g.headDim <= 0 || g.slotBytes <= 0)
    return Status::error("cache geometry sizes must all be > 0");
  Status st = validateFormat(kf, g.headDim);
  if (!st.ok())
    return Status::error("key format: " + st.message());
  st = validateFormat(vf, g.headDim);
  if (!st.ok())
    return Status::error("value format: " + st.message());
  int64_t need = slotBytes(kf, vf, g.headDim);
  if (g.slotBytes < need)
    return Status::error("slot of " + std::to_string(g.slotBytes) +
                         " bytes is smaller than the " + std::to_string(need) +
                         " bytes the formats need");
  if (cacheBytes(g) < 0)
    return Status::error("cache size overflows int64");
  return Status::success();
}

Status uq::ref::cacheWrite(const Format &kf, const Format &vf,
                           const CacheGeometry &g, const float *k,
                           const float *v, const int64_t *slotMapping,
                           int64_t numTokens, uint8_t *cache,
                           const float *kMean, const float *vMean) {
  Status st = validateGeometry(kf, vf, g);
  if (!st.ok())
    return st;
  if (numTokens < 0)
    return Status::error("negative token count");
  if (numTokens == 0)
    return Status::success();
  if (!k || !v || !slotMapping || !cache)
    return Status::error("cacheWrite: null buffer");
  const int64_t slots = numSlots(g);
  for (int64_t t = 0; t < numTokens; ++t)
    if (slotMapping[t] >= slots)
      return Status::error("token " + std::to_string(t) + ": slot " +
                           std::to_string(slotMapping[t]) +
                           " is beyond the cache (" + std::to_string(slots) +
                           " slots)");

  const int64_t d = g.headDim;
  const SlotParts parts = slotParts(kf, vf, d);
  std::vector<float> centred(d);
  // The row to code: x itself, or x - mean[h] (float subtraction).
  auto rowOf = [&](const float *x, const float *mean, int64_t h) {
    if (!mean)
      return x;
    for (int64_t i = 0; i < d; ++i)
      centred[i] = x[i] - mean[h * d + i];
    return static_cast<const float *>(centred.data());
  };
  for (int64_t t = 0; t < numTokens; ++t) {
    int64_t slot = slotMapping[t];
    if (slot < 0)
      continue; // Padding token: skip, leave the cache untouched.
    for (int64_t h = 0; h < g.numKvHeads; ++h) {
      uint8_t *base = cache + slotOffset(g, slot, h);
      const int64_t row = (t * g.numKvHeads + h) * d;
      st = encodeRow(kf, rowOf(k + row, kMean, h), d, base + parts.kCodes,
                     base + parts.kScales);
      if (!st.ok())
        return st; // Unreachable: the formats were validated.
      st = encodeRow(vf, rowOf(v + row, vMean, h), d, base + parts.vCodes,
                     base + parts.vScales);
      if (!st.ok())
        return st;
    }
  }
  return Status::success();
}

namespace {
/// Softmax-weighted sum over one (sequence, query head) in accumulator type
/// Acc (float or double). \p q is the query already rotated and rounded.
/// Logits are rounded to Acc after the scale multiply; exponentials are
/// taken of (logit - max) with max over the logits and the sink.
template <typename Acc>
void attendOne(const Format &kf, const Format &vf, const CacheGeometry &g,
               const SlotParts &parts, const uint8_t *cache, Acc softmaxScale,
               const float *q, int64_t kvHead, const int32_t *blockTable,
               int64_t seqLen, const float *sink, const float *kMean,
               const float *vMean, float *out) {
  const int64_t d = g.headDim;
  std::vector<float> row(d);
  std::vector<Acc> logits(seqLen);
  auto slotBase = [&](int64_t j) {
    int64_t slot =
        static_cast<int64_t>(blockTable[j / g.blockSize]) * g.blockSize +
        j % g.blockSize;
    return cache + slotOffset(g, slot, kvHead);
  };

  Acc maxLogit = -std::numeric_limits<Acc>::infinity();
  if (sink)
    maxLogit = static_cast<Acc>(*sink);
  for (int64_t j = 0; j < seqLen; ++j) {
    const uint8_t *base = slotBase(j);
    (void)decodeRow(kf, base + parts.kCodes, base + parts.kScales, d,
                    row.data());
    if (kMean)
      for (int64_t i = 0; i < d; ++i)
        row[i] += kMean[i];
    Acc dot = 0;
    for (int64_t i = 0; i < d; ++i)
      dot += static_cast<Acc>(q[i]) * static_cast<Acc>(row[i]);
    logits[j] = dot * softmaxScale;
    if (logits[j] > maxLogit)
      maxLogit = logits[j];
  }

  std::vector<Acc> acc(d, Acc(0));
  Acc sum = 0;
  for (int64_t j = 0; j < seqLen; ++j) {
    Acc p = std::exp(logits[j] - maxLogit);
    sum += p;
    const uint8_t *base = slotBase(j);
    (void)decodeRow(vf, base + parts.vCodes, base + parts.vScales, d,
                    row.data());
    if (vMean)
      for (int64_t i = 0; i < d; ++i)
        row[i] += vMean[i];
    for (int64_t i = 0; i < d; ++i)
      acc[i] += p * static_cast<Acc>(row[i]);
  }
  if (sink)
    sum += std::exp(static_cast<Acc>(*sink) - maxLogit);
  for (int64_t i = 0; i < d; ++i)
    out[i] = seqLen == 0 ? 0.0f : static_cast<float>(acc[i] / sum);
}
} // namespace

Status uq::ref::decodeAttention(const Format &kf, const Format &vf,
                                const CacheGeometry &g, const uint8_t *cache,
                                const AttentionParams &p, const float *q,
                                int64_t numSeqs, int64_t numQHeads,
                                const int32_t *blockTables, int64_t maxBlocks,
                                const int32_t *seqLens, const float *sinks,
                                float *out) {
  Status st = validateGeometry(kf, vf, g);
  if (!st.ok())
    return st;
  if (numSeqs < 0 || maxBlocks < 0)
    return Status::error("negative sequence or block-table size");
  if (numQHeads <= 0 || numQHeads % g.numKvHeads != 0)
    return Status::error("query heads (" + std::to_string(numQHeads) +
                         ") must be a positive multiple of the kv heads (" +
                         std::to_string(g.numKvHeads) + ")");
  if (numSeqs == 0)
    return Status::success();
  if (!cache || !q || !seqLens || !out || (maxBlocks > 0 && !blockTables))
    return Status::error("decodeAttention: null buffer");
  const int64_t capacity = checkedMul(maxBlocks, g.blockSize);
  if (capacity < 0)
    return Status::error("block table capacity overflows int64");
  for (int64_t s = 0; s < numSeqs; ++s) {
    int64_t len = seqLens[s];
    if (len < 0 || len > capacity)
      return Status::error("sequence " + std::to_string(s) + ": length " +
                           std::to_string(len) + " outside [0, " +
                           std::to_string(capacity) + "]");
    int64_t usedBlocks = (len + g.blockSize - 1) / g.blockSize;
    for (int64_t b = 0; b < usedBlocks; ++b) {
      int32_t id = blockTables[s * maxBlocks + b];
      if (id < 0 || id >= g.numBlocks)
        return Status::error("sequence " + std::to_string(s) + ": block " +
                             std::to_string(id) + " at table position " +
                             std::to_string(b) + " is outside [0, " +
                             std::to_string(g.numBlocks) + ")");
    }
  }

  const int64_t d = g.headDim;
  const int64_t groupSize = numQHeads / g.numKvHeads;
  const SlotParts parts = slotParts(kf, vf, d);
  std::vector<float> qr(d);
  // The means in the coded domain of their rows (rotated like the format).
  auto codedMeans = [&](const float *mean, const Format &f) {
    std::vector<float> m;
    if (!mean)
      return m;
    m.assign(mean, mean + g.numKvHeads * d);
    if (f.rotate)
      for (int64_t h = 0; h < g.numKvHeads; ++h)
        (void)hadamardRotate(m.data() + h * d, d, f.rotation);
    return m;
  };
  const std::vector<float> kMean = codedMeans(p.kMean, kf);
  const std::vector<float> vMean = codedMeans(p.vMean, vf);
  for (int64_t s = 0; s < numSeqs; ++s) {
    for (int64_t h = 0; h < numQHeads; ++h) {
      const float *qIn = q + (s * numQHeads + h) * d;
      qr.assign(qIn, qIn + d);
      // The query lives in the key's coded domain: rotate it like the keys,
      // then round it as the reference does (E4M3, scale 1).
      if (kf.rotate)
        (void)hadamardRotate(qr.data(), d, kf.rotation);
      if (p.queryPrecision == QueryPrecision::FP8_E4M3)
        for (float &x : qr)
          x = fp8e4m3Decode(fp8e4m3Encode(x, Fp8Overflow::NaN));
      if (p.queryPrecision == QueryPrecision::FP8_E4M3_Scaled)
        for (int64_t g0 = 0; g0 < d; g0 += 32) {
          float m = 0.0f;
          bool finite = true;
          for (int64_t i = g0; i < std::min<int64_t>(d, g0 + 32); ++i) {
            finite = finite && std::isfinite(qr[i]);
            m = std::max(m, std::fabs(qr[i]));
          }
          int e = fp8BlockExponent(finite ? m : 0.0f);
          // ldexp is exact here (a power-of-two scaling within range).
          for (int64_t i = g0; i < std::min<int64_t>(d, g0 + 32); ++i)
            qr[i] = std::ldexp(fp8e4m3Decode(fp8e4m3Encode(std::ldexp(qr[i], -e),
                                                          Fp8Overflow::NaN)),
                               e);
        }
      const float *sink = sinks ? sinks + h : nullptr;
      float *o = out + (s * numQHeads + h) * d;
      const int32_t *table =
          blockTables ? blockTables + s * maxBlocks : nullptr;
      const int64_t kvh = h / groupSize;
      const float *km = p.kMean ? kMean.data() + kvh * d : nullptr;
      const float *vm = p.vMean ? vMean.data() + kvh * d : nullptr;
      if (p.accumulateF64)
        attendOne<double>(kf, vf, g, parts, cache,
                          static_cast<double>(p.softmaxScale), qr.data(), kvh,
                          table, seqLens[s], sink, km, vm, o);
      else
        attendOne<float>(kf, vf, g, parts, cache, p.softmaxScale, qr.data(),
                         kvh, table, seqLens[s], sink, km, vm, o);
      // Values coded in a rotated domain: the weighted sum is rotated too;
      // H / sqrt(D) is its own inverse.
      if (vf.rotate)
        (void)hadamardRotate(o, d, vf.rotation);
    }
  }
  return Status::success();
}
