//===- LowerTileOps.cpp - CPU meaning of the wave-level tile ops ----------===//
//
// uq-lower-tile-ops: the uq tile ops of a wave-level kernel as plain
// vector/scf/arith/memref code for the host, after uq-inline-kernels-on-host:
//  - uq.load_rows / uq.store_rows: one scf.if per row;
//  - uq.scaled_mma: loops over (m, n); per K-block the exact f64 sum of the
//    decoded products, times both scales, summed in f64 with the
//    accumulator and rounded to f32 once (the emulator's model of the MFMA);
//  - uq.scaled_ext: decode and multiply by the broadcast scales;
//  - uq.rotate on vectors: the Sylvester butterfly, spans 1, 2, ..., D/2 (the
//    reference's order), then one multiply by 1/sqrt(D);
//  - vector.multi_reduction <add> of floats: a perfect binary tree in
//    element order (what the GPU's lane-local pairs and xor butterflies
//    compute, and what uq::ref's mse_search sums), so that every lowering of
//    the stage rounds alike;
//  - vector.contract: row loops of f32 fmas over operands widened to f32.
// Large tiles are staged in buffers and walked by scf loops, so that the
// host code stays small (LLVM would unroll whole-tile vector ops).
// Codes are decoded with the same integer code as convert-uq-to-linalg.
//
//===----------------------------------------------------------------------===//

#include "uq/Conversion/Passes.h"
#include "uq/Dialect/UQ/IR/UQ.h"

#include "uq/Codegen/Numerics.h"
#include "uq/Codegen/Rotation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace uq {
#define GEN_PASS_DEF_LOWERTILEOPSPASS
#include "uq/Conversion/Passes.h.inc"
} // namespace uq

using namespace mlir;
using namespace uq;
using uq::ScalarEmitter;

namespace {

VectorType vecOf(ArrayRef<int64_t> shape, Type elem) {
  return VectorType::get(shape, elem);
}

Value zeros(OpBuilder &b, Location loc, VectorType t) {
  return arith::ConstantOp::create(b, loc, b.getZeroAttr(t));
}

/// Decodes a vector of MX codes (f4E2M1FN, f8E4M3FN) or E8M0 scales to f32;
/// null for element types without a decoder here.
Value decodeToF32(OpBuilder &b, Location loc, Value v) {
  auto t = cast<VectorType>(v.getType());
  Type elem = t.getElementType();
  ScalarEmitter es(b, loc, t.getShape());
  unsigned bits = elem.getIntOrFloatBitWidth();
  Value raw = vector::BitCastOp::create(
      b, loc, vecOf(t.getShape(), b.getIntegerType(bits)), v);
  Value wide = arith::ExtUIOp::create(
      b, loc, vecOf(t.getShape(), b.getI32Type()), raw);
  if (isa<Float4E2M1FNType>(elem))
    return es.fp4Decode(wide);
  if (isa<Float8E4M3FNType>(elem))
    return es.fp8Decode(wide);
  if (isa<Float8E8M0FNUType>(elem))
    return es.e8m0Decode(wide);
  return {};
}

/// A buffer of \p m rows of \p n elements (freed by the CPU pipeline's
/// buffer deallocation).
Value rowBuffer(OpBuilder &b, Location loc, int64_t m, int64_t n, Type elem) {
  return memref::AllocOp::create(b, loc, MemRefType::get({m, n}, elem));
}

/// Stores the rows of a 2-D vector into a buffer of its shape.
void storeRows(OpBuilder &b, Location loc, Value tile, Value buf) {
  auto t = cast<VectorType>(tile.getType());
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t r = 0; r < t.getDimSize(0); ++r)
    vector::StoreOp::create(
        b, loc, vector::ExtractOp::create(b, loc, tile, r), buf,
        ValueRange{arith::ConstantIndexOp::create(b, loc, r), c0});
}

