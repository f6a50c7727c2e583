//===- KernelsAttr.h - The uq.kernels launch description in IR --*- C++ -*-===//
//
// The module attribute `uq.kernels` carries the kernel descriptions
// (KernelDescription.h) from the tiling stage to uq-compile, which writes
// them as JSON. A module written by another compiler (`uq-compile
// --from=wave|lanes`) brings its own, so reading it is a verifier: every
// field, its type and its range, and each description against the gpu.func
// it describes, with a diagnostic located at the module or the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CODEGEN_KERNELSATTR_H
#define UQ_CODEGEN_KERNELSATTR_H

#include "uq/Codegen/KernelDescription.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

namespace uq {

/// The dictionary of one description, as `uq.kernels` holds it.
mlir::DictionaryAttr kernelDescriptionToAttr(const KernelDescription &kernel,
                                             mlir::MLIRContext *ctx);

/// Appends \p kernels to the module's `uq.kernels` (creating it).
void appendKernelDescriptions(mlir::ModuleOp module,
                              llvm::ArrayRef<KernelDescription> kernels);

/// Whether the module has a `uq.kernels` attribute (of any type).
bool hasKernelDescriptions(mlir::ModuleOp module);

/// Reads and checks the module's `uq.kernels`: an array of dictionaries
/// with string `name`, `op`, `grid_rule`; `grid` (integers or argument
/// names) and `block` (integers) of 1 to 3 entries; a dictionary of
/// integer `params` (optional); `args`, one dictionary per argument of the
/// kernel with string `name`, `kind`, `dtype`, `access`, `meaning` and an
/// array `shape`; the rules of verifyKernelDescription; and for each
/// description a `gpu.func` kernel of that name, described once, whose
/// argument count and kinds (scalar or buffer) match. Errors are
/// diagnostics at the module (or at the kernel they concern).
mlir::FailureOr<std::vector<KernelDescription>>
readKernelDescriptions(mlir::ModuleOp module);

/// Element type of a JSON dtype name ("u8" is i8); null if the kernels
/// have none for it.
mlir::Type dtypeToType(mlir::MLIRContext *ctx, llvm::StringRef dtype);
/// JSON dtype name of an element type ("" if none).
std::string typeToDtype(mlir::Type type);
/// The wave-level kernel's MLIR type of each argument, in order: a
/// `memref<?xT>` per buffer, the element type per by-value argument.
llvm::SmallVector<mlir::Type>
kernelArgumentTypes(const KernelDescription &kernel, mlir::MLIRContext *ctx);

} // namespace uq

#endif // UQ_CODEGEN_KERNELSATTR_H
