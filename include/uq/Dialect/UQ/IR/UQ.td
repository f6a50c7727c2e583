//===- UQ.td - The uq dialect, all parts --------------------*- tablegen -*-===//

#ifndef UQ_DIALECT_UQ_IR_UQ_TD
#define UQ_DIALECT_UQ_IR_UQ_TD

include "uq/Dialect/UQ/IR/UQDialect.td"
include "uq/Dialect/UQ/IR/UQEnums.td"
include "uq/Dialect/UQ/IR/UQAttrs.td"
include "uq/Dialect/UQ/IR/UQLayoutAttrs.td"
include "uq/Dialect/UQ/IR/UQOps.td"
include "uq/Dialect/UQ/IR/UQTileOps.td"

#endif // UQ_DIALECT_UQ_IR_UQ_TD
