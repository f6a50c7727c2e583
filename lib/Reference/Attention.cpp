//===- Attention.cpp - Decode and paged attention over the paged cache ----===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The decode attention definition follows docs/ultraquant-format.md ("Query
// path"); docs/reference-numerics.md says how its arithmetic was checked
// against the golden attn_* cases. Paged attention (prefill chunks and
// decodes in one batch, the inputs of vLLM's unified attention:
// vllm/v1/attention/ops/triton_unified_attention.py takes query_start_loc
// and seq_lens) reuses every step of it: the query preparation, the decoded
// rows and attendRows, so the two cannot drift. Its input policy (every
// index input has a defined result) is the table of docs/dialect.md.
//
//===----------------------------------------------------------------------===//

#include "CacheLayout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace uq::ref;
using detail::checkedMul;
using detail::slotOffset;
using detail::slotParts;
using detail::SlotParts;

namespace {
/// A window at least this long is no window: positions are below 2^31
/// (int32 sequence lengths). Keeps p - window + 1 far from int64 overflow.
constexpr int64_t kNoWindow = int64_t(1) << 32;

/// Decodes the K and V rows of context tokens [0, numKeys) of one kv head
/// through \p table into \p k and \p v ([numKeys, d] each, in the coded
/// domain). Block ids are clamped to [0, numBlocks - 1] (decodeAttention
/// validates them first, so there the clamp changes nothing).
void decodeRows(const Format &kf, const Format &vf, const CacheGeometry &g,
                const SlotParts &parts, const uint8_t *cache,
                const int32_t *table, int64_t numKeys, int64_t kvHead,
                std::vector<float> &k, std::vector<float> &v) {
  const int64_t d = g.headDim;
  k.resize(numKeys * d);
  v.resize(numKeys * d);
  for (int64_t j = 0; j < numKeys; ++j) {
    int64_t id = table[j / g.blockSize];
    id = std::min<int64_t>(std::max<int64_t>(id, 0), g.numBlocks - 1);
    const uint8_t *base =
        cache + slotOffset(g, id * g.blockSize + j % g.blockSize, kvHead);
    (void)decodeRow(kf, base + parts.kCodes, base + parts.kScales, d,
                    k.data() + j * d);
    (void)decodeRow(vf, base + parts.vCodes, base + parts.vScales, d,
                    v.data() + j * d);
  }
}

/// The query as the keys see it: rotated like them (when kf.rotate), then
/// rounded as the reference does (E4M3, scale 1) per \p p.
void prepareQuery(const Format &kf, const AttentionParams &p, const float *q,
                  int64_t d, std::vector<float> &qr) {
  qr.assign(q, q + d);
  if (kf.rotate)
    (void)hadamardRotate(qr.data(), d, kf.rotation);
  if (p.queryPrecision == QueryPrecision::FP8_E4M3)
    for (float &x : qr)
      x = fp8e4m3Decode(fp8e4m3Encode(x, Fp8Overflow::NaN));
}

/// Softmax-weighted sum over \p n keys (decoded rows \p k and \p v, [n, d])
/// for one (query token, head) in accumulator type Acc (float or double).
/// \p q is the prepared query. Logits are rounded to Acc after the scale
/// multiply; exponentials are taken of (logit - max) with max over the
/// logits and the sink (the sink first, then the keys in order, a key
/// replacing the max only when strictly greater); sums run over the keys in
/// order, the sink's term last. n == 0 gives zeros.
template <typename Acc>
void attendRows(const float *k, const float *v, int64_t n, int64_t d,
                Acc softmaxScale, const float *q, const float *sink,
                float *out) {
  std::vector<Acc> logits(n);
  Acc maxLogit = -std::numeric_limits<Acc>::infinity();
  if (sink)
    maxLogit = static_cast<Acc>(*sink);
  for (int64_t j = 0; j < n; ++j) {
    const float *row = k + j * d;
    Acc dot = 0;
    for (int64_t i = 0; i < d; ++i)
      dot += static_cast<Acc>(q[i]) * static_cast<Acc>(row[i]);
    logits[j] = dot * softmaxScale;
    if (logits[j] > maxLogit)
      maxLogit = logits[j];
  }

  std::vector<Acc> acc(d, Acc(0));
  Acc sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    Acc p = std::exp(logits[j] - maxLogit);
    sum += p;
    const float *row = v + j * d;
    for (int64_t i = 0; i < d; ++i)
      acc[i] += p * static_cast<Acc>(row[i]);
  }
  if (sink)
    sum += std::exp(static_cast<Acc>(*sink) - maxLogit);
  for (int64_t i = 0; i < d; ++i)
    out[i] = n == 0 ? 0.0f : static_cast<float>(acc[i] / sum);
}

/// One (query token, head): attendRows in the precision \p p asks for, then
/// the output rotated back when the values are coded rotated (H / sqrt(D) is
/// its own inverse).
void attendOne(const Format &vf, const AttentionParams &p, const float *k,
               const float *v, int64_t n, int64_t d, const float *q,
               const float *sink, float *out) {
  if (p.accumulateF64)
    attendRows<double>(k, v, n, d, static_cast<double>(p.softmaxScale), q, sink,
                       out);
  else
    attendRows<float>(k, v, n, d, p.softmaxScale, q, sink, out);
  if (vf.rotate)
    (void)hadamardRotate(out, d, vf.rotation);
}

