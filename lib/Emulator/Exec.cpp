//===- Exec.cpp - gfx950 instruction semantics ----------------------------===//
//
// One handler per mnemonic (or family), registered by name in opTable().
// Handlers read pre-decoded operands (Inst::ops) and loop over the active
// lanes of the wave. Semantics follow the AMD "CDNA3/CDNA4 Instruction Set
// Architecture" reference guides; every deviation or guess is listed in
// docs/emulator.md.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "Numerics.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace uq::emu::detail;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

static std::string where(const Exec &X, const Inst &I) {
  return llvm::formatv("at {0:x} ({1})", I.pc - X.codeBase, I.text).str();
}

void Exec::fail(const Inst &I, const std::string &msg) {
  if (failed)
    return;
  failed = true;
  error = msg + " " + where(*this, I);
}

void Exec::failLane(const Inst &I, unsigned lane, uint64_t addr,
                    unsigned bytes, const char *what) {
  if (failed)
    return;
  failed = true;
  error = llvm::formatv("out-of-bounds {0} of {1} bytes at address {2:x} "
                        "(lane {3}) {4}",
                        what, bytes, addr, lane, where(*this, I))
              .str();
}

void uq::emu::detail::execUnimplemented(Exec &X, Wave &, const Inst &I) {
  X.fail(I, "unimplemented instruction '" + I.name + "'");
}

//===----------------------------------------------------------------------===//
// Operand access
//===----------------------------------------------------------------------===//

namespace {

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

inline uint64_t lanesOf(Wave &W) { return W.exec(); }

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
inline uint32_t perm(uint32_t s0, uint32_t s1, uint32_t sel) {
  // v_perm_b32: bytes of {s0, s1} (s1 is the low dword), per selector byte.
  uint64_t v = ((uint64_t)s0 << 32) | s1;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t s = (sel >> (8 * i)) & 0xff, b;
    if (s < 8)
      b = (v >> (8 * s)) & 0xff;
    else if (s < 12) {
      // Sign of bytes 1, 3, 5, 7 replicated.
      unsigned idx = (s - 8) * 2 + 1;
      b = ((v >> (8 * idx + 7)) & 1) ? 0xff : 0;
    } else if (s == 12)
      b = 0;
    else
      b = 0xff;
    r |= b << (8 * i);
  }
  return r;
}
float fmed3(float a, float b, float c) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(c))
    return std::fmin(std::fmin(a, b), c);
  return std::fmax(std::fmin(a, b), std::fmin(std::fmax(a, b), c));
}
template <class T> T med3(T a, T b, T c) {
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}
float frexpMant(float x) {
  if (std::isnan(x) || std::isinf(x))
    return x;
  int e;
  return std::frexp(x, &e);
}
double frexpMantD(double x) {
  if (std::isnan(x) || std::isinf(x))
    return x;
  int e;
  return std::frexp(x, &e);
}
int32_t frexpExp(double x) {
  if (std::isnan(x) || std::isinf(x))
    return 0;
  int e;
  std::frexp(x, &e);
  return e;
}
float rndne(float x) { return std::nearbyint(x); }
float fractF(float x) {
  if (std::isinf(x))
    return NAN;
  float r = x - std::floor(x);
  return std::min(r, 0x1.fffffep-1f);
}
int32_t cvtI32(double x) {
  if (std::isnan(x))
    return 0;
  x = std::trunc(x);
  if (x >= 2147483647.0)
    return INT32_MAX;
  if (x <= -2147483648.0)
    return INT32_MIN;
  return (int32_t)x;
}
uint32_t cvtU32(double x) {
  if (std::isnan(x) || x <= 0)
    return 0;
  x = std::trunc(x);
  if (x >= 4294967295.0)
    return UINT32_MAX;
  return (uint32_t)x;
}
float fminIEEE(float a, float b) { return std::fmin(a, b); }
/// IEEE 754-2019 maximum/minimum (llvm.maximum/minimum, which llc selects as
/// v_maximum3_f32 a, b, b on gfx950): a NaN operand gives a quiet NaN (the
/// first NaN operand, quieted), and -0 < +0.
template <class T> T maximum2019(T a, T b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) ? a + a : b + b;
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class T> T minimum2019(T a, T b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) ? a + a : b + b;
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
float fmaxIEEE(float a, float b) { return std::fmax(a, b); }

//===----------------------------------------------------------------------===//
// VALU
//===----------------------------------------------------------------------===//

VI1(v_mov_b32, A)
VI1(v_not_b32, ~A)
VI1(v_bfrev_b32, llvm::reverseBits<uint32_t>(A))
VI1(v_ffbh_u32, A ? (uint32_t)__builtin_clz(A) : ~0u)
VI1(v_ffbl_b32, A ? (uint32_t)__builtin_ctz(A) : ~0u)
VI1(v_ffbh_i32,
    ((int32_t)A == 0 || (int32_t)A == -1)
        ? ~0u
        : (uint32_t)__builtin_clz((int32_t)A < 0 ? ~A : A) - 1)
VI1(v_cvt_f32_u32, f2u(outF32(X, I, (float)A)))
VI1(v_cvt_f32_i32, f2u(outF32(X, I, (float)(int32_t)A)))
VI1(v_cvt_f32_ubyte0, f2u((float)(A & 0xff)))
VI1(v_cvt_f32_ubyte1, f2u((float)((A >> 8) & 0xff)))
VI1(v_cvt_f32_ubyte2, f2u((float)((A >> 16) & 0xff)))
VI1(v_cvt_f32_ubyte3, f2u((float)(A >> 24)))
VI1(v_cvt_f32_bf16, A << 16)
VI2(v_add_u32, A + B)
VI2(v_sub_u32, A - B)
VI2(v_subrev_u32, B - A)
VI2(v_mul_lo_u32, A * B)
VI2(v_mul_hi_u32, (uint32_t)(((uint64_t)A * B) >> 32))
VI2(v_mul_hi_i32, (uint32_t)(((int64_t)(int32_t)A * (int32_t)B) >> 32))
VI2(v_mul_u32_u24, (A & 0xffffff) * (B & 0xffffff))
VI2(v_mul_i32_i24, (uint32_t)(sext(A, 24) * sext(B, 24)))
VI2(v_mul_hi_u32_u24,
    (uint32_t)(((uint64_t)(A & 0xffffff) * (B & 0xffffff)) >> 32))
VI2(v_mul_hi_i32_i24, (uint32_t)(((int64_t)sext(A, 24) * sext(B, 24)) >> 32))
VI2(v_lshlrev_b32, B << (A & 31))
VI2(v_lshrrev_b32, B >> (A & 31))
VI2(v_ashrrev_i32, (uint32_t)((int32_t)B >> (A & 31)))
VI2(v_lshl_b32, A << (B & 31))
VI2(v_and_b32, A &B)
VI2(v_or_b32, A | B)
VI2(v_xor_b32, A ^ B)
VI2(v_xnor_b32, ~(A ^ B))
VI2(v_min_u32, std::min(A, B))
VI2(v_max_u32, std::max(A, B))
VI2(v_min_i32, (uint32_t)std::min((int32_t)A, (int32_t)B))
VI2(v_max_i32, (uint32_t)std::max((int32_t)A, (int32_t)B))
VI2(v_bcnt_u32_b32, (uint32_t)__builtin_popcount(A) + B)
VI2(v_bfm_b32, ((1u << (A & 31)) - 1) << (B & 31))
VI2(v_mbcnt_lo_u32_b32, (uint32_t)__builtin_popcount(A & (((1u << (l & 31)) - 1) | (l >= 32 ? ~0u : 0))) + B)
VI2(v_mbcnt_hi_u32_b32, (uint32_t)__builtin_popcount(l < 32 ? 0u : (A & ((l == 32 ? 0u : (1u << (l - 32)) - 1)))) + B)
VI2(v_pack_b32_f16, (A & 0xffff) | (B << 16))
VI2(v_lshlrev_b16, (uint32_t)(uint16_t)(B << (A & 15)))
VI2(v_lshrrev_b16, (uint32_t)((uint16_t)B >> (A & 15)))
VI2(v_add_u16, (uint32_t)(uint16_t)(A + B))
VI2(v_sub_u16, (uint32_t)(uint16_t)(A - B))
VI2(v_mul_lo_u16, (uint32_t)(uint16_t)(A * B))
VI2(v_cvt_pk_u16_u32, (std::min(A, 0xffffu)) | (std::min(B, 0xffffu) << 16))
VI2(v_cvt_pk_i16_i32,
    (uint32_t)(uint16_t)std::clamp((int32_t)A, -32768, 32767) |
        ((uint32_t)(uint16_t)std::clamp((int32_t)B, -32768, 32767) << 16))
VI3(v_add3_u32, A + B + C)
VI3(v_xad_u32, (A ^ B) + C)
VI3(v_lshl_add_u32, (A << (B & 31)) + C)
VI3(v_add_lshl_u32, (A + B) << (C & 31))
VI3(v_lshl_or_b32, (A << (B & 31)) | C)
VI3(v_and_or_b32, (A & B) | C)
VI3(v_or3_b32, A | B | C)
VI3(v_bfe_u32, bfeU(A, B, C))
VI3(v_bfe_i32, (uint32_t)bfeI(A, B, C))
VI3(v_bfi_b32, (A & B) | (~A & C))
VI3(v_alignbit_b32, (uint32_t)((((uint64_t)A << 32) | B) >> (C & 31)))
VI3(v_alignbyte_b32, (uint32_t)((((uint64_t)A << 32) | B) >> (8 * (C & 3))))
VI3(v_perm_b32, perm(A, B, C))
VI3(v_mad_u32_u24, (A & 0xffffff) * (B & 0xffffff) + C)
VI3(v_mad_i32_i24, (uint32_t)(sext(A, 24) * sext(B, 24)) + C)
VI3(v_min3_u32, std::min(std::min(A, B), C))
VI3(v_max3_u32, std::max(std::max(A, B), C))
VI3(v_med3_u32, med3(A, B, C))
VI3(v_min3_i32, (uint32_t)std::min(std::min((int32_t)A, (int32_t)B), (int32_t)C))
VI3(v_max3_i32, (uint32_t)std::max(std::max((int32_t)A, (int32_t)B), (int32_t)C))
VI3(v_med3_i32, (uint32_t)med3((int32_t)A, (int32_t)B, (int32_t)C))
VI3(v_mad_u32_u16, (A & 0xffff) * (B & 0xffff) + C)

/// v_bitop3: bit i of the result is bit (s0 << 2 | s1 << 1 | s2) of the
/// 8-bit table, i.e. src0 is the MSB of the index (LLVM's BitOp3_Op assigns
/// src0/src1/src2 the tables 0xf0/0xcc/0xaa; see docs/emulator.md).
inline uint32_t bitop3(uint32_t a, uint32_t b, uint32_t c, uint8_t t) {
  uint32_t r = 0;
  for (unsigned i = 0; i < 8; ++i)
    if ((t >> i) & 1)
      r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  return r;
}
H(v_bitop3_b32) {
  DST0;
  Src a = src(X, W, I, 0), b = src(X, W, I, 1), c = src(X, W, I, 2);
  uint8_t t = I.bitop3;
  forLanes(W.exec(), [&](unsigned l) { d[l] = bitop3(a[l], b[l], c[l], t); });
}
/// v_bitop3_b16: op_sel[0..2] pick the high half of src0..2, op_sel[3]
/// writes the high half; the other half of vdst is kept (**uncertain**: LLVM's
/// zeroesHigh16BitsOfDest does not list it as zeroing).
H(v_bitop3_b16) {
  DST0;
  Src a = src(X, W, I, 0), b = src(X, W, I, 1), c = src(X, W, I, 2);
  unsigned sa = (I.opSel & 1) ? 16 : 0, sb = (I.opSel & 2) ? 16 : 0,
           sc = (I.opSel & 4) ? 16 : 0;
  bool hi = (I.opSel >> 3) & 1;
  uint8_t t = I.bitop3;
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t r = bitop3(a[l] >> sa, b[l] >> sb, c[l] >> sc, t) & 0xffffu;
    d[l] = hi ? (d[l] & 0xffffu) | (r << 16) : (d[l] & 0xffff0000u) | r;
  });
}
/// v_permlane16_swap_b32 vdst, vsrc: odd rows (16 lanes) of vdst are swapped
/// with even rows of vsrc: vdst[l+16] <-> vsrc[l] for l in rows 0 and 2.
/// v_permlane32_swap_b32: vdst[l+32] <-> vsrc[l] for l = 0..31. Both
/// registers are written. A lane is written only if it is active; if its
/// partner lane is inactive and fi is 0, it reads 0 with bound_ctrl, else it
/// is not written (**uncertain**, from the amdgpu.permlane_swap description).
template <unsigned Half> static void permlaneSwap(Exec &X, Wave &W, const Inst &I) {
  const Operand &od = I.ops[0], &os = I.ops[1];
  if (od.kind != OpKind::VReg || os.kind != OpKind::VReg) {
    X.fail(I, "v_permlane*_swap needs VGPR operands");
    return;
  }
  uint32_t *d = vdst(X, W, od), *s = vdst(X, W, os);
  uint32_t oldD[64], oldS[64];
  std::memcpy(oldD, d, sizeof oldD);
  std::memcpy(oldS, s, sizeof oldS);
  uint64_t exec = W.exec();
  auto active = [&](unsigned l) { return (exec >> l) & 1; };
  for (unsigned l = 0; l < 64; ++l) {
    // Lanes of vsrc that give away their value: rows 0, 2 (16) / lanes 0..31.
    bool low = Half == 16 ? ((l >> 4) & 1) == 0 : l < 32;
    if (!low)
      continue;
    unsigned a = l + Half; // vdst lane receiving vsrc[l]
    if (active(a)) {
      if (active(l) || I.fi)
        d[a] = oldS[l];
      else if (I.boundCtrl)
        d[a] = 0;
    }
    if (active(l)) {
      if (active(a) || I.fi)
        s[l] = oldD[a];
      else if (I.boundCtrl)
        s[l] = 0;
    }
  }
}

