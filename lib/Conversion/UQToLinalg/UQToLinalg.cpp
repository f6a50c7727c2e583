//===- UQToLinalg.cpp - Lower uq ops to linalg on tensors -----------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Every uq op becomes linalg.generic ops with explicit bodies (the scalar
// codes of Numerics.h), tensor reshapes/slices and, for the cache and the
// attention, scf.for loops over tokens, sequences and partitions. All of it
// stays on tensors; bufferization comes later in the pipeline.
//
// Shapes: coding ops flatten their leading dimensions to one row dimension
// [N, D] and expand the results back. Groups are expressed by expanding the
// row to [N, G, g] (and codes by [N, G, g/2, 2]), so every indexing map is a
// projected permutation or picks a constant position.
//
// Arithmetic order follows uq::ref so that the CPU path is bit-exact for the
// codes and (f32 accumulation, same summation order, same libm expf) very
// close for the attention: dot products accumulate over the head dimension
// from 0 upwards, the softmax sum and the PV product over tokens from 0
// upwards, the sink joins the max first and the sum last.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/UQToLinalg/UQToLinalg.h"
#include "uq/Conversion/Passes.h"
#include "uq/Dialect/UQ/IR/UQ.h"

#include "uq/Codegen/Numerics.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <type_traits>

namespace uq {
#define GEN_PASS_DEF_CONVERTUQTOLINALGPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;
using uq::ScalarEmitter;

namespace {

using utils::IteratorType;
constexpr IteratorType kPar = IteratorType::parallel;
constexpr IteratorType kRed = IteratorType::reduction;
using BodyFn = function_ref<Value(ScalarEmitter &, ValueRange)>;

//===----------------------------------------------------------------------===//
// Tensor-level building blocks
//===----------------------------------------------------------------------===//

/// Builds tensor-level IR at one location. Every method leaves the builder
/// after what it created.
class Lowering {
public:
  Lowering(OpBuilder &b, Location loc, const UQToLinalgOptions &options)
      : b(b), loc(loc), options(options), s(b, loc) {}

  OpBuilder &b;
  Location loc;
  const UQToLinalgOptions &options;
  ScalarEmitter s;

  MLIRContext *ctx() { return b.getContext(); }
  AffineExpr d(unsigned i) { return getAffineDimExpr(i, ctx()); }
  AffineExpr cst(int64_t v) { return getAffineConstantExpr(v, ctx()); }
  AffineMap map(unsigned numDims, ArrayRef<AffineExpr> results) {
    return AffineMap::get(numDims, 0, results, ctx());
  }
  AffineMap id(unsigned numDims) {
    return AffineMap::getMultiDimIdentityMap(numDims, ctx());
  }

  SmallVector<OpFoldResult> sizes(Value t) {
    return tensor::getMixedSizes(b, loc, t);
  }
  OpFoldResult dim(Value t, int64_t i) { return sizes(t)[i]; }
  Value dimValue(Value t, int64_t i) {
    return getValueOrCreateConstantIndexOp(b, loc, dim(t, i));
  }
  static int64_t staticDim(Value t, int64_t i) {
    return cast<RankedTensorType>(t.getType()).getDimSize(i);
  }
  static Type elementType(Value t) {
    return cast<RankedTensorType>(t.getType()).getElementType();
  }
  static int64_t rank(Value t) {
    return cast<RankedTensorType>(t.getType()).getRank();
  }

  Value empty(ArrayRef<OpFoldResult> shape, Type elem) {
    return tensor::EmptyOp::create(b, loc, shape, elem);
  }
  Value fill(ArrayRef<OpFoldResult> shape, Value scalar) {
    Value e = empty(shape, scalar.getType());
    return linalg::FillOp::create(b, loc, ValueRange{scalar}, ValueRange{e})
        .getResult(0);
  }