/// Checks shared by both attention functions.
Status validateHeads(const CacheGeometry &g, int64_t numQHeads) {
  if (numQHeads <= 0 || numQHeads % g.numKvHeads != 0)
    return Status::error("query heads (" + std::to_string(numQHeads) +
                         ") must be a positive multiple of the kv heads (" +
                         std::to_string(g.numKvHeads) + ")");
  return Status::success();
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
  st = validateHeads(g, numQHeads);
  if (!st.ok())
    return st;
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
  std::vector<float> qr, k, v;
  for (int64_t s = 0; s < numSeqs; ++s) {
    const int32_t *table = blockTables ? blockTables + s * maxBlocks : nullptr;
    for (int64_t kvHead = 0; kvHead < g.numKvHeads; ++kvHead) {
      decodeRows(kf, vf, g, parts, cache, table, seqLens[s], kvHead, k, v);
      for (int64_t h = kvHead * groupSize; h < (kvHead + 1) * groupSize; ++h) {
        prepareQuery(kf, p, q + (s * numQHeads + h) * d, d, qr);
        attendOne(vf, p, k.data(), v.data(), seqLens[s], d, qr.data(),
                  sinks ? sinks + h : nullptr, out + (s * numQHeads + h) * d);
      }
    }
  }
  return Status::success();
}

PagedBatch::PagedBatch(const int32_t *queryStartLoc, const int32_t *seqLens,
                       int64_t numSeqs, int64_t numTokens, int64_t capacity,
                       int64_t window)
    : window_(window <= 0 || window > kNoWindow ? kNoWindow : window) {
  numSeqs = std::max<int64_t>(numSeqs, 0);
  begin_.assign(numSeqs + 1, 0);
  seqLen_.assign(numSeqs, 0);
  // The running maximum of query_start_loc, clamped to [0, numTokens]:
  // starts never go back, so no token belongs to two sequences.
  int64_t run = 0;
  for (int64_t s = 0; s <= numSeqs && numSeqs > 0; ++s) {
    run = std::max<int64_t>(run, queryStartLoc[s]);
    begin_[s] = std::min<int64_t>(run, numTokens);
  }
  for (int64_t s = 0; s < numSeqs; ++s)
    seqLen_[s] = std::min<int64_t>(std::max<int64_t>(seqLens[s], 0), capacity);
}

KeyRange PagedBatch::keys(int64_t s, int64_t i) const {
  int64_t queryLen = tokenEnd(s) - tokenBegin(s);
  int64_t pos = seqLen(s) - queryLen + i;
  if (pos < 0)
    return {0, 0};
  int64_t first = std::max<int64_t>(pos - window_ + 1, 0);
  return {first, pos - first + 1};
}

Status uq::ref::pagedAttention(const Format &kf, const Format &vf,
                               const CacheGeometry &g, const uint8_t *cache,
                               const AttentionParams &p, int64_t window,
                               const float *q, int64_t numTokens,
                               int64_t numQHeads, const int32_t *queryStartLoc,
                               int64_t numSeqs, const int32_t *blockTables,
                               int64_t maxBlocks, const int32_t *seqLens,
                               const float *sinks, float *out) {
  // A cache without blocks is allowed (every sequence then has no keys);
  // everything else of the geometry is checked as for decodeAttention.
  if (g.numBlocks < 0)
    return Status::error("negative block count");
  CacheGeometry checked = g;
  checked.numBlocks = std::max<int64_t>(g.numBlocks, 1);
  Status st = validateGeometry(kf, vf, checked);
  if (!st.ok())
    return st;
  if (numTokens < 0 || numSeqs < 0 || maxBlocks < 0)
    return Status::error("negative token, sequence or block-table size");
  if (window < 0)
    return Status::error("negative window (0 means none)");
  st = validateHeads(g, numQHeads);
  if (!st.ok())
    return st;
  if (numTokens == 0)
    return Status::success();
  if (!q || !out)
    return Status::error("pagedAttention: null query or output buffer");
  if (numSeqs > 0 &&
      (!queryStartLoc || !seqLens || (maxBlocks > 0 && !blockTables) ||
       (g.numBlocks > 0 && !cache)))
    return Status::error("pagedAttention: null buffer");
  int64_t capacity = checkedMul(maxBlocks, g.blockSize);
  if (capacity < 0)
    return Status::error("block table capacity overflows int64");
  if (g.numBlocks == 0)
    capacity = 0;

  const int64_t d = g.headDim;
  const int64_t groupSize = numQHeads / g.numKvHeads;
  std::fill(out, out + numTokens * numQHeads * d, 0.0f); // uncovered tokens
  const PagedBatch batch(queryStartLoc, seqLens, numSeqs, numTokens, capacity,
                         window);
  const SlotParts parts = slotParts(kf, vf, d);
  std::vector<float> qr, k, v;
  for (int64_t s = 0; s < numSeqs; ++s) {
    int64_t begin = batch.tokenBegin(s), end = batch.tokenEnd(s);
    if (begin == end)
      continue;
    const int32_t *table = blockTables ? blockTables + s * maxBlocks : nullptr;
    for (int64_t kvHead = 0; kvHead < g.numKvHeads; ++kvHead) {
      decodeRows(kf, vf, g, parts, cache, table, batch.seqLen(s), kvHead, k, v);
      for (int64_t t = begin; t < end; ++t) {
        KeyRange keys = batch.keys(s, t - begin);
        if (keys.count == 0)
          continue; // sees no key: stays 0
        for (int64_t h = kvHead * groupSize; h < (kvHead + 1) * groupSize;
             ++h) {
          prepareQuery(kf, p, q + (t * numQHeads + h) * d, d, qr);
          attendOne(vf, p, k.data() + keys.first * d, v.data() + keys.first * d,
                    keys.count, d, qr.data(), sinks ? sinks + h : nullptr,
                    out + (t * numQHeads + h) * d);
        }
      }
    }
  }
  return Status::success();
}