VF2(v_add_f32, A + B)
VF2(v_sub_f32, A - B)
VF2(v_subrev_f32, B - A)
VF2(v_mul_f32, A *B)
VF2(v_mul_legacy_f32, (A == 0 || B == 0) ? 0.0f : A * B)
VF2(v_min_f32, fminIEEE(A, B))
VF2(v_max_f32, fmaxIEEE(A, B))
VF2(v_ldexp_f32, std::ldexp(A, (int32_t)f2u(B)))
VF3(v_fma_f32, std::fma(A, B, C))
VF3(v_mad_f32, ftz(A * B) + C)
VF3(v_min3_f32, fminIEEE(fminIEEE(A, B), C))
VF3(v_max3_f32, fmaxIEEE(fmaxIEEE(A, B), C))
VF3(v_med3_f32, fmed3(A, B, C))
VF3(v_maximum3_f32, maximum2019(maximum2019(A, B), C))
VF3(v_minimum3_f32, minimum2019(minimum2019(A, B), C))
/// v_div_scale_f32/f64 vdst, sdst, s0, s1, s2: NOT modelled as scaling (see
/// docs/emulator.md): vdst = s0, and sdst (the VCC input of v_div_fmas) gets 0
/// for the active lanes. With v_div_fmas a plain fma and v_div_fixup's
/// special cases, LLVM's division sequence gives the correctly rounded
/// quotient for operands whose quotient and reciprocal are normal.
template <bool F64> static void divScale(Exec &X, Wave &W, const Inst &I) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  uint64_t old = sval64(X, W, I.ops[1]);
  if constexpr (F64) {
    SrcD a = srcD(X, W, I, 0);
    forLanes(W.exec(), [&](unsigned l) {
      uint64_t r = d2u(a[l]);
      d0[l] = (uint32_t)r;
      d1[l] = (uint32_t)(r >> 32);
    });
  } else {
    SrcF a = srcF(X, W, I, 0);
    forLanes(W.exec(), [&](unsigned l) { d0[l] = f2u(a[l]); });
  }
  setS64(W, I.ops[1], old & ~W.exec());
}
VF3(v_div_fmas_f32, std::fma(A, B, C))
VF3(v_div_fixup_f32,
    (std::isnan(B) || std::isnan(C) || std::isinf(B) || std::isinf(C) ||
     B == 0.0f || std::isnan(A))
        ? C / B
        : A)
VF1(v_exp_f32, std::exp2(A))
VF1(v_log_f32, std::log2(A))
VF1(v_rcp_f32, 1.0f / A)
VF1(v_rcp_iflag_f32, 1.0f / A)
VF1(v_rsq_f32, 1.0f / std::sqrt(A))
VF1(v_sqrt_f32, std::sqrt(A))
VF1(v_sin_f32, (float)std::sin((double)A * 2 * M_PI))
VF1(v_cos_f32, (float)std::cos((double)A * 2 * M_PI))
VF1(v_rndne_f32, rndne(A))
VF1(v_trunc_f32, std::trunc(A))
VF1(v_ceil_f32, std::ceil(A))
VF1(v_floor_f32, std::floor(A))
VF1(v_fract_f32, fractF(A))
VF1(v_frexp_mant_f32, frexpMant(A))
VF1(v_cvt_rpi_i32_f32, u2f((uint32_t)cvtI32(std::floor((double)A + 0.5))))
VF1(v_cvt_flr_i32_f32, u2f((uint32_t)cvtI32(std::floor((double)A))))

H(v_cvt_u32_f32) {
  DST0;
  SrcF a = srcF(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = cvtU32(a[l]); });
}
H(v_cvt_i32_f32) {
  DST0;
  SrcF a = srcF(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = (uint32_t)cvtI32(a[l]); });
}
H(v_frexp_exp_i32_f32) {
  DST0;
  SrcF a = srcF(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = (uint32_t)frexpExp(a[l]); });
}
H(v_cvt_f16_f32) {
  DST0;
  SrcF a = srcF(X, W, I, 0);
  bool hi = (I.opSel >> 3) & 1;
  forLanes(W.exec(), [&](unsigned l) {
    uint16_t h = f32ToF16(a[l]);
    d[l] = hi ? (d[l] & 0xffff) | ((uint32_t)h << 16) : h;
  });
}
H(v_cvt_f32_f16) {
  DST0;
  SrcH a = srcH(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = f2u(outF32(X, I, a[l])); });
}
H(v_cvt_pkrtz_f16_f32_impl) {
  DST0;
  SrcF a = srcF(X, W, I, 0), b = srcF(X, W, I, 1);
  auto rtz = [](float f) {
    uint16_t h = f32ToF16(f);
    // Round toward zero: step back when rounding went away from zero.
    float back = f16ToF32(h);
    if (!std::isnan(f) && std::fabs(back) > std::fabs(f))
      --h;
    return h;
  };
  forLanes(W.exec(), [&](unsigned l) {
    d[l] = rtz(a[l]) | ((uint32_t)rtz(b[l]) << 16);
  });
}
H(v_cvt_pk_bf16_f32) {
  DST0;
  SrcF a = srcF(X, W, I, 0), b = srcF(X, W, I, 1);
  forLanes(W.exec(), [&](unsigned l) {
    d[l] = f32ToBf16(a[l]) | ((uint32_t)f32ToBf16(b[l]) << 16);
  });
}
H(v_cvt_f64_f32) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  SrcF a = srcF(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t r = d2u(outF64(I, (double)a[l]));
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  });
}
H(v_cvt_f64_i32_impl) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  Src a = src(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t r = d2u((double)(int32_t)a[l]);
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  });
}
H(v_cvt_f64_u32) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  Src a = src(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t r = d2u((double)a[l]);
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  });
}
H(v_cvt_f32_f64) {
  DST0;
  SrcD a = srcD(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) {
    d[l] = f2u(outF32(X, I, (float)a[l]));
  });
}
H(v_cvt_i32_f64) {
  DST0;
  SrcD a = srcD(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = (uint32_t)cvtI32(a[l]); });
}
H(v_cvt_u32_f64) {
  DST0;
  SrcD a = srcD(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = cvtU32(a[l]); });
}
H(v_frexp_exp_i32_f64) {
  DST0;
  SrcD a = srcD(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = (uint32_t)frexpExp(a[l]); });
}
VD2(v_add_f64, A + B)
VD2(v_mul_f64, A *B)
VD2(v_min_f64, std::fmin(A, B))
VD2(v_max_f64, std::fmax(A, B))
VD3(v_fma_f64, std::fma(A, B, C))
VD3(v_div_fmas_f64, std::fma(A, B, C))
VD3(v_div_fixup_f64,
    (std::isnan(B) || std::isnan(C) || std::isinf(B) || std::isinf(C) ||
     B == 0.0 || std::isnan(A))
        ? C / B
        : A)
VD1(v_rcp_f64, 1.0 / A)
VD1(v_rsq_f64, 1.0 / std::sqrt(A))
VD1(v_sqrt_f64, std::sqrt(A))
VD1(v_trunc_f64, std::trunc(A))
VD1(v_floor_f64, std::floor(A))
VD1(v_ceil_f64, std::ceil(A))
VD1(v_rndne_f64, std::nearbyint(A))
VD1(v_fract_f64, std::isinf(A) ? NAN : std::min(A - std::floor(A), 0x1.fffffffffffffp-1))
VD1(v_frexp_mant_f64, frexpMantD(A))
H(v_ldexp_f64) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  SrcD a = srcD(X, W, I, 0);
  Src b = src(X, W, I, 1);
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t r = d2u(std::ldexp(a[l], (int32_t)b[l]));
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  });
}

VQ2(v_lshlrev_b64, B << (A & 63))
VQ2(v_lshrrev_b64, B >> (A & 63))
VQ2(v_ashrrev_i64, (uint64_t)((int64_t)B >> (A & 63)))
H(v_lshl_add_u64) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  Src64 a = src64(X, W, I, 0), c = src64(X, W, I, 2);
  Src b = src(X, W, I, 1);
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t r = (a[l] << (b[l] & 7)) + c[l];
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  });
}
H(v_mov_b64) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  Src64 a = src64(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t r = a[l];
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  });
}
// v_mad_u64_u32 vdst[2], sdst[2], s0, s1, s2[2]
template <bool Signed> void madX64(Exec &X, Wave &W, const Inst &I) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  Src a = src(X, W, I, 0), b = src(X, W, I, 1);
  Src64 c = src64(X, W, I, 2);
  uint64_t carry = 0;
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t r;
    bool ov;
    if (Signed) {
      __int128 p = (__int128)(int64_t)(int32_t)a[l] * (int32_t)b[l] +
                   (__int128)(int64_t)c[l];
      r = (uint64_t)p;
      ov = p != (__int128)(int64_t)r;
    } else {
      unsigned __int128 p =
          (unsigned __int128)((uint64_t)a[l] * b[l]) + c[l];
      r = (uint64_t)p;
      ov = (p >> 64) != 0;
    }
    if (ov)
      carry |= 1ull << l;
    d0[l] = (uint32_t)r;
    d1[l] = (uint32_t)(r >> 32);
  });
  uint64_t old = sval64(X, W, I.ops[1]);
  setS64(W, I.ops[1], (old & ~W.exec()) | carry);
}
H(v_mad_u64_u32) { madX64<false>(X, W, I); }
H(v_mad_i64_i32) { madX64<true>(X, W, I); }

/// Carry-out ops: vdst, sdst(carry), s0, s1 [, s2 carry-in].
template <int Kind> void carryOp(Exec &X, Wave &W, const Inst &I) {
  DST0;
  Src a = src(X, W, I, 0), b = src(X, W, I, 1);
  uint64_t cin = 0;
  if (Kind >= 3) {
    const Operand &c = I.ops[I.src0Idx + 2];
    cin = c.kind == OpKind::None ? W.vcc() : sval64(X, W, c);
  }
  uint64_t cout = 0;
  forLanes(W.exec(), [&](unsigned l) {
    uint64_t A = a[l], B = b[l], ci = (cin >> l) & 1, r;
    bool c;
    switch (Kind) {
    case 0: // add_co
      r = A + B, c = r >> 32;
      break;
    case 1: // sub_co
      r = A - B, c = B > A;
      break;
    case 2: // subrev_co
      r = B - A, c = A > B;
      break;
    case 3: // addc
      r = A + B + ci, c = r >> 32;
      break;
    case 4: // subb
      r = A - B - ci, c = B + ci > A;
      break;
    default: // subbrev
      r = B - A - ci, c = A + ci > B;
      break;
    }
    d[l] = (uint32_t)r;
    if (c)
      cout |= 1ull << l;
  });
  const Operand &sd = I.ops[1];
  uint64_t old = sd.kind == OpKind::SReg ? sval64(X, W, sd) : 0;
  setS64(W, sd, (old & ~W.exec()) | cout);
}
H(v_add_co_u32) { carryOp<0>(X, W, I); }
H(v_sub_co_u32) { carryOp<1>(X, W, I); }
H(v_subrev_co_u32) { carryOp<2>(X, W, I); }
H(v_addc_co_u32) { carryOp<3>(X, W, I); }
H(v_subb_co_u32) { carryOp<4>(X, W, I); }
H(v_subbrev_co_u32) { carryOp<5>(X, W, I); }

H(v_cndmask_b32) {
  DST0;
  Src a = src(X, W, I, 0), b = src(X, W, I, 1);
  const Operand &mo = I.ops[I.src0Idx + 2];
  uint64_t m = (I.nOps > I.src0Idx + 2 && mo.kind != OpKind::None)
                   ? sval64(X, W, mo)
                   : W.vcc();
  const Operand &oa = I.ops[I.src0Idx], &ob = I.ops[I.src0Idx + 1];
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t r = (m >> l) & 1 ? fmod32(b[l], ob) : fmod32(a[l], oa);
    d[l] = r;
  });
}
H(v_readfirstlane_b32) {
  Src a = src(X, W, I, 0);
  uint64_t e = W.exec();
  unsigned l = e ? __builtin_ctzll(e) : 0;
  setS(W, I.ops[0], a[l]);
}
H(v_readlane_b32) {
  Src a = src(X, W, I, 0);
  unsigned l = sval(X, W, I.ops[I.src0Idx + 1]) & 63;
  setS(W, I.ops[0], a[l]);
}
H(v_writelane_b32) {
  DST0;
  uint32_t v = sval(X, W, I.ops[I.src0Idx]);
  unsigned l = sval(X, W, I.ops[I.src0Idx + 1]) & 63;
  d[l] = v;
}
H(v_accvgpr_mov) { // read/write/mov: plain dword copy
  DST0;
  Src a = src(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = a[l]; });
}
H(v_nop) {}

// f16 scalar ops.
VH(v_add_f16, 2, A + B)
VH(v_sub_f16, 2, A - B)
VH(v_subrev_f16, 2, B - A)
VH(v_mul_f16, 2, A *B)
VH(v_max_f16, 2, std::fmax(A, B))
VH(v_min_f16, 2, std::fmin(A, B))
VH(v_fma_f16, 3, std::fma(A, B, C))
VH(v_mad_f16, 3, A *B + C)
VH(v_exp_f16, 1, std::exp2(A))
VH(v_rcp_f16, 1, 1.0f / A)

/// Packed 16-bit ops (VOP3P): element h of source i is half
/// (h ? op_sel_hi : op_sel)[i]; negation by neg_lo / neg_hi.
template <class F>
void pk16(Exec &X, Wave &W, const Inst &I, unsigned nargs, bool isF16, F f) {
  DST0;
  Src s[3];
  for (unsigned i = 0; i < 3; ++i)
    s[i] = src(X, W, I, i < nargs ? i : 0);
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t out = 0;
    for (unsigned h = 0; h < 2; ++h) {
      uint32_t v[3];
      for (unsigned i = 0; i < nargs; ++i) {
        bool sel = ((h ? I.opSelHi : I.opSel) >> i) & 1;
        uint32_t x = (s[i][l] >> (sel ? 16 : 0)) & 0xffff;
        if (isF16 && (((h ? I.negHi : I.negLo) >> i) & 1))
          x ^= 0x8000;
        v[i] = x;
      }
      out |= (f(v) & 0xffffu) << (16 * h);
    }
    d[l] = out;
  });
}
#define PKF(NAME, N, EXPR)                                                     \
  H(NAME) {                                                                    \
    pk16(X, W, I, N, true, [&](uint32_t *v) -> uint32_t {                      \
      float A = f16ToF32(v[0]), B = N > 1 ? f16ToF32(v[1]) : 0,                \
            C = N > 2 ? f16ToF32(v[2]) : 0;                                    \
      (void)B;                                                                 \
      (void)C;                                                                 \
      float r = (EXPR);                                                        \
      if (I.clamp)                                                             \
        r = std::isnan(r) ? 0.0f : std::min(1.0f, std::max(0.0f, r));          \
      return f32ToF16(r);                                                      \
    });                                                                        \
  }
