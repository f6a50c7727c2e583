//===- CacheLayout.h - Slot offsets of the vLLM cache layout ----*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Internal helpers shared by the cache write (Cache.cpp) and the attention
// references (Attention.cpp). Not installed.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_REFERENCE_CACHELAYOUT_H
#define UQ_LIB_REFERENCE_CACHELAYOUT_H

#include "uq/Reference/Reference.h"

namespace uq {
namespace ref {
namespace detail {

/// a * b, or -1 on int64 overflow or a negative operand.
inline int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r))
    return -1;
  return r;
}

/// Byte offsets of the four parts of a slot.
struct SlotParts {
  int64_t kCodes, kScales, vCodes, vScales;
};

inline SlotParts slotParts(const Format &kf, const Format &vf, int64_t d) {
  SlotParts p;
  p.kCodes = 0;
  p.kScales = codeBytes(kf, d);
  p.vCodes = p.kScales + scaleBytes(kf, d);
  p.vScales = p.vCodes + codeBytes(vf, d);
  return p;
}

/// Byte offset of (slot, head) in a validated geometry: token-major
/// `((slot * H) + head) * slotBytes`, head-major `(((slot / bs) * H + head)
/// * bs + slot % bs) * slotBytes`.
inline int64_t slotOffset(const CacheGeometry &g, int64_t slot, int64_t head) {
  if (g.headMajor)
    return (((slot / g.blockSize) * g.numKvHeads + head) * g.blockSize +
            slot % g.blockSize) *
           g.slotBytes;
  return (slot * g.numKvHeads + head) * g.slotBytes;
}

} // namespace detail
} // namespace ref
} // namespace uq

#endif // UQ_LIB_REFERENCE_CACHELAYOUT_H
