//===- ExecCommon.h - Operand access shared by the handlers ----*- C++ -*-===//
//
// What every instruction family (Exec*.cpp) needs: per-lane operand views
// (Src and its f32/f64/f16/64-bit variants), destinations, scalar operand
// access, the active-lane loop, output modifiers, the handler macros, a few
// bit helpers used by more than one family, and the registry through which
// each family adds its handlers to the table built once by opTable().
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_EMULATOR_EXECCOMMON_H
#define UQ_LIB_EMULATOR_EXECCOMMON_H

#include "Internal.h"
#include "Numerics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace uq::emu::detail {

using ::uq::emu::MemSpace;

const uint32_t kZero[2] = {0, 0};

/// A per-lane view of one dword of a source operand: p[l & m].
struct Src {
  const uint32_t *p;
  uint32_t m;
  uint32_t operator[](unsigned l) const { return p[l & m]; }
};

inline Src src(Exec &X, Wave &W, const Operand &op, unsigned d = 0) {
  switch (op.kind) {
  case OpKind::VReg:
    return {&W.v[(op.reg + d) * 64], 63};
  case OpKind::AReg:
    return {&W.a[(op.reg + d) * 64], 63};
  case OpKind::Tmp:
    return {X.tmp[(op.reg + d) & 3], 63};
  case OpKind::SReg:
    if (op.reg == kNull)
      return {kZero, 0};
    return {&W.s[(op.reg + d) & 127], 0};
  case OpKind::Imm:
    return {&op.imm[d < 2 ? d : 0], 0};
  case OpKind::Scc:
    return {&W.scc, 0};
  case OpKind::ExecZ:
    W.cst[0] = W.exec() == 0;
    return {&W.cst[0], 0};
  case OpKind::VccZ:
    W.cst[1] = W.vcc() == 0;
    return {&W.cst[1], 0};
  default:
    return {kZero, 0};
  }
}
inline Src src(Exec &X, Wave &W, const Inst &I, unsigned i, unsigned d = 0) {
  return src(X, W, I.ops[I.src0Idx + i], d);
}

inline uint32_t *vdst(Exec &X, Wave &W, const Operand &op, unsigned d = 0) {
  switch (op.kind) {
  case OpKind::VReg:
    return &W.v[(op.reg + d) * 64];
  case OpKind::AReg:
    return &W.a[(op.reg + d) * 64];
  case OpKind::Tmp:
    return X.tmp[(2 + d) & 3];
  default:
    return X.tmp[3]; // discarded
  }
}

/// Scalar operand value (dword d).
inline uint32_t sval(Exec &X, Wave &W, const Operand &op, unsigned d = 0) {
  return src(X, W, op, d)[0];
}
inline uint64_t sval64(Exec &X, Wave &W, const Operand &op) {
  return sval(X, W, op, 0) | ((uint64_t)sval(X, W, op, 1) << 32);
}
inline void setS(Wave &W, const Operand &op, uint32_t v, unsigned d = 0) {
  if (op.kind != OpKind::SReg || op.reg == kNull)
    return;
  W.s[(op.reg + d) & 127] = v;
}
inline void setS64(Wave &W, const Operand &op, uint64_t v) {
  setS(W, op, (uint32_t)v, 0);
  setS(W, op, (uint32_t)(v >> 32), 1);
}

template <class F> inline void forLanes(uint64_t e, F &&f) {
  if (e == ~0ull) {
    for (unsigned l = 0; l < 64; ++l)
      f(l);
  } else {
    for (; e; e &= e - 1)
      f((unsigned)__builtin_ctzll(e));
  }
}

inline uint32_t fmod32(uint32_t v, const Operand &op) {
  if (op.abs)
    v &= 0x7fffffffu;
  if (op.neg)
    v ^= 0x80000000u;
  return v;
}

inline float ftz(float f) {
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

inline float outF32(const Exec &X, const Inst &I, float r) {
  if (I.omod)
    r = I.omod == 1 ? r * 2 : I.omod == 2 ? r * 4 : r * 0.5f;
  if (I.clamp)
    r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));
  return X.ftz32 ? ftz(r) : r;
}
inline double outF64(const Inst &I, double r) {
  if (I.omod)
    r = I.omod == 1 ? r * 2 : I.omod == 2 ? r * 4 : r * 0.5;
  if (I.clamp)
    r = std::isnan(r) ? 0.0 : std::min(1.0, std::max(0.0, r));
  return r;
}