/// The rows of a buffer as an [m x n] vector.
Value loadRows(OpBuilder &b, Location loc, Value buf, int64_t m, int64_t n) {
  Type elem = cast<MemRefType>(buf.getType()).getElementType();
  Value out = zeros(b, loc, vecOf({m, n}, elem));
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t r = 0; r < m; ++r)
    out = vector::InsertOp::create(
        b, loc,
        vector::LoadOp::create(
            b, loc, vecOf({n}, elem), buf,
            ValueRange{arith::ConstantIndexOp::create(b, loc, r), c0}),
        out, r);
  return out;
}

/// The rows of a 2-D tile as f32 in a buffer: float tiles widened, coded
/// tiles (FP4, FP8, E8M0) stored as bytes and decoded one row per loop
/// iteration (so the decoder is emitted once, not once per row). Null if
/// the element type has no decoder here.
Value stageRowsF32(OpBuilder &b, Location loc, Value tile) {
  auto t = cast<VectorType>(tile.getType());
  Type e = t.getElementType();
  Type f32 = b.getF32Type();
  int64_t m = t.getDimSize(0), n = t.getDimSize(1);
  Value out = rowBuffer(b, loc, m, n, f32);
  if (e.isF32() || e.isBF16() || e.isF16()) {
    Value f = e.isF32() ? tile
                        : arith::ExtFOp::create(b, loc, vecOf({m, n}, f32),
                                                tile)
                              .getResult();
    storeRows(b, loc, f, out);
    return out;
  }
  if (!isa<Float4E2M1FNType, Float8E4M3FNType, Float8E8M0FNUType>(e))
    return {};
  unsigned bits = e.getIntOrFloatBitWidth();
  int64_t bytes = n * bits / 8;
  Type i8 = b.getI8Type();
  Value raw = vector::BitCastOp::create(b, loc, vecOf({m, bytes}, i8), tile);
  Value staged = rowBuffer(b, loc, m, bytes, i8);
  storeRows(b, loc, raw, staged);
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  scf::ForOp::create(
      b, loc, c0, arith::ConstantIndexOp::create(b, loc, m),
      arith::ConstantIndexOp::create(b, loc, 1), ValueRange{},
      [&](OpBuilder &lb, Location, Value r, ValueRange) {
        Value row = vector::LoadOp::create(lb, loc, vecOf({bytes}, i8), staged,
                                           ValueRange{r, c0});
        Value codes =
            vector::BitCastOp::create(lb, loc, vecOf({n}, e), row);
        vector::StoreOp::create(lb, loc, decodeToF32(lb, loc, codes), out,
                                ValueRange{r, c0});
        scf::YieldOp::create(lb, loc);
      });
  return out;
}

struct LoadRowsLowering : OpRewritePattern<LoadRowsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadRowsOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    VectorType t = op.getResult().getType();
    int64_t rows = t.getDimSize(0), cols = t.getDimSize(1);
    int64_t width = op.getRowWidth();
    VectorType rowT = vecOf({cols}, t.getElementType());
    Value result = zeros(b, loc, t);
    for (int64_t r = 0; r < rows; ++r) {
      Value off = vector::ExtractOp::create(b, loc, op.getOffsets(), r);
      Value m = vector::ExtractOp::create(b, loc, op.getMask(), r);
      auto ifOp = scf::IfOp::create(
          b, loc, m,
          [&](OpBuilder &tb, Location l) {
            Value data = vector::LoadOp::create(
                tb, l, vecOf({width}, t.getElementType()), op.getBase(),
                ValueRange{off});
            if (width < cols)
              data = vector::InsertStridedSliceOp::create(
                  tb, l, data, zeros(tb, l, rowT), ArrayRef<int64_t>{0},
                  ArrayRef<int64_t>{1});
            scf::YieldOp::create(tb, l, data);
          },
          [&](OpBuilder &eb, Location l) {
            scf::YieldOp::create(eb, l, zeros(eb, l, rowT));
          });
      result = vector::InsertOp::create(b, loc, ifOp.getResult(0), result, r);
    }
    b.replaceOp(op, result);
    return success();
  }
};

