//===- TensorBuilder.h - Tensor-level building blocks -----------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// What every part of convert-uq-to-linalg builds its IR with: affine maps,
// tensor.empty/linalg.fill, one-result linalg.generic ops whose bodies are
// written with the ScalarEmitter of the codegen floor (uq/Codegen/Numerics.h),
// row flattening and group splitting by reshapes, slices, and row tiling.
// Nothing here knows a format or an attention op: the row codes
// (RowCodes.h) and the attention steps (Attention.h) are built on it.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOLINALG_TENSORBUILDER_H
#define UQ_LIB_CONVERSION_UQTOLINALG_TENSORBUILDER_H

#include "uq/Conversion/UQToLinalg/UQToLinalg.h"

#include "uq/Codegen/Numerics.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"

namespace uq::to_linalg {

using mlir::AffineExpr;
using mlir::AffineMap;
using mlir::ArrayRef;
using mlir::function_ref;
using mlir::Location;
using mlir::MLIRContext;
using mlir::OpBuilder;
using mlir::OpFoldResult;
using mlir::RankedTensorType;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;

using IteratorType = mlir::utils::IteratorType;
inline constexpr IteratorType kPar = IteratorType::parallel;
inline constexpr IteratorType kRed = IteratorType::reduction;
using BodyFn = function_ref<Value(ScalarEmitter &, ValueRange)>;

/// Builds tensor-level IR at one location. Every method leaves the builder
/// after what it created. Constructing one creates no IR, so the row-code
/// and attention builders are made from it where they are needed.
class TensorBuilder {
public:
  TensorBuilder(OpBuilder &b, Location loc, const UQToLinalgOptions &options)
      : b(b), loc(loc), options(options), s(b, loc) {}

  OpBuilder &b;
  Location loc;
  const UQToLinalgOptions &options;
  ScalarEmitter s;

  MLIRContext *ctx() { return b.getContext(); }
  AffineExpr d(unsigned i) { return mlir::getAffineDimExpr(i, ctx()); }
  AffineExpr cst(int64_t v) { return mlir::getAffineConstantExpr(v, ctx()); }
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(numDims, 0, results, ctx());
  }
  AffineMap id(unsigned numDims) {
    return AffineMap::getMultiDimIdentityMap(numDims, ctx());
  }

  SmallVector<OpFoldResult> sizes(Value t) {
    return mlir::tensor::getMixedSizes(b, loc, t);
  }
  OpFoldResult dim(Value t, int64_t i) { return sizes(t)[i]; }
  Value dimValue(Value t, int64_t i) {
    return mlir::getValueOrCreateConstantIndexOp(b, loc, dim(t, i));
  }
  static int64_t staticDim(Value t, int64_t i) {
    return mlir::cast<RankedTensorType>(t.getType()).getDimSize(i);
  }
  static Type elementType(Value t) {
    return mlir::cast<RankedTensorType>(t.getType()).getElementType();
  }
  static int64_t rank(Value t) {
    return mlir::cast<RankedTensorType>(t.getType()).getRank();
  }

  Value empty(ArrayRef<OpFoldResult> shape, Type elem) {
    return mlir::tensor::EmptyOp::create(b, loc, shape, elem);
  }
  Value fill(ArrayRef<OpFoldResult> shape, Value scalar) {
    Value e = empty(shape, scalar.getType());
    return mlir::linalg::FillOp::create(b, loc, ValueRange{scalar},
                                        ValueRange{e})
        .getResult(0);
  }

  /// One linalg.generic with a single result whose body is \p body (called
  /// with the block arguments: inputs, then the output).
  Value generic(ValueRange ins, Value out, ArrayRef<AffineMap> maps,
                ArrayRef<IteratorType> iterators, BodyFn body);

  /// Elementwise map of same-shaped tensors \p ins into a new tensor of
  /// element type \p elem.
  Value elementwise(ValueRange ins, Type elem, BodyFn body);

  Value indexOf(ScalarEmitter &es, int64_t i) {
    return mlir::linalg::IndexOp::create(es.builder(), es.location(), i);
  }

  /// Casts \p v to \p type when only static information differs.
  Value castTo(Value v, Type type) {
    if (v.getType() == type)
      return v;
    return mlir::tensor::CastOp::create(b, loc, type, v);
  }

  //===--------------------------------------------------------------------===//
  // Rows
  //===--------------------------------------------------------------------===//

  /// [..., D] -> [N, D].
  Value flattenRows(Value x);

  /// [N, X] -> [leading dims of \p like..., X].
  Value unflattenRows(Value x2, Value like);

  /// Splits the last dimension of a rank-2 [N, X] tensor into \p parts.
  Value splitLast(Value x2, ArrayRef<int64_t> parts);

  /// Merges every dimension after the first: [N, a, b, ...] -> [N, a*b*...].
  Value mergeTail(Value x);

  /// Rows per tile of the row-coding ops: their temporaries (the f64
  /// rotation stages above all) then stay in cache instead of being
  /// allocated at full size, and each tile's chain runs while hot.
  static constexpr int64_t kRowTile = 64;

  /// Applies \p fn to consecutive tiles of at most kRowTile rows of the
  /// rows [N, D] \p x2 and concatenates its results, whose element types
  /// and widths are \p results. Without a loop when N <= kRowTile.
  SmallVector<Value>
  tiledRows(Value x2, ArrayRef<std::pair<Type, int64_t>> results,
            function_ref<SmallVector<Value>(TensorBuilder &, Value)> fn);

  /// [Hkv, group, ...] -> [Hq, ...].
  Value mergeHeads(Value x);

  //===--------------------------------------------------------------------===//
  // Slices and results
  //===--------------------------------------------------------------------===//

  /// Inserts \p src (rank-reduced) into \p dest at \p offsets with unit
  /// sizes where \p src has no dimension.
  Value insertAt(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
                 ArrayRef<OpFoldResult> sizes_);

  /// insertAt through a copying linalg.generic into the matching
  /// extract_slice of \p dest: bufferization then writes in place into the
  /// destination's subview with compiled loops instead of a strided
  /// memref.copy (a runtime call that moves one element at a time).
  Value copyInto(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
                 ArrayRef<OpFoldResult> sizes_);

  Value extractAt(Value src, RankedTensorType type,
                  ArrayRef<OpFoldResult> offsets,
                  ArrayRef<OpFoldResult> sizes_);

  /// Converts an f32 tensor to \p type's element type and casts to it.
  Value toResult(Value v, Type type);
};

} // namespace uq::to_linalg

#endif // UQ_LIB_CONVERSION_UQTOLINALG_TENSORBUILDER_H
