//===- RowCodes.cpp - The row codes of the cache formats on tensors -------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "RowCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

/// The byte (i32) of candidate \p k (i32 0..2) of a group whose log_round
/// byte is \p byte0: ScalarEmitter::scaleCandidateByte at offset k - 1.
Value RowCoder::candidateByte(ScalarEmitter &es, Value byte0, Value k,
                              bool e4m3) {
  Value offset =
      arith::SubIOp::create(es.builder(), es.location(), k, es.i32(1));
  return es.scaleCandidateByte(byte0, offset, e4m3);
}

/// scale_rule = mse_search: the bytes [N, G] (i32) chosen among the three
/// candidates around the log_round bytes \p byte0 [N, G] of the f32 rows
/// [N, D] \p x2, as uq::ref's searchScaleByte. The error of a candidate
/// e is the sum over the group of (double(fp4Decode(fp4Encode(x * 2^-e)) *
/// 2^e) - double(x))^2, the f64 terms summed as a perfect binary tree in
/// element order: the first generic sums adjacent pairs of terms, then
/// each stage adds adjacent pairs of partial sums ([N, G, 3, m] ->
/// [N, G, 3, m/2]) until one sum per candidate is left. The smallest error
/// wins, ties to the earlier candidate (e0 - 1, e0, e0 + 1); a sentinel
/// group (byte 0) stays 0.
Value RowCoder::searchScaleBytes(Value x2, Value byte0, int64_t g,
                                 bool tiesDown, bool e4m3) {
  int64_t dd = staticDim(x2, 1), groups = dd / g;
  Type f64 = b.getF64Type();
  Value xp = splitLast(x2, {groups, g / 2, 2});
  Value terms = empty({dim(x2, 0), b.getIndexAttr(groups), b.getIndexAttr(3),
                       b.getIndexAttr(g / 2)},
                      f64);
  Value sums = generic(
      {xp, xp, byte0}, terms,
      {map(4, {d(0), d(1), d(3), cst(0)}), map(4, {d(0), d(1), d(3), cst(1)}),
       map(4, {d(0), d(1)}), id(4)},
      {kPar, kPar, kPar, kPar}, [&](ScalarEmitter &es, ValueRange a) -> Value {
        OpBuilder &nb = es.builder();
        Location l = es.location();
        Value k =
            arith::IndexCastOp::create(nb, l, nb.getI32Type(), indexOf(es, 2));
        Value cb = candidateByte(es, a[2], k, e4m3);
        Value inv = e4m3 ? Value() : es.e8m0Reciprocal(cb);
        Value scale = e4m3 ? es.fp8Decode(cb) : es.e8m0Normal(cb);
        auto term = [&](Value x) -> Value {
          // ldexp(q, e) in f32 (exact, or Inf past the f32 range), the
          // difference and its square in f64. E4M3: x / S, q * S exact.
          Value scaled = e4m3 ? Value(arith::DivFOp::create(nb, l, x, scale))
                              : Value(arith::MulFOp::create(nb, l, x, inv));
          Value q = es.fp4Decode(es.fp4Encode(scaled, tiesDown));
          Value dec = arith::MulFOp::create(nb, l, q, scale);
          Value diff = arith::SubFOp::create(
              nb, l, arith::ExtFOp::create(nb, l, nb.getF64Type(), dec),
              arith::ExtFOp::create(nb, l, nb.getF64Type(), x));
          return arith::MulFOp::create(nb, l, diff, diff);
        };
        return arith::AddFOp::create(nb, l, term(a[0]), term(a[1]));
      });
  for (int64_t m = g / 2; m > 1; m /= 2) {
    SmallVector<OpFoldResult> shape{dim(x2, 0), b.getIndexAttr(groups),
                                    b.getIndexAttr(3)};
    Value pairs = tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get({staticDim(x2, 0), groups, 3, m / 2, 2}, f64),
        sums, {ReassociationIndices{0}, {1}, {2}, {3, 4}},
        {shape[0], shape[1], shape[2], b.getIndexAttr(m / 2),
         b.getIndexAttr(2)});
    shape.push_back(b.getIndexAttr(m / 2));
    sums = generic(
        {pairs, pairs}, empty(shape, f64),
        {map(4, {d(0), d(1), d(2), d(3), cst(0)}),
         map(4, {d(0), d(1), d(2), d(3), cst(1)}), id(4)},
        {kPar, kPar, kPar, kPar}, [](ScalarEmitter &es, ValueRange a) -> Value {
          return arith::AddFOp::create(es.builder(), es.location(), a[0], a[1]);
        });
  }
  SmallVector<AffineMap> maps;
  for (int64_t k = 0; k < 3; ++k)
    maps.push_back(map(2, {d(0), d(1), cst(k), cst(0)}));
  maps.push_back(id(2));
  maps.push_back(id(2));
  return generic(
      {sums, sums, sums, byte0}, empty(sizes(byte0), b.getI32Type()), maps,
      {kPar, kPar}, [&](ScalarEmitter &es, ValueRange a) -> Value {
        OpBuilder &nb = es.builder();
        Location l = es.location();
        Value best = candidateByte(es, a[3], es.i32(0), e4m3);
        Value bestErr = a[0];
        for (int64_t k = 1; k < 3; ++k) {
          // err < bestErr, false for equal errors: ties keep the earlier.
          Value better = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OLT,
                                               a[k], bestErr);
          best = arith::SelectOp::create(
              nb, l, better, candidateByte(es, a[3], es.i32(k), e4m3), best);
          bestErr = arith::SelectOp::create(nb, l, better, a[k], bestErr);
        }
        Value sentinel = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                               a[3], es.i32(0));
        return arith::SelectOp::create(nb, l, sentinel, es.i32(0), best);
      });
}

