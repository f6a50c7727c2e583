//===- UQ.h - The uq dialect ------------------------------------*- C++ -*-===//
//
// Dialect, attributes and operations of uq (4-bit KV-cache attention).
//
//===----------------------------------------------------------------------===//

#ifndef UQ_DIALECT_UQ_IR_UQ_H
#define UQ_DIALECT_UQ_IR_UQ_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "uq/Dialect/UQ/IR/UQDialect.h.inc"
#include "uq/Dialect/UQ/IR/UQEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "uq/Dialect/UQ/IR/UQAttrs.h.inc"

#define GET_OP_CLASSES
#include "uq/Dialect/UQ/IR/UQOps.h.inc"

#endif // UQ_DIALECT_UQ_IR_UQ_H
