//===- WaveBuilder.h - Builders for wave-level kernels ----------*- C++ -*-===//
//
// Small helpers over OpBuilder for the wave-level kernels of
// convert-uq-to-wave: scalar index arithmetic, whole-wave vectors of indices
// and masks, row/column broadcasts and reductions of 2-D tiles; the kernel
// description each kernel carries to uq-compile's JSON is the floor's
// (uq/Codegen/KernelDescription.h).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOWAVE_WAVEBUILDER_H
#define UQ_LIB_CONVERSION_UQTOWAVE_WAVEBUILDER_H

#include "uq/Codegen/KernelsAttr.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

namespace uq::wave {

/// A kernel's launch description (uq/Codegen/KernelDescription.h): the
/// kernel builders fill it, the pass stores it in `uq.kernels`.
using KernelSpec = uq::KernelDescription;
/// One dimension of a kernel argument's shape or of the grid.
using Dim = uq::KernelDim;

/// Emits wave-level IR at the builder's insertion point.
class WaveBuilder {
public:
  WaveBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::OpBuilder &b;
  mlir::Location loc;

  // Scalars.
  mlir::Value idx(int64_t v);
  mlir::Value i32(int64_t v);
  mlir::Value f32(float v);
  mlir::Value toIndex(mlir::Value v);
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value divu(mlir::Value x, mlir::Value y);
  mlir::Value remu(mlir::Value x, mlir::Value y);
  mlir::Value min(mlir::Value x, mlir::Value y);
  mlir::Value max(mlir::Value x, mlir::Value y);
  mlir::Value cmp(mlir::arith::CmpIPredicate p, mlir::Value x, mlir::Value y);
  mlir::Value select(mlir::Value c, mlir::Value x, mlir::Value y);
  mlir::Value andi(mlir::Value x, mlir::Value y);
  mlir::Value blockId(mlir::gpu::Dimension d);

  // Vectors.
  mlir::VectorType vec(llvm::ArrayRef<int64_t> shape, mlir::Type elem);
  /// A splat of the scalar value \p s (any shape).
  mlir::Value splat(mlir::Value s, llvm::ArrayRef<int64_t> shape);
  /// A constant splat of an attribute (any shape).
  mlir::Value constSplat(mlir::TypedAttr scalar, llvm::ArrayRef<int64_t> shape);
  /// [0, 1, ..., n-1] as vector<nxindex>.
  mlir::Value step(int64_t n);
  /// base + [0, 1, ..., n-1].
  mlir::Value stepFrom(mlir::Value base, int64_t n);
  /// A [rows] vector repeated along a new last dimension: [rows x n].
  mlir::Value broadcastRows(mlir::Value v, int64_t n);
  /// A [cols] vector repeated along a new first dimension: [m x cols].
  mlir::Value broadcastCols(mlir::Value v, int64_t m);
  /// Reduces a 2-D tile along dimension 1 with \p kind.
  mlir::Value reduceRows(mlir::vector::CombiningKind kind, mlir::Value tile,
                         mlir::Value init);
  /// Bitcast of the last dimension to \p elem.
  mlir::Value bitcast(mlir::Value v, mlir::Type elem);
};

} // namespace uq::wave

#endif // UQ_LIB_CONVERSION_UQTOWAVE_WAVEBUILDER_H
