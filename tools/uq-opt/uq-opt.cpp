//===- uq-opt.cpp - The uq optimizer driver -------------------------------===//
//
// Runs pass pipelines on IR files that may use the uq dialect, the upstream
// dialects its pipelines need, and every upstream pass.
//
//===----------------------------------------------------------------------===//

#include "uq/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  uq::registerAllDialects(registry);
  uq::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "uq optimizer driver\n", registry));
}