/// The f32 value of an FP4 group's scale byte \p sb (i32).
Value RowCoder::scaleValue(ScalarEmitter &es, KVFormatAttr format, Value sb) {
  return format.getScale() == ScaleEncoding::e4m3 ? es.fp8Decode(sb)
                                                  : es.e8m0Decode(sb);
}

/// FP4 codes [N, D/2] and UE8M0 (or E4M3) scales [N, D/g] of f32 rows
/// [N, D].
std::pair<Value, Value> RowCoder::encodeFp4(Value x2, KVFormatAttr format) {
  int64_t dd = staticDim(x2, 1);
  int64_t g = format.getGroupSize(), groups = dd / g;
  bool tiesDown = format.getRounding() == Rounding::ties_down;
  double c = format.getCValue();
  SmallVector<OpFoldResult> gShape{dim(x2, 0), b.getIndexAttr(groups)};

  // Largest magnitude per group, as the bits of |x| (an unsigned max on
  // them orders magnitudes, and Inf/NaN come out >= 0x7F800000).
  Value xg = splitLast(x2, {groups, g});
  Value amax = generic(
      {xg}, fill(gShape, s.i32(0)), {id(3), map(3, {d(0), d(1)})},
      {kPar, kPar, kRed}, [](ScalarEmitter &es, ValueRange a) -> Value {
        Value mag = arith::AndIOp::create(es.builder(), es.location(),
                                          es.bits(a[0]), es.i32(0x7FFFFFFF));
        return arith::MaxUIOp::create(es.builder(), es.location(), mag, a[1]);
      });
  bool e4m3 = format.getScale() == ScaleEncoding::e4m3;
  Value byte =
      elementwise({amax}, b.getI32Type(), [&](ScalarEmitter &es, ValueRange a) {
        return e4m3 ? es.e4m3ScaleByte(a[0], c) : es.ue8m0ScaleByte(a[0], c);
      });
  if (format.getScaleRule() == ScaleRule::mse_search)
    byte = searchScaleBytes(x2, byte, g, tiesDown, e4m3);
  Value scales = elementwise(
      {byte}, b.getI8Type(), [](ScalarEmitter &es, ValueRange a) -> Value {
        return arith::TruncIOp::create(es.builder(), es.location(),
                                       es.builder().getI8Type(), a[0]);
      });

  // Codes: pairs (2i, 2i+1) of a group share one byte.
  Value xp = splitLast(x2, {groups, g / 2, 2});
  Value out = empty({dim(x2, 0), b.getIndexAttr(groups), b.getIndexAttr(g / 2)},
                    b.getI8Type());
  AffineMap lo = map(3, {d(0), d(1), d(2), cst(0)});
  AffineMap hi = map(3, {d(0), d(1), d(2), cst(1)});
  AffineMap grp = map(3, {d(0), d(1)});
  Value codes = generic(
      {xp, xp, byte}, out, {lo, hi, grp, id(3)}, {kPar, kPar, kPar},
      [&](ScalarEmitter &es, ValueRange a) -> Value {
        OpBuilder &nb = es.builder();
        Location l = es.location();
        // x * 2^-e: one correctly rounded multiply by an exact power of
        // two, the same value as the reference's ldexp(x, -e); E4M3
        // scales: the correctly rounded x / S.
        auto scaled = [&](Value x) -> Value {
          if (e4m3)
            return arith::DivFOp::create(nb, l, x, es.fp8Decode(a[2]));
          return arith::MulFOp::create(nb, l, x, es.e8m0Reciprocal(a[2]));
        };
        Value cLo = es.fp4Encode(scaled(a[0]), tiesDown);
        Value cHi = es.fp4Encode(scaled(a[1]), tiesDown);
        Value both = arith::OrIOp::create(
            nb, l, cLo, arith::ShLIOp::create(nb, l, cHi, es.i32(4)));
        // Zero sentinel: all codes of the group are 0.
        Value sentinel = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                               a[2], es.i32(0));
        both = arith::SelectOp::create(nb, l, sentinel, es.i32(0), both);
        return arith::TruncIOp::create(nb, l, nb.getI8Type(), both);
      });
  return {mergeTail(codes), scales};
}