struct StoreRowsLowering : OpRewritePattern<StoreRowsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StoreRowsOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    VectorType t = op.getValue().getType();
    for (int64_t r = 0; r < t.getDimSize(0); ++r) {
      Value off = vector::ExtractOp::create(b, loc, op.getOffsets(), r);
      Value m = vector::ExtractOp::create(b, loc, op.getMask(), r);
      Value row = vector::ExtractOp::create(b, loc, op.getValue(), r);
      scf::IfOp::create(b, loc, m, [&](OpBuilder &tb, Location l) {
        vector::StoreOp::create(tb, l, row, op.getBase(), ValueRange{off});
        scf::YieldOp::create(tb, l);
      });
    }
    b.eraseOp(op);
    return success();
  }
};

struct ScaledMmaLowering : OpRewritePattern<ScaledMmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaledMmaOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    VectorType at = op.getA().getType(), bt = op.getB().getType();
    for (Type e : {at.getElementType(), bt.getElementType()})
      if (!isa<Float4E2M1FNType, Float8E4M3FNType>(e))
        return op.emitOpError() << "has no CPU lowering for element type "
                                << e << " (FP4 E2M1 and FP8 E4M3 do)";
    int64_t m = at.getDimSize(0), n = bt.getDimSize(0), k = at.getDimSize(1);
    int64_t blocks = k / 32;
    Type f64 = b.getF64Type(), f32 = b.getF32Type();
    // Whole tiles decoded to f32 (exact), then staged in buffers so that
    // the (m, n) loops read rows with dynamic indices (the CPU pipeline's
    // buffer deallocation frees them).
    {
      Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
      Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
      Value a = stageRowsF32(b, loc, op.getA());
      Value sa = stageRowsF32(b, loc, op.getAScales());
      Value bb = stageRowsF32(b, loc, op.getB());
      Value sb = stageRowsF32(b, loc, op.getBScales());
      Value acc = stageRowsF32(b, loc, op.getAcc());
      auto rowF64 = [&](OpBuilder &lb, Value buf, Value i, int64_t len) {
        Value row = vector::LoadOp::create(lb, loc, vecOf({len}, f32), buf,
                                           ValueRange{i, c0});
        return arith::ExtFOp::create(lb, loc, vecOf({len}, f64), row)
            .getResult();
      };
      scf::ForOp::create(
          b, loc, c0, arith::ConstantIndexOp::create(b, loc, m), c1,
          ValueRange{}, [&](OpBuilder &ob, Location, Value mi, ValueRange) {
            Value av = rowF64(ob, a, mi, k);
            Value sav = rowF64(ob, sa, mi, blocks);
            scf::ForOp::create(
                ob, loc, c0, arith::ConstantIndexOp::create(ob, loc, n), c1,
                ValueRange{},
                [&](OpBuilder &ib, Location, Value ni, ValueRange) {
                  Value bv = rowF64(ib, bb, ni, k);
                  Value sbv = rowF64(ib, sb, ni, blocks);
                  Value prod = arith::MulFOp::create(ib, loc, av, bv);
                  Value total;
                  for (int64_t kb = 0; kb < blocks; ++kb) {
                    Value part = vector::ExtractStridedSliceOp::create(
                        ib, loc, prod, ArrayRef<int64_t>{kb * 32},
                        ArrayRef<int64_t>{32}, ArrayRef<int64_t>{1});
                    // Exact: products of FP8/FP4 values and their sums fit
                    // f64.
                    Value s = vector::ReductionOp::create(
                        ib, loc, vector::CombiningKind::ADD, part);
                    Value scale = arith::MulFOp::create(
                        ib, loc, vector::ExtractOp::create(ib, loc, sav, kb),
                        vector::ExtractOp::create(ib, loc, sbv, kb));
                    s = arith::MulFOp::create(ib, loc, s, scale);
                    total = total
                                ? arith::AddFOp::create(ib, loc, total, s)
                                      .getResult()
                                : s;
                  }
                  Value old = memref::LoadOp::create(ib, loc, acc,
                                                     ValueRange{mi, ni});
                  Value sum = arith::AddFOp::create(
                      ib, loc, total, arith::ExtFOp::create(ib, loc, f64, old));
                  memref::StoreOp::create(
                      ib, loc, arith::TruncFOp::create(ib, loc, f32, sum), acc,
                      ValueRange{mi, ni});
                  scf::YieldOp::create(ib, loc);
                });
            scf::YieldOp::create(ob, loc);
          });
      b.replaceOp(op, loadRows(b, loc, acc, m, n));
    }
    return success();
  }
};

