//===- Passes.h - Conversion passes of uq -----------------------*- C++ -*-===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CONVERSION_PASSES_H
#define UQ_CONVERSION_PASSES_H

#include "uq/Codegen/RotationArithmetic.h"

#include "mlir/Pass/Pass.h"

namespace uq {

#define GEN_PASS_DECL
#include "uq/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "uq/Conversion/Passes.h.inc"

} // namespace uq

#endif // UQ_CONVERSION_PASSES_H
