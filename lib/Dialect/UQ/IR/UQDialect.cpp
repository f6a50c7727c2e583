//===- UQDialect.cpp - The uq dialect -------------------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace uq;

#include "uq/Dialect/UQ/IR/UQDialect.cpp.inc"

void UQDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "uq/Dialect/UQ/IR/UQOps.cpp.inc"
      >();
}
