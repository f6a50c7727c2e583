//===- Passes.h - Transformations of uq ops ---------------------*- C++ -*-===//

#ifndef UQ_DIALECT_UQ_TRANSFORMS_PASSES_H
#define UQ_DIALECT_UQ_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace uq {

#define GEN_PASS_DECL
#include "uq/Dialect/UQ/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "uq/Dialect/UQ/Transforms/Passes.h.inc"

} // namespace uq

#endif // UQ_DIALECT_UQ_TRANSFORMS_PASSES_H
