//===- DistributeConversions.cpp - Per-lane conversions
//---------------------===//
//
// Distribution patterns of elementwise ops, constants, index vectors,
// broadcasts, shape casts, bitcasts and FP4 decodes (uq.scaled_ext).
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"

namespace uq::lanes::distribution {

//===----------------------------------------------------------------------===//
// Elementwise, constants, index vectors, reshapes
//===----------------------------------------------------------------------===//

LogicalResult Distributor::elementwise(Operation *op, const Layout &l) {
  Type resElem = cast<VectorType>(op->getResult(0).getType()).getElementType();
  SmallVector<Value> operands;
  for (Value v : op->getOperands()) {
    if (isVector(v)) {
      FailureOr<Layout> ol = layoutOf(v);
      if (failed(ol))
        return failure();
      if (*ol != l)
        return op->emitOpError() << "operand layout " << ol->str()
                                 << " differs from the result's " << l.str();
    }
    operands.push_back(mapped(v));
  }
  VectorType t = laneType(resElem, l);
  if (isa<math::Exp2Op>(op) && resElem.isF32()) {
    // v_exp_f32: the hardware's exp2 (math.exp2 would be an ocml call).
    SmallVector<Value> xs;
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      xs.push_back(ROCDL::ROCDLExp2::create(b, loc, b.getF32Type(),
                                            extract(operands[0], i)));
    map.map(op->getResult(0), fromElements(resElem, xs));
    return success();
  }
  OperationState st(loc, op->getName());
  st.addOperands(operands);
  st.addTypes(t);
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != stage_attrs::layout.getName())
      st.addAttribute(a.getName(), a.getValue());
  map.map(op->getResult(0), b.create(st)->getResult(0));
  return success();
}

LogicalResult Distributor::constant(arith::ConstantOp op, const Layout &l) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!dense || !dense.isSplat())
    return op.emitOpError("cannot be distributed: only splat vector "
                          "constants are");
  auto t = laneType(dense.getElementType(), l);
  map.map(
      op.getResult(),
      arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(t, dense.getSplatValue<Attribute>())));
  return success();
}

LogicalResult Distributor::step(vector::StepOp op, const Layout &l) {
  const DimLayout &d = l.dim(0);
  SmallVector<int64_t> base;
  for (int64_t bi = 0; bi < d.batch; ++bi)
    for (int64_t e = 0; e < d.elems; ++e)
      base.push_back(bi * d.threads * d.elems + e);
  VectorType t = laneType(b.getIndexType(), l);
  Value c = arith::ConstantOp::create(b, loc, b.getIndexVectorAttr(base));
  if (d.threads > 1) {
    Value off = arith::MulIOp::create(b, loc, laneCoord(d), idx(d.elems));
    c = arith::AddIOp::create(b, loc, c,
                              vector::BroadcastOp::create(b, loc, t, off));
  }
  map.map(op->getResult(0), c);
  return success();
}

LogicalResult Distributor::broadcast(vector::BroadcastOp op, const Layout &l) {
  VectorType t = laneType(op.getResultVectorType().getElementType(), l);
  auto srcT = dyn_cast<VectorType>(op.getSourceType());
  if (!srcT) {
    map.map(op.getResult(),
            vector::BroadcastOp::create(b, loc, t, mapped(op.getSource())));
    return success();
  }
  FailureOr<Layout> sl = layoutOf(op.getSource());
  if (failed(sl))
    return failure();
  int64_t lead = l.rank() - srcT.getRank();
  SmallVector<int64_t> mask, bs, es, sb, se;
  for (int64_t f = 0; f < l.elementsPerLane(); ++f) {
    l.unflatten(f, bs, es);
    sb.assign(srcT.getRank(), 0);
    se.assign(srcT.getRank(), 0);
    for (int64_t i = 0; i < srcT.getRank(); ++i)
      if (srcT.getDimSize(i) != 1 || l.dim(lead + i).size() == 1) {
        sb[i] = bs[lead + i];
        se[i] = es[lead + i];
      }
    mask.push_back(sl->flatIndex(sb, se));
  }
  map.map(op->getResult(0), shuffle(mapped(op.getSource()), mask));
  return success();
}