#define PKI(NAME, N, EXPR)                                                     \
  H(NAME) {                                                                    \
    pk16(X, W, I, N, false, [&](uint32_t *v) -> uint32_t {                     \
      uint32_t A = v[0], B = v[1], C = N > 2 ? v[2] : 0;                       \
      (void)C;                                                                 \
      return (EXPR);                                                           \
    });                                                                        \
  }
PKF(v_pk_add_f16, 2, A + B)
PKF(v_pk_mul_f16, 2, A *B)
PKF(v_pk_fma_f16, 3, std::fma(A, B, C))
PKF(v_pk_max_f16, 2, std::fmax(A, B))
PKF(v_pk_maximum3_f16, 3, maximum2019(maximum2019(A, B), C))
PKF(v_pk_minimum3_f16, 3, minimum2019(minimum2019(A, B), C))
PKF(v_pk_min_f16, 2, std::fmin(A, B))
PKI(v_pk_add_u16, 2, A + B)
PKI(v_pk_sub_u16, 2, A - B)
PKI(v_pk_mul_lo_u16, 2, A *B)
PKI(v_pk_lshlrev_b16, 2, B << (A & 15))
PKI(v_pk_lshrrev_b16, 2, B >> (A & 15))
PKI(v_pk_max_u16, 2, std::max(A, B))
PKI(v_pk_min_u16, 2, std::min(A, B))

/// Packed f32 ops (gfx90a+): 64-bit operands, element h of source i is
/// dword (h ? op_sel_hi : op_sel)[i].
template <class F>
void pk32(Exec &X, Wave &W, const Inst &I, unsigned nargs, bool isF, F f) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  Src s[3][2];
  for (unsigned i = 0; i < nargs; ++i)
    for (unsigned h = 0; h < 2; ++h) {
      const Operand &op = I.ops[I.src0Idx + i];
      // A 32-bit scalar/constant operand supplies both dwords.
      s[i][h] = src(X, W, op, op.kind == OpKind::Imm ? 0 : h);
    }
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t out[2];
    for (unsigned h = 0; h < 2; ++h) {
      uint32_t v[3] = {0, 0, 0};
      for (unsigned i = 0; i < nargs; ++i) {
        bool sel = ((h ? I.opSelHi : I.opSel) >> i) & 1;
        uint32_t x = s[i][sel][l];
        if (isF && (((h ? I.negHi : I.negLo) >> i) & 1))
          x ^= 0x80000000u;
        v[i] = x;
      }
      out[h] = f(v);
    }
    d0[l] = out[0];
    d1[l] = out[1];
  });
}
H(v_pk_fma_f32) {
  pk32(X, W, I, 3, true, [&](uint32_t *v) {
    return f2u(outF32(X, I, std::fma(u2f(v[0]), u2f(v[1]), u2f(v[2]))));
  });
}
H(v_pk_mul_f32) {
  pk32(X, W, I, 2, true, [&](uint32_t *v) {
    return f2u(outF32(X, I, u2f(v[0]) * u2f(v[1])));
  });
}
H(v_pk_add_f32) {
  pk32(X, W, I, 2, true, [&](uint32_t *v) {
    return f2u(outF32(X, I, u2f(v[0]) + u2f(v[1])));
  });
}
H(v_pk_mov_b32) {
  pk32(X, W, I, 2, false, [&](uint32_t *v) { return v[0]; });
}
// v_pk_mov_b32 selects src0 for the low and src1 for the high dword.
H(v_pk_mov_b32_impl) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  const Operand &o0 = I.ops[I.src0Idx], &o1 = I.ops[I.src0Idx + 1];
  Src a = src(X, W, o0, o0.kind == OpKind::Imm ? 0 : (I.opSel & 1));
  Src b = src(X, W, o1, o1.kind == OpKind::Imm ? 0 : ((I.opSel >> 1) & 1));
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t x = a[l], y = b[l];
    d0[l] = x;
    d1[l] = y;
  });
}

//===----------------------------------------------------------------------===//
// Compares (VOPC and VOP3): v_cmp[x]_<cond>_<type>
//===----------------------------------------------------------------------===//

enum CmpType { CF16, CF32, CF64, CI16, CU16, CI32, CU32, CI64, CU64 };

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
bool cmpFlt(unsigned c, double a, double b) {
  bool un = std::isnan(a) || std::isnan(b);
  switch (c) { // f lt eq le gt lg ge o u nge nlg ngt nle neq nlt tru
  case 0: return false;
  case 1: return !un && a < b;
  case 2: return !un && a == b;
  case 3: return !un && a <= b;
  case 4: return !un && a > b;
  case 5: return !un && a != b;
  case 6: return !un && a >= b;
  case 7: return !un;
  case 8: return un;
  case 9: return un || !(a >= b);
  case 10: return un || a == b;
  case 11: return un || !(a > b);
  case 12: return un || !(a <= b);
  case 13: return un || a != b;
  case 14: return un || !(a < b);
  default: return true;
  }
}
bool classF(double x, uint32_t mask, bool isF32) {
  int bit;
  if (std::isnan(x)) {
    // Quiet NaN: top mantissa bit set.
    uint64_t u = d2u(x);
    bit = (u >> 51) & 1 ? 1 : 0;
  } else if (std::isinf(x))
    bit = x < 0 ? 2 : 9;
  else if (x == 0)
    bit = std::signbit(x) ? 5 : 6;
  else {
    bool sub = isF32 ? std::fabs(x) < std::numeric_limits<float>::min()
                     : std::fabs(x) < std::numeric_limits<double>::min();
    bit = x < 0 ? (sub ? 4 : 3) : (sub ? 7 : 8);
  }
  return (mask >> bit) & 1;
}

H(v_cmp) {
  unsigned cond = I.aux, ty = I.aux2;
  bool isx = I.name.compare(0, 6, "v_cmpx") == 0;
  bool isClass = cond == 100;
  const Operand &oa = I.ops[I.src0Idx], &ob = I.ops[I.src0Idx + 1];
  Src a = src(X, W, oa, 0), b = src(X, W, ob, 0);
  Src ah = src(X, W, oa, 1), bh = src(X, W, ob, 1);
  bool bLit = ob.kind == OpKind::Imm && ob.literal,
       aLit = oa.kind == OpKind::Imm && oa.literal;
  uint64_t res = 0;
  auto getF = [&](const Src &lo, const Src &hi, const Operand &op, unsigned l,
                  unsigned idx) -> double {
    if (ty == CF32)
      return X.ftz32 ? ftz(u2f(fmod32(lo[l], op))) : u2f(fmod32(lo[l], op));
    if (ty == CF16) {
      uint32_t v = lo[l] >> (((I.opSel >> idx) & 1) ? 16 : 0);
      uint16_t h = v & 0xffff;
      if (op.abs)
        h &= 0x7fff;
      if (op.neg)
        h ^= 0x8000;
      return f16ToF32(h);
    }
    uint64_t hv = (op.kind == OpKind::Imm && op.literal) ? 0 : hi[l];
    uint64_t u = (uint64_t)lo[l] | (hv << 32);
    if (op.kind == OpKind::Imm && op.literal)
      u = (uint64_t)lo[l] << 32;
    if (op.abs)
      u &= ~(1ull << 63);
    if (op.neg)
      u ^= 1ull << 63;
    return u2d(u);
  };
  forLanes(W.exec(), [&](unsigned l) {
    bool r;
    if (isClass)
      r = classF(getF(a, ah, oa, l, 0), b[l], ty == CF32);
    else
      switch (ty) {
      case CF16:
      case CF32:
      case CF64:
        r = cmpFlt(cond, getF(a, ah, oa, l, 0), getF(b, bh, ob, l, 1));
        break;
      case CI16:
        r = cmpInt<int16_t>(cond, (int16_t)a[l], (int16_t)b[l]);
        break;
      case CU16:
        r = cmpInt<uint16_t>(cond, (uint16_t)a[l], (uint16_t)b[l]);
        break;
      case CI32:
        r = cmpInt<int32_t>(cond, (int32_t)a[l], (int32_t)b[l]);
        break;
      case CU32:
        r = cmpInt<uint32_t>(cond, a[l], b[l]);
        break;
      default: {
        uint64_t A = (uint64_t)a[l] | ((uint64_t)(aLit ? 0 : ah[l]) << 32);
        uint64_t B = (uint64_t)b[l] | ((uint64_t)(bLit ? 0 : bh[l]) << 32);
        r = ty == CI64 ? cmpInt<int64_t>(cond, (int64_t)A, (int64_t)B)
                       : cmpInt<uint64_t>(cond, A, B);
      }
      }
    if (r)
      res |= 1ull << l;
  });
  // Inactive lanes of the destination are written with 0.
  const Operand &dst = I.ops[0];
  if (I.src0Idx >= 1 && dst.kind == OpKind::SReg)
    setS64(W, dst, res);
  if (isx)
    W.setExec(res);
}

//===----------------------------------------------------------------------===//
// Small float conversions (FP8/BF8/FP4)
//===----------------------------------------------------------------------===//

inline float scaleOf(uint32_t f32bits) { return e8m0((f32bits >> 23) & 0xff); }

template <int Out> void cvtScalePkFp4(Exec &X, Wave &W, const Inst &I) {
  // Out: 0 f32 (2 dwords), 1 f16, 2 bf16.
  uint32_t *d0 = vdst(X, W, I.ops[0], 0);
  uint32_t *d1 = Out == 0 ? vdst(X, W, I.ops[0], 1) : nullptr;
  Src a = src(X, W, I, 0), s = src(X, W, I, 1);
  unsigned sel = (I.opSel & 1) | (((I.opSel >> 1) & 1) << 1);
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t byte = (a[l] >> (8 * sel)) & 0xff;
    float sc = scaleOf(s[l]);
    float lo = smallDecode(SmallFmt::FP4, byte & 15) * sc;
    float hi = smallDecode(SmallFmt::FP4, byte >> 4) * sc;
    if (Out == 0) {
      d0[l] = f2u(lo);
      d1[l] = f2u(hi);
    } else if (Out == 1) {
      d0[l] = f32ToF16(lo) | ((uint32_t)f32ToF16(hi) << 16);
    } else {
      d0[l] = f32ToBf16(lo) | ((uint32_t)f32ToBf16(hi) << 16);
    }
  });
}
H(v_cvt_scalef32_pk_f32_fp4) { cvtScalePkFp4<0>(X, W, I); }
H(v_cvt_scalef32_pk_f16_fp4) { cvtScalePkFp4<1>(X, W, I); }
H(v_cvt_scalef32_pk_bf16_fp4) { cvtScalePkFp4<2>(X, W, I); }

// v_cvt_scalef32_pk_fp4_f32 vd, s0, s1, scale: byte op_sel[2]+2*op_sel[3].
H(v_cvt_scalef32_pk_fp4_f32) {
  DST0;
  Src a = src(X, W, I, 0), b = src(X, W, I, 1), s = src(X, W, I, 2);
  unsigned sel = ((I.opSel >> 2) & 1) | (((I.opSel >> 3) & 1) << 1);
  forLanes(W.exec(), [&](unsigned l) {
    float sc = scaleOf(s[l]);
    uint32_t lo = smallEncode(SmallFmt::FP4, u2f(a[l]) / sc, true);
    uint32_t hi = smallEncode(SmallFmt::FP4, u2f(b[l]) / sc, true);
    uint32_t byte = (lo & 15) | ((hi & 15) << 4);
    d[l] = (d[l] & ~(0xffu << (8 * sel))) | (byte << (8 * sel));
  });
}

/// v_cvt_pk_{fp8,bf8}_f32 vd, s0, s1 [op_sel:[0,0,1] = high word]:
/// round to nearest even; saturate with clamp, else overflow -> NaN
/// (E4M3) / inf (E5M2).
template <SmallFmt F, bool Scaled> void cvtPkF8(Exec &X, Wave &W, const Inst &I) {
  DST0;
  Src a = src(X, W, I, 0), b = src(X, W, I, 1);
  Src s = Scaled ? src(X, W, I, 2) : a;
  bool hi = (I.opSel >> 3) & 1;
  if (!Scaled)
    hi = hi || ((I.opSel >> 2) & 1);
  forLanes(W.exec(), [&](unsigned l) {
    float sc = Scaled ? scaleOf(s[l]) : 1.0f;
    float x = u2f(fmod32(a[l], I.ops[I.src0Idx])) / sc;
    float y = u2f(fmod32(b[l], I.ops[I.src0Idx + 1])) / sc;
    uint32_t w = smallEncode(F, x, I.clamp || Scaled) |
                 (smallEncode(F, y, I.clamp || Scaled) << 8);
    d[l] = hi ? (d[l] & 0xffff) | (w << 16) : (d[l] & 0xffff0000u) | w;
  });
}
H(v_cvt_pk_fp8_f32) { cvtPkF8<SmallFmt::FP8, false>(X, W, I); }
H(v_cvt_pk_bf8_f32) { cvtPkF8<SmallFmt::BF8, false>(X, W, I); }
H(v_cvt_scalef32_pk_fp8_f32) { cvtPkF8<SmallFmt::FP8, true>(X, W, I); }
H(v_cvt_scalef32_pk_bf8_f32) { cvtPkF8<SmallFmt::BF8, true>(X, W, I); }

/// v_cvt_f32_{fp8,bf8} vd, src: byte op_sel[0]+2*op_sel[1] (VOP3) or the
/// SDWA src0_sel byte (already extracted by the SDWA wrapper).
template <SmallFmt F, bool Scaled> void cvtF32F8(Exec &X, Wave &W, const Inst &I) {
  DST0;
  Src a = src(X, W, I, 0);
  Src s = Scaled ? src(X, W, I, 1) : a;
  unsigned sel = (I.opSel & 1) | (((I.opSel >> 1) & 1) << 1);
  forLanes(W.exec(), [&](unsigned l) {
    float sc = Scaled ? scaleOf(s[l]) : 1.0f;
    d[l] = f2u(smallDecode(F, (a[l] >> (8 * sel)) & 0xff) * sc);
  });
}
H(v_cvt_f32_fp8) { cvtF32F8<SmallFmt::FP8, false>(X, W, I); }
H(v_cvt_f32_bf8) { cvtF32F8<SmallFmt::BF8, false>(X, W, I); }
H(v_cvt_scalef32_f32_fp8) { cvtF32F8<SmallFmt::FP8, true>(X, W, I); }
H(v_cvt_scalef32_f32_bf8) { cvtF32F8<SmallFmt::BF8, true>(X, W, I); }

