//===- DistributeMMA.cpp - Per-lane MFMA products
//---------------------------===//
//
// Distribution patterns of the products: uq.scaled_mma and vector.contract
// become MFMAs of the table in uq/Codegen/MFMA.h.
//
//===----------------------------------------------------------------------===//

#include "Distributor.h"

namespace uq::lanes::distribution {

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// Whether \p op's MFMA tile is whole instructions of \p mfma that fit the
/// registers, and its operands (\p layouts) and result (\p result) are in
/// the layouts the table gives (\p expected); a located "cannot be
/// distributed" error otherwise. Stage IR from another compiler may carry
/// any layout.
static LogicalResult checkMfmaTile(Operation *op, const gfx950::Intrinsic &mfma,
                                   int64_t m, int64_t n, int64_t k, Type a,
                                   Type b, ArrayRef<Layout> layouts,
                                   ArrayRef<Layout> expected) {
  if (std::optional<std::string> why = gfx950::tileError(mfma, m, n, k, a, b))
    return op->emitOpError("cannot be distributed: ") << *why;
  for (auto [i, have, want] : llvm::enumerate(layouts, expected))
    if (have != want)
      return op->emitOpError("cannot be distributed: value ")
             << i << " of the " << mfma.mnemonic << " tile has lane layout "
             << have.str() << ", the instruction needs " << want.str();
  return success();
}

LogicalResult Distributor::scaledMma(uq::ScaledMmaOp op, const Layout &l) {
  const gfx950::Intrinsic &mfma = gfx950::kScaled16x16x128;
  VectorType at = op.getA().getType(), bt = op.getB().getType();
  int64_t m = at.getDimSize(0), n = bt.getDimSize(0), k = at.getDimSize(1);
  int64_t bm = m / mfma.m, bn = n / mfma.n, bk = k / mfma.k;
  FailureOr<Layout> al = layoutOf(op.getA()), bl = layoutOf(op.getB()),
                    sal = layoutOf(op.getAScales()),
                    sbl = layoutOf(op.getBScales());
  if (failed(al) || failed(bl) || failed(sal) || failed(sbl))
    return failure();
  if (const gfx950::OperandForm *fa = mfma.formOf(at.getElementType()),
      *fb = mfma.formOf(bt.getElementType());
      failed(
          checkMfmaTile(op, mfma, m, n, k, at.getElementType(),
                        bt.getElementType(), {*al, *sal, *bl, *sbl, l},
                        {mfmaLayout(fa ? fa->lanes : mfma.forms[0].lanes, m, k),
                         mfmaLayout(mfma.scales, m, k / mfma.scaleBlock),
                         mfmaLayout(fb ? fb->lanes : mfma.forms[0].lanes, n, k),
                         mfmaLayout(mfma.scales, n, k / mfma.scaleBlock),
                         mfmaLayout(mfma.result, m, n)})))
    return failure();
  Value a = mapped(op.getA()), bv = mapped(op.getB());
  Value sa = mapped(op.getAScales()), sb = mapped(op.getBScales());
  Value acc = mapped(op.getAcc());
  auto operand = [&](Value v, VectorType t, const Layout &ol, int64_t i,
                     int64_t c) {
    // The 32 (FP8) or 32 nibbles (FP4) of chunk c of row tile i.
    bool fp4 = isa<Float4E2M1FNType>(t.getElementType());
    int64_t f =
        fp4 ? ol.flatIndex({i, c}, {0, 0}) : ol.flatIndex({i, 2 * c}, {0, 0});
    return slice(v, f, 32);
  };
  VectorType accT = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> tiles;
  for (int64_t i = 0; i < bm; ++i)
    for (int64_t j = 0; j < bn; ++j) {
      Value c = slice(acc, l.flatIndex({i, j}, {0, 0}), 4);
      for (int64_t kc = 0; kc < bk; ++kc) {
        Value sA = extract(sa, sal->flatIndex({i, kc}, {0, 0}));
        Value sB = extract(sb, sbl->flatIndex({j, kc}, {0, 0}));
        c = amdgpu::ScaledMFMAOp::create(
            b, loc, accT, b.getI32IntegerAttr(16), b.getI32IntegerAttr(16),
            b.getI32IntegerAttr(128), operand(a, at, *al, i, kc),
            operand(bv, bt, *bl, j, kc), c, sA, sB, b.getI32IntegerAttr(0),
            b.getI32IntegerAttr(0));
      }
      tiles.push_back(c);
    }
  return mapTiles(op, tiles, l);
}

LogicalResult Distributor::contract(vector::ContractionOp op, const Layout &l) {
  auto lt = cast<VectorType>(op.getLhs().getType());
  auto rt = cast<VectorType>(op.getRhs().getType());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  bool nk = maps[1].getResult(0) == getAffineDimExpr(1, op.getContext());
  const gfx950::Intrinsic &mfma = gfx950::k16x16x32;
  int64_t m = lt.getDimSize(0), k = lt.getDimSize(1);
  int64_t n = nk ? rt.getDimSize(0) : rt.getDimSize(1);
  int64_t bm = m / mfma.m, bk = k / mfma.k, bn = n / mfma.n;
  FailureOr<Layout> al = layoutOf(op.getLhs()), bl = layoutOf(op.getRhs());
  if (failed(al) || failed(bl))
    return failure();
  const gfx950::OperandForm *form = mfma.formOf(lt.getElementType());
  const gfx950::OperandLanes &lanes = form ? form->lanes : mfma.forms[0].lanes;
  if (failed(checkMfmaTile(op, mfma, m, n, k, lt.getElementType(),
                           rt.getElementType(), {*al, *bl, l},
                           {mfmaLayout(lanes, m, k),
                            mfmaLayout(lanes, n, k, /*transposed=*/!nk),
                            mfmaLayout(mfma.result, m, n)})))
    return failure();
  Value a = mapped(op.getLhs()), bv = mapped(op.getRhs()),
        acc = mapped(op.getAcc());
  VectorType accT = VectorType::get({4}, b.getF32Type());
  SmallVector<Value> tiles;
  for (int64_t i = 0; i < bm; ++i)
    for (int64_t j = 0; j < bn; ++j) {
      Value c = slice(acc, l.flatIndex({i, j}, {0, 0}), 4);
      for (int64_t kc = 0; kc < bk; ++kc) {
        Value av = slice(a, al->flatIndex({i, kc}, {0, 0}), 8);
        int64_t bf = nk ? bl->flatIndex({j, kc}, {0, 0})
                        : bl->flatIndex({kc, j}, {0, 0});
        c = amdgpu::MFMAOp::create(b, loc, accT, 16, 16, 32, 1, av,
                                   slice(bv, bf, 8), c);
      }
      tiles.push_back(c);
    }
  return mapTiles(op, tiles, l);
}

LogicalResult Distributor::mapTiles(Operation *op, ArrayRef<Value> tiles,
                                    const Layout &l) {
  Value out = zeros(laneType(b.getF32Type(), l));
  for (auto [t, v] : llvm::enumerate(tiles))
    out = insertSlice(v, out, int64_t(t) * 4);
  map.map(op->getResult(0), out);
  return success();
}

} // namespace uq::lanes::distribution
