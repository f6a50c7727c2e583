//===- UQToLinalg.cpp - Lower uq ops to linalg on tensors -----------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Every uq op becomes linalg.generic ops with explicit bodies (the scalar
// codes of the codegen floor's Numerics.h), tensor reshapes/slices and, for
// the cache and the attention, scf.for loops over tokens, sequences and
// partitions. All of it stays on tensors; bufferization comes later in the
// pipeline.
//
// The files of this directory, by concern:
//  - TensorBuilder.{h,cpp}: affine maps, generics, row reshapes, slices and
//    row tiling (no format, no op);
//  - RowCodes.h, Rotation.cpp, RowCodes.cpp: the formats' rows on tensors
//    (rotation, FP4 codes and scales, FP8, bf16, cache slot elements);
//  - Attention.{h,cpp}: the steps of the attention ops (query, decoded K/V,
//    logits, softmax-weighted sum);
//  - CodingPatterns.cpp, CacheWrite.cpp, DecodeAttention.cpp,
//    PagedAttention.cpp: the patterns, one family of ops each (Patterns.h);
//  - this file: what the lowering supports, and the pass.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/UQToLinalg/UQToLinalg.h"
#include "Patterns.h"
#include "uq/Conversion/Passes.h"
#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace uq {
#define GEN_PASS_DEF_CONVERTUQTOLINALGPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

//===----------------------------------------------------------------------===//
// What the lowering supports
//===----------------------------------------------------------------------===//

std::string uq::to_linalg::unsupportedFormat(KVFormatAttr format) {
  switch (format.getElement()) {
  case ElementCode::fp4_e2m1:
    if (!format.hasScales())
      return "fp4_e2m1 without ue8m0 scales is not supported";
    if (format.getGroupSize() % 2 != 0)
      return "fp4_e2m1 needs an even group size";
    if (format.getScaleRule() == ScaleRule::mse_search &&
        !llvm::isPowerOf2_64(format.getGroupSize()))
      return "scale_rule = mse_search needs a power-of-two group size";
    return "";
  case ElementCode::fp8_e4m3:
  case ElementCode::bf16:
    if (format.hasScales())
      return "scaled fp8_e4m3/bf16 formats are not supported (the reference "
             "defines none)";
    if (format.getRounding() != Rounding::nearest_even)
      return "fp8_e4m3/bf16 round to nearest even only";
    return "";
  }
  return "unknown element code";
}

namespace {

/// Emits an error on \p op if the lowering cannot handle it.
LogicalResult checkSupported(Operation *op) {
  SmallVector<KVFormatAttr> formats;
  for (NamedAttribute attr : op->getAttrs())
    if (auto f = dyn_cast<KVFormatAttr>(attr.getValue()))
      formats.push_back(f);
  for (KVFormatAttr f : formats) {
    std::string why = unsupportedFormat(f);
    if (!why.empty())
      return op->emitOpError() << "cannot be lowered to linalg: " << why;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct ConvertUQToLinalgPass
    : public uq::impl::ConvertUQToLinalgPassBase<ConvertUQToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    // Say clearly what cannot be lowered before the conversion gives up.
    WalkResult walk = getOperation()->walk([](Operation *op) {
      if (isa<UQDialect>(op->getDialect()) && failed(checkSupported(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    UQToLinalgOptions opts;
    opts.rotation = rotationArithmetic;
    RewritePatternSet patterns(&getContext());
    populateUQToLinalgPatterns(patterns, opts);
    ConversionTarget target(getContext());
    // The tensor-level ops; the wave-level tile ops (and uq.rotate on
    // vectors) belong to the GPU path's stages.
    target.addIllegalDialect<UQDialect>();
    target.addLegalOp<LoadRowsOp, StoreRowsOp, ScaledMmaOp, ScaledExtOp,
                      ToLayoutOp>();
    target.addDynamicallyLegalOp<RotateOp>(
        [](RotateOp op) { return !isa<RankedTensorType>(op.getType()); });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void uq::populateUQToLinalgPatterns(RewritePatternSet &patterns,
                                    const UQToLinalgOptions &options) {
  populateCodingPatterns(patterns, options);
  populateCacheWritePatterns(patterns, options);
  populateDecodeAttentionPatterns(patterns, options);
  populatePagedAttentionPatterns(patterns, options);
}