/// Per-lane element of the source feeding each per-lane element of a
/// reshape, for the lane whose every thread coordinate is \p tc; false if a
/// result element comes from another lane.
static bool reshapeMask(const Layout &src, ArrayRef<int64_t> srcShape,
                        const Layout &res, ArrayRef<int64_t> resShape,
                        int64_t tc, SmallVectorImpl<int64_t> &mask) {
  SmallVector<int64_t> bs, es;
  mask.clear();
  for (int64_t f = 0; f < res.elementsPerLane(); ++f) {
    res.unflatten(f, bs, es);
    int64_t linear = 0;
    for (int64_t d = 0; d < res.rank(); ++d) {
      int64_t t = std::min(tc, res.dim(d).threads - 1);
      linear = linear * resShape[d] + res.logical(d, bs[d], t, es[d]);
    }
    SmallVector<int64_t> sb(src.rank()), se(src.rank());
    for (int64_t d = src.rank() - 1; d >= 0; --d) {
      int64_t i = linear % srcShape[d];
      linear /= srcShape[d];
      const DimLayout &dl = src.dim(d);
      se[d] = i % dl.elems;
      int64_t rest = i / dl.elems;
      sb[d] = rest / dl.threads;
    }
    mask.push_back(src.flatIndex(sb, se));
  }
  return true;
}

LogicalResult Distributor::shapeCast(vector::ShapeCastOp op, const Layout &l) {
  FailureOr<Layout> sl = layoutOf(op.getSource());
  if (failed(sl))
    return failure();
  SmallVector<int64_t> m0, m1;
  ArrayRef<int64_t> ss = op.getSourceVectorType().getShape(),
                    rs = op.getResultVectorType().getShape();
  reshapeMask(*sl, ss, l, rs, 0, m0);
  reshapeMask(*sl, ss, l, rs, 1, m1);
  if (m0 != m1)
    return op.emitOpError()
           << "cannot be distributed: layouts " << sl->str() << " and "
           << l.str() << " do not keep elements in their lanes";
  bool identity = true;
  for (auto [i, v] : llvm::enumerate(m0))
    identity &= int64_t(i) == v;
  Value src = mapped(op.getSource());
  map.map(op->getResult(0),
          identity && int64_t(m0.size()) == sl->elementsPerLane()
              ? src
              : shuffle(src, m0));
  return success();
}

LogicalResult Distributor::bitcast(vector::BitCastOp op, const Layout &l) {
  // Packing sub-byte integers (FP4 codes) from a truncation: shifts and ors
  // on the wider values, so that no vector of i4 reaches the backend (LLVM
  // legalises those through scratch memory).
  VectorType st = op.getSourceVectorType(), rt = op.getResultVectorType();
  unsigned sw = st.getElementTypeBitWidth(), rw = rt.getElementTypeBitWidth();
  auto trunc = op.getSource().getDefiningOp<arith::TruncIOp>();
  if (sw < 8 && rw % sw == 0 && trunc && rt.getElementType().isInteger(rw)) {
    Value wide = mapped(trunc.getIn());
    Type wt = cast<VectorType>(wide.getType()).getElementType();
    int64_t ratio = rw / sw;
    int64_t n = l.elementsPerLane();
    SmallVector<Value> out;
    for (int64_t j = 0; j < n; ++j) {
      Value acc;
      for (int64_t k = 0; k < ratio; ++k) {
        Value x = extract(wide, j * ratio + k);
        x = arith::AndIOp::create(
            b, loc, x,
            arith::ConstantIntOp::create(b, loc, wt, (int64_t(1) << sw) - 1));
        if (k)
          x = arith::ShLIOp::create(
              b, loc, x, arith::ConstantIntOp::create(b, loc, wt, k * sw));
        acc = acc ? arith::OrIOp::create(b, loc, acc, x).getResult() : x;
      }
      out.push_back(arith::TruncIOp::create(b, loc, rt.getElementType(), acc));
    }
    map.map(op.getResult(), fromElements(rt.getElementType(), out));
    return success();
  }
  map.map(op.getResult(),
          vector::BitCastOp::create(
              b, loc, laneType(op.getResultVectorType().getElementType(), l),
              mapped(op.getSource())));
  return success();
}

