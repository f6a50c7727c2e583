//===- CacheWrite.cpp - uq.cache_write on tensors -------------------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//
//
// Every (token, head) row of K and V coded at once (in row tiles), the
// slot bytes of a token laid side by side, then one scf.for over tokens
// that copies each valid slot into the cache.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RowCodes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

namespace {

struct CacheWriteLowering : UQPattern<CacheWriteOp> {
  using UQPattern::UQPattern;
  LogicalResult matchAndRewrite(CacheWriteOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(checkKVFormats(op, op.getKFormat(), op.getVFormat(), rewriter)))
      return failure();
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
    RowCoder l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Value key = op.getKey(), value = op.getValue();
    int64_t heads = TensorBuilder::staticDim(key, 1);
    int64_t dd = TensorBuilder::staticDim(key, 2);
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
          x2, kinds, [&](TensorBuilder &tb, Value rows) -> SmallVector<Value> {
            RowCoder t(tb);
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
        int64_t w = TensorBuilder::staticDim(t, 1);
        return tensor::ExpandShapeOp::create(
            b, loc,
            RankedTensorType::get({TensorBuilder::staticDim(x, 0), heads, w},
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
      int64_t w = TensorBuilder::staticDim(p, 2);
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
          TensorBuilder in(lb, ll, options);
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
                TensorBuilder th(tb, tl, options);
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
                Value cache = headMajor
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

} // namespace

void uq::to_linalg::populateCacheWritePatterns(
    RewritePatternSet &patterns, const UQToLinalgOptions &options) {
  patterns.add<CacheWriteLowering>(patterns.getContext(), options);
}
