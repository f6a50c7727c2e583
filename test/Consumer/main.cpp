//===- main.cpp - A program built against an installed uq -----------------===//
//
// Registers the uq dialect, parses and verifies a uq module through the C++
// API, then runs a pipeline through the C API (libUQCAPI.so). Exits non-zero
// on any failure.
//
//===----------------------------------------------------------------------===//

#include "uq-c/Compiler.h"
#include "uq-c/Dialects.h"
#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

static const char *kModule = R"mlir(
func.func @quantize(%x: tensor<4x128xbf16>) -> (tensor<4x64xi8>, tensor<4x4xi8>) {
  %c, %s = uq.quantize %x {format = #uq.kv_format<fp4_e2m1, rotation = hadamard>}
      : tensor<4x128xbf16> -> tensor<4x64xi8>, tensor<4x4xi8>
  return %c, %s : tensor<4x64xi8>, tensor<4x4xi8>
}
)mlir";

int main() {
  // C++ API: parse and verify with the uq dialect registered.
  mlir::DialectRegistry registry;
  uq::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kModule, &context);
  if (!module) {
    llvm::errs() << "consumer: parse failed\n";
    return 1;
  }
  if (mlir::failed(mlir::verify(*module))) {
    llvm::errs() << "consumer: verify failed\n";
    return 1;
  }
  unsigned numUQOps = 0;
  module->walk([&](mlir::Operation *op) {
    if (llvm::isa<uq::UQDialect>(op->getDialect()))
      ++numUQOps;
  });
  llvm::outs() << "consumer: parsed and verified, " << numUQOps
               << " uq op(s)\n";
  module->print(llvm::outs());
  llvm::outs() << "\n";

  // C API: the same text through uqRunPipeline.
  uqRegisterAllPasses();
  UqBuffer out, diag;
  MlirLogicalResult r = uqRunPipeline(kModule, std::strlen(kModule),
                                      "builtin.module(canonicalize)", &out,
                                      &diag);
  if (mlirLogicalResultIsFailure(r)) {
    llvm::errs() << "consumer: uqRunPipeline failed: " << diag.data << "\n";
    uqBufferFree(&diag);
    return 1;
  }
  llvm::outs() << "consumer: C API pipeline output " << out.length
               << " bytes\n"
               << out.data << "\n";
  uqBufferFree(&out);
  uqBufferFree(&diag);
  llvm::outs().flush();
  return 0;
}
