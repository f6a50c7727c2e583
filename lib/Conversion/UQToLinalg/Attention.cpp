//===- Attention.cpp - The attention steps on tensors ---------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

/// The query [S, Hq, D] rotated like the keys and rounded per
/// \p precision, as [S, Hkv, group, D] f32.
Value AttentionBuilder::prepareQuery(Value q, const Attention &a,
                                     QueryPrecision precision) {
  Value q2 = flattenRows(q);
  Value qf = RowCoder(*this).codedDomainRows(q2, a.kFormat);
  if (precision == QueryPrecision::fp8_e4m3)
    qf = elementwise({qf}, b.getF32Type(), [](ScalarEmitter &es, ValueRange x) {
      return es.fp8Decode(es.fp8Encode(x[0]));
    });
  if (precision == QueryPrecision::fp8_e4m3_scaled)
    qf = RowCoder(*this).scaledFp8Rows(qf);
  Value q3 = unflattenRows(qf, q);
  SmallVector<OpFoldResult> shape{dim(q3, 0), b.getIndexAttr(a.numKV),
                                  b.getIndexAttr(a.group),
                                  b.getIndexAttr(a.headDim)};
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({staticDim(q3, 0), a.numKV, a.group, a.headDim},
                            b.getF32Type()),
      q3, {ReassociationIndices{0}, {1, 2}, {3}}, shape);
}

Value AttentionBuilder::groupedSinks(const Attention &a, Value sinks) {
  if (!sinks)
    return nullptr;
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({a.numKV, a.group}, b.getF32Type()),
      sinks, {ReassociationIndices{0, 1}});
}

/// min(max(lens[s], 0), capacity) as an index.
Value AttentionBuilder::seqLen(const Attention &a, Value sIdx) {
  Value len = tensor::ExtractOp::create(b, loc, a.lens, ValueRange{sIdx});
  Value li = arith::IndexCastOp::create(b, loc, b.getIndexType(), len);
  li = arith::MaxSIOp::create(b, loc, li, s.index(0));
  return arith::MinSIOp::create(b, loc, li, a.capacity);
}

/// Decoded K or V rows [len, Hkv, D] f32 of sequence \p sIdx, read through
/// the block table. Block ids are clamped into the cache (the reference
/// rejects such tables; compiled code must not read out of bounds).
Value AttentionBuilder::decodeSequence(const Attention &a, Value sIdx,
                                       Value len, bool key) {
  Value out = empty({len, b.getIndexAttr(a.numKV), b.getIndexAttr(a.headDim)},
                    b.getF32Type());
  KVFormatAttr format = key ? a.kFormat : a.vFormat;
  int64_t codeOff = key ? 0 : a.vCodeOff;
  int64_t scaleOff = key ? a.kScaleOff : a.vScaleOff;
  Value mean = key ? a.kMean : a.vMean;
  return generic(
      {}, out, {id(3)}, {kPar, kPar, kPar},
      [&](ScalarEmitter &es, ValueRange) -> Value {
        OpBuilder &nb = es.builder();
        Location l = es.location();
        Value j = indexOf(es, 0), h = indexOf(es, 1), i = indexOf(es, 2);
        Value bs = es.index(a.blockSize);
        Value pos = arith::DivUIOp::create(nb, l, j, bs);
        Value off = arith::RemUIOp::create(nb, l, j, bs);
        Value id32 =
            tensor::ExtractOp::create(nb, l, a.tables, ValueRange{sIdx, pos});
        Value blk = arith::IndexCastOp::create(nb, l, nb.getIndexType(), id32);
        blk = arith::MaxSIOp::create(nb, l, blk, es.index(0));
        blk = arith::MinSIOp::create(
            nb, l, blk, arith::SubIOp::create(nb, l, a.numBlocks, es.index(1)));
        Value v =
            RowCoder::decodeCacheElement(es, a.cache, blk, off, h, i, format,
                                         codeOff, scaleOff, a.headMajor);
        if (!mean)
          return v;
        // The channel mean the cache write subtracted (coded domain).
        Value m = tensor::ExtractOp::create(nb, l, mean, ValueRange{h, i});
        return arith::AddFOp::create(nb, l, v, m);
      });
}