/// v_cvt_pk_f32_{fp8,bf8} vd[2], src: word op_sel[0] (or SDWA WORD_1).
template <SmallFmt F, bool Scaled> void cvtPkF32F8(Exec &X, Wave &W, const Inst &I) {
  uint32_t *d0 = vdst(X, W, I.ops[0], 0), *d1 = vdst(X, W, I.ops[0], 1);
  Src a = src(X, W, I, 0);
  Src s = Scaled ? src(X, W, I, 1) : a;
  unsigned sh = (I.opSel & 1) ? 16 : 0;
  forLanes(W.exec(), [&](unsigned l) {
    float sc = Scaled ? scaleOf(s[l]) : 1.0f;
    uint32_t w = a[l] >> sh;
    d0[l] = f2u(smallDecode(F, w & 0xff) * sc);
    d1[l] = f2u(smallDecode(F, (w >> 8) & 0xff) * sc);
  });
}
H(v_cvt_pk_f32_fp8) { cvtPkF32F8<SmallFmt::FP8, false>(X, W, I); }
H(v_cvt_pk_f32_bf8) { cvtPkF32F8<SmallFmt::BF8, false>(X, W, I); }
H(v_cvt_scalef32_pk_f32_fp8) { cvtPkF32F8<SmallFmt::FP8, true>(X, W, I); }
H(v_cvt_scalef32_pk_f32_bf8) { cvtPkF32F8<SmallFmt::BF8, true>(X, W, I); }

//===----------------------------------------------------------------------===//
// MFMA
//===----------------------------------------------------------------------===//

/// Operand format of a plain MFMA source.
enum MF { MF_BF16, MF_F16, MF_FP8, MF_BF8, MF_F32 };

unsigned elemBits(MF f) {
  return f == MF_F32 ? 32 : (f == MF_FP8 || f == MF_BF8) ? 8 : 16;
}
double elemDecode(MF f, uint32_t bits) {
  switch (f) {
  case MF_BF16:
    return bf16ToF32((uint16_t)bits);
  case MF_F16:
    return f16ToF32((uint16_t)bits);
  case MF_FP8:
    return smallDecode(SmallFmt::FP8, bits);
  case MF_BF8:
    return smallDecode(SmallFmt::BF8, bits);
  default:
    return u2f(bits);
  }
}

/// Reads element `k` (within the lane) of a packed MFMA operand.
inline uint32_t laneElem(Exec &X, Wave &W, const Operand &op, unsigned lane,
                         unsigned k, unsigned bits) {
  unsigned bit = k * bits;
  uint32_t dw = src(X, W, op, bit / 32)[lane];
  return bits == 32 ? dw : (dw >> (bit % 32)) & ((1u << bits) - 1);
}

/// Output register index and lane of D[m][n] for an MxN (16 or 32) MFMA.
inline void outPos(unsigned M, unsigned m, unsigned n, unsigned &reg,
                   unsigned &lane) {
  if (M == 16) {
    reg = m % 4;
    lane = n + 16 * (m / 4);
  } else {
    // 32x32: VGPR i of lane l holds D[8*(i/4) + 4*(l/32) + i%4][l%32].
    reg = 4 * (m / 8) + m % 4;
    lane = n + 32 * ((m / 4) % 2);
  }
}

void storeAcc(Exec &X, Wave &W, const Inst &I, unsigned M,
              const std::vector<double> &acc) {
  // C is ops[3]; D is ops[0]. Read all of C before writing D.
  const Operand &C = I.ops[3], &D = I.ops[0];
  std::vector<float> out(M * M);
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      unsigned reg, lane;
      outPos(M, m, n, reg, lane);
      float c = C.kind == OpKind::Imm ? u2f(C.imm[0])
                                      : u2f(src(X, W, C, reg)[lane]);
      out[m * M + n] = (float)((double)c + acc[m * M + n]);
    }
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      unsigned reg, lane;
      outPos(M, m, n, reg, lane);
      vdst(X, W, D, reg)[lane] = f2u(out[m * M + n]);
    }
}

/// Plain MFMA, single block: M = N in {16, 32}; lane l (r = l % M,
/// g = l / M) holds A[r][kpl*g .. kpl*g+kpl-1] and B[same k][r].
void mfmaPlain(Exec &X, Wave &W, const Inst &I) {
  unsigned M = I.aux & 0xff, K = (I.aux >> 8) & 0xfff;
  MF fa = (MF)(I.aux2 & 0xf), fb = (MF)((I.aux2 >> 4) & 0xf);
  if (I.cbsz || I.abid || I.blgp)
    return X.fail(I, "MFMA broadcast controls (cbsz/abid/blgp) unsupported");
  unsigned groups = 64 / M, kpl = K / groups;
  std::vector<double> A(M * K), B(K * M), acc(M * M, 0.0);
  const Operand &oa = I.ops[1], &ob = I.ops[2];
  for (unsigned l = 0; l < 64; ++l) {
    unsigned r = l % M, g = l / M;
    for (unsigned i = 0; i < kpl; ++i) {
      unsigned k = kpl * g + i;
      A[r * K + k] = elemDecode(fa, laneElem(X, W, oa, l, i, elemBits(fa)));
      B[k * M + r] = elemDecode(fb, laneElem(X, W, ob, l, i, elemBits(fb)));
    }
  }
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      double s = 0;
      for (unsigned k = 0; k < K; ++k)
        s += A[m * K + k] * B[k * M + n];
      acc[m * M + n] = s;
    }
  storeAcc(X, W, I, M, acc);
}

/// Logical K index of element i (0..31) held by lane group g for the
/// f8f6f4 MFMAs (gfx950-notes.md).
inline unsigned f8f6f4K(unsigned M, SmallFmt f, unsigned g, unsigned i) {
  bool is8 = f == SmallFmt::FP8 || f == SmallFmt::BF8;
  if (!is8)
    return 32 * g + i;
  unsigned half = M == 16 ? 64 : 32;
  return i < 16 ? 16 * g + i : half + 16 * g + (i - 16);
}

/// v_mfma[_scale]_f32_{16x16x128,32x32x64}_f8f6f4.
void mfmaF8F6F4(Exec &X, Wave &W, const Inst &I) {
  unsigned M = I.aux;
  bool scaled = I.aux2;
  unsigned K = M == 16 ? 128 : 64, KB = K / 32, groups = 64 / M;
  if (I.cbsz > 4 || I.blgp > 4)
    return X.fail(I, "bad f8f6f4 format (cbsz/blgp > 4)");
  SmallFmt fa = (SmallFmt)I.cbsz, fb = (SmallFmt)I.blgp;
  unsigned ba = fmtDesc(fa).bits, bb = fmtDesc(fb).bits;
  std::vector<double> A(M * K), B(K * M), sa(M * KB, 1.0), sb(M * KB, 1.0);
  const Operand &oa = I.ops[1], &ob = I.ops[2];
  for (unsigned l = 0; l < 64; ++l) {
    unsigned r = l % M, g = l / M;
    for (unsigned i = 0; i < 32; ++i) {
      A[r * K + f8f6f4K(M, fa, g, i)] =
          smallDecode(fa, laneElem(X, W, oa, l, i, ba));
      B[f8f6f4K(M, fb, g, i) * M + r] =
          smallDecode(fb, laneElem(X, W, ob, l, i, bb));
    }
  }
  (void)groups;
  if (scaled) {
    unsigned selA = (I.opSel & 1) | ((I.opSelHi & 1) << 1);
    unsigned selB = ((I.opSel >> 1) & 1) | (((I.opSelHi >> 1) & 1) << 1);
    Src sA = src(X, W, I.ops[4]), sB = src(X, W, I.ops[5]);
    for (unsigned r = 0; r < M; ++r)
      for (unsigned j = 0; j < KB; ++j) {
        sa[r * KB + j] = e8m0(sA[r + M * j] >> (8 * selA));
        sb[r * KB + j] = e8m0(sB[r + M * j] >> (8 * selB));
      }
  }
  std::vector<double> acc(M * M);
  for (unsigned m = 0; m < M; ++m)
    for (unsigned n = 0; n < M; ++n) {
      double total = 0;
      for (unsigned j = 0; j < KB; ++j) {
        double s = 0;
        for (unsigned k = 32 * j; k < 32 * j + 32; ++k)
          s += A[m * K + k] * B[k * M + n];
        total += s * sa[m * KB + j] * sb[n * KB + j];
      }
      acc[m * M + n] = total;
    }
  storeAcc(X, W, I, M, acc);
}

//===----------------------------------------------------------------------===//
// SALU
//===----------------------------------------------------------------------===//

#define S1(NAME, EXPR, SCCEXPR)                                                \
  H(NAME) {                                                                    \
    uint32_t A = sval(X, W, I.ops[1]);                                         \
    uint32_t R = (EXPR);                                                       \
    (void)A;                                                                   \
    SCCEXPR;                                                                   \
    setS(W, I.ops[0], R);                                                      \
  }
#define S2(NAME, EXPR, SCCEXPR)                                                \
  H(NAME) {                                                                    \
    uint32_t A = sval(X, W, I.ops[1]), B = sval(X, W, I.ops[2]);               \
    uint32_t R = (EXPR);                                                       \
    SCCEXPR;                                                                   \
    setS(W, I.ops[0], R);                                                      \
  }
#define S2Q(NAME, EXPR, SCCEXPR)                                               \
  H(NAME) {                                                                    \
    uint64_t A = sval64(X, W, I.ops[1]), B = sval64(X, W, I.ops[2]);           \
    uint64_t R = (EXPR);                                                       \
    SCCEXPR;                                                                   \
    setS64(W, I.ops[0], R);                                                    \
  }
#define S1Q(NAME, EXPR, SCCEXPR)                                               \
  H(NAME) {                                                                    \
    uint64_t A = sval64(X, W, I.ops[1]);                                       \
    uint64_t R = (EXPR);                                                       \
    SCCEXPR;                                                                   \
    setS64(W, I.ops[0], R);                                                    \
  }
#define NZ W.scc = R != 0
#define NOSCC (void)0

S1(s_mov_b32, A, NOSCC)
S1(s_not_b32, ~A, NZ)
S1(s_brev_b32, llvm::reverseBits<uint32_t>(A), NOSCC)
S1(s_bcnt1_i32_b32, (uint32_t)__builtin_popcount(A), NZ)
S1(s_bcnt0_i32_b32, (uint32_t)__builtin_popcount(~A), NZ)
S1(s_ff1_i32_b32, A ? (uint32_t)__builtin_ctz(A) : ~0u, NOSCC)
S1(s_flbit_i32_b32, A ? (uint32_t)__builtin_clz(A) : ~0u, NOSCC)
S1(s_sext_i32_i8, (uint32_t)(int32_t)(int8_t)A, NOSCC)
S1(s_sext_i32_i16, (uint32_t)(int32_t)(int16_t)A, NOSCC)
S1(s_abs_i32, (uint32_t)((int32_t)A < 0 ? -(int64_t)(int32_t)A : A), NZ)
S1Q(s_mov_b64, A, NOSCC)
S1Q(s_not_b64, ~A, NZ)
H(s_bcnt1_i32_b64) {
  uint32_t R = __builtin_popcountll(sval64(X, W, I.ops[1]));
  W.scc = R != 0;
  setS(W, I.ops[0], R);
}
H(s_ff1_i32_b64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  setS(W, I.ops[0], A ? (uint32_t)__builtin_ctzll(A) : ~0u);
}
H(s_flbit_i32_b64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  setS(W, I.ops[0], A ? (uint32_t)__builtin_clzll(A) : ~0u);
}
H(s_movk_i32) { setS(W, I.ops[0], (uint32_t)(int32_t)(int16_t)I.ops[1].imm[0]); }
H(s_cmovk_i32) {
  if (W.scc)
    setS(W, I.ops[0], (uint32_t)(int32_t)(int16_t)I.ops[1].imm[0]);
}
H(s_addk_i32) {
  uint32_t A = sval(X, W, I.ops[0]);
  int32_t B = (int16_t)I.ops[1].imm[0];
  uint32_t R = A + (uint32_t)B;
  W.scc = ((int32_t)A >= 0) == (B >= 0) && ((int32_t)R >= 0) != (B >= 0);
  setS(W, I.ops[0], R);
}
H(s_mulk_i32) {
  setS(W, I.ops[0],
       sval(X, W, I.ops[0]) * (uint32_t)(int32_t)(int16_t)I.ops[1].imm[0]);
}
H(s_cmov_b32) {
  if (W.scc)
    setS(W, I.ops[0], sval(X, W, I.ops[1]));
}
H(s_cmov_b64) {
  if (W.scc)
    setS64(W, I.ops[0], sval64(X, W, I.ops[1]));
}
S2(s_add_u32, A + B, W.scc = (uint64_t)A + B > 0xffffffffull)
S2(s_sub_u32, A - B, W.scc = B > A)
S2(s_addc_u32, A + B + W.scc,
   W.scc = (uint64_t)A + B + W.scc > 0xffffffffull)
S2(s_subb_u32, A - B - W.scc, W.scc = (uint64_t)B + W.scc > A)
S2(s_add_i32, A + B,
   W.scc = ((int32_t)A >= 0) == ((int32_t)B >= 0) &&
           ((int32_t)R >= 0) != ((int32_t)A >= 0))
S2(s_sub_i32, A - B,
   W.scc = ((int32_t)A >= 0) != ((int32_t)B >= 0) &&
           ((int32_t)R >= 0) != ((int32_t)A >= 0))