  /// One linalg.generic with a single result whose body is \p body (called
  /// with the block arguments: inputs, then the output).
  Value generic(ValueRange ins, Value out, ArrayRef<AffineMap> maps,
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
  Value elementwise(ValueRange ins, Type elem, BodyFn body) {
    int64_t r = rank(ins[0]);
    Value out = empty(sizes(ins[0]), elem);
    SmallVector<AffineMap> maps(ins.size() + 1, id(r));
    SmallVector<IteratorType> its(r, kPar);
    return generic(ins, out, maps, its, body);
  }

  Value indexOf(ScalarEmitter &es, int64_t i) {
    return linalg::IndexOp::create(es.builder(), es.location(), i);
  }

  /// Casts \p v to \p type when only static information differs.
  Value castTo(Value v, Type type) {
    if (v.getType() == type)
      return v;
    return tensor::CastOp::create(b, loc, type, v);
  }

  /// [..., D] -> [N, D].
  Value flattenRows(Value x) {
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
  Value unflattenRows(Value x2, Value like) {
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
  Value splitLast(Value x2, ArrayRef<int64_t> parts) {
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
  Value mergeTail(Value x) {
    int64_t r = rank(x);
    ReassociationIndices tail;
    for (int64_t i = 1; i < r; ++i)
      tail.push_back(i);
    return tensor::CollapseShapeOp::create(
        b, loc, x, ArrayRef<ReassociationIndices>{{0}, tail});
  }

  /// Rows per tile of the row-coding ops: their temporaries (the f64
  /// rotation stages above all) then stay in cache instead of being
  /// allocated at full size, and each tile's chain runs while hot.
  static constexpr int64_t kRowTile = 64;

  /// Applies \p fn to consecutive tiles of at most kRowTile rows of the
  /// rows [N, D] \p x2 and concatenates its results, whose element types
  /// and widths are \p results. Without a loop when N <= kRowTile.
  SmallVector<Value>
  tiledRows(Value x2, ArrayRef<std::pair<Type, int64_t>> results,
            function_ref<SmallVector<Value>(Lowering &, Value)> fn) {
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
          Lowering in(lb, ll, options);
          Value left = arith::SubIOp::create(lb, ll, rows, i);
          Value cnt =
              arith::MinSIOp::create(lb, ll, left, in.s.index(kRowTile));
          OpFoldResult z = lb.getIndexAttr(0);
          Value tile =
              in.extractAt(x2,
                           RankedTensorType::get({ShapedType::kDynamic, dd},
                                                 elementType(x2)),
                           {i, z}, {cnt, lb.getIndexAttr(dd)});
          SmallVector<Value> parts = fn(in, tile);
          SmallVector<Value> next;
          for (auto [k, part] : llvm::enumerate(parts))
            next.push_back(
                in.copyInto(part, acc[k], {i, z},
                            {cnt, lb.getIndexAttr(results[k].second)}));
          scf::YieldOp::create(lb, ll, next);
        });
    return SmallVector<Value>(loop.getResults());
  }

  //===--------------------------------------------------------------------===//
  // Rotation
  //===--------------------------------------------------------------------===//

  /// One butterfly stage of span \p h on rows [N, D]: (a, b) at (j, j + h)
  /// -> (a + b, a - b), each divided by \p divisor when given.
  Value butterflyStage(Value v, int64_t h, std::optional<float> divisor) {
    int64_t dd = staticDim(v, 1);
    Value e = splitLast(v, {dd / (2 * h), 2, h});
    Type elem = elementType(v);
    Value out = empty(sizes(e), elem);
    AffineMap lo = map(4, {d(0), d(1), cst(0), d(3)});
    AffineMap hi = map(4, {d(0), d(1), cst(1), d(3)});
    Value r =
        generic({e, e}, out, {lo, hi, id(4)}, {kPar, kPar, kPar, kPar},
                [&](ScalarEmitter &es, ValueRange args) -> Value {
                  OpBuilder &nb = es.builder();
                  Location l = es.location();
                  Value sum = arith::AddFOp::create(nb, l, args[0], args[1]);
                  Value diff = arith::SubFOp::create(nb, l, args[0], args[1]);
                  if (divisor) {
                    Value c = es.f32(*divisor);
                    sum = arith::DivFOp::create(nb, l, sum, c);
                    diff = arith::DivFOp::create(nb, l, diff, c);
                  }
                  Value k = indexOf(es, 2);
                  Value first = arith::CmpIOp::create(
                      nb, l, arith::CmpIPredicate::eq, k, es.index(0));
                  return arith::SelectOp::create(nb, l, first, sum, diff);
                });
    return mergeTail(r);
  }

  /// Rows [N, D] of any float type -> the rotated rows H_D x / sqrt(D) in
  /// f32, rounded as uq::ref::hadamardRotate with the same arithmetic.
  Value rotateRowsF32(Value x2) {
    int64_t dd = staticDim(x2, 1);
    if (options.rotation == RotationArithmetic::ButterflyF32) {
      Value v = elementwise(
          {x2}, b.getF32Type(),
          [](ScalarEmitter &es, ValueRange a) { return es.toF32(a[0]); });
      for (int64_t h = 1; h < dd; h *= 2)
        v = butterflyStage(v, h, std::sqrt(2.0f));
      return v;
    }
    Value v = elementwise(
        {x2}, b.getF64Type(), [](ScalarEmitter &es, ValueRange a) -> Value {
          return arith::ExtFOp::create(es.builder(), es.location(),
                                       es.builder().getF64Type(),
                                       es.toF32(a[0]));
        });
    for (int64_t h = 1; h < dd; h *= 2)
      v = butterflyStage(v, h, std::nullopt);
    double norm = 1.0 / std::sqrt(static_cast<double>(dd));
    return elementwise(
        {v}, b.getF32Type(), [&](ScalarEmitter &es, ValueRange a) -> Value {
          Value m = arith::MulFOp::create(es.builder(), es.location(), a[0],
                                          es.f64(norm));
          return arith::TruncFOp::create(es.builder(), es.location(),
                                         es.builder().getF32Type(), m);
        });
  }

  /// Rows in f32, rotated when \p format says so.
  Value codedDomainRows(Value x2, KVFormatAttr format) {
    if (format.isRotated())
      return rotateRowsF32(x2);
    return elementwise(
        {x2}, b.getF32Type(),
        [](ScalarEmitter &es, ValueRange a) { return es.toF32(a[0]); });
  }

  //===--------------------------------------------------------------------===//
  // Row codes
  //===--------------------------------------------------------------------===//

  /// The byte (i32) of candidate \p k (i32 0..2) of a group whose log_round
  /// byte is \p byte0: byte0 - 1 + k clamped to [1, 254], i.e. the exponent
  /// e0 - 1 + k clamped to [-126, 127].
  /// With E4M3 scales (\p e4m3) the bytes are clamped to [1, 126], the
  /// positive finite E4M3 values (neighbouring bytes, neighbouring values).
  static Value candidateByte(ScalarEmitter &es, Value byte0, Value k,
                             bool e4m3 = false) {
    OpBuilder &nb = es.builder();
    Location l = es.location();
    Value cb = arith::AddIOp::create(
        nb, l, byte0, arith::SubIOp::create(nb, l, k, es.i32(1)));
    cb = arith::MaxSIOp::create(nb, l, cb, es.i32(1));
    return arith::MinSIOp::create(nb, l, cb, es.i32(e4m3 ? 126 : 254));
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
  Value searchScaleBytes(Value x2, Value byte0, int64_t g, bool tiesDown,
                         bool e4m3) {
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
        {kPar, kPar, kPar, kPar},
        [&](ScalarEmitter &es, ValueRange a) -> Value {
          OpBuilder &nb = es.builder();
          Location l = es.location();
          Value k = arith::IndexCastOp::create(nb, l, nb.getI32Type(),
                                               indexOf(es, 2));
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
      sums = generic({pairs, pairs}, empty(shape, f64),
                     {map(4, {d(0), d(1), d(2), d(3), cst(0)}),
                      map(4, {d(0), d(1), d(2), d(3), cst(1)}), id(4)},
                     {kPar, kPar, kPar, kPar},
                     [](ScalarEmitter &es, ValueRange a) -> Value {
                       return arith::AddFOp::create(es.builder(), es.location(),
                                                    a[0], a[1]);
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
            Value better = arith::CmpFOp::create(
                nb, l, arith::CmpFPredicate::OLT, a[k], bestErr);
            best = arith::SelectOp::create(
                nb, l, better, candidateByte(es, a[3], es.i32(k), e4m3), best);
            bestErr = arith::SelectOp::create(nb, l, better, a[k], bestErr);
          }
          Value sentinel = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, a[3], es.i32(0));
          return arith::SelectOp::create(nb, l, sentinel, es.i32(0), best);
        });
  }

  /// The f32 value of an FP4 group's scale byte \p sb (i32).
  static Value scaleValue(ScalarEmitter &es, KVFormatAttr format, Value sb) {
    return format.getScale() == ScaleEncoding::e4m3 ? es.fp8Decode(sb)
                                                    : es.e8m0Decode(sb);
  }

  /// FP4 codes [N, D/2] and UE8M0 (or E4M3) scales [N, D/g] of f32 rows
  /// [N, D].
  std::pair<Value, Value> encodeFp4(Value x2, KVFormatAttr format) {
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
    Value byte = elementwise({amax}, b.getI32Type(),
                             [&](ScalarEmitter &es, ValueRange a) {
                               return e4m3 ? es.e4m3ScaleByte(a[0], c)
                                           : es.ue8m0ScaleByte(a[0], c);
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
    Value out =
        empty({dim(x2, 0), b.getIndexAttr(groups), b.getIndexAttr(g / 2)},
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
          Value sentinel = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, a[2], es.i32(0));
          both = arith::SelectOp::create(nb, l, sentinel, es.i32(0), both);
          return arith::TruncIOp::create(nb, l, nb.getI8Type(), both);
        });
    return {mergeTail(codes), scales};
  }

  /// Floats [N, D] (element type \p elem) from FP4 codes and scales.
  Value decodeFp4(Value codes2, Value scales2, KVFormatAttr format, Type elem) {
    int64_t half = staticDim(codes2, 1);
    int64_t g = format.getGroupSize(), groups = 2 * half / g;
    Value cg = splitLast(codes2, {groups, g / 2});
    Value out = empty({dim(codes2, 0), b.getIndexAttr(groups),
                       b.getIndexAttr(g / 2), b.getIndexAttr(2)},
                      elem);
    Value r = generic(
        {cg, scales2}, out,
        {map(4, {d(0), d(1), d(2)}), map(4, {d(0), d(1)}), id(4)},
        {kPar, kPar, kPar, kPar},
        [&](ScalarEmitter &es, ValueRange a) -> Value {
          OpBuilder &nb = es.builder();
          Location l = es.location();
          Value c = arith::ExtUIOp::create(nb, l, nb.getI32Type(), a[0]);
          Value k = indexOf(es, 3);
          Value first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                              k, es.index(0));
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

  Value encodeFp8(Value x2) {
    return elementwise(
        {x2}, b.getI8Type(), [](ScalarEmitter &es, ValueRange a) -> Value {
          return arith::TruncIOp::create(es.builder(), es.location(),
                                         es.builder().getI8Type(),
                                         es.fp8Encode(a[0]));
        });
  }

  Value decodeFp8(Value codes2, Type elem) {
    return elementwise(
        {codes2}, elem, [&](ScalarEmitter &es, ValueRange a) -> Value {
          Value w = arith::ExtUIOp::create(es.builder(), es.location(),
                                           es.builder().getI32Type(), a[0]);
          return es.fromF32(es.fp8Decode(w), elem);
        });
  }

  /// The little-endian bytes [N, 2D] of the bf16 codes of rows [N, D].
  Value encodeBf16Bytes(Value x2) {
    int64_t dd = staticDim(x2, 1);
    Value out = empty({dim(x2, 0), b.getIndexAttr(dd), b.getIndexAttr(2)},
                      b.getI8Type());
    Value r = generic(
        {x2}, out, {map(3, {d(0), d(1)}), id(3)}, {kPar, kPar, kPar},
        [&](ScalarEmitter &es, ValueRange a) -> Value {
          OpBuilder &nb = es.builder();
          Location l = es.location();
          Value w = es.bf16Bits(a[0]);
          Value k = indexOf(es, 2);
          Value first = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                              k, es.index(0));
          Value v = arith::SelectOp::create(
              nb, l, first, w, arith::ShRUIOp::create(nb, l, w, es.i32(8)));
          return arith::TruncIOp::create(nb, l, nb.getI8Type(), v);
        });
    return mergeTail(r);
  }

  /// Code bytes [N, codeBytes] and scale bytes [N, scaleBytes] (null when
  /// the format has none) of f32 rows [N, D] already in the coded domain.
  std::pair<Value, Value> encodeRowBytes(Value xf, KVFormatAttr format) {
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
  Value decodeCacheElement(ScalarEmitter &es, Value cache, Value blk, Value off,
                           Value head, Value i, KVFormatAttr format,
                           int64_t codeOff, int64_t scaleOff, bool headMajor) {
    OpBuilder &nb = es.builder();
    Location l = es.location();
    auto byteAt = [&](Value pos) -> Value {
      // Token-major [blocks, bs, H, slot] or head-major [blocks, H, bs, slot].
      Value v = tensor::ExtractOp::create(
          nb, l, cache,
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
      Value w = arith::OrIOp::create(
          nb, l, lo, arith::ShLIOp::create(nb, l, hi, es.i32(8)));
      return es.fromBits(arith::ShLIOp::create(nb, l, w, es.i32(16)));
    }
    }
    llvm_unreachable("unknown element code");
  }

  //===--------------------------------------------------------------------===//
  // Attention
  //===--------------------------------------------------------------------===//

  /// Geometry and operands shared by the attention ops.
  struct Attention {
    Value cache, tables, lens;
    /// k_mean / v_mean [Hkv, D] in the coded domain of their rows, or null.
    Value kMean, vMean;
    KVFormatAttr kFormat, vFormat;
    int64_t headDim, numKV, group, blockSize;
    int64_t kScaleOff, vCodeOff, vScaleOff;
    /// #uq.cache_layout<head_major>: [blocks, H, bs, slot].
    bool headMajor = false;
    Value numBlocks, capacity; // index
    float scale;
  };

  template <typename OpTy> Attention attention(OpTy op) {
    Attention a;
    a.cache = op.getCache();
    a.tables = op.getBlockTables();
    a.lens = op.getSeqLens();
    a.kFormat = op.getKFormat();
    a.vFormat = op.getVFormat();
    a.headDim = op.getHeadDim();
    a.numKV = op.getNumKVHeads();
    a.group = op.getGroupSize();
    a.blockSize = op.getBlockSize();
    CacheLayoutAttr layout = op.getLayout();
    a.headMajor = layout.getKind() == LayoutKind::head_major;
    a.kScaleOff = layout.getKeyScaleOffset(a.headDim, a.kFormat);
    a.vCodeOff = layout.getValueCodeOffset(a.headDim, a.kFormat);
    a.vScaleOff = layout.getValueScaleOffset(a.headDim, a.kFormat, a.vFormat);
    a.numBlocks = dimValue(a.cache, 0);
    a.capacity = arith::MulIOp::create(b, loc, dimValue(a.tables, 1),
                                       s.index(a.blockSize));
    // A cache without blocks holds no keys: every sequence has length 0
    // (the block-id clamp to [0, num_blocks - 1] would have no target and
    // read block -1). Every attention op, as the reference and the kernels.
    Value noBlocks = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           a.numBlocks, s.index(0));
    a.capacity =
        arith::SelectOp::create(b, loc, noBlocks, s.index(0), a.capacity);
    a.scale = op.getScale().convertToFloat();
    // Channel means (k_mean / v_mean operands of every attention op).
    if (Value m = op.getKMean())
      a.kMean = codedDomainRows(m, a.kFormat);
    if (Value m = op.getVMean())
      a.vMean = codedDomainRows(m, a.vFormat);
    return a;
  }

  /// f32(x[t, h, :]) - mean[h, :] for x [T, H, D] and mean [H, D].
  Value subtractMean(Value x, Value mean) {
    Value out = empty(sizes(x), b.getF32Type());
    return generic({x, mean}, out,
                   {id(3), map(3, {d(1), d(2)}), id(3)}, {kPar, kPar, kPar},
                   [](ScalarEmitter &es, ValueRange a) -> Value {
                     return arith::SubFOp::create(es.builder(), es.location(),
                                                  es.toF32(a[0]), a[1]);
                   });
  }

  /// The query [S, Hq, D] rotated like the keys and rounded per
  /// \p precision, as [S, Hkv, group, D] f32.
  Value prepareQuery(Value q, const Attention &a, QueryPrecision precision) {
    Value q2 = flattenRows(q);
    Value qf = codedDomainRows(q2, a.kFormat);
    if (precision == QueryPrecision::fp8_e4m3)
      qf = elementwise({qf}, b.getF32Type(),
                       [](ScalarEmitter &es, ValueRange x) {
                         return es.fp8Decode(es.fp8Encode(x[0]));
                       });
    if (precision == QueryPrecision::fp8_e4m3_scaled)
      qf = scaledFp8Rows(qf);
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

  /// f32 rows [N, D] (D a multiple of 32) rounded to FP8 E4M3 with one
  /// UE8M0 scale per 32: fp8(x * 2^-e) * 2^e, e from the group's largest
  /// magnitude (ScalarEmitter::fp8BlockScaleByte), as the reference's
  /// QueryPrecision::FP8_E4M3_Scaled. Both scalings are exact.
  Value scaledFp8Rows(Value x2) {
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
    Value byte = elementwise({amax}, b.getI32Type(),
                             [](ScalarEmitter &es, ValueRange a) {
                               return es.fp8BlockScaleByte(a[0]);
                             });
    Value out = generic(
        {xg, byte},
        empty({dim(x2, 0), b.getIndexAttr(groups), b.getIndexAttr(32)},
              b.getF32Type()),
        {id(3), map(3, {d(0), d(1)}), id(3)}, {kPar, kPar, kPar},
        [](ScalarEmitter &es, ValueRange a) -> Value {
          OpBuilder &nb = es.builder();
          Location l = es.location();
          Value v = arith::MulFOp::create(nb, l, a[0], es.e8m0Reciprocal(a[1]));
          Value q = es.fp8Decode(es.fp8Encode(v));
          return arith::MulFOp::create(nb, l, q, es.e8m0Decode(a[1]));
        });
    return mergeTail(out);
  }

  /// min(max(lens[s], 0), capacity) as an index.
  Value seqLen(const Attention &a, Value sIdx) {
    Value len = tensor::ExtractOp::create(b, loc, a.lens, ValueRange{sIdx});
    Value li = arith::IndexCastOp::create(b, loc, b.getIndexType(), len);
    li = arith::MaxSIOp::create(b, loc, li, s.index(0));
    return arith::MinSIOp::create(b, loc, li, a.capacity);
  }

  /// Decoded K or V rows [len, Hkv, D] f32 of sequence \p sIdx, read through
  /// the block table. Block ids are clamped into the cache (the reference
  /// rejects such tables; compiled code must not read out of bounds).
  Value decodeSequence(const Attention &a, Value sIdx, Value len, bool key) {
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
          Value blk =
              arith::IndexCastOp::create(nb, l, nb.getIndexType(), id32);
          blk = arith::MaxSIOp::create(nb, l, blk, es.index(0));
          blk = arith::MinSIOp::create(
              nb, l, blk,
              arith::SubIOp::create(nb, l, a.numBlocks, es.index(1)));
          Value v = decodeCacheElement(es, a.cache, blk, off, h, i, format,
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
  Value logits(const Attention &a, Value qs, Value kd, Value len) {
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
                         return arith::MulFOp::create(
                             es.builder(), es.location(), x[0], es.f32(scale));
                       });
  }

  struct Partial {
    Value out, max, sum; // [Hkv, group, D], [Hkv, group], [Hkv, group]
  };

  /// Softmax over \p n logits [Hkv, group, n] with values [n, Hkv, D]: the
  /// max (starting from \p sink when given, else -inf), the sum of
  /// exp(l - max) (plus exp(sink - max) last), and sum_t p_t v_t / sum (0
  /// when n == 0).
  Partial attend(const Attention &a, Value lg, Value vd, Value n, Value sink) {
    SmallVector<OpFoldResult> hs{b.getIndexAttr(a.numKV),
                                 b.getIndexAttr(a.group)};
    Value maxInit =
        sink ? sink : fill(hs, s.f32(-std::numeric_limits<float>::infinity()));
    AffineMap hg3 = map(3, {d(0), d(1)});
    Value mx =
        generic({lg}, maxInit, {id(3), hg3}, {kPar, kPar, kRed},
                [](ScalarEmitter &es, ValueRange x) -> Value {
                  Value gt = arith::CmpFOp::create(es.builder(), es.location(),
                                                   arith::CmpFPredicate::OGT,
                                                   x[0], x[1]);
                  return arith::SelectOp::create(es.builder(), es.location(),
                                                 gt, x[0], x[1]);
                });
    Value p = generic(
        {lg, mx}, empty(sizes(lg), b.getF32Type()), {id(3), hg3, id(3)},
        {kPar, kPar, kPar}, [](ScalarEmitter &es, ValueRange x) -> Value {
          Value diff =
              arith::SubFOp::create(es.builder(), es.location(), x[0], x[1]);
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
          Value empty_ = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                               n, es.index(0));
          Value q = arith::DivFOp::create(nb, l, x[0], x[1]);
          return arith::SelectOp::create(nb, l, empty_, es.f32(0.0f), q);
        });
    return {out, mx, sum};
  }

  /// [Hkv, group, ...] -> [Hq, ...].
  Value mergeHeads(Value x) {
    int64_t r = rank(x);
    SmallVector<ReassociationIndices> re{{0, 1}};
    for (int64_t i = 2; i < r; ++i)
      re.push_back({i});
    return tensor::CollapseShapeOp::create(b, loc, x, re);
  }

  /// Inserts \p src (rank-reduced) into \p dest at \p offsets with unit
  /// sizes where \p src has no dimension.
  Value insertAt(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
                 ArrayRef<OpFoldResult> sizes_) {
    SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
    return tensor::InsertSliceOp::create(b, loc, src, dest, offsets, sizes_,
                                         strides);
  }

  /// insertAt through a copying linalg.generic into the matching
  /// extract_slice of \p dest: bufferization then writes in place into the
  /// destination's subview with compiled loops instead of a strided
  /// memref.copy (a runtime call that moves one element at a time).
  Value copyInto(Value src, Value dest, ArrayRef<OpFoldResult> offsets,
                 ArrayRef<OpFoldResult> sizes_) {
    Value window =
        extractAt(dest, cast<RankedTensorType>(src.getType()), offsets, sizes_);
    int64_t r = rank(src);
    SmallVector<IteratorType> its(r, kPar);
    Value copied = generic({src}, window, {id(r), id(r)}, its,
                           [](ScalarEmitter &, ValueRange x) { return x[0]; });
    return insertAt(copied, dest, offsets, sizes_);
  }

  Value extractAt(Value src, RankedTensorType type,
                  ArrayRef<OpFoldResult> offsets,
                  ArrayRef<OpFoldResult> sizes_) {
    SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
    return tensor::ExtractSliceOp::create(b, loc, type, src, offsets, sizes_,
                                          strides);
  }

  /// The query rows of sequence \p sIdx as [Hkv, group, D].
  Value querySlice(const Attention &a, Value q4, Value sIdx) {
    OpFoldResult z = b.getIndexAttr(0);
    return extractAt(
        q4,
        RankedTensorType::get({a.numKV, a.group, a.headDim}, b.getF32Type()),
        {sIdx, z, z, z},
        {b.getIndexAttr(1), b.getIndexAttr(a.numKV), b.getIndexAttr(a.group),
         b.getIndexAttr(a.headDim)});
  }

  /// Converts an f32 tensor to \p type's element type and casts to it.
  Value toResult(Value v, Type type) {
    Type elem = cast<RankedTensorType>(type).getElementType();
    if (!elem.isF32())
      v = elementwise({v}, elem, [&](ScalarEmitter &es, ValueRange x) {
        return es.fromF32(x[0], elem);
      });
    return castTo(v, type);
  }
};

//===----------------------------------------------------------------------===//
// What the lowering supports
//===----------------------------------------------------------------------===//

/// Why \p format cannot be lowered, or an empty string.
std::string unsupportedFormat(KVFormatAttr format) {
  switch (format.getElement()) {
  case ElementCode::fp4_e2m1:
    if (!format.hasScales())
      return "fp4_e2m1 without ue8m0 scales is not supported";
    if (format.getGroupSize() % 2 != 0)
      return "fp4_e2m1 needs an even group size";
    if (format.getScaleRule() == ScaleRule::mse_search &&
        !llvm::isPowerOf2_64(format.getGroupSize()))
      return "scale_rule = mse_search needs a power-of-two group size";
    return "";
  case ElementCode::fp8_e4m3:
  case ElementCode::bf16:
    if (format.hasScales())
      return "scaled fp8_e4m3/bf16 formats are not supported (the reference "
             "defines none)";
    if (format.getRounding() != Rounding::nearest_even)
      return "fp8_e4m3/bf16 round to nearest even only";
    return "";
  }
  return "unknown element code";
}

/// Emits an error on \p op if the lowering cannot handle it.
LogicalResult checkSupported(Operation *op) {
  SmallVector<KVFormatAttr> formats;
  for (NamedAttribute attr : op->getAttrs())
    if (auto f = dyn_cast<KVFormatAttr>(attr.getValue()))
      formats.push_back(f);
  for (KVFormatAttr f : formats) {
    std::string why = unsupportedFormat(f);
    if (!why.empty())
      return op->emitOpError() << "cannot be lowered to linalg: " << why;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

template <typename OpTy> struct UQPattern : public OpRewritePattern<OpTy> {
  UQPattern(MLIRContext *ctx, const UQToLinalgOptions &options)
      : OpRewritePattern<OpTy>(ctx), options(options) {}
  UQToLinalgOptions options;
};

struct RotateLowering : UQPattern<RotateOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(RotateOp op,
                                PatternRewriter &rewriter) const override {
    // Wave-level tiles (vectors) are uq-lower-tile-ops' business.
    if (!isa<RankedTensorType>(op.getType()))
      return failure();
    Lowering l(rewriter, op.getLoc(), options);
    Value x = op.getInput();
    Type elem = Lowering::elementType(x);
    int64_t dd = Lowering::staticDim(x, Lowering::rank(x) - 1);
    Value r = l.tiledRows(
        l.flattenRows(x), {{elem, dd}},
        [&](Lowering &t, Value rows) -> SmallVector<Value> {
          Value f = t.rotateRowsF32(rows);
          if (!elem.isF32())
            f = t.elementwise({f}, elem, [&](ScalarEmitter &es, ValueRange a) {
              return es.fromF32(a[0], elem);
            });
          return {f};
        })[0];
    rewriter.replaceOp(op, l.castTo(l.unflattenRows(r, x), op.getType()));
    return success();
  }
};

struct QuantizeLowering : UQPattern<QuantizeOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(QuantizeOp op,
                                PatternRewriter &rewriter) const override {
    KVFormatAttr format = op.getFormat();
    if (!unsupportedFormat(format).empty())
      return rewriter.notifyMatchFailure(op, unsupportedFormat(format));
    Lowering l(rewriter, op.getLoc(), options);
    Value x = op.getInput();
    int64_t dd = Lowering::staticDim(x, Lowering::rank(x) - 1);
    SmallVector<std::pair<Type, int64_t>> kinds;
    Type i8 = rewriter.getI8Type(), bf16 = rewriter.getBF16Type();
    switch (format.getElement()) {
    case ElementCode::fp4_e2m1:
      kinds = {{i8, format.getCodeBytes(dd)}, {i8, format.getScaleBytes(dd)}};
      break;
    case ElementCode::fp8_e4m3:
      kinds = {{i8, dd}};
      break;
    case ElementCode::bf16:
      kinds = {{bf16, dd}};
      break;
    }
    SmallVector<Value> results =
        l.tiledRows(l.flattenRows(x), kinds,
                    [&](Lowering &t, Value rows) -> SmallVector<Value> {
                      Value xf = t.codedDomainRows(rows, format);
                      switch (format.getElement()) {
                      case ElementCode::fp4_e2m1: {
                        auto [codes, scales] = t.encodeFp4(xf, format);
                        return {codes, scales};
                      }
                      case ElementCode::fp8_e4m3:
                        return {t.encodeFp8(xf)};
                      case ElementCode::bf16:
                        return {t.elementwise(
                            {xf}, bf16, [&](ScalarEmitter &es, ValueRange a) {
                              return es.fromF32(a[0], bf16);
                            })};
                      }
                      llvm_unreachable("unknown element code");
                    });
    for (Value &r : results)
      r = l.unflattenRows(r, x);
    for (auto [i, r] : llvm::enumerate(results))
      results[i] = l.castTo(r, op->getResult(i).getType());
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct DequantizeLowering : UQPattern<DequantizeOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(DequantizeOp op,
                                PatternRewriter &rewriter) const override {
    KVFormatAttr format = op.getFormat();
    if (!unsupportedFormat(format).empty())
      return rewriter.notifyMatchFailure(op, unsupportedFormat(format));
    Lowering l(rewriter, op.getLoc(), options);
    Value codes = op.getCodes();
    Type elem = Lowering::elementType(op.getResult());
    Value c2 = l.flattenRows(codes);
    Value r;
    switch (format.getElement()) {
    case ElementCode::fp4_e2m1:
      r = l.decodeFp4(c2, l.flattenRows(op.getScales()), format, elem);
      break;
    case ElementCode::fp8_e4m3:
      r = l.decodeFp8(c2, elem);
      break;
    case ElementCode::bf16:
      r = l.elementwise({c2}, elem, [&](ScalarEmitter &es, ValueRange a) {
        return es.fromF32(es.toF32(a[0]), elem);
      });
      break;
    }
    rewriter.replaceOp(op, l.castTo(l.unflattenRows(r, codes), op.getType()));
    return success();
  }
};

struct CacheWriteLowering : UQPattern<CacheWriteOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(CacheWriteOp op,
                                PatternRewriter &rewriter) const override {
    for (KVFormatAttr f : {op.getKFormat(), op.getVFormat()})
      if (!unsupportedFormat(f).empty())
        return rewriter.notifyMatchFailure(op, unsupportedFormat(f));
    // No (token, head) row to write, known statically: the cache is the
    // result as it is. (The slot-row slices below would be zero-sized slices
    // of a zero-sized tensor, which tensor.extract_slice's verifier rejects.)
    // A dynamic token count of 0 needs nothing special: every loop below
    // runs zero times.
    auto keyType = cast<RankedTensorType>(op.getKey().getType());
    if (keyType.getDimSize(0) == 0 || keyType.getDimSize(1) == 0) {
      rewriter.replaceOp(op, op.getCache());
      return success();
    }
    Location loc = op.getLoc();
    Lowering l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Value key = op.getKey(), value = op.getValue();
    int64_t heads = Lowering::staticDim(key, 1);
    int64_t dd = Lowering::staticDim(key, 2);
    CacheLayoutAttr layout = op.getLayout();
    int64_t bs = op.getCacheType().getDimSize(layout.getBlockSizeDim());
    const bool headMajor = layout.getKind() == LayoutKind::head_major;
    KVFormatAttr kf = op.getKFormat(), vf = op.getVFormat();
    // Channel means: the rows coded are x - mean[h] (f32).
    if (Value m = op.getKMean())
      key = l.subtractMean(key, m);
    if (Value m = op.getVMean())
      value = l.subtractMean(value, m);

    // Code every (token, head) row first, vectorised over all rows.
    auto encode = [&](Value x, KVFormatAttr f) {
      Value x2 = tensor::CollapseShapeOp::create(
          b, loc, x, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
      SmallVector<std::pair<Type, int64_t>> kinds = {
          {b.getI8Type(), f.getCodeBytes(dd)}};
      if (f.hasScales())
        kinds.push_back({b.getI8Type(), f.getScaleBytes(dd)});
      SmallVector<Value> parts = l.tiledRows(
          x2, kinds, [&](Lowering &t, Value rows) -> SmallVector<Value> {
            auto [c, s] = t.encodeRowBytes(t.codedDomainRows(rows, f), f);
            if (s)
              return {c, s};
            return {c};
          });
      Value codes = parts[0];
      Value scales = parts.size() > 1 ? parts[1] : Value();
      auto split = [&](Value t) -> Value {
        if (!t)
          return t;
        int64_t w = Lowering::staticDim(t, 1);
        return tensor::ExpandShapeOp::create(
            b, loc,
            RankedTensorType::get({Lowering::staticDim(x, 0), heads, w},
                                  b.getI8Type()),
            t, {ReassociationIndices{0, 1}, {2}},
            {l.dim(x, 0), b.getIndexAttr(heads), b.getIndexAttr(w)});
      };
      return std::make_pair(split(codes), split(scales));
    };
    auto [kc, ks] = encode(key, kf);
    auto [vc, vs] = encode(value, vf);
    // The slot bytes [T, H, K codes | K scales | V codes | V scales] side by
    // side, so that each token needs one copy into the cache.
    int64_t need = layout.getSlotBytes(dd, kf, vf);
    OpFoldResult tokenCount = l.dim(key, 0);
    Value slotRows =
        l.empty({tokenCount, b.getIndexAttr(heads), b.getIndexAttr(need)},
                b.getI8Type());
    int64_t at = 0;
    for (Value p : {kc, ks, vc, vs}) {
      if (!p)
        continue;
      int64_t w = Lowering::staticDim(p, 2);
      slotRows =
          l.copyInto(p, slotRows,
                     {b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(at)},
                     {tokenCount, b.getIndexAttr(heads), b.getIndexAttr(w)});
      at += w;
    }

    // Then store each token's slot: skip negative slots and (unlike the
    // reference, which rejects the call) slots beyond the cache.
    Value numSlots = arith::IndexCastOp::create(
        b, loc, b.getI64Type(),
        arith::MulIOp::create(b, loc, l.dimValue(op.getCache(), 0),
                              l.s.index(bs)));
    Value tokens = l.dimValue(key, 0);
    auto loop = scf::ForOp::create(
        b, loc, l.s.index(0), tokens, l.s.index(1), ValueRange{op.getCache()},
        [&](OpBuilder &lb, Location ll, Value t, ValueRange iter) {
          Lowering in(lb, ll, options);
          Value slot = tensor::ExtractOp::create(lb, ll, op.getSlotMapping(),
                                                 ValueRange{t});
          Value valid = arith::AndIOp::create(
              lb, ll,
              arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::sge, slot,
                                    in.s.i64(0)),
              arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::slt, slot,
                                    numSlots));
          // Result types are inferred from the yields.
          auto ifOp = scf::IfOp::create(
              lb, ll, valid,
              [&](OpBuilder &tb, Location tl) {
                Lowering th(tb, tl, options);
                Value si =
                    arith::IndexCastOp::create(tb, tl, tb.getIndexType(), slot);
                Value blk = arith::DivUIOp::create(tb, tl, si, th.s.index(bs));
                Value off = arith::RemUIOp::create(tb, tl, si, th.s.index(bs));
                OpFoldResult z = tb.getIndexAttr(0), one = tb.getIndexAttr(1);
                OpFoldResult h = tb.getIndexAttr(heads),
                             w = tb.getIndexAttr(need);
                Value row = th.extractAt(
                    slotRows,
                    RankedTensorType::get({heads, need}, tb.getI8Type()),
                    {t, z, z}, {one, h, w});
                // The token's H slots: contiguous in token-major order, one
                // per head's run of the block in head-major order.
                Value cache =
                    headMajor
                        ? th.copyInto(row, iter[0], {blk, z, off, z},
                                      {one, h, one, w})
                        : th.copyInto(row, iter[0], {blk, off, z, z},
                                      {one, one, h, w});
                scf::YieldOp::create(tb, tl, cache);
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, iter[0]);
              });
          scf::YieldOp::create(lb, ll, ifOp.getResult(0));
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

struct DecodeAttentionLowering : UQPattern<DecodeAttentionOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(DecodeAttentionOp op,
                                PatternRewriter &rewriter) const override {
    for (KVFormatAttr f : {op.getKFormat(), op.getVFormat()})
      if (!unsupportedFormat(f).empty())
        return rewriter.notifyMatchFailure(op, unsupportedFormat(f));
    Location loc = op.getLoc();
    Lowering l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Lowering::Attention a = l.attention(op);
    Value q4 = l.prepareQuery(op.getQuery(), a, op.getQueryPrecision());
    Value sink;
    if (op.getSinks())
      sink = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({a.numKV, a.group}, b.getF32Type()),
          op.getSinks(), {ReassociationIndices{0, 1}});
    int64_t hq = a.numKV * a.group;
    Value init = l.empty({l.dim(op.getQuery(), 0), b.getIndexAttr(hq),
                          b.getIndexAttr(a.headDim)},
                         b.getF32Type());
    auto loop = scf::ForOp::create(
        b, loc, l.s.index(0), l.dimValue(op.getQuery(), 0), l.s.index(1),
        ValueRange{init},
        [&](OpBuilder &lb, Location ll, Value sIdx, ValueRange iter) {
          Lowering in(lb, ll, options);
          Value len = in.seqLen(a, sIdx);
          Value kd = in.decodeSequence(a, sIdx, len, /*key=*/true);
          Value vd = in.decodeSequence(a, sIdx, len, /*key=*/false);
          Value lg = in.logits(a, in.querySlice(a, q4, sIdx), kd, len);
          Lowering::Partial p = in.attend(a, lg, vd, len, sink);
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
    for (KVFormatAttr f : {op.getKFormat(), op.getVFormat()})
      if (!unsupportedFormat(f).empty())
        return rewriter.notifyMatchFailure(op, unsupportedFormat(f));
    Location loc = op.getLoc();
    Lowering l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Lowering::Attention a = l.attention(op);
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
          Lowering in(lb, ll, options);
          Value len = in.seqLen(a, sIdx);
          Value kd = in.decodeSequence(a, sIdx, len, /*key=*/true);
          Value vd = in.decodeSequence(a, sIdx, len, /*key=*/false);
          Value lg = in.logits(a, in.querySlice(a, q4, sIdx), kd, len);
          auto inner = scf::ForOp::create(
              lb, ll, in.s.index(0), in.s.index(parts), in.s.index(1), iter,
              [&](OpBuilder &pb, Location pl, Value pIdx, ValueRange acc) {
                Lowering pi(pb, pl, options);
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
                Lowering::Partial p = pi.attend(a, lgs, vds, n, Value());
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
    Lowering l(rewriter, loc, options);
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
    Type elem = Lowering::elementType(op.getResult());
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

/// uq.paged_attention: sequences in an scf.for that carries the end of the
/// previous sequence's query tokens (the running maximum of
/// query_start_loc, clamped to [0, num_tokens]); per sequence, K and V
/// decoded once as in decode_attention; per query token, an scf.for whose
/// body is decode_attention's on the slice of keys the token sees (the same
/// logits and attend helpers, so the arithmetic is the decode lowering's and
/// a decode batch gives its bits). Tokens that no sequence covers, and
/// tokens that see no key, keep the zeros the result starts from.
struct PagedAttentionLowering : UQPattern<PagedAttentionOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(PagedAttentionOp op,
                                PatternRewriter &rewriter) const override {
    for (KVFormatAttr f : {op.getKFormat(), op.getVFormat()})
      if (!unsupportedFormat(f).empty())
        return rewriter.notifyMatchFailure(op, unsupportedFormat(f));
    Location loc = op.getLoc();
    Lowering l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Lowering::Attention a = l.attention(op);
    Value q4 = l.prepareQuery(op.getQuery(), a, op.getQueryPrecision());
    Value sink;
    if (op.getSinks())
      sink = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get({a.numKV, a.group}, b.getF32Type()),
          op.getSinks(), {ReassociationIndices{0, 1}});
    int64_t hq = a.numKV * a.group;
    // A window of 2^32 or more is no window (positions are below 2^31);
    // the bound keeps p + 1 - W far from overflow.
    std::optional<int64_t> window;
    if (std::optional<uint64_t> w = op.getWindow())
      window = static_cast<int64_t>(std::min<uint64_t>(*w, uint64_t(1) << 32));

    Value numTokens = l.dimValue(op.getQuery(), 0);
    Value starts = op.getQueryStartLoc();
    // Sequences: the shortest of the three per-sequence operands, so that
    // run-time sizes that disagree never read out of bounds.
    Value numSeqs = arith::MinSIOp::create(
        b, loc, l.dimValue(a.lens, 0),
        arith::MinSIOp::create(
            b, loc, l.dimValue(a.tables, 0),
            arith::MaxSIOp::create(b, loc,
                                   arith::SubIOp::create(b, loc,
                                                         l.dimValue(starts, 0),
                                                         l.s.index(1)),
                                   l.s.index(0))));
    Value init = l.fill({l.dim(op.getQuery(), 0), b.getIndexAttr(hq),
                         b.getIndexAttr(a.headDim)},
                        l.s.f32(0.0f));
    auto loop = scf::ForOp::create(
        b, loc, l.s.index(0), numSeqs, l.s.index(1),
        ValueRange{init, l.s.index(0)},
        [&](OpBuilder &lb, Location ll, Value sIdx, ValueRange iter) {
          Lowering in(lb, ll, options);
          auto startAt = [&](Value i, Value floor) -> Value {
            Value v = tensor::ExtractOp::create(lb, ll, starts, ValueRange{i});
            v = arith::IndexCastOp::create(lb, ll, lb.getIndexType(), v);
            v = arith::MaxSIOp::create(lb, ll, v, floor);
            return arith::MinSIOp::create(lb, ll, v, numTokens);
          };
          Value begin = startAt(sIdx, iter[1]);
          Value end = startAt(
              arith::AddIOp::create(lb, ll, sIdx, in.s.index(1)), begin);
          Value queryLen = arith::SubIOp::create(lb, ll, end, begin);
          Value len = in.seqLen(a, sIdx);
          // Decode the context only when the sequence has query tokens.
          Value hasQuery = arith::CmpIOp::create(
              lb, ll, arith::CmpIPredicate::sgt, queryLen, in.s.index(0));
          Value decoded =
              arith::SelectOp::create(lb, ll, hasQuery, len, in.s.index(0));
          Value kd = in.decodeSequence(a, sIdx, decoded, /*key=*/true);
          Value vd = in.decodeSequence(a, sIdx, decoded, /*key=*/false);
          // Position of the sequence's first query token minus one.
          Value base = arith::SubIOp::create(lb, ll, len, queryLen);
          auto tokens = scf::ForOp::create(
              lb, ll, begin, end, in.s.index(1), ValueRange{iter[0]},
              [&](OpBuilder &tb, Location tl, Value t, ValueRange acc) {
                Lowering tk(tb, tl, options);
                // Token i = t - begin sits at p = len - queryLen + i and
                // sees the keys [first, p + 1) (none when p < 0).
                Value next = arith::AddIOp::create(
                    tb, tl, arith::SubIOp::create(tb, tl, t, begin), base);
                next = arith::AddIOp::create(tb, tl, next, tk.s.index(1));
                Value first = tk.s.index(0);
                if (window)
                  first = arith::MaxSIOp::create(
                      tb, tl,
                      arith::SubIOp::create(tb, tl, next, tk.s.index(*window)),
                      tk.s.index(0));
                Value n = arith::MaxSIOp::create(
                    tb, tl, arith::SubIOp::create(tb, tl, next, first),
                    tk.s.index(0));
                OpFoldResult z = tb.getIndexAttr(0);
                OpFoldResult kv = tb.getIndexAttr(a.numKV),
                             dd = tb.getIndexAttr(a.headDim);
                auto rows = RankedTensorType::get(
                    {ShapedType::kDynamic, a.numKV, a.headDim},
                    tb.getF32Type());
                Value ks = tk.extractAt(kd, rows, {first, z, z}, {n, kv, dd});
                Value vs = tk.extractAt(vd, rows, {first, z, z}, {n, kv, dd});
                Value lg = tk.logits(a, tk.querySlice(a, q4, t), ks, n);
                Lowering::Partial p = tk.attend(a, lg, vs, n, sink);
                Value res =
                    tk.insertAt(tk.mergeHeads(p.out), acc[0], {t, z, z},
                                {tb.getIndexAttr(1), tb.getIndexAttr(hq), dd});
                scf::YieldOp::create(tb, tl, res);
              });
          scf::YieldOp::create(lb, ll, ValueRange{tokens.getResult(0), end});
        });
    // Values coded in a rotated domain: rotate the output back, as
    // decode_attention does (zeros stay zeros).
    Value result = loop.getResult(0);
    if (op.getVFormat().isRotated())
      result = RotateOp::create(b, loc, result);
    rewriter.replaceOp(op, l.toResult(result, op.getType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

struct ConvertUQToLinalgPass
    : public uq::impl::ConvertUQToLinalgPassBase<ConvertUQToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    // Say clearly what cannot be lowered before the conversion gives up.
    WalkResult walk = getOperation()->walk([](Operation *op) {
      if (isa<UQDialect>(op->getDialect()) && failed(checkSupported(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    UQToLinalgOptions opts;
    opts.rotation = rotationArithmetic;
    RewritePatternSet patterns(&getContext());
    populateUQToLinalgPatterns(patterns, opts);
    ConversionTarget target(getContext());
    // The tensor-level ops; the wave-level tile ops (and uq.rotate on
    // vectors) belong to the GPU path's stages.
    target.addIllegalDialect<UQDialect>();
    target.addLegalOp<LoadRowsOp, StoreRowsOp, ScaledMmaOp, ScaledExtOp,
                      ToLayoutOp>();
    target.addDynamicallyLegalOp<RotateOp>(
        [](RotateOp op) { return !isa<RankedTensorType>(op.getType()); });
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void uq::populateUQToLinalgPatterns(RewritePatternSet &patterns,
                                    const UQToLinalgOptions &options) {
  patterns.add<RotateLowering, QuantizeLowering, DequantizeLowering,
               CacheWriteLowering, DecodeAttentionLowering,
               DecodeAttentionPartialLowering, MergePartitionsLowering,
               PagedAttentionLowering>(patterns.getContext(), options);
}
