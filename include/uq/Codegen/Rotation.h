//===- Rotation.h - The rotation's butterfly as IR pieces -------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// The normalised Walsh-Hadamard rotation H_D x / sqrt(D) of the rotated
// formats (docs/ultraquant-format.md), as uq::ref::hadamardRotate evaluates
// it: Sylvester butterfly stages of span 1, 2, ..., D/2, in each stage
// element i paired with i ^ span, then one multiply by 1/sqrt(D).
//
// Every lowering of uq.rotate emits its stages from these pieces, so that
// the pairing, the operand order of each sum and difference and the
// normalisation constant are written once and every path rounds alike. How
// the partner is reached is each lowering's own and stays there, because it
// is what the data layout decides: convert-uq-to-linalg pairs positions of
// a tensor in one linalg.generic per stage, uq-lower-tile-ops shuffles a
// host vector row, uq-distribute-to-lanes reads the partner from the lane's
// own elements, another lane (xor shuffle or DPP) or another batch.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CODEGEN_ROTATION_H
#define UQ_CODEGEN_ROTATION_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

namespace uq::rotation {

/// The spans of the butterfly stages over \p d elements (a power of two),
/// in the order they are applied: 1, 2, 4, ..., d / 2.
llvm::SmallVector<int64_t> stageSpans(int64_t d);

/// In a stage of span s, the new value of the lower element i of a pair
/// (i & s == 0), \p self, with its partner i ^ s: self + partner.
mlir::Value lowerOfPair(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value self, mlir::Value partner);

/// The new value of the upper element (i & s != 0), \p self, with its
/// partner i ^ s (the lower one): partner - self.
mlir::Value upperOfPair(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value self, mlir::Value partner);

/// Both, then the one \p isUpper (i1, or a vector of i1 like \p self)
/// chooses: for elements whose half of the pair is known only at run time
/// (a lane's position).
mlir::Value eitherOfPair(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value self, mlir::Value partner,
                         mlir::Value isUpper);

/// The normalisation 1/sqrt(\p d) as a constant of \p type: a float type,
/// or a shaped type of one (then a splat).
mlir::Value normalisation(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Type type, int64_t d);

} // namespace uq::rotation

#endif // UQ_CODEGEN_ROTATION_H