S2(s_mul_i32, A *B, NOSCC)
S2(s_mul_hi_u32, (uint32_t)(((uint64_t)A * B) >> 32), NOSCC)
S2(s_mul_hi_i32, (uint32_t)(((int64_t)(int32_t)A * (int32_t)B) >> 32), NOSCC)
S2(s_lshl_b32, A << (B & 31), NZ)
S2(s_lshr_b32, A >> (B & 31), NZ)
S2(s_ashr_i32, (uint32_t)((int32_t)A >> (B & 31)), NZ)
S2(s_lshl1_add_u32, (A << 1) + B, W.scc = ((uint64_t)A << 1) + B > 0xffffffffull)
S2(s_lshl2_add_u32, (A << 2) + B, W.scc = ((uint64_t)A << 2) + B > 0xffffffffull)
S2(s_lshl3_add_u32, (A << 3) + B, W.scc = ((uint64_t)A << 3) + B > 0xffffffffull)
S2(s_lshl4_add_u32, (A << 4) + B, W.scc = ((uint64_t)A << 4) + B > 0xffffffffull)
S2(s_and_b32, A &B, NZ)
S2(s_or_b32, A | B, NZ)
S2(s_xor_b32, A ^ B, NZ)
S2(s_andn2_b32, A & ~B, NZ)
S2(s_orn2_b32, A | ~B, NZ)
S2(s_nand_b32, ~(A & B), NZ)
S2(s_nor_b32, ~(A | B), NZ)
S2(s_xnor_b32, ~(A ^ B), NZ)
S2(s_min_i32, (uint32_t)std::min((int32_t)A, (int32_t)B), W.scc = (int32_t)A < (int32_t)B)
S2(s_max_i32, (uint32_t)std::max((int32_t)A, (int32_t)B), W.scc = (int32_t)A > (int32_t)B)
S2(s_min_u32, std::min(A, B), W.scc = A < B)
S2(s_max_u32, std::max(A, B), W.scc = A > B)
S2(s_cselect_b32, W.scc ? A : B, NOSCC)
S2(s_bfe_u32, bfeU(A, B & 31, (B >> 16) & 0x7f), NZ)
S2(s_bfe_i32, (uint32_t)bfeI(A, B & 31, (B >> 16) & 0x7f), NZ)
S2(s_bfm_b32, ((1u << (A & 31)) - 1) << (B & 31), NOSCC)
S2(s_pack_ll_b32_b16, (A & 0xffff) | (B << 16), NOSCC)
S2(s_pack_lh_b32_b16, (A & 0xffff) | (B & 0xffff0000u), NOSCC)
S2(s_pack_hh_b32_b16, (A >> 16) | (B & 0xffff0000u), NOSCC)
S2(s_absdiff_i32, (uint32_t)std::abs((int64_t)(int32_t)A - (int32_t)B), NZ)
S2Q(s_and_b64, A &B, NZ)
S2Q(s_or_b64, A | B, NZ)
S2Q(s_xor_b64, A ^ B, NZ)
S2Q(s_andn2_b64, A & ~B, NZ)
S2Q(s_orn2_b64, A | ~B, NZ)
S2Q(s_nand_b64, ~(A & B), NZ)
S2Q(s_nor_b64, ~(A | B), NZ)
S2Q(s_xnor_b64, ~(A ^ B), NZ)
S2Q(s_cselect_b64, W.scc ? A : B, NOSCC)
H(s_lshl_b64) {
  uint64_t R = sval64(X, W, I.ops[1]) << (sval(X, W, I.ops[2]) & 63);
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_lshr_b64) {
  uint64_t R = sval64(X, W, I.ops[1]) >> (sval(X, W, I.ops[2]) & 63);
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_ashr_i64) {
  uint64_t R = (uint64_t)((int64_t)sval64(X, W, I.ops[1]) >>
                          (sval(X, W, I.ops[2]) & 63));
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_bfe_u64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  uint32_t B = sval(X, W, I.ops[2]), off = B & 63, w = (B >> 16) & 0x7f;
  uint64_t R = w == 0 ? 0 : (A >> off) & (w >= 64 ? ~0ull : (1ull << w) - 1);
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_bfe_i64) {
  uint64_t A = sval64(X, W, I.ops[1]);
  uint32_t B = sval(X, W, I.ops[2]), off = B & 63, w = (B >> 16) & 0x7f;
  uint64_t R = 0;
  if (w) {
    uint64_t f = (A >> off) & (w >= 64 ? ~0ull : (1ull << w) - 1);
    R = w >= 64 ? f : (uint64_t)(((int64_t)(f << (64 - w))) >> (64 - w));
  }
  W.scc = R != 0;
  setS64(W, I.ops[0], R);
}
H(s_bfm_b64) {
  uint32_t A = sval(X, W, I.ops[1]) & 63, B = sval(X, W, I.ops[2]) & 63;
  setS64(W, I.ops[0], ((A ? (1ull << A) : 0) - 1 + (A == 0)) << B);
}
H(s_mul_u64_fallback) {}

// s_*_saveexec_b64 sdst, ssrc: sdst = exec; exec = op(ssrc, exec).
template <int K> void saveexec(Exec &X, Wave &W, const Inst &I) {
  uint64_t s = sval64(X, W, I.ops[1]), e = W.exec(), r;
  switch (K) {
  case 0: r = s & e; break;
  case 1: r = s | e; break;
  case 2: r = s ^ e; break;
  case 3: r = s & ~e; break; // andn2: s0 & ~exec
  case 4: r = s | ~e; break;
  case 5: r = ~(s & e); break;
  case 6: r = ~(s | e); break;
  case 7: r = ~(s ^ e); break;
  case 8: r = ~s & e; break; // andn1
  default: r = ~s | e; break; // orn1
  }
  setS64(W, I.ops[0], e);
  W.setExec(r);
  W.scc = r != 0;
}
H(s_and_saveexec_b64) { saveexec<0>(X, W, I); }
H(s_or_saveexec_b64) { saveexec<1>(X, W, I); }
H(s_xor_saveexec_b64) { saveexec<2>(X, W, I); }
H(s_andn2_saveexec_b64) { saveexec<3>(X, W, I); }
H(s_orn2_saveexec_b64) { saveexec<4>(X, W, I); }
H(s_nand_saveexec_b64) { saveexec<5>(X, W, I); }
H(s_nor_saveexec_b64) { saveexec<6>(X, W, I); }
H(s_xnor_saveexec_b64) { saveexec<7>(X, W, I); }
H(s_andn1_saveexec_b64) { saveexec<8>(X, W, I); }
H(s_orn1_saveexec_b64) { saveexec<9>(X, W, I); }

template <class T> void scmp(Exec &X, Wave &W, const Inst &I) {
  T A, B;
  if (sizeof(T) == 8) {
    A = (T)sval64(X, W, I.ops[0]);
    B = (T)sval64(X, W, I.ops[1]);
  } else {
    A = (T)sval(X, W, I.ops[0]);
    B = (T)sval(X, W, I.ops[1]);
  }
  W.scc = cmpInt<T>(I.aux, A, B);
}
H(s_cmp_i32) { scmp<int32_t>(X, W, I); }
H(s_cmp_u32) { scmp<uint32_t>(X, W, I); }
H(s_cmp_u64) { scmp<uint64_t>(X, W, I); }
H(s_cmpk_i32) {
  int32_t A = (int32_t)sval(X, W, I.ops[0]);
  int32_t B = (int16_t)I.ops[1].imm[0];
  W.scc = cmpInt<int32_t>(I.aux, A, B);
}
H(s_cmpk_u32) {
  uint32_t A = sval(X, W, I.ops[0]);
  uint32_t B = (uint16_t)I.ops[1].imm[0];
  W.scc = cmpInt<uint32_t>(I.aux, A, B);
}
H(s_bitcmp0_b32) {
  W.scc = !((sval(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 31)) & 1);
}
H(s_bitcmp1_b32) {
  W.scc = (sval(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 31)) & 1;
}
H(s_bitcmp0_b64) {
  W.scc = !((sval64(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 63)) & 1);
}
H(s_bitcmp1_b64) {
  W.scc = (sval64(X, W, I.ops[0]) >> (sval(X, W, I.ops[1]) & 63)) & 1;
}
H(s_bitset0_b32) {
  setS(W, I.ops[0],
       sval(X, W, I.ops[0]) & ~(1u << (sval(X, W, I.ops[1]) & 31)));
}
H(s_bitset1_b32) {
  setS(W, I.ops[0],
       sval(X, W, I.ops[0]) | (1u << (sval(X, W, I.ops[1]) & 31)));
}

// Branches: target = pc + 4 + simm16 * 4.
inline void branch(Wave &W, const Inst &I) {
  W.pc = I.pc + 4 + (int64_t)(int16_t)I.ops[0].imm[0] * 4;
}
H(s_branch) { branch(W, I); }
H(s_cbranch_scc0) { if (!W.scc) branch(W, I); }
H(s_cbranch_scc1) { if (W.scc) branch(W, I); }
H(s_cbranch_vccz) { if (!W.vcc()) branch(W, I); }
H(s_cbranch_vccnz) { if (W.vcc()) branch(W, I); }
H(s_cbranch_execz) { if (!W.exec()) branch(W, I); }
H(s_cbranch_execnz) { if (W.exec()) branch(W, I); }
H(s_getpc_b64) { setS64(W, I.ops[0], I.pc + 4); }
H(s_setpc_b64) { W.pc = sval64(X, W, I.ops[0]); }
H(s_swappc_b64) {
  uint64_t t = sval64(X, W, I.ops[1]);
  setS64(W, I.ops[0], I.pc + 4);
  W.pc = t;
}
H(s_endpgm) { W.done = true; }
H(s_barrier) { W.atBarrier = true; }
H(s_noop) {}
H(s_getreg_b32) { setS(W, I.ops[0], 0); }
H(s_trap) { X.fail(I, "s_trap executed (kernel trap / abort)"); }

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// s_load_dword* / s_buffer_load_dword*: sdst, sbase, soffset|imm [offset:].
H(s_load) {
  const Operand &dst = I.ops[0];
  uint64_t base;
  bool isBuf = I.aux;
  if (isBuf)
    base = sval64(X, W, I.ops[1]) & 0xffffffffffffull;
  else
    base = sval64(X, W, I.ops[1]);
  uint64_t off = 0;
  if (I.nOps > 2 && I.ops[2].kind != OpKind::None)
    off = I.ops[2].kind == OpKind::Imm ? (uint64_t)(int64_t)I.ops[2].immValue()
                                       : sval(X, W, I.ops[2]);
  uint64_t addr = (base + off + I.offset) & ~3ull;
  unsigned n = dst.width;
  const uint8_t *p = X.translate(addr, 4 * n, false);
  if (!p)
    return X.failLane(I, 0, addr, 4 * n, "scalar load");
  for (unsigned i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, p + 4 * i, 4);
    setS(W, dst, v, i);
  }
  X.stats->globalBytesRead += 4 * n;
}
H(s_store) {
  const Operand &data = I.ops[0];
  uint64_t addr =
      (sval64(X, W, I.ops[1]) +
       (I.ops[2].kind == OpKind::Imm ? I.ops[2].immValue() : sval(X, W, I.ops[2])) +
       I.offset) &
      ~3ull;
  unsigned n = data.width;
  uint8_t *p = X.translate(addr, 4 * n, true);
  if (!p)
    return X.failLane(I, 0, addr, 4 * n, "scalar store");
  for (unsigned i = 0; i < n; ++i) {
    uint32_t v = sval(X, W, data, i);
    std::memcpy(p + 4 * i, &v, 4);
  }
  X.stats->globalBytesWritten += 4 * n;
}

/// Global/flat address of lane l: vaddr is ops[ai]; saddr ops[ai+k].
struct Addr {
  Src lo, hi, sv;
  bool hasS;
  uint64_t sbase;
  int64_t off;
  uint64_t operator()(unsigned l) const {
    if (hasS)
      return sbase + lo[l] + off;
    return ((uint64_t)lo[l] | ((uint64_t)hi[l] << 32)) + off;
  }
};
inline Addr addrOf(Exec &X, Wave &W, const Inst &I, unsigned vi,
                   unsigned si) {
  Addr a;
  const Operand &v = I.ops[vi];
  const Operand &s = I.ops[si];
  a.hasS = si < I.nOps && s.kind == OpKind::SReg;
  a.sbase = a.hasS ? sval64(X, W, s) : 0;
  a.lo = src(X, W, v, 0);
  a.hi = v.width > 1 ? src(X, W, v, 1) : Src{kZero, 0};
  a.off = I.offset;
  if (v.kind == OpKind::Off) {
    a.lo = {kZero, 0};
    a.hi = {kZero, 0};
  }
  return a;
}

