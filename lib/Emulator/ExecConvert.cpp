//===- ExecConvert.cpp - Conversion semantics -------------------------------===//
//
// Integer <-> float, f16 / bf16 / f64 conversions and packing, and the
// gfx950 small-float conversions (FP8/BF8 and scaled FP4, the OCP MX
// formats of Numerics.h). Rounding and saturation choices that are not
// documented by AMD are marked uncertain in docs/emulator.md.
//
//===----------------------------------------------------------------------===//

#include "ExecCommon.h"

#include <cmath>

using namespace uq::emu::detail;
using llvm::StringRef;

namespace {
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

VI1(v_cvt_f32_u32, f2u(outF32(X, I, (float)A)))
VI1(v_cvt_f32_i32, f2u(outF32(X, I, (float)(int32_t)A)))
VI1(v_cvt_f32_ubyte0, f2u((float)(A & 0xff)))
VI1(v_cvt_f32_ubyte1, f2u((float)((A >> 8) & 0xff)))
VI1(v_cvt_f32_ubyte2, f2u((float)((A >> 16) & 0xff)))
VI1(v_cvt_f32_ubyte3, f2u((float)(A >> 24)))
VI1(v_cvt_f32_bf16, A << 16)
VI2(v_cvt_pk_u16_u32, (std::min(A, 0xffffu)) | (std::min(B, 0xffffu) << 16))
VI2(v_cvt_pk_i16_i32,
    (uint32_t)(uint16_t)std::clamp((int32_t)A, -32768, 32767) |
        ((uint32_t)(uint16_t)std::clamp((int32_t)B, -32768, 32767) << 16))
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
/// v_cvt_pk_f16_f32 vdst, s0, s1 (gfx950): {f16(s1), f16(s0)}, rounded to
/// nearest even (what llc emits for fptrunc <2 x float> to <2 x half>).
H(v_cvt_pk_f16_f32) {
  DST0;
  SrcF a = srcF(X, W, I, 0), b = srcF(X, W, I, 1);
  forLanes(W.exec(), [&](unsigned l) {
    d[l] = f32ToF16(a[l]) | ((uint32_t)f32ToF16(b[l]) << 16);
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

} // namespace

void uq::emu::detail::registerConvertOps(OpRegistry &R) {
  REGISTRY_HELPERS(R);
  VR(v_cvt_f32_u32);
  VR(v_cvt_f32_i32);
  VR(v_cvt_f32_ubyte0);
  VR(v_cvt_f32_ubyte1);
  VR(v_cvt_f32_ubyte2);
  VR(v_cvt_f32_ubyte3);
  VR(v_cvt_f32_bf16);
  VR(v_cvt_pk_u16_u32);
  VR(v_cvt_pk_i16_i32);
  VRF(v_cvt_u32_f32);
  VRF(v_cvt_i32_f32);
  VRF(v_cvt_f16_f32);
  VRF(v_cvt_rpi_i32_f32);
  VRF(v_cvt_flr_i32_f32);
  VRH(v_cvt_f32_f16);
  V("v_cvt_pkrtz_f16_f32", v_cvt_pkrtz_f16_f32_impl, FT::F32);
  VRF(v_cvt_pk_bf16_f32); VRF(v_cvt_pk_f16_f32);
  VRF(v_cvt_f64_f32);
  V("v_cvt_f64_i32", v_cvt_f64_i32_impl);
  VR(v_cvt_f64_u32);
  VRD(v_cvt_f32_f64);
  VRD(v_cvt_i32_f64);
  VRD(v_cvt_u32_f64);
  // Small-float conversions.
  VRF(v_cvt_scalef32_pk_f32_fp4); VRF(v_cvt_scalef32_pk_f16_fp4);
  VRF(v_cvt_scalef32_pk_bf16_fp4); VRF(v_cvt_scalef32_pk_fp4_f32);
  VRF(v_cvt_pk_fp8_f32); VRF(v_cvt_pk_bf8_f32);
  VRF(v_cvt_scalef32_pk_fp8_f32); VRF(v_cvt_scalef32_pk_bf8_f32);
  VRF(v_cvt_f32_fp8); VRF(v_cvt_f32_bf8); VRF(v_cvt_scalef32_f32_fp8);
  VRF(v_cvt_scalef32_f32_bf8); VRF(v_cvt_pk_f32_fp8);
  VRF(v_cvt_pk_f32_bf8); VRF(v_cvt_scalef32_pk_f32_fp8);
  VRF(v_cvt_scalef32_pk_f32_bf8);
}
