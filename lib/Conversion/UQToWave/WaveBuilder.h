//===- WaveBuilder.h - Builders for wave-level kernels ----------*- C++ -*-===//
//
// Small helpers over OpBuilder for the wave-level kernels of
// convert-uq-to-wave: scalar index arithmetic, whole-wave vectors of indices
// and masks, row/column broadcasts and reductions of 2-D tiles, and the
// kernel ABI description each kernel carries to uq-compile's JSON.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOWAVE_WAVEBUILDER_H
#define UQ_LIB_CONVERSION_UQTOWAVE_WAVEBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"

#include <string>
#include <variant>

namespace uq::wave {

/// One dimension of a kernel argument's shape: a size fixed at compile time
/// or the name of the scalar kernel argument that holds it.
struct Dim {
  int64_t value = 0;
  std::string name;
  Dim(int64_t v) : value(v) {}
  Dim(const char *n) : name(n) {}
  Dim(std::string n) : name(std::move(n)) {}
  bool isSymbolic() const { return !name.empty(); }
};

/// One explicit kernel argument as the kernel JSON describes it.
struct ArgSpec {
  std::string name;
  /// "global_buffer" or "by_value".
  std::string kind;
  /// bf16, f16, f32, i32, i64, u8.
  std::string dtype;
  llvm::SmallVector<Dim> shape;
  /// read, write, read_write (buffers); value (scalars).
  std::string access;
  std::string meaning;
};

/// The launch description of one kernel (docs/uq-compile.md).
struct KernelSpec {
  std::string name;
  /// The uq op it implements a part of ("decode_attention_partial", ...).
  std::string op;
  std::vector<ArgSpec> args;
  /// Workgroups per grid dimension.
  std::array<Dim, 3> grid = {Dim(1), Dim(1), Dim(1)};
  std::string gridRule;
  std::array<int64_t, 3> block = {64, 1, 1};
  /// Sizes compiled into the kernel that a caller needs to size its
  /// buffers and grid (head_dim, block_size, partition_size, ...).
  std::vector<std::pair<std::string, int64_t>> params;

  /// The kernel's MLIR type of each argument, in order.
  llvm::SmallVector<mlir::Type> argTypes(mlir::MLIRContext *ctx) const;
  /// The dictionary stored in the module's `uq.kernels` attribute.
  mlir::DictionaryAttr toAttr(mlir::MLIRContext *ctx) const;
};

/// Element type of a JSON dtype name ("u8" is i8).
mlir::Type dtypeToType(mlir::MLIRContext *ctx, llvm::StringRef dtype);
/// JSON dtype name of an element type ("" if none).
std::string typeToDtype(mlir::Type type);

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
