//===- RowCodes.h - Row codes of the cache formats on tensors ---*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The formats' rows on tensors: the rotation into the coded domain, FP4
// E2M1 codes with their UE8M0/E4M3 group scales (log_round and
// mse_search), FP8 E4M3 and bf16 codes, and reading one element of a cache
// slot. The scalar arithmetic of every code is the codegen floor's
// (ScalarEmitter, uq/Codegen/Numerics.h and Rotation.h); what is here is how
// rows, groups and packed bytes are laid out as tensors around it.
//
// Shapes: coding ops flatten their leading dimensions to one row dimension
// [N, D] and expand the results back. Groups are expressed by expanding the
// row to [N, G, g] (and codes by [N, G, g/2, 2]), so every indexing map is a
// projected permutation or picks a constant position.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOLINALG_ROWCODES_H
#define UQ_LIB_CONVERSION_UQTOLINALG_ROWCODES_H

#include "TensorBuilder.h"

#include "uq/Dialect/UQ/IR/UQ.h"

#include <optional>
#include <utility>

namespace uq::to_linalg {

/// Builds the row codes at one location (a TensorBuilder that knows the
/// formats).
class RowCoder : public TensorBuilder {
public:
  using TensorBuilder::TensorBuilder;
  explicit RowCoder(const TensorBuilder &t) : TensorBuilder(t) {}

  //===--------------------------------------------------------------------===//
  // Rotation (Rotation.cpp)
  //===--------------------------------------------------------------------===//

  /// One butterfly stage of span \p h on rows [N, D]: (a, b) at (j, j + h)
  /// -> (a + b, a - b), each divided by \p divisor when given.
  Value butterflyStage(Value v, int64_t h, std::optional<float> divisor);

  /// Rows [N, D] of any float type -> the rotated rows H_D x / sqrt(D) in
  /// f32, rounded as uq::ref::hadamardRotate with the same arithmetic.
  Value rotateRowsF32(Value x2);

  /// Rows in f32, rotated when \p format says so.
  Value codedDomainRows(Value x2, KVFormatAttr format);

  //===--------------------------------------------------------------------===//
  // Row codes (RowCodes.cpp)
  //===--------------------------------------------------------------------===//

  /// The byte (i32) of candidate \p k (i32 0..2) of a group whose log_round
  /// byte is \p byte0: ScalarEmitter::scaleCandidateByte at offset k - 1.
  static Value candidateByte(ScalarEmitter &es, Value byte0, Value k,
                             bool e4m3 = false);

  /// scale_rule = mse_search: the bytes [N, G] (i32) chosen among the three
  /// candidates around the log_round bytes \p byte0 [N, G] of the f32 rows
  /// [N, D] \p x2, as uq::ref's searchScaleByte. The error of a candidate
  /// e is the sum over the group of (double(fp4Decode(fp4Encode(x * 2^-e)) *
  /// 2^e) - double(x))^2, the f64 terms summed as a perfect binary tree in
  /// element order: the first generic sums adjacent pairs of terms, then
  /// each stage adds adjacent pairs of partial sums ([N, G, 3, m] ->
  /// [N, G, 3, m/2]) until one sum per candidate is left. The smallest error
  /// wins, ties to the earlier candidate (e0 - 1, e0, e0 + 1); a sentinel
  /// group (byte 0) stays 0.
  Value searchScaleBytes(Value x2, Value byte0, int64_t g, bool tiesDown,
                         bool e4m3);

  /// The f32 value of an FP4 group's scale byte \p sb (i32).
  static Value scaleValue(ScalarEmitter &es, KVFormatAttr format, Value sb);

  /// FP4 codes [N, D/2] and UE8M0 (or E4M3) scales [N, D/g] of f32 rows
  /// [N, D].
  std::pair<Value, Value> encodeFp4(Value x2, KVFormatAttr format);

  /// Floats [N, D] (element type \p elem) from FP4 codes and scales.
  Value decodeFp4(Value codes2, Value scales2, KVFormatAttr format, Type elem);

  Value encodeFp8(Value x2);

  Value decodeFp8(Value codes2, Type elem);

  /// The little-endian bytes [N, 2D] of the bf16 codes of rows [N, D].
  Value encodeBf16Bytes(Value x2);

  /// Code bytes [N, codeBytes] and scale bytes [N, scaleBytes] (null when
  /// the format has none) of f32 rows [N, D] already in the coded domain.
  std::pair<Value, Value> encodeRowBytes(Value xf, KVFormatAttr format);

  /// The f32 value of element \p i of the row stored at \p base (the bytes
  /// of (block, offset, head) of the cache) in \p format, with its codes at
  /// byte \p codeOff and its scales at \p scaleOff of the slot.
  static Value decodeCacheElement(ScalarEmitter &es, Value cache, Value blk,
                                  Value off, Value head, Value i,
                                  KVFormatAttr format, int64_t codeOff,
                                  int64_t scaleOff, bool headMajor);

  /// f32 rows [N, D] (D a multiple of 32) rounded to FP8 E4M3 with one
  /// UE8M0 scale per 32: fp8(x * 2^-e) * 2^e, e from the group's largest
  /// magnitude (ScalarEmitter::fp8BlockScaleByte), as the reference's
  /// QueryPrecision::FP8_E4M3_Scaled. Both scalings are exact.
  Value scaledFp8Rows(Value x2);

  /// f32(x[t, h, :]) - mean[h, :] for x [T, H, D] and mean [H, D].
  Value subtractMean(Value x, Value mean);
};

} // namespace uq::to_linalg

#endif // UQ_LIB_CONVERSION_UQTOLINALG_ROWCODES_H
