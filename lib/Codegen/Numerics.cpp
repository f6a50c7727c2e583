//===- Numerics.cpp - The format codecs as IR emitters --------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Codegen/Numerics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace uq;

using arith::CmpFPredicate;
using arith::CmpIPredicate;

Type ScalarEmitter::ty(Type element) const {
  if (shape.empty())
    return element;
  return VectorType::get(shape, element);
}

Value ScalarEmitter::constant(Type element, TypedAttr scalar) {
  if (shape.empty())
    return arith::ConstantOp::create(b, loc, scalar);
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(cast<ShapedType>(ty(element)), scalar));
}

Value ScalarEmitter::i8(int64_t v) {
  return constant(b.getI8Type(), b.getIntegerAttr(b.getI8Type(), v));
}
Value ScalarEmitter::i16(int64_t v) {
  return constant(b.getI16Type(), b.getIntegerAttr(b.getI16Type(), v));
}
Value ScalarEmitter::i32(int64_t v) {
  return constant(b.getI32Type(), b.getIntegerAttr(b.getI32Type(), v));
}
Value ScalarEmitter::i64(int64_t v) {
  return constant(b.getI64Type(), b.getIntegerAttr(b.getI64Type(), v));
}
Value ScalarEmitter::index(int64_t v) {
  return constant(b.getIndexType(), b.getIndexAttr(v));
}
Value ScalarEmitter::f32(float v) {
  return constant(b.getF32Type(), b.getF32FloatAttr(v));
}
Value ScalarEmitter::f64(double v) {
  return constant(b.getF64Type(), b.getF64FloatAttr(v));
}
Value ScalarEmitter::f32Bits(uint32_t bits) {
  return constant(b.getF32Type(),
                  b.getFloatAttr(b.getF32Type(),
                                 APFloat(APFloat::IEEEsingle(),
                                         APInt(32, bits))));
}

Value ScalarEmitter::bits(Value f32v) {
  return arith::BitcastOp::create(b, loc, ty(b.getI32Type()), f32v);
}
Value ScalarEmitter::fromBits(Value i32v) {
  return arith::BitcastOp::create(b, loc, ty(b.getF32Type()), i32v);
}

Value ScalarEmitter::toF32(Value x) {
  Type t = getElementTypeOrSelf(x.getType());
  if (t.isF32())
    return x;
  if (t.isBF16()) {
    // Exact: a bf16 is the top half of an f32.
    Value i = arith::BitcastOp::create(b, loc, ty(b.getI16Type()), x);
    Value w = arith::ExtUIOp::create(b, loc, ty(b.getI32Type()), i);
    return fromBits(arith::ShLIOp::create(b, loc, w, i32(16)));
  }
  if (t.isF64())
    return arith::TruncFOp::create(b, loc, ty(b.getF32Type()), x);
  return arith::ExtFOp::create(b, loc, ty(b.getF32Type()), x);
}

Value ScalarEmitter::fromF32(Value x, Type type) {
  if (type.isF32())
    return x;
  if (type.isBF16()) {
    Value w = bf16Bits(x);
    Value h = arith::TruncIOp::create(b, loc, ty(b.getI16Type()), w);
    return arith::BitcastOp::create(b, loc, ty(type), h);
  }
  if (type.isF64())
    return arith::ExtFOp::create(b, loc, ty(type), x);
  return arith::TruncFOp::create(b, loc, ty(type), x);
}

