//===- WaveBuilder.cpp - Builders for wave-level kernels ------------------===//

#include "WaveBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace uq::wave;

//===----------------------------------------------------------------------===//
// WaveBuilder
//===----------------------------------------------------------------------===//

Value WaveBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value WaveBuilder::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}
Value WaveBuilder::f32(float v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}
Value WaveBuilder::toIndex(Value v) {
  Type t = v.getType();
  if (t.isIndex())
    return v;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}
Value WaveBuilder::add(Value x, Value y) {
  return arith::AddIOp::create(b, loc, x, y);
}
Value WaveBuilder::sub(Value x, Value y) {
  return arith::SubIOp::create(b, loc, x, y);
}
Value WaveBuilder::mul(Value x, Value y) {
  return arith::MulIOp::create(b, loc, x, y);
}
Value WaveBuilder::divu(Value x, Value y) {
  return arith::DivUIOp::create(b, loc, x, y);
}
Value WaveBuilder::remu(Value x, Value y) {
  return arith::RemUIOp::create(b, loc, x, y);
}
Value WaveBuilder::min(Value x, Value y) {
  return arith::MinSIOp::create(b, loc, x, y);
}
Value WaveBuilder::max(Value x, Value y) {
  return arith::MaxSIOp::create(b, loc, x, y);
}
Value WaveBuilder::cmp(arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}
Value WaveBuilder::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}
Value WaveBuilder::andi(Value x, Value y) {
  return arith::AndIOp::create(b, loc, x, y);
}
Value WaveBuilder::blockId(gpu::Dimension d) {
  return gpu::BlockIdOp::create(b, loc, d);
}

VectorType WaveBuilder::vec(ArrayRef<int64_t> shape, Type elem) {
  return VectorType::get(shape, elem);
}

Value WaveBuilder::splat(Value s, ArrayRef<int64_t> shape) {
  return vector::BroadcastOp::create(b, loc, vec(shape, s.getType()), s);
}

Value WaveBuilder::constSplat(TypedAttr scalar, ArrayRef<int64_t> shape) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(vec(shape, scalar.getType()), scalar));
}

Value WaveBuilder::step(int64_t n) {
  return vector::StepOp::create(b, loc, vec({n}, b.getIndexType()));
}

Value WaveBuilder::stepFrom(Value base, int64_t n) {
  return add(splat(base, {n}), step(n));
}

Value WaveBuilder::broadcastRows(Value v, int64_t n) {
  auto t = cast<VectorType>(v.getType());
  int64_t m = t.getDimSize(0);
  // [m] -> [m x 1] -> [m x n]: a stretch of the unit dimension, no
  // transpose.
  Value col = vector::ShapeCastOp::create(
      b, loc, vec({m, 1}, t.getElementType()), v);
  return vector::BroadcastOp::create(b, loc, vec({m, n}, t.getElementType()),
                                     col);
}

Value WaveBuilder::broadcastCols(Value v, int64_t m) {
  auto t = cast<VectorType>(v.getType());
  return vector::BroadcastOp::create(
      b, loc, vec({m, t.getDimSize(0)}, t.getElementType()), v);
}

Value WaveBuilder::reduceRows(vector::CombiningKind kind, Value tile,
                              Value init) {
  return vector::MultiDimReductionOp::create(b, loc, tile, init,
                                             ArrayRef<bool>{false, true}, kind);
}

Value WaveBuilder::bitcast(Value v, Type elem) {
  auto t = cast<VectorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  unsigned from = t.getElementTypeBitWidth(),
           to = elem.getIntOrFloatBitWidth();
  shape.back() = shape.back() * from / to;
  return vector::BitCastOp::create(b, loc, vec(shape, elem), v);
}