/// f32 operand reader with neg/abs and denormal flushing.
struct SrcF {
  Src s;
  uint32_t andm, xorm;
  bool flush;
  float operator[](unsigned l) const {
    float f = u2f((s[l] & andm) ^ xorm);
    return flush ? ftz(f) : f;
  }
};
inline SrcF srcF(Exec &X, Wave &W, const Inst &I, unsigned i) {
  const Operand &op = I.ops[I.src0Idx + i];
  SrcF r{src(X, W, op), op.abs ? 0x7fffffffu : ~0u, op.neg ? 0x80000000u : 0,
         X.ftz32};
  return r;
}
struct SrcD {
  Src lo, hi;
  uint32_t andm, xorm;
  double operator[](unsigned l) const {
    return u2d((uint64_t)lo[l] | ((uint64_t)((hi[l] & andm) ^ xorm) << 32));
  }
};
inline SrcD srcD(Exec &X, Wave &W, const Inst &I, unsigned i) {
  const Operand &op = I.ops[I.src0Idx + i];
  return {src(X, W, op, 0), src(X, W, op, 1), op.abs ? 0x7fffffffu : ~0u,
          op.neg ? 0x80000000u : 0};
}
struct Src64 {
  Src lo, hi;
  uint64_t operator[](unsigned l) const {
    return (uint64_t)lo[l] | ((uint64_t)hi[l] << 32);
  }
};
inline Src64 src64(Exec &X, Wave &W, const Inst &I, unsigned i) {
  const Operand &op = I.ops[I.src0Idx + i];
  if (op.kind == OpKind::Imm && op.literal) // 32-bit literal, zero-extended
    return {src(X, W, op, 0), {kZero, 0}};
  return {src(X, W, op, 0), src(X, W, op, 1)};
}
/// f16 operand (VOP1/2/3): op_sel bit i picks the high half.
struct SrcH {
  Src s;
  unsigned shift;
  uint16_t andm, xorm;
  float operator[](unsigned l) const {
    return f16ToF32((uint16_t)(((s[l] >> shift) & andm) ^ xorm));
  }
};
inline SrcH srcH(Exec &X, Wave &W, const Inst &I, unsigned i) {
  const Operand &op = I.ops[I.src0Idx + i];
  return {src(X, W, op), (I.opSel >> i) & 1 ? 16u : 0u,
          (uint16_t)(op.abs ? 0x7fff : 0xffff), (uint16_t)(op.neg ? 0x8000 : 0)};
}


//===----------------------------------------------------------------------===//
// Handler macros
//===----------------------------------------------------------------------===//

#define H(NAME) static void NAME(Exec &X, Wave &W, const Inst &I)
#define DST0 uint32_t *d = vdst(X, W, I.ops[0])

// 32-bit integer ops: A, B, C are uint32_t.
#define VI1(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    DST0;                                                                      \
    Src a = src(X, W, I, 0);                                                   \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      uint32_t A = a[l];                                                       \
      (void)A;                                                                 \
      d[l] = (EXPR);                                                           \
    });                                                                        \
  }
#define VI2(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    DST0;                                                                      \
    Src a = src(X, W, I, 0), b = src(X, W, I, 1);                              \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      uint32_t A = a[l], B = b[l];                                             \
      d[l] = (EXPR);                                                           \
    });                                                                        \
  }
#define VI3(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    DST0;                                                                      \
    Src a = src(X, W, I, 0), b = src(X, W, I, 1), c = src(X, W, I, 2);         \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      uint32_t A = a[l], B = b[l], C = c[l];                                   \
      d[l] = (EXPR);                                                           \
    });                                                                        \
  }
#define VF1(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    DST0;                                                                      \
    SrcF a = srcF(X, W, I, 0);                                                 \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      float A = a[l];                                                          \
      d[l] = f2u(outF32(X, I, (EXPR)));                                        \
    });                                                                        \
  }
#define VF2(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    DST0;                                                                      \
    SrcF a = srcF(X, W, I, 0), b = srcF(X, W, I, 1);                           \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      float A = a[l], B = b[l];                                                \
      d[l] = f2u(outF32(X, I, (EXPR)));                                        \
    });                                                                        \
  }