/// Logits [Hkv, group, len] = (q . k) * scale, the dot product
/// accumulated in f32 over the head dimension in order.
Value AttentionBuilder::logits(const Attention &a, Value qs, Value kd,
                               Value len) {
  Value init = fill({b.getIndexAttr(a.numKV), b.getIndexAttr(a.group), len},
                    s.f32(0.0f));
  Value dot = generic(
      {qs, kd}, init,
      {map(4, {d(0), d(1), d(3)}), map(4, {d(2), d(0), d(3)}),
       map(4, {d(0), d(1), d(2)})},
      {kPar, kPar, kPar, kRed}, [](ScalarEmitter &es, ValueRange x) -> Value {
        Value p =
            arith::MulFOp::create(es.builder(), es.location(), x[0], x[1]);
        return arith::AddFOp::create(es.builder(), es.location(), x[2], p);
      });
  float scale = a.scale;
  return elementwise({dot}, b.getF32Type(),
                     [&](ScalarEmitter &es, ValueRange x) -> Value {
                       return arith::MulFOp::create(es.builder(), es.location(),
                                                    x[0], es.f32(scale));
                     });
}

/// Softmax over \p n logits [Hkv, group, n] with values [n, Hkv, D]: the
/// max (starting from \p sink when given, else -inf), the sum of
/// exp(l - max) (plus exp(sink - max) last), and sum_t p_t v_t / sum (0
/// when n == 0).
Partial AttentionBuilder::attend(const Attention &a, Value lg, Value vd,
                                 Value n, Value sink) {
  SmallVector<OpFoldResult> hs{b.getIndexAttr(a.numKV),
                               b.getIndexAttr(a.group)};
  Value maxInit =
      sink ? sink : fill(hs, s.f32(-std::numeric_limits<float>::infinity()));
  AffineMap hg3 = map(3, {d(0), d(1)});
  Value mx = generic(
      {lg}, maxInit, {id(3), hg3}, {kPar, kPar, kRed},
      [](ScalarEmitter &es, ValueRange x) -> Value {
        Value gt = arith::CmpFOp::create(es.builder(), es.location(),
                                         arith::CmpFPredicate::OGT, x[0], x[1]);
        return arith::SelectOp::create(es.builder(), es.location(), gt, x[0],
                                       x[1]);
      });
  Value p =
      generic({lg, mx}, empty(sizes(lg), b.getF32Type()), {id(3), hg3, id(3)},
              {kPar, kPar, kPar}, [](ScalarEmitter &es, ValueRange x) -> Value {
                Value diff = arith::SubFOp::create(es.builder(), es.location(),
                                                   x[0], x[1]);
                return math::ExpOp::create(es.builder(), es.location(), diff);
              });
  Value sum = generic(
      {p}, fill(hs, s.f32(0.0f)), {id(3), hg3}, {kPar, kPar, kRed},
      [](ScalarEmitter &es, ValueRange x) -> Value {
        return arith::AddFOp::create(es.builder(), es.location(), x[1], x[0]);
      });
  if (sink)
    sum = elementwise({sum, sink, mx}, b.getF32Type(),
                      [](ScalarEmitter &es, ValueRange x) -> Value {
                        OpBuilder &nb = es.builder();
                        Location l = es.location();
                        Value e = math::ExpOp::create(
                            nb, l, arith::SubFOp::create(nb, l, x[1], x[2]));
                        return arith::AddFOp::create(nb, l, x[0], e);
                      });
  Value accInit = fill({b.getIndexAttr(a.numKV), b.getIndexAttr(a.group),
                        b.getIndexAttr(a.headDim)},
                       s.f32(0.0f));
  Value acc = generic(
      {p, vd}, accInit,
      {map(4, {d(0), d(1), d(3)}), map(4, {d(3), d(0), d(2)}),
       map(4, {d(0), d(1), d(2)})},
      {kPar, kPar, kPar, kRed}, [](ScalarEmitter &es, ValueRange x) -> Value {
        Value pv =
            arith::MulFOp::create(es.builder(), es.location(), x[0], x[1]);
        return arith::AddFOp::create(es.builder(), es.location(), x[2], pv);
      });
  Value out = generic(
      {acc, sum}, empty(sizes(acc), b.getF32Type()), {id(3), hg3, id(3)},
      {kPar, kPar, kPar}, [&](ScalarEmitter &es, ValueRange x) -> Value {
        OpBuilder &nb = es.builder();
        Location l = es.location();
        Value empty_ = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, n,
                                             es.index(0));
        Value q = arith::DivFOp::create(nb, l, x[0], x[1]);
        return arith::SelectOp::create(nb, l, empty_, es.f32(0.0f), q);
      });
  return {out, mx, sum};
}

/// The query rows of sequence \p sIdx as [Hkv, group, D].
Value AttentionBuilder::querySlice(const Attention &a, Value q4, Value sIdx) {
  OpFoldResult z = b.getIndexAttr(0);
  return extractAt(
      q4, RankedTensorType::get({a.numKV, a.group, a.headDim}, b.getF32Type()),
      {sIdx, z, z, z},
      {b.getIndexAttr(1), b.getIndexAttr(a.numKV), b.getIndexAttr(a.group),
       b.getIndexAttr(a.headDim)});
}
