//===- TensorBuilder.cpp - Tensor-level building blocks -------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "TensorBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

/// One linalg.generic with a single result whose body is \p body (called
/// with the block arguments: inputs, then the output).
Value TensorBuilder::generic(ValueRange ins, Value out,
                             ArrayRef<AffineMap> maps,
                             ArrayRef<IteratorType> iterators, BodyFn body) {
  auto op = linalg::GenericOp::create(
      b, loc, TypeRange{out.getType()}, ins, ValueRange{out}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        ScalarEmitter es(nb, nloc);
        Value r = body(es, args);
        linalg::YieldOp::create(nb, nloc, r);
      });
  return op.getResult(0);
}

/// Elementwise map of same-shaped tensors \p ins into a new tensor of
/// element type \p elem.
Value TensorBuilder::elementwise(ValueRange ins, Type elem, BodyFn body) {
  int64_t r = rank(ins[0]);
  Value out = empty(sizes(ins[0]), elem);
  SmallVector<AffineMap> maps(ins.size() + 1, id(r));
  SmallVector<IteratorType> its(r, kPar);
  return generic(ins, out, maps, its, body);
}

/// [..., D] -> [N, D].
Value TensorBuilder::flattenRows(Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t r = t.getRank();
  if (r == 2)
    return x;
  if (r == 1) {
    auto rt = RankedTensorType::get({1, t.getDimSize(0)}, t.getElementType());
    return tensor::ExpandShapeOp::create(b, loc, rt, x,
                                         {ReassociationIndices{0, 1}});
  }
  ReassociationIndices lead;
  for (int64_t i = 0; i + 1 < r; ++i)
    lead.push_back(i);
  return tensor::CollapseShapeOp::create(
      b, loc, x, ArrayRef<ReassociationIndices>{lead, {r - 1}});
}

/// [N, X] -> [leading dims of \p like..., X].
Value TensorBuilder::unflattenRows(Value x2, Value like) {
  auto lt = cast<RankedTensorType>(like.getType());
  auto xt = cast<RankedTensorType>(x2.getType());
  int64_t r = lt.getRank();
  if (r == 2)
    return x2;
  int64_t last = xt.getDimSize(1);
  if (r == 1) {
    auto rt = RankedTensorType::get({last}, xt.getElementType());
    return tensor::CollapseShapeOp::create(b, loc, rt, x2,
                                           {ReassociationIndices{0, 1}});
  }
  SmallVector<int64_t> shape(lt.getShape().drop_back());
  shape.push_back(last);
  SmallVector<OpFoldResult> outShape = sizes(like);
  outShape.back() = b.getIndexAttr(last);
  ReassociationIndices lead;
  for (int64_t i = 0; i + 1 < r; ++i)
    lead.push_back(i);
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, xt.getElementType()), x2,
      {lead, {r - 1}}, outShape);
}

/// Splits the last dimension of a rank-2 [N, X] tensor into \p parts.
Value TensorBuilder::splitLast(Value x2, ArrayRef<int64_t> parts) {
  auto xt = cast<RankedTensorType>(x2.getType());
  SmallVector<int64_t> shape{xt.getDimSize(0)};
  shape.append(parts.begin(), parts.end());
  SmallVector<OpFoldResult> outShape{dim(x2, 0)};
  for (int64_t p : parts)
    outShape.push_back(b.getIndexAttr(p));
  ReassociationIndices tail;
  for (int64_t i = 0; i < static_cast<int64_t>(parts.size()); ++i)
    tail.push_back(i + 1);
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, xt.getElementType()), x2,
      {ReassociationIndices{0}, tail}, outShape);
}

/// Merges every dimension after the first: [N, a, b, ...] -> [N, a*b*...].
Value TensorBuilder::mergeTail(Value x) {
  int64_t r = rank(x);
  ReassociationIndices tail;
  for (int64_t i = 1; i < r; ++i)
    tail.push_back(i);
  return tensor::CollapseShapeOp::create(
      b, loc, x, ArrayRef<ReassociationIndices>{{0}, tail});
}

