//===- InitAll.h - Register everything uq tools use -------------*- C++ -*-===//

#ifndef UQ_INITALL_H
#define UQ_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace uq {

/// Registers the uq dialect, every upstream dialect and extension, and the
/// translations to LLVM IR (which gpu-module-to-binary needs).
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers every upstream pass, the uq passes and the uq pipelines.
void registerAllPasses();

} // namespace uq

#endif // UQ_INITALL_H