// aux = bytes; aux2: 0 zero-ext, 1 sign-ext, 2 d16 lo, 3 d16 hi.
H(global_load) {
  const Operand &dst = I.ops[0];
  Addr ad = addrOf(X, W, I, 1, 2);
  unsigned bytes = I.aux, mode = I.aux2;
  unsigned n = (bytes + 3) / 4;
  uint32_t *d[4];
  for (unsigned i = 0; i < n; ++i)
    d[i] = vdst(X, W, dst, i);
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = ad(l);
    const uint8_t *p = X.translate(a, bytes, false);
    if (!p)
      return X.failLane(I, l, a, bytes, "global load");
    if (bytes >= 4) {
      std::memcpy(X.tmp[3], p, bytes);
      for (unsigned i = 0; i < n; ++i)
        d[i][l] = X.tmp[3][i];
    } else {
      uint32_t v = bytes == 1 ? p[0] : (uint32_t)p[0] | ((uint32_t)p[1] << 8);
      if (mode == 1)
        v = (uint32_t)sext(v, 8 * bytes);
      else if (mode == 2)
        v = (d[0][l] & 0xffff0000u) |
            (I.name.find("sbyte") != std::string::npos ? (uint16_t)(int8_t)v : v);
      else if (mode == 3)
        v = (d[0][l] & 0xffffu) |
            ((I.name.find("sbyte") != std::string::npos ? (uint32_t)(uint16_t)(int8_t)v : v) << 16);
      d[0][l] = v;
    }
  }
  X.stats->globalBytesRead += (uint64_t)bytes * __builtin_popcountll(W.exec());
}
// aux = bytes; aux2 = 1: store the high 16 bits (d16_hi).
H(global_store) {
  Addr ad = addrOf(X, W, I, 0, 2);
  const Operand &data = I.ops[1];
  unsigned bytes = I.aux, n = (bytes + 3) / 4;
  Src s[4];
  for (unsigned i = 0; i < n; ++i)
    s[i] = src(X, W, data, i);
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = ad(l);
    uint8_t *p = X.translate(a, bytes, true);
    if (!p)
      return X.failLane(I, l, a, bytes, "global store");
    uint32_t buf[4];
    for (unsigned i = 0; i < n; ++i)
      buf[i] = s[i][l];
    if (I.aux2)
      buf[0] >>= 16;
    std::memcpy(p, buf, bytes);
  }
  X.stats->globalBytesWritten +=
      (uint64_t)bytes * __builtin_popcountll(W.exec());
}
/// Global atomics (32-bit): [vdst,] vaddr, vdata, saddr|off.
H(global_atomic) {
  bool ret = I.glc;
  unsigned vi = ret ? 1 : 0;
  Addr ad = addrOf(X, W, I, vi, vi + 2);
  const Operand &data = I.ops[vi + 1];
  Src s0 = src(X, W, data, 0), s1 = src(X, W, data, 1);
  uint32_t *d = ret ? vdst(X, W, I.ops[0]) : X.tmp[3];
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = ad(l);
    uint8_t *p = X.translate(a, 4, true);
    if (!p)
      return X.failLane(I, l, a, 4, "global atomic");
    uint32_t old, v = s0[l], r;
    std::memcpy(&old, p, 4);
    switch (I.aux) {
    case 0: r = old + v; break;
    case 1: r = old - v; break;
    case 2: r = v; break;
    case 3: r = old == s1[l] ? v : old; break; // cmpswap: data = {src, cmp}
    case 4: r = (uint32_t)std::max((int32_t)old, (int32_t)v); break;
    case 5: r = std::max(old, v); break;
    case 6: r = (uint32_t)std::min((int32_t)old, (int32_t)v); break;
    case 7: r = std::min(old, v); break;
    case 8: r = old & v; break;
    case 9: r = old | v; break;
    case 10: r = old ^ v; break;
    case 11: r = f2u(u2f(old) + u2f(v)); break;
    case 12: r = old >= v ? 0 : old + 1; break; // inc
    default: r = (old == 0 || old > v) ? v : old - 1; break; // dec
    }
    std::memcpy(p, &r, 4);
    d[l] = old;
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

/// buffer_load/store_*: vdata, vaddr, srsrc, soffset [offen idxen offset:].
/// Out-of-range offsets (>= num_records) read 0 / drop writes, as the
/// hardware does; an in-range access outside every buffer is an error.
template <bool Store> void bufferOp(Exec &X, Wave &W, const Inst &I) {
  const Operand &data = I.ops[0], &va = I.ops[1], &rs = I.ops[2],
                &so = I.ops[3];
  uint64_t base = sval64(X, W, rs) & 0xffffffffffffull;
  uint32_t stride = (sval(X, W, rs, 1) >> 16) & 0x3fff;
  uint32_t numRecords = sval(X, W, rs, 2);
  uint32_t soff = sval(X, W, so);
  unsigned bytes = I.aux, n = (bytes + 3) / 4;
  Src vidx = src(X, W, va, 0), voff = src(X, W, va, (I.idxen && I.offen) ? 1 : 0);
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t off = (uint64_t)(I.offen ? voff[l] : 0) + (uint32_t)I.offset;
    uint64_t idx = I.idxen ? vidx[l] : 0;
    bool oob = stride ? (idx >= numRecords || off + bytes > stride)
                      : (off + soff + bytes > numRecords);
    uint64_t a = base + soff + off + idx * stride;
    if (oob) {
      if (!Store)
        for (unsigned i = 0; i < n; ++i)
          vdst(X, W, data, i)[l] = 0;
      continue;
    }
    uint8_t *p = X.translate(a, bytes, Store);
    if (!p)
      return X.failLane(I, l, a, bytes, Store ? "buffer store" : "buffer load");
    if (Store) {
      storeFromLane(X, W, I, data, l, p, bytes);
      X.stats->globalBytesWritten += bytes;
    } else {
      loadToLane(X, W, I, data, l, p, bytes);
      X.stats->globalBytesRead += bytes;
    }
  }
}
H(buffer_load) { bufferOp<false>(X, W, I); }
H(buffer_store) { bufferOp<true>(X, W, I); }

/// scratch_load/store: per-lane private memory (architected flat scratch):
/// address = vaddr + saddr + offset inside the lane's private segment.
template <bool Store> void scratchOp(Exec &X, Wave &W, const Inst &I) {
  unsigned dataIdx = Store ? 1 : 0, vi = Store ? 0 : 1;
  const Operand &data = I.ops[dataIdx], &va = I.ops[vi], &sa = I.ops[vi + (Store ? 2 : 1)];
  uint32_t sbase = sa.kind == OpKind::SReg ? sval(X, W, sa) : 0;
  Src v = va.kind == OpKind::VReg ? src(X, W, va) : Src{kZero, 0};
  unsigned bytes = I.aux;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)(uint32_t)(v[l] + sbase + I.offset);
    if (a > X.privateSize || bytes > X.privateSize - a)
      return X.failLane(I, l, a, bytes,
                        Store ? "scratch store" : "scratch load");
    uint8_t *p = W.scratch.data() + (uint64_t)l * X.privateSize + a;
    if (Store) {
      storeFromLane(X, W, I, data, l, p, bytes);
    } else {
      loadToLane(X, W, I, data, l, p, bytes);
    }
  }
}
H(scratch_load) { scratchOp<false>(X, W, I); }
H(scratch_store) { scratchOp<true>(X, W, I); }

// LDS. ds_read: vdst, vaddr; ds_write: vaddr, vdata[, vdata1].
inline uint8_t *ldsPtr(Exec &X, const Inst &I, unsigned l, uint64_t a,
                       unsigned n) {
  if (a > X.lds.size() || n > X.lds.size() - a) {
    X.failLane(I, l, a, n, "LDS access");
    return nullptr;
  }
  return X.lds.data() + a;
}
// aux = bytes; aux2: 0 zext, 1 sext, 2 d16 lo, 3 d16 hi.
H(ds_read) {
  const Operand &dst = I.ops[0];
  Src va = src(X, W, I.ops[1]);
  unsigned bytes = I.aux;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)va[l] + (uint32_t)I.offset;
    uint8_t *p = ldsPtr(X, I, l, a, bytes);
    if (!p)
      return;
    loadToLane(X, W, I, dst, l, p, bytes);
  }
  X.stats->ldsBytesRead += (uint64_t)bytes * __builtin_popcountll(W.exec());
}
H(ds_write) {
  Src va = src(X, W, I.ops[0]);
  const Operand &data = I.ops[1];
  unsigned bytes = I.aux;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)va[l] + (uint32_t)I.offset;
    uint8_t *p = ldsPtr(X, I, l, a, bytes);
    if (!p)
      return;
    storeFromLane(X, W, I, data, l, p, bytes);
  }
  X.stats->ldsBytesWritten += (uint64_t)bytes * __builtin_popcountll(W.exec());
}
// ds_read2_b32/b64 (aux = element bytes, aux2 = stride multiplier 1 or 64).
H(ds_read2) {
  const Operand &dst = I.ops[0];
  Src va = src(X, W, I.ops[1]);
  unsigned eb = I.aux, nd = eb / 4, mul = I.aux2 * eb;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    for (unsigned k = 0; k < 2; ++k) {
      uint64_t a = (uint64_t)va[l] + (uint64_t)(k ? I.offset1 : I.offset0) * mul;
      uint8_t *p = ldsPtr(X, I, l, a, eb);
      if (!p)
        return;
      for (unsigned i = 0; i < nd; ++i) {
        uint32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        vdst(X, W, dst, k * nd + i)[l] = v;
      }
    }
  }
  X.stats->ldsBytesRead += 2ull * eb * __builtin_popcountll(W.exec());
}
H(ds_write2) {
  Src va = src(X, W, I.ops[0]);
  unsigned eb = I.aux, nd = eb / 4, mul = I.aux2 * eb;
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    for (unsigned k = 0; k < 2; ++k) {
      uint64_t a = (uint64_t)va[l] + (uint64_t)(k ? I.offset1 : I.offset0) * mul;
      uint8_t *p = ldsPtr(X, I, l, a, eb);
      if (!p)
        return;
      for (unsigned i = 0; i < nd; ++i) {
        uint32_t v = src(X, W, I.ops[1 + k], i)[l];
        std::memcpy(p + 4 * i, &v, 4);
      }
    }
  }
  X.stats->ldsBytesWritten += 2ull * eb * __builtin_popcountll(W.exec());
}
/// ds_add_u32 etc: [vdst,] vaddr, vdata.
H(ds_atomic) {
  bool ret = I.aux2;
  unsigned vi = ret ? 1 : 0;
  Src va = src(X, W, I.ops[vi]), vd = src(X, W, I.ops[vi + 1]);
  uint32_t *d = ret ? vdst(X, W, I.ops[0]) : X.tmp[3];
  uint64_t e = W.exec();
  for (; e; e &= e - 1) {
    unsigned l = __builtin_ctzll(e);
    uint64_t a = (uint64_t)va[l] + (uint32_t)I.offset;
    uint8_t *p = ldsPtr(X, I, l, a, 4);
    if (!p)
      return;
    uint32_t old, v = vd[l], r;
    std::memcpy(&old, p, 4);
    switch (I.aux) {
    case 0: r = old + v; break;
    case 1: r = old - v; break;
    case 2: r = std::max(old, v); break;
    case 3: r = std::min(old, v); break;
    case 4: r = (uint32_t)std::max((int32_t)old, (int32_t)v); break;
    case 5: r = (uint32_t)std::min((int32_t)old, (int32_t)v); break;
    case 6: r = f2u(u2f(old) + u2f(v)); break;
    case 7: r = f2u(std::fmax(u2f(old), u2f(v))); break;
    default: r = v; break; // wrxchg
    }
    std::memcpy(p, &r, 4);
    d[l] = old;
  }
}
/// ds_bpermute_b32 vdst, vaddr, vdata: dst[l] = data[(addr[l]+off)/4 % 64];
/// ds_permute_b32: dst[(addr[l]+off)/4 % 64] = data[l].
H(ds_bpermute_b32) {
  uint32_t *d = vdst(X, W, I.ops[0]);
  Src va = src(X, W, I.ops[1]), vd = src(X, W, I.ops[2]);
  uint32_t in[64], out[64];
  for (unsigned l = 0; l < 64; ++l)
    in[l] = vd[l];
  forLanes(W.exec(), [&](unsigned l) {
    out[l] = in[((va[l] + (uint32_t)I.offset) >> 2) & 63];
  });
  forLanes(W.exec(), [&](unsigned l) { d[l] = out[l]; });
}
H(ds_permute_b32) {
  uint32_t *d = vdst(X, W, I.ops[0]);
  Src va = src(X, W, I.ops[1]), vd = src(X, W, I.ops[2]);
  uint32_t out[64] = {0};
  forLanes(W.exec(), [&](unsigned l) {
    out[((va[l] + (uint32_t)I.offset) >> 2) & 63] = vd[l];
  });
  forLanes(W.exec(), [&](unsigned l) { d[l] = out[l]; });
}
/// ds_swizzle_b32 (offset:swizzle(...) pattern in the raw offset field).
H(ds_swizzle_b32) {
  uint32_t *d = vdst(X, W, I.ops[0]);
  Src vd = src(X, W, I.ops[1]);
  uint32_t pat = I.rawOffset & 0xffff, in[64], out[64];
  for (unsigned l = 0; l < 64; ++l)
    in[l] = vd[l];
  forLanes(W.exec(), [&](unsigned l) {
    unsigned srcLane;
    if (pat & 0x8000) { // quad permute
      unsigned q = l & ~3u, i = l & 3;
      srcLane = q + ((pat >> (2 * i)) & 3);
    } else { // bitmask mode within 32 lanes
      unsigned andM = pat & 31, orM = (pat >> 5) & 31, xorM = (pat >> 10) & 31;
      srcLane = (l & 32) | ((((l & 31) & andM) | orM) ^ xorM);
    }
    out[l] = in[srcLane];
  });
  forLanes(W.exec(), [&](unsigned l) { d[l] = out[l]; });
}

/// LDS DMA-free "m0" ops etc are not implemented.

//===----------------------------------------------------------------------===//
// DPP / SDWA wrappers
//===----------------------------------------------------------------------===//

void dppExec(Exec &X, Wave &W, const Inst &I) {
  const Operand &s0 = I.orig[0];
  unsigned nd = s0.width > 1 ? 2 : 1;
  Src in[2] = {src(X, W, s0, 0), src(X, W, s0, nd > 1 ? 1 : 0)};
  uint64_t exec = W.exec(), valid = 0;
  for (unsigned l = 0; l < 64; ++l) {
    int sl = -1;
    unsigned row = l & ~15u, i = l & 15;
    switch (I.dppKind) {
    case 1:
      sl = (l & ~3u) + I.quadPerm[l & 3];
      break;
    case 2:
      sl = i + I.dppArg < 16 ? (int)(l + I.dppArg) : -1;
      break;
    case 3:
      sl = i >= I.dppArg ? (int)(l - I.dppArg) : -1;
      break;
    case 4:
      sl = row + ((i - I.dppArg) & 15);
      break;
    case 5:
      sl = l < 63 ? (int)l + 1 : -1;
      break;
    case 6:
      sl = (l + 1) & 63;
      break;
    case 7:
      sl = l > 0 ? (int)l - 1 : -1;
      break;
    case 8:
      sl = (l - 1) & 63;
      break;
    case 9:
      sl = row + 15 - i;
      break;
    case 10:
      sl = (l & ~7u) + 7 - (l & 7);
      break;
    case 11: // row_bcast:15
      sl = row ? (int)row - 1 : -1;
      break;
    case 12: // row_bcast:31
      sl = l >= 32 ? 31 : -1;
      break;
    default:
      sl = l;
    }
    bool rowOn = (I.rowMask >> (l / 16)) & 1;
    bool bankOn = (I.bankMask >> ((l / 4) & 3)) & 1;
    if (!rowOn || !bankOn)
      continue;
    // An invalid or disabled source lane reads 0 with bound_ctrl, else the
    // lane is not written.
    if (sl < 0 || !((exec >> sl) & 1)) {
      if (!I.boundCtrl)
        continue;
      for (unsigned k = 0; k < nd; ++k)
        X.tmp[k][l] = 0;
    } else {
      for (unsigned k = 0; k < nd; ++k)
        X.tmp[k][l] = in[k][sl];
    }
    valid |= 1ull << l;
  }
  W.setExec(exec & valid);
  I.inner(X, W, I);
  W.setExec(exec);
}