LogicalResult Distributor::scaledExt(uq::ScaledExtOp op, const Layout &l) {
  Type codeElem = op.getCodes().getType().getElementType();
  Type res = op.getResult().getType().getElementType();
  if (!isa<Float4E2M1FNType>(codeElem) || !(res.isBF16() || res.isF32()))
    return op.emitOpError("cannot be distributed: FP4 codes to bf16/f32 "
                          "only");
  FailureOr<Layout> sl = layoutOf(op.getScales());
  if (failed(sl))
    return failure();
  int64_t n = l.elementsPerLane();
  if (n % 8 != 0 || l.dim(1).elems % 2 != 0)
    return op.emitOpError("cannot be distributed: a lane needs whole bytes "
                          "of codes in runs of whole words");
  Value words = vector::BitCastOp::create(
      b, loc, VectorType::get({n / 8}, b.getI32Type()), mapped(op.getCodes()));
  Value scaleBytes = vector::BitCastOp::create(
      b, loc, VectorType::get({sl->elementsPerLane()}, b.getI8Type()),
      mapped(op.getScales()));
  // The E8M0 byte shifted into an f32 exponent: the instruction uses only
  // the exponent of its scale operand (gfx950-notes.md). An E4M3 scale
  // (the `scale = e4m3` value format) is not a power of two: the codes are
  // converted with scale 1 and multiplied by its f32 value, exactly (see
  // e4m3Value).
  const bool e4m3 =
      isa<Float8E4M3FNType>(op.getScales().getType().getElementType());
  std::map<int64_t, Value> scaleOf;
  auto scaleFor = [&](int64_t f) {
    SmallVector<int64_t> bs, es;
    l.unflatten(f, bs, es);
    int64_t col = l.logical(1, bs[1], 0, es[1]);
    const DimLayout &sd = sl->dim(1);
    int64_t group = col / 32;
    int64_t sb = group / (sd.threads * sd.elems);
    int64_t sf = sl->flatIndex({bs[0], sb}, {es[0], 0});
    if (auto it = scaleOf.find(sf); it != scaleOf.end())
      return it->second;
    Value byte =
        arith::ExtUIOp::create(b, loc, b.getI32Type(), extract(scaleBytes, sf));
    Value s = e4m3 ? e4m3Value(byte)
                   : arith::BitcastOp::create(
                         b, loc, b.getF32Type(),
                         arith::ShLIOp::create(b, loc, byte, i32(23)));
    scaleOf[sf] = s;
    return s;
  };
  VectorType pair = VectorType::get({2}, res);
  SmallVector<Value> halves;
  if (e4m3) {
    // fp4 -> f32 with scale 1.0 (E8M0 127), times S in f32: code (at most 2
    // significant bits) times S (at most 4) is exact in f32 and in bf16.
    VectorType f32x2 = VectorType::get({2}, b.getF32Type());
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    for (int64_t f = 0; f < n; f += 2) {
      Value p = ROCDL::CvtScaleF32PkF32Fp4Op::create(
          b, loc, f32x2, extract(words, f / 8), one, (f % 8) / 2);
      // As pairs: v_pk_mul_f32, then one v_cvt_pk_bf16_f32.
      Value x = arith::MulFOp::create(
          b, loc, p, vector::BroadcastOp::create(b, loc, f32x2, scaleFor(f)));
      if (res.isBF16())
        x = arith::TruncFOp::create(b, loc, pair, x);
      halves.push_back(extract(x, 0));
      halves.push_back(extract(x, 1));
    }
    map.map(op->getResult(0), fromElements(res, halves));
    return success();
  }
  for (int64_t f = 0; f < n; f += 2) {
    Value w = extract(words, f / 8);
    uint32_t sel = (f % 8) / 2;
    Value p;
    if (res.isBF16())
      p = ROCDL::CvtScaleF32PkBf16Fp4Op::create(b, loc, pair, w, scaleFor(f),
                                                sel);
    else
      p = ROCDL::CvtScaleF32PkF32Fp4Op::create(b, loc, pair, w, scaleFor(f),
                                               sel);
    halves.push_back(extract(p, 0));
    halves.push_back(extract(p, 1));
  }
  map.map(op->getResult(0), fromElements(res, halves));
  return success();
}

} // namespace uq::lanes::distribution
