//===- RowCodec.cpp - Hadamard rotation and row encode/decode -------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace uq::ref;

namespace {
bool isPowerOfTwo(int64_t d) { return d >= 1 && (d & (d - 1)) == 0; }

/// Unnormalised Sylvester butterfly: after the stages of span 1, 2, ..., d/2
/// the vector holds H_d x in natural order.
template <typename T> void butterfly(T *v, int64_t d, T stageScale) {
  for (int64_t h = 1; h < d; h *= 2) {
    for (int64_t i = 0; i < d; i += 2 * h) {
      for (int64_t j = i; j < i + h; ++j) {
        T a = v[j], b = v[j + h];
        if (stageScale == T(1)) {
          v[j] = a + b;
          v[j + h] = a - b;
        } else {
          v[j] = (a + b) / stageScale;
          v[j + h] = (a - b) / stageScale;
        }
      }
    }
  }
}
} // namespace

Status uq::ref::hadamardRotate(float *row, int64_t d, RotationArithmetic a) {
  if (!isPowerOfTwo(d))
    return Status::error("hadamardRotate: length " + std::to_string(d) +
                         " is not a power of two");
  if (!row)
    return Status::error("hadamardRotate: null row");
  if (a == RotationArithmetic::ButterflyF32) {
    butterfly<float>(row, d, std::sqrt(2.0f));
    return Status::success();
  }
  std::vector<double> v(row, row + d);
  butterfly<double>(v.data(), d, 1.0);
  double norm = 1.0 / std::sqrt(static_cast<double>(d));
  for (int64_t i = 0; i < d; ++i)
    row[i] = static_cast<float>(v[i] * norm);
  return Status::success();
}

Status uq::ref::validateFormat(const Format &f, int64_t d) {
  if (d <= 0)
    return Status::error("head dim " + std::to_string(d) + " must be > 0");
  if (f.rotate && !isPowerOfTwo(d))
    return Status::error("rotated format needs a power-of-two head dim, got " +
                         std::to_string(d));
  switch (f.code) {
  case ElementCode::FP4_E2M1:
    if (f.groupSize <= 0 || f.groupSize % 2 != 0)
      return Status::error("FP4 group size " + std::to_string(f.groupSize) +
                           " must be positive and even");
    if (d % f.groupSize != 0)
      return Status::error("head dim " + std::to_string(d) +
                           " is not a multiple of the group size " +
                           std::to_string(f.groupSize));
    // The scale rule computes float(c) * absmax in f32: c must be a finite,
    // positive, normal f32 value (the #uq.kv_format verifier's rule).
    if (!(f.c >= static_cast<double>(std::numeric_limits<float>::min()) &&
          f.c <= static_cast<double>(std::numeric_limits<float>::max())))
      return Status::error("scale constant c must be a finite, positive, "
                           "normal f32 value (in [2^-126, FLT_MAX])");
    if (f.scaleRule == ScaleRule::MseSearch && !isPowerOfTwo(f.groupSize))
      return Status::error("the MseSearch scale rule needs a power-of-two "
                           "group size, got " +
                           std::to_string(f.groupSize));
    if (f.scaleCode != ScaleCode::UE8M0 && f.scaleCode != ScaleCode::E4M3)
      return Status::error("unknown scale code");
    return Status::success();
  case ElementCode::FP8_E4M3:
  case ElementCode::BF16:
    return Status::success();
  }
  return Status::error("unknown element code");
}

int64_t uq::ref::codeBytes(const Format &f, int64_t d) {
  if (!validateFormat(f, d).ok())
    return -1;
  switch (f.code) {
  case ElementCode::FP4_E2M1:
    return d / 2;
  case ElementCode::FP8_E4M3:
    return d;
  case ElementCode::BF16:
    return 2 * d;
  }
  return -1;
}

int64_t uq::ref::scaleBytes(const Format &f, int64_t d) {
  if (!validateFormat(f, d).ok())
    return -1;
  return f.code == ElementCode::FP4_E2M1 ? d / f.groupSize : 0;
}

namespace {
/// Squared error of coding \p n values with exponent \p e: the terms in
/// double, summed as a perfect binary tree in element order (ScaleRule's
/// definition; \p n is a power of two).
double groupError(const float *x, int64_t n, int e, Rounding r) {
  if (n == 1) {
    float q = fp4Decode(fp4Encode(std::ldexp(x[0], -e), r));
    double diff = static_cast<double>(std::ldexp(q, e)) - x[0];
    return diff * diff;
  }
  return groupError(x, n / 2, e, r) + groupError(x + n / 2, n / 2, e, r);
}

/// The same with an E4M3 scale \p scale: x / scale, correctly rounded.
double groupErrorE4M3(const float *x, int64_t n, float scale, Rounding r) {
  if (n == 1) {
    float q = fp4Decode(fp4Encode(x[0] / scale, r));
    double diff = static_cast<double>(q * scale) - x[0];
    return diff * diff;
  }
  return groupErrorE4M3(x, n / 2, scale, r) +
         groupErrorE4M3(x + n / 2, n / 2, scale, r);
}

/// The MseSearch E4M3 byte among byte0 - 1, byte0, byte0 + 1 (clamped to
/// the positive finite bytes 1..126), ties to the smaller.
uint8_t searchE4M3Byte(const float *x, int64_t n, uint8_t byte0, Rounding r) {
  int best = 0;
  double bestErr = 0;
  for (int db = -1; db <= 1; ++db) {
    int b = std::min(126, std::max(1, static_cast<int>(byte0) + db));
    double err = groupErrorE4M3(x, n, fp8e4m3Decode(static_cast<uint8_t>(b)), r);
    if (db == -1 || err < bestErr) {
      bestErr = err;
      best = b;
    }
  }
  return static_cast<uint8_t>(best);
}

/// The MseSearch scale byte of a group whose LogRound byte is \p byte0.
uint8_t searchScaleByte(const float *x, int64_t n, uint8_t byte0, Rounding r) {
  int e0 = static_cast<int>(byte0) - 127;
  int best = 0;
  double bestErr = 0;
  for (int de = -1; de <= 1; ++de) {
    int e = std::min(127, std::max(-126, e0 + de));
    double err = groupError(x, n, e, r);
    if (de == -1 || err < bestErr) {
      bestErr = err;
      best = e;
    }
  }
  return static_cast<uint8_t>(best + 127);
}
} // namespace

