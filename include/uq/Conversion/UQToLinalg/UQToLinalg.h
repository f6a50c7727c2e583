//===- UQToLinalg.h - Lower uq ops to linalg on tensors ---------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CONVERSION_UQTOLINALG_UQTOLINALG_H
#define UQ_CONVERSION_UQTOLINALG_UQTOLINALG_H

#include "uq/Codegen/RotationArithmetic.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace uq {

/// Options of the uq-to-linalg patterns.
struct UQToLinalgOptions {
  RotationArithmetic rotation = RotationArithmetic::ExactF64;
};

/// Adds the patterns that lower every uq op on tensors to
/// linalg/tensor/arith/math/scf ops on tensors.
void populateUQToLinalgPatterns(mlir::RewritePatternSet &patterns,
                                const UQToLinalgOptions &options = {});

} // namespace uq

#endif // UQ_CONVERSION_UQTOLINALG_UQTOLINALG_H
