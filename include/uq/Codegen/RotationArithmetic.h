//===- RotationArithmetic.h - How the rotation is evaluated -----*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CODEGEN_ROTATIONARITHMETIC_H
#define UQ_CODEGEN_ROTATIONARITHMETIC_H

namespace uq {

/// How a lowering evaluates the normalised Walsh-Hadamard rotation. Both
/// are the Sylvester butterfly; they differ only in rounding (mirrors
/// `uq::ref::RotationArithmetic`). An option of convert-uq-to-linalg
/// (Passes.td), so the pass declarations need it without the lowering.
enum class RotationArithmetic {
  /// f64 butterfly, one multiply by 1/sqrt(D) in f64, one rounding to f32.
  ExactF64,
  /// f32 butterfly with (a +- b) / sqrt(2) rounded in every stage.
  ButterflyF32,
};

} // namespace uq

#endif // UQ_CODEGEN_ROTATIONARITHMETIC_H