Value ScalarEmitter::fp4Encode(Value x, bool tiesDown) {
  static constexpr float kMid[7] = {0.25f, 0.75f, 1.25f, 1.75f,
                                    2.5f,  3.5f,  5.0f};
  Value u = bits(x);
  Value neg = arith::CmpIOp::create(b, loc, CmpIPredicate::slt, u, i32(0));
  Value absBits = arith::AndIOp::create(b, loc, u, i32(0x7FFFFFFF));
  // Ties down: a negative value on a midpoint moves up in magnitude, i.e.
  // |x| >= mid counts for x < 0 and |x| > mid for x >= 0. For finite |x|,
  // |x| >= mid iff nextup(|x|) > mid, and nextup is +1 on the bits, so one
  // strict comparison per midpoint decides both signs. (Inf and NaN keep
  // their bits: Inf saturates, NaN compares false everywhere and gives 0.)
  Value a;
  if (tiesDown) {
    Value finite = arith::CmpIOp::create(b, loc, CmpIPredicate::ult, absBits,
                                         i32(0x7F800000));
    Value bump = arith::ExtUIOp::create(
        b, loc, ty(b.getI32Type()), arith::AndIOp::create(b, loc, neg, finite));
    a = fromBits(arith::AddIOp::create(b, loc, absBits, bump));
  } else {
    a = fromBits(absBits);
  }
  // mag = number of midpoints the magnitude moves past.
  Value mag = i32(0);
  for (int i = 0; i < 7; ++i) {
    // Nearest-even: a tie goes up to the even code i + 1 when i is odd.
    CmpFPredicate pred = (!tiesDown && (i + 1) % 2 == 0) ? CmpFPredicate::OGE
                                                         : CmpFPredicate::OGT;
    Value up = arith::CmpFOp::create(b, loc, pred, a, f32(kMid[i]));
    mag = arith::AddIOp::create(
        b, loc, mag, arith::ExtUIOp::create(b, loc, ty(b.getI32Type()), up));
  }
  // The sign of zero is never stored.
  Value isZero = arith::CmpIOp::create(b, loc, CmpIPredicate::eq, mag, i32(0));
  Value signed_ = arith::SelectOp::create(
      b, loc, neg, arith::OrIOp::create(b, loc, mag, i32(8)), mag);
  return arith::SelectOp::create(b, loc, isZero, i32(0), signed_);
}

Value ScalarEmitter::fp4Decode(Value code) {
  // code = s e1 e0 m: e == 0 is 0 or 0.5 (m), else 2^(e-1) * (1 + m/2).
  Value e = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, code, i32(1)), i32(3));
  Value m = arith::AndIOp::create(b, loc, code, i32(1));
  Value s = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, code, i32(3)), i32(1));
  Value normal = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, e, i32(126)),
                            i32(23)),
      arith::ShLIOp::create(b, loc, m, i32(22)));
  Value mIsSet = arith::CmpIOp::create(b, loc, CmpIPredicate::ne, m, i32(0));
  Value sub = arith::SelectOp::create(b, loc, mIsSet, i32(0x3F000000), i32(0));
  Value eIsZero = arith::CmpIOp::create(b, loc, CmpIPredicate::eq, e, i32(0));
  Value mag = arith::SelectOp::create(b, loc, eIsZero, sub, normal);
  return fromBits(arith::OrIOp::create(
      b, loc, mag, arith::ShLIOp::create(b, loc, s, i32(31))));
}

Value ScalarEmitter::ue8m0ScaleByte(Value absmaxBits, double c) {
  // Zero sentinel: m == 0, or an Inf/NaN in the group (bits >= 0x7F800000).
  Value isZero =
      arith::CmpIOp::create(b, loc, CmpIPredicate::eq, absmaxBits, i32(0));
  Value nonFinite = arith::CmpIOp::create(b, loc, CmpIPredicate::uge,
                                          absmaxBits, i32(0x7F800000));
  Value sentinel = arith::OrIOp::create(b, loc, isZero, nonFinite);
  // s = float(c) * m, rounded to f32 as the reference does.
  Value s = arith::MulFOp::create(b, loc, f32(static_cast<float>(c)),
                                  fromBits(absmaxBits));
  Value sb = bits(s);
  Value biased = arith::ShRUIOp::create(b, loc, sb, i32(23));
  Value mant = arith::AndIOp::create(b, loc, sb, i32(0x7FFFFF));
  // log2(1.f) >= 0.5 iff 1.f >= sqrt(2) iff f >= 0x3504F4 / 2^23. Zero and
  // subnormal s (biased 0) give -127/-126 and clamp to -126; Inf (biased
  // 255) gives 128/129 and clamps to 127.
  Value roundUp =
      arith::CmpIOp::create(b, loc, CmpIPredicate::uge, mant, i32(0x3504F4));
  Value e = arith::AddIOp::create(
      b, loc, arith::SubIOp::create(b, loc, biased, i32(127)),
      arith::ExtUIOp::create(b, loc, ty(b.getI32Type()), roundUp));
  e = arith::MaxSIOp::create(b, loc, e, i32(-126));
  e = arith::MinSIOp::create(b, loc, e, i32(127));
  Value byte = arith::AddIOp::create(b, loc, e, i32(127));
  return arith::SelectOp::create(b, loc, sentinel, i32(0), byte);
}

