//===- Cache.cpp - vLLM-layout paged cache
//---------------------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The slot layout follows docs/ultraquant-format.md ("Cache layout
// compatible with vLLM"). The attention references are in Attention.cpp.
//
//===----------------------------------------------------------------------===//

#include "CacheLayout.h"

#include <string>

using namespace uq::ref;

namespace {
using detail::checkedMul;
using detail::slotOffset;
using detail::slotParts;
using detail::SlotParts;

/// Number of slots (numBlocks * blockSize) of a validated geometry.
int64_t numSlots(const CacheGeometry &g) {
  return checkedMul(g.numBlocks, g.blockSize);
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
                           int64_t numTokens, uint8_t *cache) {
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
  for (int64_t t = 0; t < numTokens; ++t) {
    int64_t slot = slotMapping[t];
    if (slot < 0)
      continue; // Padding token: skip, leave the cache untouched.
    for (int64_t h = 0; h < g.numKvHeads; ++h) {
      uint8_t *base = cache + slotOffset(g, slot, h);
      const int64_t row = (t * g.numKvHeads + h) * d;
      st = encodeRow(kf, k + row, d, base + parts.kCodes, base + parts.kScales);
      if (!st.ok())
        return st; // Unreachable: the formats were validated.
      st = encodeRow(vf, v + row, d, base + parts.vCodes, base + parts.vScales);
      if (!st.ok())
        return st;
    }
  }
  return Status::success();
}