#define VF3(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    DST0;                                                                      \
    SrcF a = srcF(X, W, I, 0), b = srcF(X, W, I, 1), c = srcF(X, W, I, 2);     \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      float A = a[l], B = b[l], C = c[l];                                      \
      d[l] = f2u(outF32(X, I, (EXPR)));                                        \
    });                                                                        \
  }
#define VD1(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);     \
    SrcD a = srcD(X, W, I, 0);                                                 \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      double A = a[l];                                                         \
      uint64_t r = d2u(outF64(I, (EXPR)));                                     \
      d0[l] = (uint32_t)r;                                                     \
      d1[l] = (uint32_t)(r >> 32);                                             \
    });                                                                        \
  }
#define VD2(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);     \
    SrcD a = srcD(X, W, I, 0), b = srcD(X, W, I, 1);                           \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      double A = a[l], B = b[l];                                               \
      uint64_t r = d2u(outF64(I, (EXPR)));                                     \
      d0[l] = (uint32_t)r;                                                     \
      d1[l] = (uint32_t)(r >> 32);                                             \
    });                                                                        \
  }
#define VD3(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);     \
    SrcD a = srcD(X, W, I, 0), b = srcD(X, W, I, 1), c = srcD(X, W, I, 2);     \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      double A = a[l], B = b[l], C = c[l];                                     \
      uint64_t r = d2u(outF64(I, (EXPR)));                                     \
      d0[l] = (uint32_t)r;                                                     \
      d1[l] = (uint32_t)(r >> 32);                                             \
    });                                                                        \
  }
// 64-bit integer ops with a 32-bit shift amount first (lshlrev_b64 style).
#define VQ2(NAME, EXPR)                                                        \
  H(NAME) {                                                                    \
    uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);     \
    Src a = src(X, W, I, 0);                                                   \
    Src64 b = src64(X, W, I, 1);                                               \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      uint32_t A = a[l];                                                       \
      uint64_t B = b[l];                                                       \
      uint64_t r = (EXPR);                                                     \
      d0[l] = (uint32_t)r;                                                     \
      d1[l] = (uint32_t)(r >> 32);                                             \
    });                                                                        \
  }
// f16 (non-packed) ops; result in the low half, high half zeroed (gfx9),
// or in the high half (low kept) with op_sel[3].
#define VH(NAME, NARGS, EXPR)                                                  \
  H(NAME) {                                                                    \
    DST0;                                                                      \
    SrcH a = srcH(X, W, I, 0), b = srcH(X, W, I, NARGS > 1 ? 1 : 0),           \
         c = srcH(X, W, I, NARGS > 2 ? 2 : 0);                                 \
    bool hi = (I.opSel >> 3) & 1;                                              \
    forLanes(W.exec(), [&](unsigned l) {                                       \
      float A = a[l], B = b[l], C = c[l];                                      \
      (void)B;                                                                 \
      (void)C;                                                                 \
      float r = (EXPR);                                                        \
      if (I.clamp)                                                             \
        r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));          \
      uint16_t h = f32ToF16(r);                                                \
      d[l] = hi ? (d[l] & 0xffffu) | ((uint32_t)h << 16) : h;                  \
    });                                                                        \
  }
inline int32_t sext(uint32_t v, unsigned bits) {
  return bits >= 32 ? (int32_t)v : (int32_t)(v << (32 - bits)) >> (32 - bits);
}
inline uint32_t bfeU(uint32_t v, uint32_t off, uint32_t w) {
  off &= 31;
  w &= 31;
  if (!w)
    return 0;
  return off + w < 32 ? (v << (32 - off - w)) >> (32 - w) : v >> off;
}
inline int32_t bfeI(uint32_t v, uint32_t off, uint32_t w) {
  off &= 31;
  w &= 31;
  if (!w)
    return 0;
  return off + w < 32 ? (int32_t)(v << (32 - off - w)) >> (32 - w)
                      : (int32_t)v >> off;
}

template <class T> bool cmpInt(unsigned c, T a, T b) {
  switch (c) { // f lt eq le gt ne ge t
  case 0: return false;
  case 1: return a < b;
  case 2: return a == b;
  case 3: return a <= b;
  case 4: return a > b;
  case 5: return a != b;
  case 6: return a >= b;
  default: return true;
  }
}

