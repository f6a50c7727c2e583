//===- Numerics.cpp - Scalar UltraQuant element and scale codes -----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// FP4 E2M1, UE8M0, OCP FP8 E4M3FN and bf16 conversions. The rules are the
// ones in docs/ultraquant-format.md (shared data) and the OCP Microscaling
// Formats (MX) v1.0 specification; see docs/reference-numerics.md.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace uq::ref;

namespace {
/// Magnitudes of FP4 E2M1 codes 0..7.
constexpr float kFp4Magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f,
                                    2.0f, 3.0f, 4.0f, 6.0f};
/// Midpoints between consecutive magnitudes: kFp4Mid[i] separates code i and
/// code i + 1.
constexpr float kFp4Mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};

uint32_t floatBits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

float bitsFloat(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
}
} // namespace

float uq::ref::fp4Decode(uint8_t code) {
  float mag = kFp4Magnitude[code & 7];
  return (code & 8) ? -mag : mag;
}

uint8_t uq::ref::fp4Encode(float x, Rounding r) {
  if (std::isnan(x))
    return 0;
  bool neg = std::signbit(x);
  float a = std::fabs(x);
  // Number of midpoints strictly below (or, for ties resolved upwards in
  // magnitude, at or below) the magnitude.
  uint8_t mag = 0;
  for (int i = 0; i < 7; ++i) {
    bool up;
    if (a != kFp4Mid[i]) {
      up = a > kFp4Mid[i];
    } else if (r == Rounding::TiesDown) {
      // Ties go to the more negative level: a larger magnitude for x < 0.
      up = neg;
    } else {
      // Ties to the code whose mantissa bit (bit 0) is clear.
      up = ((i + 1) & 1) == 0;
    }
    if (up)
      mag = static_cast<uint8_t>(i + 1);
  }
  if (mag == 0)
    return 0; // The sign of zero is never stored.
  return neg ? static_cast<uint8_t>(mag | 8) : mag;
}

float uq::ref::e8m0Decode(uint8_t b) {
  if (b == 255)
    return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(b) - 127);
}

uint8_t uq::ref::ue8m0ScaleByte(float absmax, double c) {
  if (!(absmax != 0.0f) || !std::isfinite(absmax))
    return 0;
  float s = static_cast<float>(c) * std::fabs(absmax);
  int e;
  if (s == 0.0f) {
    e = -126; // log2(0) = -inf, clamped.
  } else if (std::isinf(s)) {
    e = 127; // log2(inf) = inf, clamped.
  } else {
    // s = f * 2^x with f in [0.5, 1): floor(log2(s) + 0.5) is x when
    // log2(f) >= -0.5, i.e. f * f >= 0.5 (exact in double: f has at most 24
    // significant bits), else x - 1.
    int x;
    double f = std::frexp(static_cast<double>(s), &x);
    e = (f * f >= 0.5) ? x : x - 1;
    if (e < -126)
      e = -126;
    if (e > 127)
      e = 127;
  }
  return static_cast<uint8_t>(e + 127);
}

int uq::ref::fp8BlockExponent(float absmax) {
  if (!(absmax > 0.0f) || !std::isfinite(absmax))
    return 0;
  int x;
  float f = std::frexp(absmax, &x); // absmax = f * 2^x, f in [0.5, 1)
  int e = x - 9 + (f > 0.875f ? 1 : 0);
  return std::min(127, std::max(-127, e));
}

uint8_t uq::ref::e4m3ScaleByte(float absmax, double c) {
  if (!(absmax != 0.0f) || !std::isfinite(absmax))
    return 0;
  float s = static_cast<float>(c) * std::fabs(absmax);
  if (!(s <= 448.0f))
    s = 448.0f; // Saturate (also an infinite product).
  uint8_t b = fp8e4m3Encode(s, Fp8Overflow::Saturate);
  return b == 0 ? 1 : b;
}

float uq::ref::fp8e4m3Decode(uint8_t b) {
  bool neg = b & 0x80;
  int exp = (b >> 3) & 0xF;
  int man = b & 7;
  float mag;
  if (exp == 0xF && man == 7)
    mag = std::numeric_limits<float>::quiet_NaN();
  else if (exp == 0)
    mag = std::ldexp(static_cast<float>(man), -9); // 2^-6 * man / 8
  else
    mag = std::ldexp(static_cast<float>(8 + man), exp - 7 - 3);
  return neg ? -mag : mag;
}

uint8_t uq::ref::fp8e4m3Encode(float x, Fp8Overflow mode) {
  uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x))
    return sign | 0x7F;
  double a = std::fabs(static_cast<double>(x));
  // Exponent of the result: subnormals share the quantum 2^-9 of the
  // smallest normal binade [2^-6, 2^-5).
  int biased;
  double quantum;
  if (a < std::ldexp(1.0, -6)) {
    biased = 0;
    quantum = std::ldexp(1.0, -9);
  } else if (std::isinf(a)) {
    biased = 16; // Forces the overflow path below.
    quantum = 1.0;
  } else {
    int x2;
    std::frexp(a, &x2); // a = f * 2^x2, f in [0.5, 1): a = 1.m * 2^(x2 - 1)
    biased = x2 - 1 + 7;
    quantum = std::ldexp(1.0, x2 - 1 - 3);
  }
  uint8_t out = 0;
  bool overflow = biased > 15;
  if (!overflow) {
    // a / quantum is exact in double; nearbyint rounds half to even in the
    // default rounding mode.
    double q = std::nearbyint(a / quantum);
    int man;
    if (biased == 0) {
      // q in [0, 8]; q == 8 is the smallest normal, which is byte 0x08.
      out = static_cast<uint8_t>(q);
    } else {
      man = static_cast<int>(q) - 8; // q in [8, 16]
      if (man == 8) {
        ++biased;
        man = 0;
      }
      if (biased > 15 || (biased == 15 && man == 7))
        overflow = true; // Rounded above 448 (0x7F is NaN).
      else
        out = static_cast<uint8_t>((biased << 3) | man);
    }
  }
  if (overflow)
    return sign | (mode == Fp8Overflow::NaN ? 0x7F : 0x7E);
  return sign | out;
}

float uq::ref::bf16ToFloat(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t uq::ref::floatToBf16(float x) {
  uint32_t u = floatBits(x);
  if (std::isnan(x))
    return static_cast<uint16_t>((u >> 16) | 0x0040); // Quiet, sign kept.
  uint32_t lsb = (u >> 16) & 1;
  return static_cast<uint16_t>((u + 0x7FFF + lsb) >> 16);
}
