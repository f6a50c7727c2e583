//===- Rotation.cpp - The normalised Walsh-Hadamard rotation of rows ------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Rows [N, D] rotated as uq::ref::hadamardRotate: butterfly stages of span
// 1, 2, ..., D/2, each one linalg.generic over [N, D/2h, 2, h], in f64 with
// one rounding (ExactF64) or in f32 with a division by sqrt(2) per stage
// (ButterflyF32). The pairs' arithmetic and the normalisation are the
// codegen floor's (uq/Codegen/Rotation.h), shared with the wave-level
// lowerings of uq.rotate.
//
//===----------------------------------------------------------------------===//

#include "RowCodes.h"

#include "uq/Codegen/Rotation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

/// One butterfly stage of span \p h on rows [N, D]: (a, b) at (j, j + h)
/// -> (a + b, a - b), each divided by \p divisor when given.
Value RowCoder::butterflyStage(Value v, int64_t h,
                               std::optional<float> divisor) {
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
                // args[0] is the pair's lower element, args[1] its upper.
                Value sum = rotation::lowerOfPair(nb, l, args[0], args[1]);
                Value diff = rotation::upperOfPair(nb, l, args[1], args[0]);
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
Value RowCoder::rotateRowsF32(Value x2) {
  int64_t dd = staticDim(x2, 1);
  if (options.rotation == RotationArithmetic::ButterflyF32) {
    Value v =
        elementwise({x2}, b.getF32Type(), [](ScalarEmitter &es, ValueRange a) {
          return es.toF32(a[0]);
        });
    for (int64_t h : rotation::stageSpans(dd))
      v = butterflyStage(v, h, std::sqrt(2.0f));
    return v;
  }
  Value v = elementwise(
      {x2}, b.getF64Type(), [](ScalarEmitter &es, ValueRange a) -> Value {
        return arith::ExtFOp::create(es.builder(), es.location(),
                                     es.builder().getF64Type(), es.toF32(a[0]));
      });
  for (int64_t h : rotation::stageSpans(dd))
    v = butterflyStage(v, h, std::nullopt);
  return elementwise(
      {v}, b.getF32Type(), [&](ScalarEmitter &es, ValueRange a) -> Value {
        Value m = arith::MulFOp::create(
            es.builder(), es.location(), a[0],
            rotation::normalisation(es.builder(), es.location(),
                                    es.builder().getF64Type(), dd));
        return arith::TruncFOp::create(es.builder(), es.location(),
                                       es.builder().getF32Type(), m);
      });
}

/// Rows in f32, rotated when \p format says so.
Value RowCoder::codedDomainRows(Value x2, KVFormatAttr format) {
  if (format.isRotated())
    return rotateRowsF32(x2);
  return elementwise({x2}, b.getF32Type(), [](ScalarEmitter &es, ValueRange a) {
    return es.toF32(a[0]);
  });
}
