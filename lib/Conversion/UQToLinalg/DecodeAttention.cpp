//===- DecodeAttention.cpp - Decode attention and its partitions ----------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// uq.decode_attention: one scf.for over sequences, each decoding its K/V
// rows and attending with the sequence's query (Attention.h);
// uq.decode_attention_partial: the same with an inner loop over partitions
// that keeps each partition's output, max and sum; uq.merge_partitions:
// the partitions' log-sum-exp merge.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Patterns.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

namespace {

struct DecodeAttentionLowering : UQPattern<DecodeAttentionOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(DecodeAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkKVFormats(op, op.getKFormat(), op.getVFormat(), rewriter)))
      return failure();
    Location loc = op.getLoc();
    AttentionBuilder l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Attention a = l.attention(op);
    Value q4 = l.prepareQuery(op.getQuery(), a, op.getQueryPrecision());
    Value sink = l.groupedSinks(a, op.getSinks());
    int64_t hq = a.numKV * a.group;
    Value init = l.empty({l.dim(op.getQuery(), 0), b.getIndexAttr(hq),
                          b.getIndexAttr(a.headDim)},
                         b.getF32Type());
    auto loop = scf::ForOp::create(
        b, loc, l.s.index(0), l.dimValue(op.getQuery(), 0), l.s.index(1),
        ValueRange{init},
        [&](OpBuilder &lb, Location ll, Value sIdx, ValueRange iter) {
          AttentionBuilder in(lb, ll, options);
          Value len = in.seqLen(a, sIdx);
          Value kd = in.decodeSequence(a, sIdx, len, /*key=*/true);
          Value vd = in.decodeSequence(a, sIdx, len, /*key=*/false);
          Value lg = in.logits(a, in.querySlice(a, q4, sIdx), kd, len);
          Partial p = in.attend(a, lg, vd, len, sink);
          OpFoldResult z = lb.getIndexAttr(0);
          Value res = in.insertAt(in.mergeHeads(p.out), iter[0], {sIdx, z, z},
                                  {lb.getIndexAttr(1), lb.getIndexAttr(hq),
                                   lb.getIndexAttr(a.headDim)});
          scf::YieldOp::create(lb, ll, res);
        });
    // Values coded in a rotated domain: rotate the output back (H / sqrt(D)
    // is its own inverse), before any rounding to the result type.
    Value result = loop.getResult(0);
    if (op.getVFormat().isRotated())
      result = RotateOp::create(b, loc, result);
    rewriter.replaceOp(op, l.toResult(result, op.getType()));
    return success();
  }
};

