//===- DistributeReductions.cpp - Per-lane reductions ---------------------===//
//
// Distribution patterns of reductions and of the rotation (uq.rotate):
// trees over a lane's elements, then butterflies across lanes.
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"

#include "uq/Codegen/Rotation.h"

namespace uq::lanes::distribution {

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

LogicalResult Distributor::reduction(vector::MultiDimReductionOp op,
                                     const Layout &l) {
  FailureOr<Layout> sl = layoutOf(op.getSource());
  if (failed(sl))
    return failure();
  int64_t rd = op.getReductionDims()[0];
  int64_t kd = 1 - rd;
  if (sl->rank() != 2)
    return op.emitOpError("cannot be distributed: 2-D sources only");
  const DimLayout &r = sl->dim(rd);
  vector::CombiningKind kind = op.getKind();
  Type elem = op.getSourceVectorType().getElementType();
  // Float sums keep the element-order tree unless reassociation is allowed.
  bool exact = kind == vector::CombiningKind::ADD && isa<FloatType>(elem) &&
               !stage_attrs::reassociate.isSet(op);
  Value src = mapped(op.getSource());
  Value acc = mapped(op.getAcc());
  auto tree = [&](SmallVector<Value> xs) {
    while (xs.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < xs.size(); i += 2)
        next.push_back(combine(kind, xs[i], xs[i + 1]));
      if (xs.size() % 2)
        next.push_back(xs.back());
      xs = next;
    }
    return xs[0];
  };
  auto acrossLanes = [&](Value x) {
    for (int64_t s = 1; s < r.threads; s *= 2)
      if (r.laneStride == 1 && s < 16 && dppReductions &&
          x.getType().getIntOrFloatBitWidth() == 32) {
        Value partner = rowButterflyPartner(x, s);
        // gfx9 folds DPP only into VOP1/VOP2 ops: v_max_f32 (maxnum), not
        // the VOP3 v_maximum3_f32 of maximumf. For a maximum marked
        // uq.max_ignores_nan (the softmax's row max): the lane's own elements
        // were combined with maximumf (a NaN among them stays NaN in this
        // lane's x); across lanes maxnum keeps the larger non-NaN value, so a
        // row holding a NaN gets a finite max only when another lane's is
        // finite. That changes no result: exp2(NaN - max) is NaN, so the
        // row's sum and output are NaN either way (docs/gpu-compiler.md,
        // "NaN in the softmax max").
        x = kind == vector::CombiningKind::MAXIMUMF &&
                    isa<FloatType>(x.getType()) &&
                    stage_attrs::maxIgnoresNaN.isSet(op)
                ? arith::MaxNumFOp::create(b, loc, x, partner).getResult()
                : combine(kind, x, partner);
      } else {
        x = combine(kind, x, shuffleXor(x, s * r.laneStride));
      }
    return x;
  };
  const DimLayout &k = sl->dim(kd);
  SmallVector<Value> outs;
  SmallVector<int64_t> bidx(2), eidx(2);
  for (int64_t kb = 0; kb < k.batch; ++kb)
    for (int64_t ke = 0; ke < k.elems; ++ke) {
      auto element = [&](int64_t rb, int64_t re) {
        bidx[kd] = kb;
        eidx[kd] = ke;
        bidx[rd] = rb;
        eidx[rd] = re;
        return extract(src, sl->flatIndex(bidx, eidx));
      };
      Value v;
      if (exact) {
        SmallVector<Value> perBatch;
        for (int64_t rb = 0; rb < r.batch; ++rb) {
          SmallVector<Value> run;
          for (int64_t re = 0; re < r.elems; ++re)
            run.push_back(element(rb, re));
          perBatch.push_back(acrossLanes(tree(run)));
        }
        v = tree(perBatch);
      } else {
        SmallVector<Value> all;
        for (int64_t rb = 0; rb < r.batch; ++rb)
          for (int64_t re = 0; re < r.elems; ++re)
            all.push_back(element(rb, re));
        v = acrossLanes(tree(all));
      }
      outs.push_back(v);
    }
  // Result order: the kept dimension's (batch, elem) = the 1-D layout's.
  Value red = fromElements(elem, outs);
  map.map(op->getResult(0), combine(kind, red, acc));
  return success();
}

//===----------------------------------------------------------------------===//
// The rotation
//===----------------------------------------------------------------------===//

LogicalResult Distributor::rotate(uq::RotateOp op, const Layout &l) {
  auto t = cast<VectorType>(op.getType());
  int64_t last = l.rank() - 1;
  const DimLayout &d = l.dim(last);
  int64_t len = t.getShape().back();
  Type elem = t.getElementType();
  Value v = mapped(op.getInput());
  int64_t n = l.elementsPerLane();
  SmallVector<Value> xs;
  for (int64_t f = 0; f < n; ++f)
    xs.push_back(extract(v, f));
  SmallVector<int64_t> bs, es;
  auto posOf = [&](int64_t f) {
    l.unflatten(f, bs, es);
    return std::make_pair(bs[last], es[last]);
  };
  // The pairs' arithmetic and the normalisation: uq/Codegen/Rotation.h.
  for (int64_t span : rotation::stageSpans(len)) {
    SmallVector<Value> next(n);
    if (span < d.elems) {
      // Partner in the lane's own run.
      for (int64_t f = 0; f < n; ++f) {
        auto [bb, e] = posOf(f);
        SmallVector<int64_t> pb = bs, pe = es;
        pe[last] = e ^ span;
        Value p = xs[l.flatIndex(pb, pe)];
        bool upper = e & span;
        next[f] = upper ? rotation::upperOfPair(b, loc, xs[f], p)
                        : rotation::lowerOfPair(b, loc, xs[f], p);
      }
    } else if (span < d.elems * d.threads) {
      // Partner in lane ^ (laneStride * span / elems).
      int64_t bit = span / d.elems;
      Value upper = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ne,
          arith::AndIOp::create(b, loc, laneCoord(d), idx(bit)), idx(0));
      for (int64_t f = 0; f < n; ++f) {
        Value p = shuffleXor(xs[f], bit * d.laneStride);
        next[f] = rotation::eitherOfPair(b, loc, xs[f], p, upper);
      }
    } else {
      // Partner in another batch of the lane.
      int64_t bbit = span / (d.elems * d.threads);
      for (int64_t f = 0; f < n; ++f) {
        posOf(f);
        int64_t bb = bs[last];
        SmallVector<int64_t> pb = bs, pe = es;
        pb[last] = bb ^ bbit;
        Value p = xs[l.flatIndex(pb, pe)];
        bool upper = bb & bbit;
        next[f] = upper ? rotation::upperOfPair(b, loc, xs[f], p)
                        : rotation::lowerOfPair(b, loc, xs[f], p);
      }
    }
    xs = next;
  }
  Value c = rotation::normalisation(b, loc, elem, len);
  for (Value &x : xs)
    x = arith::MulFOp::create(b, loc, x, c);
  map.map(op->getResult(0), fromElements(elem, xs));
  return success();
}

} // namespace uq::lanes::distribution