Value ScalarEmitter::fp8BlockScaleByte(Value absmaxBits) {
  Value isZero =
      arith::CmpIOp::create(b, loc, CmpIPredicate::eq, absmaxBits, i32(0));
  Value nonFinite = arith::CmpIOp::create(b, loc, CmpIPredicate::uge,
                                          absmaxBits, i32(0x7F800000));
  Value scaleOne = arith::OrIOp::create(b, loc, isZero, nonFinite);
  Value biased = arith::ShRUIOp::create(b, loc, absmaxBits, i32(23));
  Value mant = arith::AndIOp::create(b, loc, absmaxBits, i32(0x7FFFFF));
  // 1.f > 1.75 iff the mantissa bits exceed 0x600000.
  Value up =
      arith::CmpIOp::create(b, loc, CmpIPredicate::ugt, mant, i32(0x600000));
  Value e = arith::AddIOp::create(
      b, loc, arith::SubIOp::create(b, loc, biased, i32(135)),
      arith::ExtUIOp::create(b, loc, ty(b.getI32Type()), up));
  // A subnormal maximum (biased 0) lands far below -127: clamped.
  e = arith::MaxSIOp::create(b, loc, e, i32(-127));
  e = arith::MinSIOp::create(b, loc, e, i32(127));
  Value byte = arith::AddIOp::create(b, loc, e, i32(127));
  return arith::SelectOp::create(b, loc, scaleOne, i32(127), byte);
}

Value ScalarEmitter::e4m3ScaleByte(Value absmaxBits, double c) {
  Value isZero =
      arith::CmpIOp::create(b, loc, CmpIPredicate::eq, absmaxBits, i32(0));
  Value nonFinite = arith::CmpIOp::create(b, loc, CmpIPredicate::uge,
                                          absmaxBits, i32(0x7F800000));
  Value sentinel = arith::OrIOp::create(b, loc, isZero, nonFinite);
  Value s = arith::MulFOp::create(b, loc, f32(static_cast<float>(c)),
                                  fromBits(absmaxBits));
  // Saturate at 448 (an infinite product too): !(s <= 448).
  Value over = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UGT, s,
                                     f32(448.0f));
  s = arith::SelectOp::create(b, loc, over, f32(448.0f), s);
  Value byte = fp8Encode(s);
  // A positive scale that underflows keeps the smallest subnormal (byte 1).
  Value under = arith::CmpIOp::create(b, loc, CmpIPredicate::eq, byte, i32(0));
  byte = arith::SelectOp::create(b, loc, under, i32(1), byte);
  return arith::SelectOp::create(b, loc, sentinel, i32(0), byte);
}

Value ScalarEmitter::scaleCandidateByte(Value byte0, Value offset,
                                        bool e4m3) {
  Value cb = arith::AddIOp::create(b, loc, byte0, offset);
  cb = arith::MaxSIOp::create(b, loc, cb, i32(1));
  return arith::MinSIOp::create(b, loc, cb, i32(e4m3 ? 126 : 254));
}

Value ScalarEmitter::e8m0Normal(Value byte) {
  return fromBits(arith::ShLIOp::create(b, loc, byte, i32(23)));
}

Value ScalarEmitter::e8m0Reciprocal(Value byte) {
  // 2^(127 - byte): biased exponent 254 - byte; byte 254 gives the
  // subnormal 2^-127 (0x00400000).
  Value normal = arith::ShLIOp::create(
      b, loc, arith::SubIOp::create(b, loc, i32(254), byte), i32(23));
  Value top = arith::CmpIOp::create(b, loc, CmpIPredicate::eq, byte, i32(254));
  return fromBits(
      arith::SelectOp::create(b, loc, top, i32(0x00400000), normal));
}