struct DecodeAttentionPartialLowering : UQPattern<DecodeAttentionPartialOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(DecodeAttentionPartialOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkKVFormats(op, op.getKFormat(), op.getVFormat(), rewriter)))
      return failure();
    Location loc = op.getLoc();
    AttentionBuilder l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Attention a = l.attention(op);
    Value q4 = l.prepareQuery(op.getQuery(), a, op.getQueryPrecision());
    int64_t hq = a.numKV * a.group;
    int64_t parts = op.getNumPartitions();
    int64_t ps = op.getPartitionSize();
    OpFoldResult numSeqs = l.dim(op.getQuery(), 0);
    Value outInit = l.empty({numSeqs, b.getIndexAttr(hq), b.getIndexAttr(parts),
                             b.getIndexAttr(a.headDim)},
                            b.getF32Type());
    Value statInit = l.empty(
        {numSeqs, b.getIndexAttr(hq), b.getIndexAttr(parts)}, b.getF32Type());
    auto loop = scf::ForOp::create(
        b, loc, l.s.index(0), l.dimValue(op.getQuery(), 0), l.s.index(1),
        ValueRange{outInit, statInit, statInit},
        [&](OpBuilder &lb, Location ll, Value sIdx, ValueRange iter) {
          AttentionBuilder in(lb, ll, options);
          Value len = in.seqLen(a, sIdx);
          Value kd = in.decodeSequence(a, sIdx, len, /*key=*/true);
          Value vd = in.decodeSequence(a, sIdx, len, /*key=*/false);
          Value lg = in.logits(a, in.querySlice(a, q4, sIdx), kd, len);
          auto inner = scf::ForOp::create(
              lb, ll, in.s.index(0), in.s.index(parts), in.s.index(1), iter,
              [&](OpBuilder &pb, Location pl, Value pIdx, ValueRange acc) {
                AttentionBuilder pi(pb, pl, options);
                // Tokens [start, end) of this partition, clamped to len.
                Value start = arith::MinSIOp::create(
                    pb, pl, arith::MulIOp::create(pb, pl, pIdx, pi.s.index(ps)),
                    len);
                Value end = arith::MinSIOp::create(
                    pb, pl,
                    arith::AddIOp::create(pb, pl, start, pi.s.index(ps)), len);
                Value n = arith::SubIOp::create(pb, pl, end, start);
                OpFoldResult z = pb.getIndexAttr(0), one = pb.getIndexAttr(1);
                OpFoldResult kv = pb.getIndexAttr(a.numKV),
                             g = pb.getIndexAttr(a.group),
                             dd = pb.getIndexAttr(a.headDim);
                Type f32 = pb.getF32Type();
                int64_t dyn = ShapedType::kDynamic;
                Value lgs = pi.extractAt(
                    lg, RankedTensorType::get({a.numKV, a.group, dyn}, f32),
                    {z, z, start}, {kv, g, n});
                Value vds = pi.extractAt(
                    vd, RankedTensorType::get({dyn, a.numKV, a.headDim}, f32),
                    {start, z, z}, {n, kv, dd});
                Partial p = pi.attend(a, lgs, vds, n, Value());
                OpFoldResult h = pb.getIndexAttr(hq);
                Value o = pi.insertAt(pi.mergeHeads(p.out), acc[0],
                                      {sIdx, z, pIdx, z}, {one, h, one, dd});
                Value m = pi.insertAt(pi.mergeHeads(p.max), acc[1],
                                      {sIdx, z, pIdx}, {one, h, one});
                Value su = pi.insertAt(pi.mergeHeads(p.sum), acc[2],
                                       {sIdx, z, pIdx}, {one, h, one});
                scf::YieldOp::create(pb, pl, ValueRange{o, m, su});
              });
          scf::YieldOp::create(lb, ll, inner.getResults());
        });
    SmallVector<Value> results;
    for (auto [i, r] : llvm::enumerate(loop.getResults()))
      results.push_back(l.castTo(r, op->getResult(i).getType()));
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct MergePartitionsLowering : UQPattern<MergePartitionsOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(MergePartitionsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    AttentionBuilder l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Value out = op.getOut(), mx = op.getMax(), sm = op.getSum();
    Value sinks = op.getSinks();
    SmallVector<OpFoldResult> sh{l.dim(out, 0), l.dim(out, 1)};
    auto d = [&](unsigned i) { return l.d(i); };

    // M = max(max_p, sink).
    Value mInit;
    if (sinks)
      mInit = l.generic({sinks}, l.empty(sh, b.getF32Type()),
                        {l.map(2, {d(1)}), l.id(2)}, {kPar, kPar},
                        [](ScalarEmitter &, ValueRange x) { return x[0]; });
    else
      mInit = l.fill(sh, l.s.f32(-std::numeric_limits<float>::infinity()));
    AffineMap sh3 = l.map(3, {d(0), d(1)});
    Value m = l.generic({mx}, mInit, {l.id(3), sh3}, {kPar, kPar, kRed},
                        [](ScalarEmitter &es, ValueRange x) -> Value {
                          Value gt = arith::CmpFOp::create(
                              es.builder(), es.location(),
                              arith::CmpFPredicate::OGT, x[0], x[1]);
                          return arith::SelectOp::create(
                              es.builder(), es.location(), gt, x[0], x[1]);
                        });
    // w_p = sum_p * exp(max_p - M); an empty partition (sum 0) gives 0.
    Value w = l.generic(
        {mx, sm, m}, l.empty(l.sizes(mx), b.getF32Type()),
        {l.id(3), l.id(3), sh3, l.id(3)}, {kPar, kPar, kPar},
        [](ScalarEmitter &es, ValueRange x) -> Value {
          OpBuilder &nb = es.builder();
          Location lo = es.location();
          Value e = math::ExpOp::create(
              nb, lo, arith::SubFOp::create(nb, lo, x[0], x[2]));
          Value wv = arith::MulFOp::create(nb, lo, x[1], e);
          Value zero = arith::CmpFOp::create(nb, lo, arith::CmpFPredicate::OEQ,
                                             x[1], es.f32(0.0f));
          return arith::SelectOp::create(nb, lo, zero, es.f32(0.0f), wv);
        });
    Value den = l.generic(
        {w}, l.fill(sh, l.s.f32(0.0f)), {l.id(3), sh3}, {kPar, kPar, kRed},
        [](ScalarEmitter &es, ValueRange x) -> Value {
          return arith::AddFOp::create(es.builder(), es.location(), x[1], x[0]);
        });
    if (sinks)
      den =
          l.generic({den, m, sinks}, l.empty(sh, b.getF32Type()),
                    {l.id(2), l.id(2), l.map(2, {d(1)}), l.id(2)}, {kPar, kPar},
                    [](ScalarEmitter &es, ValueRange x) -> Value {
                      OpBuilder &nb = es.builder();
                      Location lo = es.location();
                      Value e = math::ExpOp::create(
                          nb, lo, arith::SubFOp::create(nb, lo, x[2], x[1]));
                      return arith::AddFOp::create(nb, lo, x[0], e);
                    });
    SmallVector<OpFoldResult> shd{sh[0], sh[1], l.dim(out, 3)};
    Value num = l.generic(
        {w, out}, l.fill(shd, l.s.f32(0.0f)),
        {l.map(4, {d(0), d(1), d(3)}), l.map(4, {d(0), d(1), d(3), d(2)}),
         l.map(4, {d(0), d(1), d(2)})},
        {kPar, kPar, kPar, kRed}, [](ScalarEmitter &es, ValueRange x) -> Value {
          Value p =
              arith::MulFOp::create(es.builder(), es.location(), x[0], x[1]);
          return arith::AddFOp::create(es.builder(), es.location(), x[2], p);
        });
    Type elem = TensorBuilder::elementType(op.getResult());
    Value res = l.generic(
        {num, den}, l.empty(shd, elem), {l.id(3), sh3, l.id(3)},
        {kPar, kPar, kPar}, [&](ScalarEmitter &es, ValueRange x) -> Value {
          OpBuilder &nb = es.builder();
          Location lo = es.location();
          Value zero = arith::CmpFOp::create(nb, lo, arith::CmpFPredicate::OEQ,
                                             x[1], es.f32(0.0f));
          Value q = arith::DivFOp::create(nb, lo, x[0], x[1]);
          return es.fromF32(
              arith::SelectOp::create(nb, lo, zero, es.f32(0.0f), q), elem);
        });
    rewriter.replaceOp(op, l.castTo(res, op.getType()));
    return success();
  }
};

} // namespace

void uq::to_linalg::populateDecodeAttentionPatterns(
    RewritePatternSet &patterns, const UQToLinalgOptions &options) {
  patterns.add<DecodeAttentionLowering, DecodeAttentionPartialLowering,
               MergePartitionsLowering>(patterns.getContext(), options);
}