uint32_t sdwaSel(uint32_t v, uint8_t sel, bool sx) {
  switch (sel) {
  case 0: case 1: case 2: case 3: {
    uint32_t b = (v >> (8 * sel)) & 0xff;
    return sx ? (uint32_t)(int32_t)(int8_t)b : b;
  }
  case 4: case 5: {
    uint32_t h = (v >> (16 * (sel - 4))) & 0xffff;
    return sx ? (uint32_t)(int32_t)(int16_t)h : h;
  }
  default:
    return v;
  }
}
void sdwaExec(Exec &X, Wave &W, const Inst &I) {
  Src a = src(X, W, I.orig[0]);
  Src b = src(X, W, I.orig[1]);
  bool two = I.ops[I.src0Idx + 1].kind == OpKind::Tmp;
  forLanes(W.exec(), [&](unsigned l) {
    X.tmp[0][l] = sdwaSel(a[l], I.src0Sel, I.src0Sext);
    if (two)
      X.tmp[1][l] = sdwaSel(b[l], I.src1Sel, I.src1Sext);
  });
  bool dstV = I.orig[2].kind == OpKind::VReg;
  I.inner(X, W, I);
  if (!dstV)
    return;
  uint32_t *d = vdst(X, W, I.orig[2]);
  forLanes(W.exec(), [&](unsigned l) {
    uint32_t r = X.tmp[2][l], old = d[l], out;
    unsigned sel = I.dstSel;
    if (sel == 6) {
      out = r;
    } else {
      unsigned sh = sel < 4 ? 8 * sel : 16 * (sel - 4);
      uint32_t m = (sel < 4 ? 0xffu : 0xffffu) << sh;
      uint32_t v = (r << sh) & m;
      if (I.dstUnused == 2)
        out = (old & ~m) | v;
      else if (I.dstUnused == 1) {
        unsigned bits = sel < 4 ? 8 : 16;
        int32_t sx = sext(r & ((1u << bits) - 1), bits);
        uint32_t hiFill = sx < 0 ? ~0u << (sh + bits) : 0;
        if (sh + bits >= 32)
          hiFill = 0;
        out = v | hiFill;
      } else
        out = v;
    }
    d[l] = out;
  });
}

} // namespace

ExecFn uq::emu::detail::dppWrapper() { return dppExec; }
ExecFn uq::emu::detail::sdwaWrapper() { return sdwaExec; }

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