struct ScaledExtLowering : OpRewritePattern<ScaledExtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaledExtOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    VectorType ct = op.getCodes().getType();
    int64_t rows = ct.getDimSize(0), k = ct.getDimSize(1), g = k / 32;
    Value vals = stageRowsF32(b, loc, op.getCodes());
    if (!vals)
      return op.emitOpError() << "has no CPU lowering for element type "
                              << ct.getElementType();
    Value scales = stageRowsF32(b, loc, op.getScales());
    Type f32 = b.getF32Type();
    Type res = op.getResult().getType().getElementType();
    Value out = rowBuffer(b, loc, rows, k, res);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    scf::ForOp::create(
        b, loc, c0, arith::ConstantIndexOp::create(b, loc, rows),
        arith::ConstantIndexOp::create(b, loc, 1), ValueRange{},
        [&](OpBuilder &lb, Location, Value r, ValueRange) {
          Value v = vector::LoadOp::create(lb, loc, vecOf({k}, f32), vals,
                                           ValueRange{r, c0});
          Value s = vector::LoadOp::create(lb, loc, vecOf({g}, f32), scales,
                                           ValueRange{r, c0});
          Value s2 = vector::ShapeCastOp::create(lb, loc, vecOf({g, 1}, f32), s);
          Value wide = vector::BroadcastOp::create(lb, loc,
                                                   vecOf({g, 32}, f32), s2);
          Value flat =
              vector::ShapeCastOp::create(lb, loc, vecOf({k}, f32), wide);
          Value prod = arith::MulFOp::create(lb, loc, v, flat);
          if (!res.isF32()) {
            ScalarEmitter es(lb, loc, {k});
            prod = es.fromF32(prod, res);
          }
          vector::StoreOp::create(lb, loc, prod, out, ValueRange{r, c0});
          scf::YieldOp::create(lb, loc);
        });
    b.replaceOp(op, loadRows(b, loc, out, rows, k));
    return success();
  }
};

struct RotateVectorLowering : OpRewritePattern<RotateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RotateOp op,
                                PatternRewriter &b) const override {
    auto t = dyn_cast<VectorType>(op.getType());
    if (!t)
      return failure();
    Location loc = op.getLoc();
    int64_t d = t.getShape().back();
    int64_t rows = t.getNumElements() / d;
    Type elem = t.getElementType();
    VectorType rowT = vecOf({d}, elem);
    Value flat = vector::ShapeCastOp::create(b, loc, vecOf({rows, d}, elem),
                                             op.getInput());
    // Upper element of each pair at span s: (i & s) != 0.
    // The pairs' arithmetic and the normalisation: uq/Codegen/Rotation.h.
    auto butterfly = [&](Value row) {
      for (int64_t s : rotation::stageSpans(d)) {
        SmallVector<int64_t> partner;
        SmallVector<bool> upper;
        for (int64_t i = 0; i < d; ++i) {
          partner.push_back(i ^ s);
          upper.push_back((i & s) != 0);
        }
        Value p = vector::ShuffleOp::create(b, loc, row, row, partner);
        Value sum = rotation::lowerOfPair(b, loc, row, p);
        Value diff = rotation::upperOfPair(b, loc, row, p);
        Value mask = arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(vecOf({d}, b.getI1Type()),
                                           ArrayRef<bool>(upper)));
        row = arith::SelectOp::create(b, loc, mask, diff, sum);
      }
      Value n = rotation::normalisation(b, loc, rowT, d);
      return arith::MulFOp::create(b, loc, row, n).getResult();
    };
    // One row per loop iteration (the butterfly is emitted once).
    Value buf = rowBuffer(b, loc, rows, d, elem);
    storeRows(b, loc, flat, buf);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    scf::ForOp::create(
        b, loc, c0, arith::ConstantIndexOp::create(b, loc, rows),
        arith::ConstantIndexOp::create(b, loc, 1), ValueRange{},
        [&](OpBuilder &lb, Location, Value r, ValueRange) {
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
          Value row = vector::LoadOp::create(b, loc, rowT, buf,
                                             ValueRange{r, c0});
          vector::StoreOp::create(b, loc, butterfly(row), buf,
                                  ValueRange{r, c0});
          scf::YieldOp::create(b, loc);
        });
    Value out = loadRows(b, loc, buf, rows, d);
    b.replaceOp(op, vector::ShapeCastOp::create(b, loc, t, out));
    return success();
  }
};

