//===- Numerics.h - Small-float formats used by the emulator ----*- C++ -*-===//
//
// Bit-level conversions for f16, bf16 and the OCP 8/6/4-bit formats
// (OCP "OFP8 Formats for Deep Learning" and "Microscaling Formats (MX) v1.0"
// specifications). Written independently of uq::ref on purpose: the tests use
// that library as a second opinion.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_EMULATOR_NUMERICS_H
#define UQ_LIB_EMULATOR_NUMERICS_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace uq::emu::detail {

inline float u2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t f2u(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline double u2d(uint64_t u) {
  double f;
  std::memcpy(&f, &u, 8);
  return f;
}
inline uint64_t d2u(double f) {
  uint64_t u;
  std::memcpy(&u, &f, 8);
  return u;
}

inline float f16ToF32(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
  if (e == 31)
    return u2f(s | 0x7f800000u | (m << 13));
  if (e == 0) {
    float v = std::ldexp((float)m, -24);
    return s ? -v : v;
  }
  return u2f(s | ((e + 112) << 23) | (m << 13));
}

/// f32 -> f16, round to nearest even, overflow to infinity.
inline uint16_t f32ToF16(float f) {
  uint32_t u = f2u(f);
  uint32_t s = (u >> 16) & 0x8000;
  uint32_t a = u & 0x7fffffff;
  if (a >= 0x7f800000)
    return (uint16_t)(s | 0x7c00 | (a > 0x7f800000 ? 0x200 | ((a >> 13) & 0x3ff) : 0));
  if (a >= 0x477ff000) // rounds to >= 65520 -> inf
    return (uint16_t)(s | 0x7c00);
  if (a < 0x38800000) { // subnormal half (or zero)
    float av = u2f(a);
    float q = av * 16777216.0f; // 2^24: units of the smallest subnormal
    uint32_t r = (uint32_t)std::nearbyint(q);
    return (uint16_t)(s | r);
  }
  uint32_t mant = a & 0x7fffff, exp = (a >> 23) - 112;
  uint32_t r = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
    ++r;
  return (uint16_t)(s | r);
}

inline float bf16ToF32(uint16_t b) { return u2f((uint32_t)b << 16); }

/// f32 -> bf16, round to nearest even, NaN stays quiet NaN.
inline uint16_t f32ToBf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffff) > 0x7f800000)
    return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/// The small formats of the scaled MFMA (cbsz/blgp encoding).
enum class SmallFmt { FP8 = 0, BF8 = 1, FP6 = 2, BF6 = 3, FP4 = 4 };

struct FmtDesc {
  unsigned bits, ebits, mbits;
  int bias;
  bool infNan;     ///< IEEE-like inf/NaN at max exponent (E5M2).
  bool nanOnlyMax; ///< E4M3: S.1111.111 is NaN, no inf.
};

inline FmtDesc fmtDesc(SmallFmt f) {
  switch (f) {
  case SmallFmt::FP8:
    return {8, 4, 3, 7, false, true};
  case SmallFmt::BF8:
    return {8, 5, 2, 15, true, false};
  case SmallFmt::FP6:
    return {6, 2, 3, 1, false, false};
  case SmallFmt::BF6:
    return {6, 3, 2, 3, false, false};
  case SmallFmt::FP4:
  default:
    return {4, 2, 1, 1, false, false};
  }
}

/// Decodes code `c` (low `bits` bits) of a small format.
inline float smallDecode(SmallFmt f, uint32_t c) {
  FmtDesc d = fmtDesc(f);
  uint32_t s = (c >> (d.bits - 1)) & 1;
  uint32_t e = (c >> d.mbits) & ((1u << d.ebits) - 1);
  uint32_t m = c & ((1u << d.mbits) - 1);
  uint32_t emax = (1u << d.ebits) - 1;
  float v;
  if (d.nanOnlyMax && e == emax && m == (1u << d.mbits) - 1)
    v = NAN;
  else if (d.infNan && e == emax)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp((float)m, 1 - d.bias - (int)d.mbits);
  else
    v = std::ldexp((float)((1u << d.mbits) | m), (int)e - d.bias - (int)d.mbits);
  return s ? -v : v;
}

/// Largest finite positive code of a format.
inline uint32_t smallMaxCode(SmallFmt f) {
  FmtDesc d = fmtDesc(f);
  uint32_t all = (1u << (d.bits - 1)) - 1;
  if (d.nanOnlyMax)
    return all - 1;
  if (d.infNan)
    return all - (1u << d.mbits) - ((1u << d.mbits) - 1); // 0x7b for E5M2
  return all;
}

/// Encodes `x` with round-to-nearest-even. Values beyond the largest finite
/// one saturate when `saturate` or when the format has no inf/NaN (FP6,
/// FP4); otherwise E4M3 gives NaN and E5M2 infinity. NaN gives the format's
/// NaN (E4M3 0x7f, E5M2 0x7e) or, for FP6/FP4 which have none, +max.
inline uint32_t smallEncode(SmallFmt f, float x, bool saturate) {
  FmtDesc d = fmtDesc(f);
  uint32_t signBit = 1u << (d.bits - 1);
  uint32_t maxc = smallMaxCode(f);
  if (std::isnan(x)) {
    if (d.nanOnlyMax)
      return 0x7f;
    if (d.infNan)
      return 0x7e;
    return maxc;
  }
  uint32_t s = std::signbit(x) ? signBit : 0;
  float a = std::fabs(x);
  float maxv = smallDecode(f, maxc);
  if (a > maxv) {
    bool noSpecial = !d.nanOnlyMax && !d.infNan;
    float step = maxv - smallDecode(f, maxc - 1);
    float mid = maxv + step / 2;
    if (saturate || noSpecial || a < mid || (a == mid && !(maxc & 1)))
      return s | maxc;
    return s | (d.nanOnlyMax ? 0x7fu : 0x7cu);
  }
  // Binary search over the monotonic positive codes.
  uint32_t lo = 0, hi = maxc;
  while (lo < hi) {
    uint32_t mid = (lo + hi + 1) / 2;
    if (smallDecode(f, mid) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo < maxc) {
    float v0 = smallDecode(f, lo), v1 = smallDecode(f, lo + 1);
    float mid = (v0 + v1) / 2; // exact in f32 for these formats
    if (a > mid || (a == mid && (lo & 1)))
      ++lo;
  }
  return s | lo;
}

/// 2^(e - 127) for an E8M0 byte; 255 is NaN.
inline float e8m0(uint32_t b) {
  b &= 0xff;
  if (b == 255)
    return NAN;
  return std::ldexp(1.0f, (int)b - 127);
}

} // namespace uq::emu::detail

#endif // UQ_LIB_EMULATOR_NUMERICS_H