Status uq::ref::attentionErrorBounds(
    const Format &kf, const Format &vf, const CacheGeometry &g,
    const uint8_t *cache, const AttentionParams &p, int64_t window,
    const float *q, int64_t numTokens, int64_t numQHeads,
    const int32_t *queryStartLoc, int64_t numSeqs, const int32_t *blockTables,
    int64_t maxBlocks, const int32_t *seqLens, const float *sinks,
    double pError, double *bounds) {
  if (g.numBlocks < 0 || numTokens < 0 || numSeqs < 0 || maxBlocks < 0 ||
      window < 0 || !(pError >= 0))
    return Status::error("attentionErrorBounds: negative size or error");
  CacheGeometry checked = g;
  checked.numBlocks = std::max<int64_t>(g.numBlocks, 1);
  Status st = validateGeometry(kf, vf, checked);
  if (!st.ok())
    return st;
  st = validateHeads(g, numQHeads);
  if (!st.ok())
    return st;
  const int64_t d = g.headDim;
  std::fill(bounds, bounds + numTokens * numQHeads * d, 1e-6);
  if (numTokens == 0 || numSeqs == 0)
    return Status::success();
  int64_t capacity = checkedMul(maxBlocks, g.blockSize);
  if (capacity < 0)
    return Status::error("block table capacity overflows int64");
  if (g.numBlocks == 0)
    capacity = 0;
  const int64_t groupSize = numQHeads / g.numKvHeads;
  const PagedBatch batch(queryStartLoc, seqLens, numSeqs, numTokens, capacity,
                         window);
  const SlotParts parts = slotParts(kf, vf, d);
  std::vector<float> qr, k, v;
  std::vector<double> logits, weighted(d);
  for (int64_t s = 0; s < numSeqs; ++s) {
    int64_t begin = batch.tokenBegin(s), end = batch.tokenEnd(s);
    if (begin == end)
      continue;
    const int32_t *table = blockTables ? blockTables + s * maxBlocks : nullptr;
    for (int64_t kvHead = 0; kvHead < g.numKvHeads; ++kvHead) {
      decodeRows(kf, vf, g, parts, cache, table, batch.seqLen(s), kvHead, k, v);
      for (int64_t t = begin; t < end; ++t) {
        KeyRange keys = batch.keys(s, t - begin);
        if (keys.count == 0)
          continue;
        for (int64_t h = kvHead * groupSize; h < (kvHead + 1) * groupSize;
             ++h) {
          prepareQuery(kf, p, q + (t * numQHeads + h) * d, d, qr);
          double m = sinks ? double(sinks[h]) : -INFINITY;
          logits.assign(keys.count, 0.0);
          for (int64_t j = 0; j < keys.count; ++j) {
            const float *row = k.data() + (keys.first + j) * d;
            double dot = 0;
            for (int64_t i = 0; i < d; ++i)
              dot += double(qr[i]) * row[i];
            logits[j] = dot * p.softmaxScale;
            m = std::max(m, logits[j]);
          }
          double denom = sinks ? std::exp(double(sinks[h]) - m) : 0.0;
          std::fill(weighted.begin(), weighted.end(), 0.0);
          for (int64_t j = 0; j < keys.count; ++j) {
            const float *row = v.data() + (keys.first + j) * d;
            double w = std::exp(logits[j] - m);
            denom += w;
            for (int64_t i = 0; i < d; ++i)
              weighted[i] += w * std::fabs(row[i]);
          }
          double *b = bounds + (t * numQHeads + h) * d;
          double sum = 0;
          for (int64_t i = 0; i < d; ++i) {
            b[i] = denom > 0 ? (pError + 1e-5) * weighted[i] / denom : 0.0;
            sum += b[i];
          }
          if (vf.rotate)
            std::fill(b, b + d, sum / std::sqrt(double(d)));
          for (int64_t i = 0; i < d; ++i)
            b[i] += 1e-6;
        }
      }
    }
  }
  return Status::success();
}