const llvm::StringMap<OpEntry> &uq::emu::detail::opTable() {
  static const llvm::StringMap<OpEntry> table = [] {
    llvm::StringMap<OpEntry> t;
    auto add = [&](StringRef n, ExecFn f, Cls c, FT ft = FT::None, int aux = 0,
                   int aux2 = 0, uint8_t nDst = 1) {
      t[n] = OpEntry{f, c, ft, aux, aux2, nDst};
    };
    auto V = [&](StringRef n, ExecFn f, FT ft = FT::None, uint8_t nDst = 1) {
      add(n, f, Cls::VALU, ft, 0, 0, nDst);
    };
    auto T = [&](StringRef n, ExecFn f, FT ft = FT::F32) {
      add(n, f, Cls::Trans, ft);
    };
    auto S = [&](StringRef n, ExecFn f, uint8_t nDst = 1) {
      add(n, f, Cls::SALU, FT::None, 0, 0, nDst);
    };
#define VR(N) V(#N, N)
#define VRF(N) V(#N, N, FT::F32)
#define VRD(N) V(#N, N, FT::F64)
#define VRH(N) V(#N, N, FT::F16)
#define SR(N) S(#N, N)
    // VALU integer.
    VR(v_mov_b32); VR(v_not_b32); VR(v_bfrev_b32); VR(v_ffbh_u32);
    VR(v_ffbl_b32); VR(v_ffbh_i32); VR(v_cvt_f32_u32); VR(v_cvt_f32_i32);
    VR(v_cvt_f32_ubyte0); VR(v_cvt_f32_ubyte1); VR(v_cvt_f32_ubyte2);
    VR(v_cvt_f32_ubyte3); VR(v_cvt_f32_bf16);
    VR(v_add_u32); VR(v_sub_u32); VR(v_subrev_u32); VR(v_mul_lo_u32);
    VR(v_mul_hi_u32); VR(v_mul_hi_i32); VR(v_mul_u32_u24); VR(v_mul_i32_i24);
    VR(v_mul_hi_u32_u24); VR(v_mul_hi_i32_i24); VR(v_lshlrev_b32);
    VR(v_lshrrev_b32); VR(v_ashrrev_i32); VR(v_lshl_b32); VR(v_and_b32);
    VR(v_or_b32); VR(v_xor_b32); VR(v_xnor_b32); VR(v_min_u32);
    VR(v_max_u32); VR(v_min_i32); VR(v_max_i32); VR(v_bcnt_u32_b32);
    VR(v_bfm_b32); VR(v_mbcnt_lo_u32_b32); VR(v_mbcnt_hi_u32_b32);
    VR(v_pack_b32_f16); VR(v_lshlrev_b16); VR(v_lshrrev_b16); VR(v_add_u16);
    VR(v_sub_u16); VR(v_mul_lo_u16); VR(v_cvt_pk_u16_u32);
    VR(v_cvt_pk_i16_i32); VR(v_add3_u32); VR(v_xad_u32); VR(v_lshl_add_u32);
    VR(v_add_lshl_u32); VR(v_lshl_or_b32); VR(v_and_or_b32); VR(v_or3_b32);
    VR(v_bfe_u32); VR(v_bfe_i32); VR(v_bfi_b32); VR(v_alignbit_b32);
    VR(v_alignbyte_b32); VR(v_perm_b32); VR(v_mad_u32_u24);
    VR(v_mad_i32_i24); VR(v_min3_u32); VR(v_max3_u32); VR(v_med3_u32);
    VR(v_min3_i32); VR(v_max3_i32); VR(v_med3_i32); VR(v_mad_u32_u16);
    VR(v_lshlrev_b64); VR(v_lshrrev_b64); VR(v_ashrrev_i64);
    VR(v_lshl_add_u64); VR(v_mov_b64);
    VR(v_bitop3_b32); VR(v_bitop3_b16);
    V("v_permlane16_swap_b32", permlaneSwap<16>);
    V("v_permlane32_swap_b32", permlaneSwap<32>);
    V("v_mad_u64_u32", v_mad_u64_u32, FT::None, 2);
    V("v_mad_i64_i32", v_mad_i64_i32, FT::None, 2);
    V("v_add_co_u32", v_add_co_u32, FT::None, 2);
    V("v_sub_co_u32", v_sub_co_u32, FT::None, 2);
    V("v_subrev_co_u32", v_subrev_co_u32, FT::None, 2);
    V("v_addc_co_u32", v_addc_co_u32, FT::None, 2);
    V("v_subb_co_u32", v_subb_co_u32, FT::None, 2);
    V("v_subbrev_co_u32", v_subbrev_co_u32, FT::None, 2);
    V("v_cndmask_b32", v_cndmask_b32, FT::F32);
    VR(v_readfirstlane_b32); VR(v_readlane_b32); VR(v_writelane_b32);
    V("v_accvgpr_read_b32", v_accvgpr_mov);
    V("v_accvgpr_write_b32", v_accvgpr_mov);
    V("v_accvgpr_mov_b32", v_accvgpr_mov);
    V("v_nop", v_nop, FT::None, 0);
    // VALU f32.
    VRF(v_add_f32); VRF(v_sub_f32); VRF(v_subrev_f32); VRF(v_mul_f32);
    VRF(v_mul_legacy_f32); VRF(v_min_f32); VRF(v_max_f32); VRF(v_ldexp_f32);
    VRF(v_fma_f32); VRF(v_mad_f32); VRF(v_min3_f32); VRF(v_max3_f32);
    VRF(v_med3_f32); VRF(v_maximum3_f32); VRF(v_minimum3_f32);
    V("v_div_scale_f32", divScale<false>, FT::F32, 2);
    V("v_div_scale_f64", divScale<true>, FT::F64, 2);
    VRF(v_div_fmas_f32); VRF(v_div_fixup_f32);
    V("v_fmac_f32", v_fma_f32, FT::F32);
    V("v_mac_f32", v_mad_f32, FT::F32);
    T("v_exp_f32", v_exp_f32); T("v_log_f32", v_log_f32);
    T("v_rcp_f32", v_rcp_f32); T("v_rcp_iflag_f32", v_rcp_iflag_f32);
    T("v_rsq_f32", v_rsq_f32); T("v_sqrt_f32", v_sqrt_f32);
    T("v_sin_f32", v_sin_f32); T("v_cos_f32", v_cos_f32);
    VRF(v_rndne_f32); VRF(v_trunc_f32); VRF(v_ceil_f32); VRF(v_floor_f32);
    VRF(v_fract_f32); VRF(v_frexp_mant_f32); VRF(v_frexp_exp_i32_f32);
    VRF(v_cvt_u32_f32); VRF(v_cvt_i32_f32); VRF(v_cvt_f16_f32);
    VRF(v_cvt_rpi_i32_f32); VRF(v_cvt_flr_i32_f32);
    VRH(v_cvt_f32_f16);
    V("v_cvt_pkrtz_f16_f32", v_cvt_pkrtz_f16_f32_impl, FT::F32);
    VRF(v_cvt_pk_bf16_f32); VRF(v_cvt_f64_f32);
    V("v_cvt_f64_i32", v_cvt_f64_i32_impl); VR(v_cvt_f64_u32);
    VRD(v_cvt_f32_f64); VRD(v_cvt_i32_f64); VRD(v_cvt_u32_f64);
    VRD(v_frexp_exp_i32_f64);
    VRD(v_add_f64); VRD(v_mul_f64); VRD(v_min_f64); VRD(v_max_f64);
    VRD(v_fma_f64); VRD(v_div_fmas_f64); VRD(v_div_fixup_f64);
    T("v_rcp_f64", v_rcp_f64, FT::F64); T("v_rsq_f64", v_rsq_f64, FT::F64);
    T("v_sqrt_f64", v_sqrt_f64, FT::F64);
    VRD(v_trunc_f64); VRD(v_floor_f64); VRD(v_ceil_f64); VRD(v_rndne_f64);
    VRD(v_fract_f64); VRD(v_frexp_mant_f64); VRD(v_ldexp_f64);
    // f16.
    VRH(v_add_f16); VRH(v_sub_f16); VRH(v_subrev_f16); VRH(v_mul_f16);
    VRH(v_max_f16); VRH(v_min_f16); VRH(v_fma_f16); VRH(v_mad_f16);
    V("v_fmac_f16", v_fma_f16, FT::F16);
    T("v_exp_f16", v_exp_f16, FT::F16); T("v_rcp_f16", v_rcp_f16, FT::F16);
    V("v_pk_add_f16", v_pk_add_f16, FT::PkF16);
    V("v_pk_mul_f16", v_pk_mul_f16, FT::PkF16);
    V("v_pk_fma_f16", v_pk_fma_f16, FT::PkF16);
    V("v_pk_max_f16", v_pk_max_f16, FT::PkF16);
    V("v_pk_maximum3_f16", v_pk_maximum3_f16, FT::PkF16);
    V("v_pk_minimum3_f16", v_pk_minimum3_f16, FT::PkF16);
    V("v_pk_min_f16", v_pk_min_f16, FT::PkF16);
    VR(v_pk_add_u16); VR(v_pk_sub_u16); VR(v_pk_mul_lo_u16);
    VR(v_pk_lshlrev_b16); VR(v_pk_lshrrev_b16); VR(v_pk_max_u16);
    VR(v_pk_min_u16);
    V("v_pk_fma_f32", v_pk_fma_f32, FT::PkF32);
    V("v_pk_mul_f32", v_pk_mul_f32, FT::PkF32);
    V("v_pk_add_f32", v_pk_add_f32, FT::PkF32);
    V("v_pk_mov_b32", v_pk_mov_b32_impl, FT::None);
    (void)v_pk_mov_b32;
    (void)s_mul_u64_fallback;
    // Small-float conversions.
    VRF(v_cvt_scalef32_pk_f32_fp4); VRF(v_cvt_scalef32_pk_f16_fp4);
    VRF(v_cvt_scalef32_pk_bf16_fp4); VRF(v_cvt_scalef32_pk_fp4_f32);
    VRF(v_cvt_pk_fp8_f32); VRF(v_cvt_pk_bf8_f32);
    VRF(v_cvt_scalef32_pk_fp8_f32); VRF(v_cvt_scalef32_pk_bf8_f32);
    VRF(v_cvt_f32_fp8); VRF(v_cvt_f32_bf8); VRF(v_cvt_scalef32_f32_fp8);
    VRF(v_cvt_scalef32_f32_bf8); VRF(v_cvt_pk_f32_fp8);
    VRF(v_cvt_pk_f32_bf8); VRF(v_cvt_scalef32_pk_f32_fp8);
    VRF(v_cvt_scalef32_pk_f32_bf8);
    // Compares.
    {
      static const char *intConds[] = {"f", "lt", "eq", "le",
                                       "gt", "ne", "ge", "t"};
      static const char *fltConds[] = {"f",   "lt",  "eq",  "le", "gt",  "lg",
                                       "ge",  "o",   "u",   "nge", "nlg", "ngt",
                                       "nle", "neq", "nlt", "tru"};
      static const struct { const char *n; int ty; FT ft; } types[] = {
          {"f16", CF16, FT::F16}, {"f32", CF32, FT::F32},
          {"f64", CF64, FT::F64}, {"i16", CI16, FT::None},
          {"u16", CU16, FT::None}, {"i32", CI32, FT::None},
          {"u32", CU32, FT::None}, {"i64", CI64, FT::None},
          {"u64", CU64, FT::None}};
      for (const char *pre : {"v_cmp_", "v_cmpx_"})
        for (const auto &ty : types) {
          bool fl = ty.ty <= CF64;
          unsigned n = fl ? 16 : 8;
          for (unsigned c = 0; c < n; ++c) {
            std::string name = std::string(pre) +
                               (fl ? fltConds[c] : intConds[c]) + "_" + ty.n;
            add(name, v_cmp, Cls::VALU, ty.ft, c, ty.ty, 1);
          }
          if (!fl) {
            // "lg" is an alias some printers use for "ne" on integers.
            add(std::string(pre) + "lg_" + ty.n, v_cmp, Cls::VALU, ty.ft, 5,
                ty.ty, 1);
          } else {
            add(std::string(pre) + "class_" + ty.n, v_cmp, Cls::VALU, ty.ft,
                100, ty.ty, 1);
          }
        }
    }
    // MFMA.
    {
      struct { const char *n; int M, K, fa, fb; } plain[] = {
          {"v_mfma_f32_16x16x32_bf16", 16, 32, MF_BF16, MF_BF16},
          {"v_mfma_f32_16x16x32_f16", 16, 32, MF_F16, MF_F16},
          {"v_mfma_f32_32x32x16_bf16", 32, 16, MF_BF16, MF_BF16},
          {"v_mfma_f32_32x32x16_f16", 32, 16, MF_F16, MF_F16},
          {"v_mfma_f32_16x16x16_bf16", 16, 16, MF_BF16, MF_BF16},
          {"v_mfma_f32_16x16x16_f16", 16, 16, MF_F16, MF_F16},
          {"v_mfma_f32_32x32x8_bf16", 32, 8, MF_BF16, MF_BF16},
          {"v_mfma_f32_32x32x8_f16", 32, 8, MF_F16, MF_F16},
          {"v_mfma_f32_16x16x32_fp8_fp8", 16, 32, MF_FP8, MF_FP8},
          {"v_mfma_f32_16x16x32_fp8_bf8", 16, 32, MF_FP8, MF_BF8},
          {"v_mfma_f32_16x16x32_bf8_fp8", 16, 32, MF_BF8, MF_FP8},
          {"v_mfma_f32_16x16x32_bf8_bf8", 16, 32, MF_BF8, MF_BF8},
          {"v_mfma_f32_32x32x16_fp8_fp8", 32, 16, MF_FP8, MF_FP8},
          {"v_mfma_f32_32x32x16_fp8_bf8", 32, 16, MF_FP8, MF_BF8},
          {"v_mfma_f32_32x32x16_bf8_fp8", 32, 16, MF_BF8, MF_FP8},
          {"v_mfma_f32_32x32x16_bf8_bf8", 32, 16, MF_BF8, MF_BF8},
          {"v_mfma_f32_16x16x4_f32", 16, 4, MF_F32, MF_F32},
          {"v_mfma_f32_32x32x2_f32", 32, 2, MF_F32, MF_F32},
      };
      for (auto &p : plain)
        add(p.n, mfmaPlain, Cls::MFMA, FT::F32, p.M | (p.K << 8),
            p.fa | (p.fb << 4), 1);
      add("v_mfma_scale_f32_16x16x128_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32,
          16, 1, 1);
      add("v_mfma_scale_f32_32x32x64_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32,
          32, 1, 1);
      add("v_mfma_f32_16x16x128_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32, 16,
          0, 1);
      add("v_mfma_f32_32x32x64_f8f6f4", mfmaF8F6F4, Cls::MFMA, FT::F32, 32, 0,
          1);
    }
    // SALU.
    SR(s_mov_b32); SR(s_not_b32); SR(s_brev_b32); SR(s_bcnt1_i32_b32);
    SR(s_bcnt0_i32_b32); SR(s_ff1_i32_b32); SR(s_flbit_i32_b32);
    SR(s_sext_i32_i8); SR(s_sext_i32_i16); SR(s_abs_i32); SR(s_mov_b64);
    SR(s_not_b64); SR(s_bcnt1_i32_b64); SR(s_ff1_i32_b64); SR(s_flbit_i32_b64);
    SR(s_movk_i32); SR(s_cmovk_i32); SR(s_addk_i32); SR(s_mulk_i32);
    SR(s_cmov_b32); SR(s_cmov_b64);
    SR(s_add_u32); SR(s_sub_u32); SR(s_addc_u32); SR(s_subb_u32);
    SR(s_add_i32); SR(s_sub_i32); SR(s_mul_i32); SR(s_mul_hi_u32);
    SR(s_mul_hi_i32); SR(s_lshl_b32); SR(s_lshr_b32); SR(s_ashr_i32);
    SR(s_lshl1_add_u32); SR(s_lshl2_add_u32); SR(s_lshl3_add_u32);
    SR(s_lshl4_add_u32); SR(s_and_b32); SR(s_or_b32); SR(s_xor_b32);
    SR(s_andn2_b32); SR(s_orn2_b32); SR(s_nand_b32); SR(s_nor_b32);
    SR(s_xnor_b32); SR(s_min_i32); SR(s_max_i32); SR(s_min_u32);
    SR(s_max_u32); SR(s_cselect_b32); SR(s_bfe_u32); SR(s_bfe_i32);
    SR(s_bfm_b32); SR(s_pack_ll_b32_b16); SR(s_pack_lh_b32_b16);
    SR(s_pack_hh_b32_b16); SR(s_absdiff_i32); SR(s_and_b64); SR(s_or_b64);
    SR(s_xor_b64); SR(s_andn2_b64); SR(s_orn2_b64); SR(s_nand_b64);
    SR(s_nor_b64); SR(s_xnor_b64); SR(s_cselect_b64); SR(s_lshl_b64);
    SR(s_lshr_b64); SR(s_ashr_i64); SR(s_bfe_u64); SR(s_bfe_i64);
    SR(s_bfm_b64);
    SR(s_and_saveexec_b64); SR(s_or_saveexec_b64); SR(s_xor_saveexec_b64);
    SR(s_andn2_saveexec_b64); SR(s_orn2_saveexec_b64);
    SR(s_nand_saveexec_b64); SR(s_nor_saveexec_b64);
    SR(s_xnor_saveexec_b64); SR(s_andn1_saveexec_b64);
    SR(s_orn1_saveexec_b64);
    {
      static const char *conds[] = {nullptr, "lt", "eq", "le",
                                    "gt",    "lg", "ge"};
      for (unsigned c = 1; c < 7; ++c) {
        add(std::string("s_cmp_") + conds[c] + "_i32", s_cmp_i32, Cls::SALU,
            FT::None, c, 0, 0);
        add(std::string("s_cmp_") + conds[c] + "_u32", s_cmp_u32, Cls::SALU,
            FT::None, c, 0, 0);
        add(std::string("s_cmpk_") + conds[c] + "_i32", s_cmpk_i32, Cls::SALU,
            FT::None, c, 0, 0);
        add(std::string("s_cmpk_") + conds[c] + "_u32", s_cmpk_u32, Cls::SALU,
            FT::None, c, 0, 0);
      }
      add("s_cmp_eq_u64", s_cmp_u64, Cls::SALU, FT::None, 2, 0, 0);
      add("s_cmp_lg_u64", s_cmp_u64, Cls::SALU, FT::None, 5, 0, 0);
    }
    S("s_bitcmp0_b32", s_bitcmp0_b32, 0); S("s_bitcmp1_b32", s_bitcmp1_b32, 0);
    S("s_bitcmp0_b64", s_bitcmp0_b64, 0); S("s_bitcmp1_b64", s_bitcmp1_b64, 0);
    SR(s_bitset0_b32); SR(s_bitset1_b32);
    SR(s_getpc_b64); SR(s_getreg_b32);
    auto B = [&](StringRef n, ExecFn f) { add(n, f, Cls::Branch, FT::None, 0, 0, 0); };
    B("s_branch", s_branch); B("s_cbranch_scc0", s_cbranch_scc0);
    B("s_cbranch_scc1", s_cbranch_scc1); B("s_cbranch_vccz", s_cbranch_vccz);
    B("s_cbranch_vccnz", s_cbranch_vccnz);
    B("s_cbranch_execz", s_cbranch_execz);
    B("s_cbranch_execnz", s_cbranch_execnz);
    B("s_setpc_b64", s_setpc_b64);
    add("s_swappc_b64", s_swappc_b64, Cls::Branch, FT::None, 0, 0, 1);
    add("s_endpgm", s_endpgm, Cls::Other, FT::None, 0, 0, 0);
    add("s_barrier", s_barrier, Cls::Barrier, FT::None, 0, 0, 0);
    add("s_trap", s_trap, Cls::Other, FT::None, 0, 0, 0);
    add("s_waitcnt", s_noop, Cls::Waitcnt, FT::None, 0, 0, 0);
    add("s_waitcnt_vscnt", s_noop, Cls::Waitcnt, FT::None, 0, 0, 0);
    add("s_waitcnt_lgkmcnt", s_noop, Cls::Waitcnt, FT::None, 0, 0, 0);
    add("s_waitcnt_vmcnt", s_noop, Cls::Waitcnt, FT::None, 0, 0, 0);
    add("s_nop", s_noop, Cls::Nop, FT::None, 0, 0, 0);
    for (const char *n : {"s_setprio", "s_sleep", "s_sethalt", "s_dcache_wb",
                          "s_dcache_inv", "s_icache_inv", "s_setreg_b32",
                          "s_setreg_imm32_b32", "s_set_gpr_idx_off",
                          "s_ttracedata", "s_denorm_mode", "s_round_mode",
                          "buffer_wbl2", "buffer_inv", "s_wakeup",
                          "s_sched_barrier", "s_code_end"})
      add(n, s_noop, Cls::Other, FT::None, 0, 0, 0);
    // Scalar memory.
    for (auto [n, w] : {std::pair<const char *, int>{"dword", 1},
                        {"dwordx2", 2}, {"dwordx4", 4}, {"dwordx8", 8},
                        {"dwordx16", 16}}) {
      add(std::string("s_load_") + n, s_load, Cls::SMEM, FT::None, 0, 0, 1);
      add(std::string("s_buffer_load_") + n, s_load, Cls::SMEM, FT::None, 1,
          0, 1);
      if (w <= 4)
        add(std::string("s_store_") + n, s_store, Cls::SMEM, FT::None, 0, 0,
            0);
    }
    // Global/flat/buffer/scratch loads and stores.
    static const struct { const char *n; int bytes, mode; } lds[] = {
        {"ubyte", 1, 0}, {"sbyte", 1, 1}, {"ushort", 2, 0}, {"sshort", 2, 1},
        {"dword", 4, 0}, {"dwordx2", 8, 0}, {"dwordx3", 12, 0},
        {"dwordx4", 16, 0}, {"short_d16", 2, 2}, {"short_d16_hi", 2, 3},
        {"ubyte_d16", 1, 2}, {"ubyte_d16_hi", 1, 3}, {"sbyte_d16", 1, 2},
        {"sbyte_d16_hi", 1, 3}};
    for (const auto &x : lds) {
      add(std::string("global_load_") + x.n, global_load, Cls::Global,
          FT::None, x.bytes, x.mode, 1);
      add(std::string("flat_load_") + x.n, global_load, Cls::Global, FT::None,
          x.bytes, x.mode, 1);
      add(std::string("buffer_load_") + x.n, buffer_load, Cls::Global,
          FT::None, x.bytes, x.mode, 1);
      add(std::string("scratch_load_") + x.n, scratch_load, Cls::Scratch,
          FT::None, x.bytes, x.mode, 1);
    }
    static const struct { const char *n; int bytes, hi; } sts[] = {
        {"byte", 1, 0}, {"short", 2, 0}, {"dword", 4, 0}, {"dwordx2", 8, 0},
        {"dwordx3", 12, 0}, {"dwordx4", 16, 0}, {"byte_d16_hi", 1, 1},
        {"short_d16_hi", 2, 1}};
    for (const auto &x : sts) {
      add(std::string("global_store_") + x.n, global_store, Cls::Global,
          FT::None, x.bytes, x.hi, 0);
      add(std::string("flat_store_") + x.n, global_store, Cls::Global,
          FT::None, x.bytes, x.hi, 0);
      add(std::string("buffer_store_") + x.n, buffer_store, Cls::Global,
          FT::None, x.bytes, x.hi ? 3 : 0, 0);
      add(std::string("scratch_store_") + x.n, scratch_store, Cls::Scratch,
          FT::None, x.bytes, x.hi ? 3 : 0, 0);
    }
    static const char *atom[] = {"add", "sub", "swap", "cmpswap", "smax",
                                 "umax", "smin", "umin", "and", "or", "xor",
                                 "add_f32", "inc", "dec"};
    for (int i = 0; i < 14; ++i) {
      add(std::string("global_atomic_") + atom[i], global_atomic, Cls::Global,
          FT::None, i, 0, 0);
      add(std::string("flat_atomic_") + atom[i], global_atomic, Cls::Global,
          FT::None, i, 0, 0);
    }
    // LDS.
    static const struct { const char *n; int bytes, mode; } dsr[] = {
        {"ds_read_u8", 1, 0}, {"ds_read_i8", 1, 1}, {"ds_read_u16", 2, 0},
        {"ds_read_i16", 2, 1}, {"ds_read_b32", 4, 0}, {"ds_read_b64", 8, 0},
        {"ds_read_b96", 12, 0}, {"ds_read_b128", 16, 0},
        {"ds_read_u8_d16", 1, 2}, {"ds_read_u8_d16_hi", 1, 3},
        {"ds_read_u16_d16", 2, 2}, {"ds_read_u16_d16_hi", 2, 3}};
    for (const auto &x : dsr)
      add(x.n, ds_read, Cls::LDS, FT::None, x.bytes, x.mode, 1);
    static const struct { const char *n; int bytes, hi; } dsw[] = {
        {"ds_write_b8", 1, 0}, {"ds_write_b16", 2, 0}, {"ds_write_b32", 4, 0},
        {"ds_write_b64", 8, 0}, {"ds_write_b96", 12, 0},
        {"ds_write_b128", 16, 0}, {"ds_write_b8_d16_hi", 1, 3},
        {"ds_write_b16_d16_hi", 2, 3}};
    for (const auto &x : dsw)
      add(x.n, ds_write, Cls::LDS, FT::None, x.bytes, x.hi, 0);
    add("ds_read2_b32", ds_read2, Cls::LDS, FT::None, 4, 1, 1);
    add("ds_read2_b64", ds_read2, Cls::LDS, FT::None, 8, 1, 1);
    add("ds_read2st64_b32", ds_read2, Cls::LDS, FT::None, 4, 64, 1);
    add("ds_read2st64_b64", ds_read2, Cls::LDS, FT::None, 8, 64, 1);
    add("ds_write2_b32", ds_write2, Cls::LDS, FT::None, 4, 1, 0);
    add("ds_write2_b64", ds_write2, Cls::LDS, FT::None, 8, 1, 0);
    add("ds_write2st64_b32", ds_write2, Cls::LDS, FT::None, 4, 64, 0);
    add("ds_write2st64_b64", ds_write2, Cls::LDS, FT::None, 8, 64, 0);
    static const char *dsa[] = {"add_u32", "sub_u32", "max_u32", "min_u32",
                                "max_i32", "min_i32", "add_f32", "max_f32",
                                "wrxchg_rtn_b32"};
    for (int i = 0; i < 9; ++i) {
      std::string n = dsa[i];
      if (i < 8) {
        add("ds_" + n, ds_atomic, Cls::LDS, FT::None, i, 0, 0);
        std::string r = n;
        r.insert(r.find('_'), "_rtn");
        add("ds_" + r, ds_atomic, Cls::LDS, FT::None, i, 1, 1);
      } else
        add("ds_" + n, ds_atomic, Cls::LDS, FT::None, 8, 1, 1);
    }
    add("ds_bpermute_b32", ds_bpermute_b32, Cls::LDS);
    add("ds_permute_b32", ds_permute_b32, Cls::LDS);
    add("ds_swizzle_b32", ds_swizzle_b32, Cls::LDS);
    return t;
  }();
  return table;
}
