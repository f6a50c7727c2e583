//===- UQTileOps.cpp - Wave-level tile ops and lane layouts ---------------===//
//
// Verifiers of uq.load_rows, uq.store_rows, uq.scaled_mma and uq.scaled_ext
// (#uq.lane_layout lives with the other attributes in UQAttrs.cpp).
//
//===----------------------------------------------------------------------===//

#include "uq/Dialect/UQ/IR/UQ.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace uq;

namespace {
/// Elements of one E8M0 scale (OCP MX block size).
constexpr int64_t kScaleBlock = 32;

LogicalResult verifyRowsAccess(Operation *op, VectorType tile,
                               MemRefType base, VectorType offsets,
                               VectorType mask, StringRef what) {
  if (tile.getElementType() != base.getElementType())
    return op->emitOpError() << what << " element type "
                             << tile.getElementType()
                             << " differs from the buffer's "
                             << base.getElementType();
  if (tile.isScalable())
    return op->emitOpError() << what << " must not be scalable";
  if (offsets.getDimSize(0) != tile.getDimSize(0) ||
      mask.getDimSize(0) != tile.getDimSize(0))
    return op->emitOpError()
           << "needs one offset and one mask bit per row: " << tile.getDimSize(0)
           << " rows, " << offsets.getDimSize(0) << " offsets, "
           << mask.getDimSize(0) << " mask bits";
  return success();
}

/// Checks a data tile against its scale tile: same rows, one scale per 32
/// elements of the last dimension.
LogicalResult verifyScales(Operation *op, VectorType data, VectorType scales,
                           StringRef what) {
  int64_t k = data.getDimSize(1);
  if (k % kScaleBlock != 0)
    return op->emitOpError() << what << " K dimension " << k
                             << " must be a multiple of " << kScaleBlock;
  if (scales.getDimSize(0) != data.getDimSize(0) ||
      scales.getDimSize(1) != k / kScaleBlock)
    return op->emitOpError()
           << what << " scales must be " << data.getDimSize(0) << "x"
           << k / kScaleBlock << " (one per " << kScaleBlock
           << " elements), got " << scales;
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// LoadRowsOp / StoreRowsOp
//===----------------------------------------------------------------------===//

int64_t LoadRowsOp::getRowWidth() {
  int64_t n = getResult().getType().getDimSize(1);
  if (std::optional<int64_t> w = getWidth())
    return std::min(*w, n);
  return n;
}

LogicalResult LoadRowsOp::verify() {
  if (failed(verifyRowsAccess(*this, getResult().getType(), getBase().getType(),
                              getOffsets().getType(), getMask().getType(),
                              "result")))
    return failure();
  if (std::optional<int64_t> w = getWidth();
      w && (*w <= 0 || *w > getResult().getType().getDimSize(1)))
    return emitOpError() << "width " << *w << " must be in [1, "
                         << getResult().getType().getDimSize(1) << "]";
  return success();
}

LogicalResult StoreRowsOp::verify() {
  return verifyRowsAccess(*this, getValue().getType(), getBase().getType(),
                          getOffsets().getType(), getMask().getType(),
                          "value");
}

//===----------------------------------------------------------------------===//
// ScaledMmaOp / ScaledExtOp
//===----------------------------------------------------------------------===//

LogicalResult ScaledMmaOp::verify() {
  VectorType a = getA().getType(), b = getB().getType(),
             acc = getAcc().getType();
  if (a.getDimSize(1) != b.getDimSize(1))
    return emitOpError() << "operands must agree on K: " << a << " and " << b;
  if (failed(verifyScales(*this, a, getAScales().getType(), "a")) ||
      failed(verifyScales(*this, b, getBScales().getType(), "b")))
    return failure();
  if (acc.getDimSize(0) != a.getDimSize(0) ||
      acc.getDimSize(1) != b.getDimSize(0))
    return emitOpError() << "accumulator must be " << a.getDimSize(0) << "x"
                         << b.getDimSize(0) << " (rows of a x rows of b), got "
                         << acc;
  return success();
}

LogicalResult ScaledExtOp::verify() {
  VectorType codes = getCodes().getType();
  if (getResult().getType().getShape() != codes.getShape())
    return emitOpError() << "result shape must equal the codes' shape "
                         << codes;
  return verifyScales(*this, codes, getScales().getType(), "codes");
}