/// Moves `bytes` (<= 16) loaded at `p` into lane `l` of the registers of
/// `data`. Sub-dword loads zero- (aux2 0) or sign-extend (aux2 1), or fill
/// the low (aux2 2) or high (aux2 3) 16 bits and keep the other half (d16).
inline void loadToLane(Exec &X, Wave &W, const Inst &I, const Operand &data,
                       unsigned l, const uint8_t *p, unsigned bytes) {
  uint32_t buf[4] = {0, 0, 0, 0};
  std::memcpy(buf, p, bytes);
  if (bytes >= 4) {
    for (unsigned i = 0, n = (bytes + 3) / 4; i < n; ++i)
      vdst(X, W, data, i)[l] = buf[i];
    return;
  }
  uint32_t v = buf[0];
  if (I.aux2 == 1)
    v = (uint32_t)sext(v, 8 * bytes);
  uint32_t &dd = vdst(X, W, data)[l];
  if (I.aux2 == 2)
    v = (dd & 0xffff0000u) | v;
  else if (I.aux2 == 3)
    v = (dd & 0xffffu) | (v << 16);
  dd = v;
}

/// Stores `bytes` (<= 16) of lane `l` of the registers of `data` at `p`;
/// aux2 3 (d16_hi) stores the high 16 bits of the first register.
inline void storeFromLane(Exec &X, Wave &W, const Inst &I,
                          const Operand &data, unsigned l, uint8_t *p,
                          unsigned bytes) {
  uint32_t buf[4];
  for (unsigned i = 0, n = (bytes + 3) / 4; i < n; ++i)
    buf[i] = src(X, W, data, i)[l];
  if (I.aux2 == 3)
    buf[0] >>= 16;
  std::memcpy(p, buf, bytes);
}

/// The table every family registers into (see opTable() in OpTable.cpp).
struct OpRegistry {
  llvm::StringMap<OpEntry> &table;
  void add(llvm::StringRef n, ExecFn f, Cls c, FT ft = FT::None, int aux = 0,
           int aux2 = 0, uint8_t nDst = 1) {
    assert(!table.count(n) && "mnemonic registered twice");
    table[n] = OpEntry{f, c, ft, aux, aux2, nDst};
  }
};
void registerScalarOps(OpRegistry &R);
void registerVectorOps(OpRegistry &R);
void registerConvertOps(OpRegistry &R);
void registerMfmaOps(OpRegistry &R);
void registerMemoryOps(OpRegistry &R);
void registerLdsOps(OpRegistry &R);
void registerLaneOps(OpRegistry &R);

/// Short names used by the registration functions: add(name, fn, class, ...),
/// V (VALU), T (transcendental), S (SALU), and VR/VRF/VRD/VRH/SR(handler)
/// registering a handler under its own name.
#define REGISTRY_HELPERS(R)                                                    \
  auto add = [&](llvm::StringRef n, ExecFn f, Cls c, FT ft = FT::None,         \
                 int aux = 0, int aux2 = 0, uint8_t nDst = 1) {                \
    R.add(n, f, c, ft, aux, aux2, nDst);                                       \
  };                                                                           \
  auto V = [&](llvm::StringRef n, ExecFn f, FT ft = FT::None,                  \
               uint8_t nDst = 1) { add(n, f, Cls::VALU, ft, 0, 0, nDst); };    \
  auto T = [&](llvm::StringRef n, ExecFn f, FT ft = FT::F32) {                 \
    add(n, f, Cls::Trans, ft);                                                 \
  };                                                                           \
  auto S = [&](llvm::StringRef n, ExecFn f, uint8_t nDst = 1) {                \
    add(n, f, Cls::SALU, FT::None, 0, 0, nDst);                                \
  };                                                                           \
  (void)add, (void)V, (void)T, (void)S
#define VR(N) V(#N, N)
#define VRF(N) V(#N, N, FT::F32)
#define VRD(N) V(#N, N, FT::F64)
#define VRH(N) V(#N, N, FT::F16)
#define SR(N) S(#N, N)

} // namespace uq::emu::detail

#endif // UQ_LIB_EMULATOR_EXECCOMMON_H