/// Floats [N, D] (element type \p elem) from FP4 codes and scales.
Value RowCoder::decodeFp4(Value codes2, Value scales2, KVFormatAttr format,
                          Type elem) {
  int64_t half = staticDim(codes2, 1);
  int64_t g = format.getGroupSize(), groups = 2 * half / g;
  Value cg = splitLast(codes2, {groups, g / 2});
  Value out = empty({dim(codes2, 0), b.getIndexAttr(groups),
                     b.getIndexAttr(g / 2), b.getIndexAttr(2)},
                    elem);
  Value r = generic(
      {cg, scales2}, out,
      {map(4, {d(0), d(1), d(2)}), map(4, {d(0), d(1)}), id(4)},
      {kPar, kPar, kPar, kPar}, [&](ScalarEmitter &es, ValueRange a) -> Value {
        OpBuilder &nb = es.builder();
        Location l = es.location();
        Value c = arith::ExtUIOp::create(nb, l, nb.getI32Type(), a[0]);
        Value k = indexOf(es, 3);
        Value first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, k,
                                            es.index(0));
        Value nib = arith::SelectOp::create(
            nb, l, first, c, arith::ShRUIOp::create(nb, l, c, es.i32(4)));
        nib = arith::AndIOp::create(nb, l, nib, es.i32(15));
        Value sb = arith::ExtUIOp::create(nb, l, nb.getI32Type(), a[1]);
        Value v = arith::MulFOp::create(nb, l, es.fp4Decode(nib),
                                        scaleValue(es, format, sb));
        return es.fromF32(v, elem);
      });
  return mergeTail(r);
}

Value RowCoder::encodeFp8(Value x2) {
  return elementwise(
      {x2}, b.getI8Type(), [](ScalarEmitter &es, ValueRange a) -> Value {
        return arith::TruncIOp::create(es.builder(), es.location(),
                                       es.builder().getI8Type(),
                                       es.fp8Encode(a[0]));
      });
}

Value RowCoder::decodeFp8(Value codes2, Type elem) {
  return elementwise(
      {codes2}, elem, [&](ScalarEmitter &es, ValueRange a) -> Value {
        Value w = arith::ExtUIOp::create(es.builder(), es.location(),
                                         es.builder().getI32Type(), a[0]);
        return es.fromF32(es.fp8Decode(w), elem);
      });
}

/// The little-endian bytes [N, 2D] of the bf16 codes of rows [N, D].
Value RowCoder::encodeBf16Bytes(Value x2) {
  int64_t dd = staticDim(x2, 1);
  Value out =
      empty({dim(x2, 0), b.getIndexAttr(dd), b.getIndexAttr(2)}, b.getI8Type());
  Value r = generic(
      {x2}, out, {map(3, {d(0), d(1)}), id(3)}, {kPar, kPar, kPar},
      [&](ScalarEmitter &es, ValueRange a) -> Value {
        OpBuilder &nb = es.builder();
        Location l = es.location();
        Value w = es.bf16Bits(a[0]);
        Value k = indexOf(es, 2);
        Value first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, k,
                                            es.index(0));
        Value v = arith::SelectOp::create(
            nb, l, first, w, arith::ShRUIOp::create(nb, l, w, es.i32(8)));
        return arith::TruncIOp::create(nb, l, nb.getI8Type(), v);
      });
  return mergeTail(r);
}

/// Code bytes [N, codeBytes] and scale bytes [N, scaleBytes] (null when
/// the format has none) of f32 rows [N, D] already in the coded domain.
std::pair<Value, Value> RowCoder::encodeRowBytes(Value xf,
                                                 KVFormatAttr format) {
  switch (format.getElement()) {
  case ElementCode::fp4_e2m1:
    return encodeFp4(xf, format);
  case ElementCode::fp8_e4m3:
    return {encodeFp8(xf), Value()};
  case ElementCode::bf16:
    return {encodeBf16Bytes(xf), Value()};
  }
  llvm_unreachable("unknown element code");
}