Status uq::ref::encodeRow(const Format &f, const float *x, int64_t d,
                          uint8_t *codes, uint8_t *scales) {
  Status st = validateFormat(f, d);
  if (!st.ok())
    return st;
  if (!x || !codes || (scaleBytes(f, d) > 0 && !scales))
    return Status::error("encodeRow: null buffer");
  std::vector<float> row(x, x + d);
  if (f.rotate) {
    st = hadamardRotate(row.data(), d, f.rotation);
    if (!st.ok())
      return st;
  }
  switch (f.code) {
  case ElementCode::FP4_E2M1: {
    const int64_t g = f.groupSize;
    for (int64_t start = 0; start < d; start += g) {
      float m = 0.0f;
      bool finite = true;
      for (int64_t i = start; i < start + g; ++i) {
        if (!std::isfinite(row[i]))
          finite = false;
        else if (std::fabs(row[i]) > m)
          m = std::fabs(row[i]);
      }
      // Zero sentinel: byte 0 and all codes 0 for a zero or non-finite group.
      if (f.scaleCode == ScaleCode::E4M3) {
        uint8_t byte = finite ? e4m3ScaleByte(m, f.c) : 0;
        if (byte != 0 && f.scaleRule == ScaleRule::MseSearch)
          byte = searchE4M3Byte(&row[start], g, byte, f.rounding);
        scales[start / g] = byte;
        float scale = fp8e4m3Decode(byte);
        for (int64_t i = start; i < start + g; i += 2) {
          uint8_t lo = 0, hi = 0;
          if (byte != 0) {
            lo = fp4Encode(row[i] / scale, f.rounding);
            hi = fp4Encode(row[i + 1] / scale, f.rounding);
          }
          codes[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
        }
        continue;
      }
      uint8_t byte = finite ? ue8m0ScaleByte(m, f.c) : 0;
      if (byte != 0 && f.scaleRule == ScaleRule::MseSearch)
        byte = searchScaleByte(&row[start], g, byte, f.rounding);
      scales[start / g] = byte;
      for (int64_t i = start; i < start + g; i += 2) {
        uint8_t lo = 0, hi = 0;
        if (byte != 0) {
          // x / 2^e: ldexp rounds correctly, as a float division by the
          // power of two does.
          int e = static_cast<int>(byte) - 127;
          lo = fp4Encode(std::ldexp(row[i], -e), f.rounding);
          hi = fp4Encode(std::ldexp(row[i + 1], -e), f.rounding);
        }
        codes[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
    return Status::success();
  }
  case ElementCode::FP8_E4M3:
    for (int64_t i = 0; i < d; ++i)
      codes[i] = fp8e4m3Encode(row[i], f.fp8Overflow);
    return Status::success();
  case ElementCode::BF16:
    for (int64_t i = 0; i < d; ++i) {
      uint16_t b = floatToBf16(row[i]);
      codes[2 * i] = static_cast<uint8_t>(b & 0xFF);
      codes[2 * i + 1] = static_cast<uint8_t>(b >> 8);
    }
    return Status::success();
  }
  return Status::error("unknown element code");
}

Status uq::ref::decodeRow(const Format &f, const uint8_t *codes,
                          const uint8_t *scales, int64_t d, float *out) {
  Status st = validateFormat(f, d);
  if (!st.ok())
    return st;
  if (!codes || !out || (scaleBytes(f, d) > 0 && !scales))
    return Status::error("decodeRow: null buffer");
  switch (f.code) {
  case ElementCode::FP4_E2M1:
    for (int64_t i = 0; i < d; ++i) {
      uint8_t byte = codes[i / 2];
      uint8_t code = (i % 2 == 0) ? (byte & 0xF) : (byte >> 4);
      // value * 2^e; exact (the product of a 2-bit-significand value and a
      // power of two) unless it leaves the float range. With E4M3 scales
      // value * S, exact as well (at most 2 + 4 significant bits).
      uint8_t sb = scales[i / f.groupSize];
      out[i] = fp4Decode(code) * (f.scaleCode == ScaleCode::E4M3
                                      ? fp8e4m3Decode(sb)
                                      : e8m0Decode(sb));
    }
    return Status::success();
  case ElementCode::FP8_E4M3:
    for (int64_t i = 0; i < d; ++i)
      out[i] = fp8e4m3Decode(codes[i]);
    return Status::success();
  case ElementCode::BF16:
    for (int64_t i = 0; i < d; ++i)
      out[i] = bf16ToFloat(
          static_cast<uint16_t>(codes[2 * i] | (codes[2 * i + 1] << 8)));
    return Status::success();
  }
  return Status::error("unknown element code");
}