/// vector.multi_reduction <add> of floats over the last dimension of a 2-D
/// vector (power-of-two length): a perfect binary tree in element order,
/// then the accumulator.
struct TreeReductionLowering : OpRewritePattern<vector::MultiDimReductionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::MultiDimReductionOp op,
                                PatternRewriter &b) const override {
    if (op.getKind() != vector::CombiningKind::ADD)
      return failure();
    VectorType t = op.getSourceVectorType();
    if (!isa<FloatType>(t.getElementType()) || t.getRank() != 2 ||
        op.getReductionDims() != ArrayRef<int64_t>{1})
      return failure();
    int64_t n = t.getDimSize(1);
    if (!llvm::isPowerOf2_64(n))
      return op.emitOpError("a float add reduction over a dimension that is "
                            "not a power of two has no tree order");
    Location loc = op.getLoc();
    Value result = op.getAcc();
    for (int64_t r = 0; r < t.getDimSize(0); ++r) {
      Value row = vector::ExtractOp::create(b, loc, op.getSource(), r);
      for (int64_t len = n; len > 1; len /= 2) {
        SmallVector<int64_t> even, odd;
        for (int64_t i = 0; i < len; i += 2) {
          even.push_back(i);
          odd.push_back(i + 1);
        }
        Value e = vector::ShuffleOp::create(b, loc, row, row, even);
        Value o = vector::ShuffleOp::create(b, loc, row, row, odd);
        row = arith::AddFOp::create(b, loc, e, o);
      }
      Value s = vector::ExtractOp::create(b, loc, row, 0);
      Value acc = vector::ExtractOp::create(b, loc, op.getAcc(), r);
      s = arith::AddFOp::create(b, loc, s, acc);
      result = vector::InsertOp::create(b, loc, s, result, r);
    }
    b.replaceOp(op, result);
    return success();
  }
};

