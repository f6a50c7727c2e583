//===- StageAttrs.h - Attributes the GPU stages hand each other -*- C++ -*-===//
//
// The discardable attributes one stage of the GPU path writes and a later
// one reads, each declared once here with its meaning and its type, and
// read and written only through these accessors (the way upstream dialects
// expose their discardable attributes). docs/gpu-compiler.md describes the
// stages.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_CODEGEN_STAGEATTRS_H
#define UQ_CODEGEN_STAGEATTRS_H

#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

namespace uq {

/// A discardable attribute of type \p AttrT named \p name on an op.
template <typename AttrT> class StageAttr {
public:
  constexpr StageAttr(llvm::StringLiteral name) : name(name) {}

  llvm::StringLiteral getName() const { return name; }
  /// The attribute on \p op, null if it has none (or one of another type).
  AttrT get(mlir::Operation *op) const {
    return op->getAttrOfType<AttrT>(name);
  }
  bool isSet(mlir::Operation *op) const { return static_cast<bool>(get(op)); }
  void set(mlir::Operation *op, AttrT value) const { op->setAttr(name, value); }
  void remove(mlir::Operation *op) const { op->removeAttr(name); }

private:
  llvm::StringLiteral name;
};

/// A unit attribute: a marker that is present or not.
class StageMarker : public StageAttr<mlir::UnitAttr> {
public:
  using StageAttr::StageAttr;
  void set(mlir::Operation *op) const {
    StageAttr::set(op, mlir::UnitAttr::get(op->getContext()));
  }
};

namespace stage_attrs {

/// Module: the launch description of its kernels, an array of dictionaries
/// (written by convert-uq-to-wave, read by uq-compile; KernelsAttr.h reads
/// and writes it, checked).
inline constexpr StageAttr<mlir::ArrayAttr> kernels{"uq.kernels"};

/// Float add reduction (convert-uq-to-wave -> uq-distribute-to-lanes): its
/// order does not matter (the softmax sums), so a lane may combine its own
/// elements in a tree.
inline constexpr StageMarker reassociate{"uq.reassociate"};

/// maximumf reduction (convert-uq-to-wave -> uq-distribute-to-lanes): the
/// result may ignore a NaN element when another element is not NaN (maxnum
/// across lanes, which folds with DPP on gfx9). Only for maxima whose NaN
/// reaches the result another way (the softmax: exp2(NaN - max) is NaN);
/// without it the maximum propagates NaN.
inline constexpr StageMarker maxIgnoresNaN{"uq.max_ignores_nan"};

/// Load that only feeds a store, e.g. the prefill kernel's key tile into LDS
/// (convert-uq-to-wave -> uq-assign-lane-layouts): the lanes one row may
/// span when the load's layout is chosen from its shape.
inline constexpr StageAttr<mlir::IntegerAttr> lanesPerRow{"uq.lanes_per_row"};

/// The #uq.lane_layout of an op's vector result (uq-assign-lane-layouts ->
/// uq-distribute-to-lanes).
inline constexpr StageAttr<LaneLayoutAttr> layout{"uq.layout"};

/// scf.for: the lane layouts of its results, one entry per result (a unit
/// attribute for a result without one).
inline constexpr StageAttr<mlir::ArrayAttr> layouts{"uq.layouts"};

/// A kernel uq-distribute-to-lanes has distributed (it is not distributed
/// twice).
inline constexpr StageMarker distributed{"uq.distributed"};

} // namespace stage_attrs
} // namespace uq

#endif // UQ_CODEGEN_STAGEATTRS_H