/// Applies \p fn to consecutive tiles of at most kRowTile rows of the
/// rows [N, D] \p x2 and concatenates its results, whose element types
/// and widths are \p results. Without a loop when N <= kRowTile.
SmallVector<Value> TensorBuilder::tiledRows(
    Value x2, ArrayRef<std::pair<Type, int64_t>> results,
    function_ref<SmallVector<Value>(TensorBuilder &, Value)> fn) {
  int64_t n = staticDim(x2, 0);
  if (!ShapedType::isDynamic(n) && n <= kRowTile)
    return fn(*this, x2);
  int64_t dd = staticDim(x2, 1);
  Value rows = dimValue(x2, 0);
  SmallVector<Value> inits;
  for (auto [t, w] : results)
    inits.push_back(empty({dim(x2, 0), b.getIndexAttr(w)}, t));
  auto loop = scf::ForOp::create(
      b, loc, s.index(0), rows, s.index(kRowTile), inits,
      [&](OpBuilder &lb, Location ll, Value i, ValueRange acc) {
        TensorBuilder in(lb, ll, options);
        Value left = arith::SubIOp::create(lb, ll, rows, i);
        Value cnt = arith::MinSIOp::create(lb, ll, left, in.s.index(kRowTile));
        OpFoldResult z = lb.getIndexAttr(0);
        Value tile = in.extractAt(
            x2,
            RankedTensorType::get({ShapedType::kDynamic, dd}, elementType(x2)),
            {i, z}, {cnt, lb.getIndexAttr(dd)});
        SmallVector<Value> parts = fn(in, tile);
        SmallVector<Value> next;
        for (auto [k, part] : llvm::enumerate(parts))
          next.push_back(in.copyInto(
              part, acc[k], {i, z}, {cnt, lb.getIndexAttr(results[k].second)}));
        scf::YieldOp::create(lb, ll, next);
      });
  return SmallVector<Value>(loop.getResults());
}

/// [Hkv, group, ...] -> [Hq, ...].
Value TensorBuilder::mergeHeads(Value x) {
  int64_t r = rank(x);
  SmallVector<ReassociationIndices> re{{0, 1}};
  for (int64_t i = 2; i < r; ++i)
    re.push_back({i});
  return tensor::CollapseShapeOp::create(b, loc, x, re);
}

/// Inserts \p src (rank-reduced) into \p dest at \p offsets with unit
/// sizes where \p src has no dimension.
Value TensorBuilder::insertAt(Value src, Value dest,
                              ArrayRef<OpFoldResult> offsets,
                              ArrayRef<OpFoldResult> sizes_) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return tensor::InsertSliceOp::create(b, loc, src, dest, offsets, sizes_,
                                       strides);
}

/// insertAt through a copying linalg.generic into the matching
/// extract_slice of \p dest: bufferization then writes in place into the
/// destination's subview with compiled loops instead of a strided
/// memref.copy (a runtime call that moves one element at a time).
Value TensorBuilder::copyInto(Value src, Value dest,
                              ArrayRef<OpFoldResult> offsets,
                              ArrayRef<OpFoldResult> sizes_) {
  Value window =
      extractAt(dest, cast<RankedTensorType>(src.getType()), offsets, sizes_);
  int64_t r = rank(src);
  SmallVector<IteratorType> its(r, kPar);
  Value copied = generic({src}, window, {id(r), id(r)}, its,
                         [](ScalarEmitter &, ValueRange x) { return x[0]; });
  return insertAt(copied, dest, offsets, sizes_);
}

Value TensorBuilder::extractAt(Value src, RankedTensorType type,
                               ArrayRef<OpFoldResult> offsets,
                               ArrayRef<OpFoldResult> sizes_) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, type, src, offsets, sizes_,
                                        strides);
}

/// Converts an f32 tensor to \p type's element type and casts to it.
Value TensorBuilder::toResult(Value v, Type type) {
  Type elem = cast<RankedTensorType>(type).getElementType();
  if (!elem.isF32())
    v = elementwise({v}, elem, [&](ScalarEmitter &es, ValueRange x) {
      return es.fromF32(x[0], elem);
    });
  return castTo(v, type);
}
