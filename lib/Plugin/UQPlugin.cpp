//===- UQPlugin.cpp - uq as a dialect and pass plugin of mlir-opt ---------===//
//
// Lets an unmodified mlir-opt (or any MlirOptMain tool) that is linked against
// the shared libMLIR.so parse uq IR and run the uq passes:
//
//   mlir-opt --load-dialect-plugin=libUQPlugin.so \
//            --load-pass-plugin=libUQPlugin.so in.mlir ...
//
// The plugin must share libMLIR.so with the host tool: the TypeIDs of the
// upstream dialects the uq dialect builds on (tensor, builtin) and of the
// pass infrastructure then have one address in the process. See
// docs/integration.md.
//
//===----------------------------------------------------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include "llvm/Config/llvm-config.h"

/// The uq dialect alone: the host tool already knows the upstream dialects.
extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "uq", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            registry->insert<uq::UQDialect>();
          }};
}

/// The uq passes and pipelines. Upstream passes registered again by this
/// call carry the TypeIDs of the host's libMLIR.so, which the pass registry
/// accepts as the same passes.
extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "uq", LLVM_VERSION_STRING,
          []() { uq::registerAllPasses(); }};
}
