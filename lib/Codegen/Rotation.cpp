//===- Rotation.cpp - The rotation's butterfly as IR pieces ---------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "uq/Codegen/Rotation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>

using namespace mlir;

namespace uq::rotation {

SmallVector<int64_t> stageSpans(int64_t d) {
  SmallVector<int64_t> spans;
  for (int64_t s = 1; s < d; s *= 2)
    spans.push_back(s);
  return spans;
}

Value lowerOfPair(OpBuilder &b, Location loc, Value self, Value partner) {
  return arith::AddFOp::create(b, loc, self, partner);
}

Value upperOfPair(OpBuilder &b, Location loc, Value self, Value partner) {
  return arith::SubFOp::create(b, loc, partner, self);
}

Value eitherOfPair(OpBuilder &b, Location loc, Value self, Value partner,
                   Value isUpper) {
  Value sum = lowerOfPair(b, loc, self, partner);
  Value diff = upperOfPair(b, loc, self, partner);
  return arith::SelectOp::create(b, loc, isUpper, diff, sum);
}

Value normalisation(OpBuilder &b, Location loc, Type type, int64_t d) {
  auto shaped = dyn_cast<ShapedType>(type);
  Type elem = shaped ? shaped.getElementType() : type;
  FloatAttr norm = b.getFloatAttr(elem, 1.0 / std::sqrt(double(d)));
  if (shaped)
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(shaped, norm));
  return arith::ConstantOp::create(b, loc, norm);
}

} // namespace uq::rotation