Value ScalarEmitter::e8m0Decode(Value byte) {
  Value isZero = arith::CmpIOp::create(b, loc, CmpIPredicate::eq, byte, i32(0));
  Value isNaN = arith::CmpIOp::create(b, loc, CmpIPredicate::eq, byte, i32(255));
  Value bitsV = arith::ShLIOp::create(b, loc, byte, i32(23));
  bitsV = arith::SelectOp::create(b, loc, isZero, i32(0x00400000), bitsV);
  bitsV = arith::SelectOp::create(b, loc, isNaN, i32(0x7FC00000), bitsV);
  return fromBits(bitsV);
}

Value ScalarEmitter::fp8Encode(Value x) {
  Value u = bits(x);
  Value sign = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, u, i32(24)), i32(0x80));
  Value a = arith::AndIOp::create(b, loc, u, i32(0x7FFFFFFF));
  // |x| > 464 (the midpoint between 448 and the NaN code 480; a tie rounds
  // to the even 448), Inf and NaN: NaN with the sign.
  Value special = arith::CmpIOp::create(b, loc, CmpIPredicate::ugt, a,
                                        i32(0x43E80000));
  // Normal results (|x| >= 2^-6): RNE of the 23 mantissa bits to 3; a carry
  // moves into the exponent. Rebias 127 -> 7: subtract 120 << 3.
  Value lsb = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, a, i32(20)), i32(1));
  Value rounded = arith::AddIOp::create(
      b, loc, a, arith::AddIOp::create(b, loc, lsb, i32(0x7FFFF)));
  Value normal = arith::SubIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, rounded, i32(20)), i32(960));
  // Subnormal results (|x| < 2^-6, quantum 2^-9): adding 2^14 (whose ulp is
  // 2^-9) rounds |x| to the quantum with RNE; the low bits are the count.
  Value y = arith::AddFOp::create(b, loc, fromBits(a), f32(16384.0f));
  Value sub = arith::SubIOp::create(b, loc, bits(y), i32(0x46800000));
  Value isSub =
      arith::CmpIOp::create(b, loc, CmpIPredicate::ult, a, i32(0x3C800000));
  Value mag = arith::SelectOp::create(b, loc, isSub, sub, normal);
  mag = arith::SelectOp::create(b, loc, special, i32(0x7F), mag);
  return arith::OrIOp::create(b, loc, sign, mag);
}

Value ScalarEmitter::fp8Decode(Value byte) {
  Value s = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, byte, i32(7)), i32(1));
  Value e = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, byte, i32(3)), i32(15));
  Value m = arith::AndIOp::create(b, loc, byte, i32(7));
  Value normal = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, e, i32(120)),
                            i32(23)),
      arith::ShLIOp::create(b, loc, m, i32(20)));
  // Subnormal: m * 2^-9, exact.
  Value subF = arith::MulFOp::create(
      b, loc, arith::SIToFPOp::create(b, loc, ty(b.getF32Type()), m),
      f32(1.0f / 512.0f));
  Value eIsZero = arith::CmpIOp::create(b, loc, CmpIPredicate::eq, e, i32(0));
  Value mag = arith::SelectOp::create(b, loc, eIsZero, bits(subF), normal);
  Value isNaN = arith::AndIOp::create(
      b, loc, arith::CmpIOp::create(b, loc, CmpIPredicate::eq, e, i32(15)),
      arith::CmpIOp::create(b, loc, CmpIPredicate::eq, m, i32(7)));
  mag = arith::SelectOp::create(b, loc, isNaN, i32(0x7FC00000), mag);
  return fromBits(arith::OrIOp::create(
      b, loc, mag, arith::ShLIOp::create(b, loc, s, i32(31))));
}

Value ScalarEmitter::bf16Bits(Value x) {
  Value u = bits(x);
  Value hi = arith::ShRUIOp::create(b, loc, u, i32(16));
  Value lsb = arith::AndIOp::create(b, loc, hi, i32(1));
  Value rounded = arith::ShRUIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, u,
                            arith::AddIOp::create(b, loc, lsb, i32(0x7FFF))),
      i32(16));
  Value a = arith::AndIOp::create(b, loc, u, i32(0x7FFFFFFF));
  Value isNaN =
      arith::CmpIOp::create(b, loc, CmpIPredicate::ugt, a, i32(0x7F800000));
  Value quiet = arith::OrIOp::create(b, loc, hi, i32(0x40));
  return arith::SelectOp::create(b, loc, isNaN, quiet, rounded);
}
