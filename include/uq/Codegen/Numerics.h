//===- Numerics.h - The format codecs as IR emitters ------------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Emitters of the element and scale codes of the cache formats (FP4 E2M1,
// UE8M0, E4M3, FP8 E4M3FN, bf16) as plain integer/float arith ops,
// bit-exact with uq::ref (lib/Reference/Numerics.cpp). Part of the codegen
// floor: the CPU lowering uses them inside linalg.generic bodies, the
// wave-level kernels and the tile-op lowering on whole-wave vectors. No
// generic truncation op (arith.truncf to f4E2M1FN/f8E4M3FN,
// arith.scaling_truncf) is used: their rounding and overflow rules differ
// from the format's.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CODEGEN_NUMERICS_H
#define UQ_CODEGEN_NUMERICS_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

namespace uq {

/// Emits scalar arith code at the builder's insertion point; with a
/// \p shape, the same code elementwise on vectors of that shape (constants
/// become splats), as the wave-level kernels of the GPU path use it.
class ScalarEmitter {
public:
  ScalarEmitter(mlir::OpBuilder &b, mlir::Location loc,
                llvm::ArrayRef<int64_t> shape = {})
      : b(b), loc(loc), shape(shape) {}

  /// \p element, or a vector of it when the emitter has a shape.
  mlir::Type ty(mlir::Type element) const;

  mlir::Value i8(int64_t v);
  mlir::Value i16(int64_t v);
  mlir::Value i32(int64_t v);
  mlir::Value i64(int64_t v);
  mlir::Value index(int64_t v);
  mlir::Value f32(float v);
  mlir::Value f64(double v);
  /// The f32 whose bits are \p bits.
  mlir::Value f32Bits(uint32_t bits);

  /// Bit pattern (i32) of an f32 value and back.
  mlir::Value bits(mlir::Value f32v);
  mlir::Value fromBits(mlir::Value i32v);

  /// Widens f32/bf16/f16/f64 to f32 (bf16 by a shift of its bits).
  mlir::Value toF32(mlir::Value x);
  /// Narrows an f32 to \p type: bf16 with RNE on the bits (NaN kept quiet
  /// with its sign), f16/f64 with arith.truncf/extf.
  mlir::Value fromF32(mlir::Value x, mlir::Type type);

  /// FP4 E2M1 code (i32 in 0..15) of an already scaled f32, by comparison
  /// against the midpoints 0.25 .. 5: strictly greater moves up; an exact
  /// midpoint goes down (ties_down: to the more negative level) or to the
  /// even code. NaN and every value that rounds to zero give code 0.
  mlir::Value fp4Encode(mlir::Value x, bool tiesDown);
  /// The f32 value of an FP4 code (i32, low 4 bits used); code 8 is -0.
  mlir::Value fp4Decode(mlir::Value code);

  /// The UE8M0 byte (i32 in 0..254) of a group from the bits (i32) of its
  /// largest magnitude: 0 when that is 0 or not finite; else
  /// e = floor(log2(float(c) * m) + 0.5) clamped to [-126, 127], decided on
  /// the bits of the f32 product (e = E + 1 iff the significand >= sqrt(2),
  /// i.e. its 23 mantissa bits >= 0x3504F4), byte = e + 127.
  mlir::Value ue8m0ScaleByte(mlir::Value absmaxBits, double c);
  /// The E4M3 scale byte (i32 in 0..126) of an FP4 group from the bits of
  /// its largest magnitude, as uq::ref::e4m3ScaleByte: 0 when that is 0 or
  /// not finite; else e4m3(min(float(c) * m, 448)) with RNE, and byte 1
  /// (2^-9) where that underflows to 0.
  mlir::Value e4m3ScaleByte(mlir::Value absmaxBits, double c);
  /// A candidate scale byte of scale_rule = mse_search, as uq::ref's
  /// searchScaleByte: a group's log_round byte \p byte0 (i32) moved by
  /// \p offset (i32: -1, 0 or +1) and clamped to [1, 254], i.e. the exponent
  /// e0 + offset clamped to [-126, 127]; with E4M3 scales (\p e4m3) to
  /// [1, 126], the positive finite E4M3 values (neighbouring bytes are
  /// neighbouring values).
  mlir::Value scaleCandidateByte(mlir::Value byte0, mlir::Value offset,
                                 bool e4m3);
  /// The UE8M0 byte (i32, e + 127) of a per-32 query scale from the bits of
  /// the group's largest magnitude, as uq::ref::fp8BlockExponent: e is the
  /// smallest exponent with absmax / 2^e <= 448 (E - 8 for 1.f * 2^E, plus
  /// one when f > 0.75), clamped to [-127, 127]; 127 (scale 1) for a zero or
  /// non-finite maximum.
  mlir::Value fp8BlockScaleByte(mlir::Value absmaxBits);
  /// 2^(byte - 127) as f32 (byte 0: 2^-127, 255: NaN), byte an i32.
  mlir::Value e8m0Decode(mlir::Value byte);
  /// 2^(byte - 127) for byte in 1..254 (a normal f32).
  mlir::Value e8m0Normal(mlir::Value byte);
  /// 2^(127 - byte) for byte in 1..254 (exact; 2^-127 is subnormal), so
  /// that x * e8m0Reciprocal(b) is the correctly rounded x / 2^(b - 127).
  mlir::Value e8m0Reciprocal(mlir::Value byte);

  /// OCP FP8 E4M3FN byte (i32 in 0..255) of an f32: RNE with subnormals;
  /// NaN, Inf and values rounding above 448 give NaN (0x7f with the sign).
  mlir::Value fp8Encode(mlir::Value x);
  /// The f32 value of an E4M3FN byte (i32, low 8 bits used).
  mlir::Value fp8Decode(mlir::Value byte);

  /// bf16 bits (i32, low 16 used) of an f32, RNE; NaN stays a quiet NaN.
  mlir::Value bf16Bits(mlir::Value x);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() { return loc; }

private:
  mlir::Value constant(mlir::Type element, mlir::TypedAttr scalar);

  mlir::OpBuilder &b;
  mlir::Location loc;
  llvm::SmallVector<int64_t> shape;
};

} // namespace uq

#endif // UQ_CODEGEN_NUMERICS_H
