//===- Passes.h - Transformations of uq ops ---------------------*- C++ -*-===//

#ifndef UQ_DIALECT_UQ_TRANSFORMS_PASSES_H
#define UQ_DIALECT_UQ_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace uq {

/// What uq-apply-precision-policy does, with the policy given as JSON text
/// (`policyName` names it in messages): sets the KV formats of `module`'s
/// uq ops to the policy's formats for `layer`. Errors are emitted as
/// diagnostics at the module or the offending op. The caller verifies the
/// module afterwards (a cache may be too small for the new formats).
mlir::LogicalResult applyPrecisionPolicy(mlir::ModuleOp module,
                                         llvm::StringRef policyText,
                                         llvm::StringRef policyName,
                                         int64_t layer);

#define GEN_PASS_DECL
#include "uq/Dialect/UQ/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "uq/Dialect/UQ/Transforms/Passes.h.inc"

} // namespace uq

#endif // UQ_DIALECT_UQ_TRANSFORMS_PASSES_H
