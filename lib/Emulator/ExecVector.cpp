//===- ExecVector.cpp - Vector ALU semantics --------------------------------===//
//
// Integer, f32, f64, f16 and packed VALU instructions and the compares
// (VOPC / VOP3 v_cmp[x]_<cond>_<type>). Conversions are in ExecConvert.cpp,
// lane moves in ExecLane.cpp. Semantics follow AMD's CDNA3/CDNA4 ISA guides;
// deviations and guesses are listed in docs/emulator.md.
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace uq::emu::detail;
using llvm::StringRef;

namespace {
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
// Integer and f32
//===----------------------------------------------------------------------===//

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
/// 32-bit add/sub without carry-out (gfx9 VOP2/VOP3 `v_add_u32`,
/// `v_sub_u32`, `v_subrev_u32`, and the VOP3-only signed `v_add_i32`,
/// `v_sub_i32`): the result wraps, or with `clamp` saturates to the unsigned
/// / signed 32-bit range (CDNA3 ISA, VOP3 "clamp" on integer ops).
template <bool Signed, int Op> void addSub32(Exec &X, Wave &W, const Inst &I) {
  DST0;
  Src a = src(X, W, I, 0), b = src(X, W, I, 1);
  forLanes(W.exec(), [&](unsigned l) {
    int64_t A = Signed ? (int64_t)(int32_t)a[l] : (int64_t)a[l];
    int64_t B = Signed ? (int64_t)(int32_t)b[l] : (int64_t)b[l];
    int64_t r = Op == 0 ? A + B : Op == 1 ? A - B : B - A;
    if (I.clamp) {
      int64_t lo = Signed ? INT32_MIN : 0;
      int64_t hi = Signed ? INT32_MAX : UINT32_MAX;
      r = std::clamp(r, lo, hi);
    }
    d[l] = (uint32_t)r;
  });
}
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

H(v_frexp_exp_i32_f32) {
  DST0;
  SrcF a = srcF(X, W, I, 0);
  forLanes(W.exec(), [&](unsigned l) { d[l] = (uint32_t)frexpExp(a[l]); });
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

/// v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16 (aux 0 / 1 / 2)
/// vdst, s0, s1, s2: source i is the f32 src[31:0] when op_sel_hi[i] is 0,
/// else the f16 in the half op_sel[i] selects, widened to f32; `-x`
/// (neg_lo[i]) negates and `|x|` (neg_hi[i], which acts as ABS for the mix
/// ops) takes the magnitude. Inline float constants are f16 values either
/// way (LLVM's VOP3P_Mix_Profile). s0 * s1 + s2 is fused with one rounding
/// to f32; mixlo/mixhi round that f32 to f16 and write the low / high half,
/// keeping the other (LLVM selects them for fptrunc(fma.f32), so two
/// roundings: MadFmaMixFP16Pats in VOP3PInstructions.td); clamp applies to
/// the final value.
template <int Out> void fmaMix(Exec &X, Wave &W, const Inst &I) {
  DST0;
  Src s[3];
  float cst[3] = {0, 0, 0};
  bool isCst[3], f16[3], hiHalf[3], neg[3], abs[3];
  for (unsigned i = 0; i < 3; ++i) {
    const Operand &op = I.ops[I.src0Idx + i];
    s[i] = src(X, W, op);
    isCst[i] = op.kind == OpKind::Imm && op.inlineFloat;
    if (isCst[i])
      cst[i] = f16ToF32((uint16_t)op.imm[0]);
    f16[i] = (I.opSelHi >> i) & 1;
    hiHalf[i] = (I.opSel >> i) & 1;
    neg[i] = op.neg || ((I.negLo >> i) & 1);
    abs[i] = op.abs || ((I.negHi >> i) & 1);
  }
  forLanes(W.exec(), [&](unsigned l) {
    float v[3];
    for (unsigned i = 0; i < 3; ++i) {
      float x;
      if (isCst[i])
        x = cst[i];
      else if (f16[i])
        x = f16ToF32((uint16_t)(s[i][l] >> (hiHalf[i] ? 16 : 0)));
      else
        x = X.ftz32 ? ftz(u2f(s[i][l])) : u2f(s[i][l]);
      if (abs[i])
        x = std::fabs(x);
      if (neg[i])
        x = -x;
      v[i] = x;
    }
    float r = std::fma(v[0], v[1], v[2]);
    if (Out == 0) {
      d[l] = f2u(outF32(X, I, r));
      return;
    }
    float h = f16ToF32(f32ToF16(r));
    if (I.clamp)
      h = std::isnan(h) ? 0.0f : std::min(1.0f, std::max(0.0f, h));
    uint32_t bitsH = f32ToF16(h);
    d[l] = Out == 1 ? (d[l] & 0xffff0000u) | bitsH
                    : (d[l] & 0xffffu) | (bitsH << 16);
  });
}

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

} // namespace

void uq::emu::detail::registerVectorOps(OpRegistry &R) {
  REGISTRY_HELPERS(R);
  // VALU integer.
  VR(v_mov_b32); VR(v_not_b32); VR(v_bfrev_b32); VR(v_ffbh_u32);
  VR(v_ffbl_b32); VR(v_ffbh_i32);
  V("v_add_u32", (addSub32<false, 0>));
  V("v_sub_u32", (addSub32<false, 1>));
  V("v_subrev_u32", (addSub32<false, 2>));
  V("v_add_i32", (addSub32<true, 0>));
  V("v_sub_i32", (addSub32<true, 1>));
  VR(v_mul_lo_u32);
  VR(v_mul_hi_u32); VR(v_mul_hi_i32); VR(v_mul_u32_u24); VR(v_mul_i32_i24);
  VR(v_mul_hi_u32_u24); VR(v_mul_hi_i32_i24); VR(v_lshlrev_b32);
  VR(v_lshrrev_b32); VR(v_ashrrev_i32); VR(v_lshl_b32); VR(v_and_b32);
  VR(v_or_b32); VR(v_xor_b32); VR(v_xnor_b32); VR(v_min_u32);
  VR(v_max_u32); VR(v_min_i32); VR(v_max_i32); VR(v_bcnt_u32_b32);
  VR(v_bfm_b32); VR(v_mbcnt_lo_u32_b32); VR(v_mbcnt_hi_u32_b32);
  VR(v_pack_b32_f16); VR(v_lshlrev_b16); VR(v_lshrrev_b16); VR(v_add_u16);
  VR(v_sub_u16); VR(v_mul_lo_u16);
  VR(v_add3_u32); VR(v_xad_u32); VR(v_lshl_add_u32);
  VR(v_add_lshl_u32); VR(v_lshl_or_b32); VR(v_and_or_b32); VR(v_or3_b32);
  VR(v_bfe_u32); VR(v_bfe_i32); VR(v_bfi_b32); VR(v_alignbit_b32);
  VR(v_alignbyte_b32); VR(v_perm_b32); VR(v_mad_u32_u24);
  VR(v_mad_i32_i24); VR(v_min3_u32); VR(v_max3_u32); VR(v_med3_u32);
  VR(v_min3_i32); VR(v_max3_i32); VR(v_med3_i32); VR(v_mad_u32_u16);
  VR(v_lshlrev_b64); VR(v_lshrrev_b64); VR(v_ashrrev_i64);
  VR(v_lshl_add_u64); VR(v_mov_b64);
  VR(v_bitop3_b32); VR(v_bitop3_b16);
  V("v_mad_u64_u32", v_mad_u64_u32, FT::None, 2);
  V("v_mad_i64_i32", v_mad_i64_i32, FT::None, 2);
  V("v_add_co_u32", v_add_co_u32, FT::None, 2);
  V("v_sub_co_u32", v_sub_co_u32, FT::None, 2);
  V("v_subrev_co_u32", v_subrev_co_u32, FT::None, 2);
  V("v_addc_co_u32", v_addc_co_u32, FT::None, 2);
  V("v_subb_co_u32", v_subb_co_u32, FT::None, 2);
  V("v_subbrev_co_u32", v_subbrev_co_u32, FT::None, 2);
  V("v_cndmask_b32", v_cndmask_b32, FT::F32);
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
  V("v_fma_mix_f32", fmaMix<0>, FT::F16);
  V("v_fma_mixlo_f16", fmaMix<1>, FT::F16);
  V("v_fma_mixhi_f16", fmaMix<2>, FT::F16);
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
}
