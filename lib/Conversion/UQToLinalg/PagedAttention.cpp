//===- PagedAttention.cpp - uq.paged_attention on tensors -----------------===//
//
// Part of the uq project.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Patterns.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using namespace uq;
using namespace uq::to_linalg;

namespace {

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
    if (failed(checkKVFormats(op, op.getKFormat(), op.getVFormat(), rewriter)))
      return failure();
    Location loc = op.getLoc();
    AttentionBuilder l(rewriter, loc, options);
    OpBuilder &b = rewriter;
    Attention a = l.attention(op);
    Value q4 = l.prepareQuery(op.getQuery(), a, op.getQueryPrecision());
    Value sink = l.groupedSinks(a, op.getSinks());
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
          AttentionBuilder in(lb, ll, options);
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
                AttentionBuilder tk(tb, tl, options);
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
                Partial p = tk.attend(a, lg, vs, n, sink);
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

} // namespace

void uq::to_linalg::populatePagedAttentionPatterns(
    RewritePatternSet &patterns, const UQToLinalgOptions &options) {
  patterns.add<PagedAttentionLowering>(patterns.getContext(), options);
}