/// The f32 value of element \p i of the row stored at \p base (the bytes
/// of (block, offset, head) of the cache) in \p format, with its codes at
/// byte \p codeOff and its scales at \p scaleOff of the slot.
Value RowCoder::decodeCacheElement(ScalarEmitter &es, Value cache, Value blk,
                                   Value off, Value head, Value i,
                                   KVFormatAttr format, int64_t codeOff,
                                   int64_t scaleOff, bool headMajor) {
  OpBuilder &nb = es.builder();
  Location l = es.location();
  auto byteAt = [&](Value pos) -> Value {
    // Token-major [blocks, bs, H, slot] or head-major [blocks, H, bs, slot].
    Value v =
        tensor::ExtractOp::create(nb, l, cache,
                                  headMajor ? ValueRange{blk, head, off, pos}
                                            : ValueRange{blk, off, head, pos});
    return arith::ExtUIOp::create(nb, l, nb.getI32Type(), v);
  };
  auto plus = [&](Value a, int64_t c) -> Value {
    return arith::AddIOp::create(nb, l, a, es.index(c));
  };
  switch (format.getElement()) {
  case ElementCode::fp4_e2m1: {
    Value pair = arith::DivUIOp::create(nb, l, i, es.index(2));
    Value odd = arith::RemUIOp::create(nb, l, i, es.index(2));
    Value c = byteAt(plus(pair, codeOff));
    Value isOdd = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne, odd,
                                        es.index(0));
    Value nib = arith::SelectOp::create(
        nb, l, isOdd, arith::ShRUIOp::create(nb, l, c, es.i32(4)), c);
    nib = arith::AndIOp::create(nb, l, nib, es.i32(15));
    Value grp =
        arith::DivUIOp::create(nb, l, i, es.index(format.getGroupSize()));
    Value sb = byteAt(plus(grp, scaleOff));
    return arith::MulFOp::create(nb, l, es.fp4Decode(nib),
                                 scaleValue(es, format, sb));
  }
  case ElementCode::fp8_e4m3:
    return es.fp8Decode(byteAt(plus(i, codeOff)));
  case ElementCode::bf16: {
    Value two = arith::MulIOp::create(nb, l, i, es.index(2));
    Value lo = byteAt(plus(two, codeOff));
    Value hi = byteAt(plus(two, codeOff + 1));
    Value w = arith::OrIOp::create(nb, l, lo,
                                   arith::ShLIOp::create(nb, l, hi, es.i32(8)));
    return es.fromBits(arith::ShLIOp::create(nb, l, w, es.i32(16)));
  }
  }
  llvm_unreachable("unknown element code");
}

/// f32 rows [N, D] (D a multiple of 32) rounded to FP8 E4M3 with one
/// UE8M0 scale per 32: fp8(x * 2^-e) * 2^e, e from the group's largest
/// magnitude (ScalarEmitter::fp8BlockScaleByte), as the reference's
/// QueryPrecision::FP8_E4M3_Scaled. Both scalings are exact.
Value RowCoder::scaledFp8Rows(Value x2) {
  int64_t groups = staticDim(x2, 1) / 32;
  Value xg = splitLast(x2, {groups, 32});
  SmallVector<OpFoldResult> gShape{dim(x2, 0), b.getIndexAttr(groups)};
  Value amax = generic(
      {xg}, fill(gShape, s.i32(0)), {id(3), map(3, {d(0), d(1)})},
      {kPar, kPar, kRed}, [](ScalarEmitter &es, ValueRange a) -> Value {
        Value mag = arith::AndIOp::create(es.builder(), es.location(),
                                          es.bits(a[0]), es.i32(0x7FFFFFFF));
        return arith::MaxUIOp::create(es.builder(), es.location(), mag, a[1]);
      });
  Value byte =
      elementwise({amax}, b.getI32Type(), [](ScalarEmitter &es, ValueRange a) {
        return es.fp8BlockScaleByte(a[0]);
      });
  Value out =
      generic({xg, byte},
              empty({dim(x2, 0), b.getIndexAttr(groups), b.getIndexAttr(32)},
                    b.getF32Type()),
              {id(3), map(3, {d(0), d(1)}), id(3)}, {kPar, kPar, kPar},
              [](ScalarEmitter &es, ValueRange a) -> Value {
                OpBuilder &nb = es.builder();
                Location l = es.location();
                Value v =
                    arith::MulFOp::create(nb, l, a[0], es.e8m0Reciprocal(a[1]));
                Value q = es.fp8Decode(es.fp8Encode(v));
                return arith::MulFOp::create(nb, l, q, es.e8m0Decode(a[1]));
              });
  return mergeTail(out);
}

/// f32(x[t, h, :]) - mean[h, :] for x [T, H, D] and mean [H, D].
Value RowCoder::subtractMean(Value x, Value mean) {
  Value out = empty(sizes(x), b.getF32Type());
  return generic({x, mean}, out, {id(3), map(3, {d(1), d(2)}), id(3)},
                 {kPar, kPar, kPar},
                 [](ScalarEmitter &es, ValueRange a) -> Value {
                   return arith::SubFOp::create(es.builder(), es.location(),
                                                es.toF32(a[0]), a[1]);
                 });
}