/// 2-D vector.contract (acc[m][n] += sum_k lhs[m][k] * rhs[k][n], or
/// rhs[n][k]) of bf16/f16/FP8/f32 operands into an f32 accumulator: loops
/// over rows with f32 fmas in k order (products of bf16 and FP8 values are
/// exact in f32; the MFMA's own order is unknown, tests bound the
/// difference).
struct ContractLowering : OpRewritePattern<vector::ContractionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::ContractionOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    auto map = [&](ArrayRef<AffineExpr> e) { return AffineMap::get(3, 0, e, ctx); };
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (maps.size() != 3 || maps[0] != map({m, k}) || maps[2] != map({m, n}) ||
        op.getKind() != vector::CombiningKind::ADD ||
        !cast<VectorType>(op.getAcc().getType()).getElementType().isF32())
      return op.emitOpError("has no CPU lowering: only [m x k] x [k x n] "
                            "(or [n x k]) additive contractions into f32");
    bool rhsNK = maps[1] == map({n, k});
    if (!rhsNK && maps[1] != map({k, n}))
      return op.emitOpError("has no CPU lowering for this rhs map");
    auto lt = cast<VectorType>(op.getLhs().getType());
    auto rt = cast<VectorType>(op.getRhs().getType());
    int64_t mm = lt.getDimSize(0), kk = lt.getDimSize(1);
    int64_t nn = rhsNK ? rt.getDimSize(0) : rt.getDimSize(1);
    Value lhs = stageRowsF32(b, loc, op.getLhs());
    Value rhs = stageRowsF32(b, loc, op.getRhs());
    Value acc = stageRowsF32(b, loc, op.getAcc());
    if (!lhs || !rhs)
      return op.emitOpError("has no CPU lowering for these operand types");
    Type f32 = b.getF32Type();
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    auto cst = [&](OpBuilder &x, int64_t v) {
      return arith::ConstantIndexOp::create(x, loc, v);
    };
    scf::ForOp::create(
        b, loc, c0, cst(b, mm), c1, ValueRange{},
        [&](OpBuilder &ob, Location, Value mi, ValueRange) {
          if (rhsNK) {
            Value row = vector::LoadOp::create(ob, loc, vecOf({kk}, f32), lhs,
                                               ValueRange{mi, c0});
            scf::ForOp::create(
                ob, loc, c0, cst(ob, nn), c1, ValueRange{},
                [&](OpBuilder &ib, Location, Value ni, ValueRange) {
                  Value col = vector::LoadOp::create(
                      ib, loc, vecOf({kk}, f32), rhs, ValueRange{ni, c0});
                  Value old = memref::LoadOp::create(ib, loc, acc,
                                                     ValueRange{mi, ni});
                  Value dot = vector::ReductionOp::create(
                      ib, loc, vector::CombiningKind::ADD,
                      arith::MulFOp::create(ib, loc, row, col), old);
                  memref::StoreOp::create(ib, loc, dot, acc,
                                          ValueRange{mi, ni});
                  scf::YieldOp::create(ib, loc);
                });
          } else {
            Value accRow = vector::LoadOp::create(ob, loc, vecOf({nn}, f32),
                                                  acc, ValueRange{mi, c0});
            auto loop = scf::ForOp::create(
                ob, loc, c0, cst(ob, kk), c1, ValueRange{accRow},
                [&](OpBuilder &ib, Location, Value ki, ValueRange it) {
                  Value a = memref::LoadOp::create(ib, loc, lhs,
                                                   ValueRange{mi, ki});
                  Value r = vector::LoadOp::create(
                      ib, loc, vecOf({nn}, f32), rhs, ValueRange{ki, c0});
                  Value prod = arith::MulFOp::create(
                      ib, loc, vector::BroadcastOp::create(
                                   ib, loc, vecOf({nn}, f32), a),
                      r);
                  scf::YieldOp::create(
                      ib, loc, ValueRange{arith::AddFOp::create(ib, loc, it[0],
                                                                prod)});
                });
            vector::StoreOp::create(ob, loc, loop.getResult(0), acc,
                                    ValueRange{mi, c0});
          }
          scf::YieldOp::create(ob, loc);
        });
    b.replaceOp(op, loadRows(b, loc, acc, mm, nn));
    return success();
  }
};

struct LowerTileOpsPass
    : public uq::impl::LowerTileOpsPassBase<LowerTileOpsPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LoadRowsLowering, StoreRowsLowering, ScaledMmaLowering,
                 ScaledExtLowering, RotateVectorLowering,
                 TreeReductionLowering, ContractLowering>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](Operation *op) {
      if (isa<LoadRowsOp, StoreRowsOp, ScaledMmaOp, ScaledExtOp, ToLayoutOp>(
              op) ||
          (isa<RotateOp>(op) && isa<VectorType>(op->getResult(0).getType()))) {
        op->emitOpError("could not be lowered for the host");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
