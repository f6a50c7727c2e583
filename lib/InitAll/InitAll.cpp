//===- InitAll.cpp - Register everything uq tools use ---------------------===//

#include "uq/InitAll.h"

#include "uq/Conversion/Passes.h"
#include "uq/Dialect/UQ/IR/UQ.h"
#include "uq/Dialect/UQ/Transforms/Passes.h"
#include "uq/Pipelines/GPUPipeline.h"
#include "uq/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void uq::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<uq::UQDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

void uq::registerAllPasses() {
  mlir::registerAllPasses();
  uq::registerUQConversionPasses();
  uq::registerUQTransformsPasses();
  uq::registerCheckInputSizesPass();
  uq::registerCPUPipeline();
  uq::registerGPUPipelines();
}
