//===- UQToLinalg.h - Lower uq ops to linalg on tensors ---------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CONVERSION_UQTOLINALG_UQTOLINALG_H
#define UQ_CONVERSION_UQTOLINALG_UQTOLINALG_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace uq {

/// How the lowering evaluates the normalised Walsh-Hadamard rotation. Both
/// are the Sylvester butterfly; they differ only in rounding (mirrors
/// `uq::ref::RotationArithmetic`).
enum class RotationArithmetic {
  /// f64 butterfly, one multiply by 1/sqrt(D) in f64, one rounding to f32.
  ExactF64,
  /// f32 butterfly with (a +- b) / sqrt(2) rounded in every stage.
  ButterflyF32,
};

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
