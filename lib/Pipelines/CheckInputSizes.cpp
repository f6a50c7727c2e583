//===- CheckInputSizes.cpp - The input-wide size bound as a pass ----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// uq-check-input-sizes: uq::checkValueSizes (uq/Support/Input.h) as the
// first pass of every uq pipeline, so that IR handed to a pipeline by
// uq-opt (which parses with MlirOptMain, not uq::parseSourceChecked) meets
// the same bound on vector and constant sizes before any pass can
// materialise such a value (docs/robustness.md, "Input limits").
//
//===----------------------------------------------------------------------===//

#include "uq/Pipelines/Pipelines.h"

#include "uq/Support/Input.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
struct CheckInputSizesPass
    : public PassWrapper<CheckInputSizesPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckInputSizesPass)
  CheckInputSizesPass() = default;
  CheckInputSizesPass(const CheckInputSizesPass &other)
      : PassWrapper(other) {}
  StringRef getArgument() const override { return "uq-check-input-sizes"; }
  StringRef getDescription() const override {
    return "Refuse, with a located error, any vector type or constant "
           "with more elements than uq's input bound (the first pass of "
           "every uq pipeline; docs/robustness.md)";
  }
  void runOnOperation() override {
    if (maxVectorElements < 1 || maxConstantElements < 1) {
      getOperation()->emitError()
          << "uq-check-input-sizes: max-vector-elements and "
             "max-constant-elements must be at least 1";
      return signalPassFailure();
    }
    if (failed(uq::checkValueSizes(getOperation(), maxVectorElements,
                                   maxConstantElements)))
      signalPassFailure();
    markAllAnalysesPreserved();
  }
  Option<int64_t> maxVectorElements{
      *this, "max-vector-elements",
      llvm::cl::desc("Most elements of one vector type "
                     "(InputLimits::kMaxVectorElements)"),
      llvm::cl::init(uq::InputLimits::kMaxVectorElements)};
  Option<int64_t> maxConstantElements{
      *this, "max-constant-elements",
      llvm::cl::desc("Most elements of one constant "
                     "(InputLimits::kMaxConstantElements)"),
      llvm::cl::init(uq::InputLimits::kMaxConstantElements)};
};
} // namespace

std::unique_ptr<Pass> uq::createCheckInputSizesPass() {
  return std::make_unique<CheckInputSizesPass>();
}

void uq::registerCheckInputSizesPass() {
  PassRegistration<CheckInputSizesPass>();
}
