//===- WaveBuilder.cpp - Builders for wave-level kernels ------------------===//

#include "WaveBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace uq::wave;

//===----------------------------------------------------------------------===//
// Kernel descriptions
//===----------------------------------------------------------------------===//

Type uq::wave::dtypeToType(MLIRContext *ctx, llvm::StringRef dtype) {
  Builder b(ctx);
  return llvm::StringSwitch<Type>(dtype)
      .Case("bf16", b.getBF16Type())
      .Case("f16", b.getF16Type())
      .Case("f32", b.getF32Type())
      .Case("i32", b.getI32Type())
      .Case("i64", b.getI64Type())
      .Case("u8", b.getI8Type())
      .Default(Type());
}

std::string uq::wave::typeToDtype(Type type) {
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (type.isF32())
    return "f32";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  if (type.isInteger(8))
    return "u8";
  return "";
}

SmallVector<Type> KernelSpec::argTypes(MLIRContext *ctx) const {
  SmallVector<Type> types;
  for (const ArgSpec &a : args) {
    Type elem = dtypeToType(ctx, a.dtype);
    if (a.kind == "by_value")
      types.push_back(elem);
    else
      types.push_back(MemRefType::get({ShapedType::kDynamic}, elem));
  }
  return types;
}

DictionaryAttr KernelSpec::toAttr(MLIRContext *ctx) const {
  Builder b(ctx);
  auto dims = [&](ArrayRef<Dim> ds) {
    SmallVector<Attribute> out;
    for (const Dim &d : ds)
      out.push_back(d.isSymbolic() ? Attribute(b.getStringAttr(d.name))
                                   : Attribute(b.getI64IntegerAttr(d.value)));
    return b.getArrayAttr(out);
  };
  SmallVector<Attribute> argAttrs;
  for (const ArgSpec &a : args) {
    SmallVector<NamedAttribute> f = {
        b.getNamedAttr("name", b.getStringAttr(a.name)),
        b.getNamedAttr("kind", b.getStringAttr(a.kind)),
        b.getNamedAttr("dtype", b.getStringAttr(a.dtype)),
        b.getNamedAttr("shape", dims(a.shape)),
        b.getNamedAttr("access", b.getStringAttr(a.access)),
        b.getNamedAttr("meaning", b.getStringAttr(a.meaning))};
    argAttrs.push_back(b.getDictionaryAttr(f));
  }
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(name)),
      b.getNamedAttr("op", b.getStringAttr(op)),
      b.getNamedAttr("grid", dims(grid)),
      b.getNamedAttr("grid_rule", b.getStringAttr(gridRule)),
      b.getNamedAttr("block", b.getDenseI64ArrayAttr(block)),
      b.getNamedAttr("params", [&] {
        SmallVector<NamedAttribute> ps;
        for (auto &[k, v] : params)
          ps.push_back(b.getNamedAttr(k, b.getI64IntegerAttr(v)));
        return b.getDictionaryAttr(ps);
      }()),
      b.getNamedAttr("args", b.getArrayAttr(argAttrs))};
  return b.getDictionaryAttr(fields);
}

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
