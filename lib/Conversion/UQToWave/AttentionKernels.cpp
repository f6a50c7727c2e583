//===- AttentionKernels.cpp - Wave-level decode attention kernels ---------===//
//
// Decode attention as three wave-level kernels:
//  - query:   rotate the query with the key format's rotation (f64
//             butterfly, exact) and round it to FP8 E4M3 once per sequence;
//  - partial: one split-K partition: paging through the block table, the
//             QK product of the group's query rows with a tile of keys, the
//             online softmax, the PV product;
//  - merge:   the log-sum-exp merge of the partitions, sinks, and the
//             rotation back for rotated value formats.
// Tiles are whole-wave vectors: 16 query rows (the GQA group, padded) x
// `tileTokens` keys. Only the reads of a slot and the two products depend on
// the KV format (readKeyLogits / readValues); the rest is shared by every
// format.
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"

#include "uq/Codegen/Numerics.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace uq;
using namespace uq::wave;
using arith::CmpIPredicate;
using uq::ScalarEmitter;

std::string AttentionConfig::queryWorkspaceDtype() const {
  return kFormat.getElement() == ElementCode::bf16 ? "bf16" : "u8";
}

gpu::GPUFuncOp uq::wave::createKernel(OpBuilder &b, Location loc,
                                      const KernelSpec &spec) {
  MLIRContext *ctx = b.getContext();
  auto type = FunctionType::get(ctx, kernelArgumentTypes(spec, ctx), {});
  auto func = gpu::GPUFuncOp::create(b, loc, spec.name, type);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {int32_t(spec.block[0]), int32_t(spec.block[1]),
       int32_t(spec.block[2])}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

using namespace uq::wave::detail;

//===----------------------------------------------------------------------===//
// query
//===----------------------------------------------------------------------===//

gpu::GPUFuncOp uq::wave::buildQueryKernel(OpBuilder &b, Location loc,
                                          const AttentionConfig &cfg,
                                          KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads;
  std::string qt = typeToDtype(cfg.queryType);
  std::string wt = cfg.queryWorkspaceDtype();
  const std::string &rows = cfg.rowsName;
  spec.name = cfg.base + "_query";
  spec.op = cfg.opName;
  spec.args = {
      {"query", "global_buffer", qt, {rows, hq, d}, "read",
       "query of the new tokens, [" + rows + ", num_q_heads, head_dim]"},
      {"query_prepared", "global_buffer", wt, {rows, hq, d}, "write",
       "workspace: the query rotated like the keys and rounded to FP8 E4M3 "
       "(codes; bf16 values for bf16 keys)"},
      {rows, "by_value", "i32", {}, "value", cfg.rowsMeaning}};
  addOptionArgs(cfg, "query", spec);
  spec.grid = {Dim(rows), Dim(hq), Dim(1)};
  spec.gridRule = "(" + rows + ", num_q_heads, 1)";
  spec.params = {{"head_dim", d}, {"num_q_heads", hq}};

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value seq = w.blockId(gpu::Dimension::x);
  Value head = w.blockId(gpu::Dimension::y);
  Value numSeqs = arg(f, spec, w, rows);
  // Workgroups past the grid rule do nothing.
  guardBody(w, w.andi(w.cmp(CmpIPredicate::ult, seq, numSeqs),
                      w.andi(w.cmp(CmpIPredicate::ult, head, w.idx(hq)),
                             w.cmp(CmpIPredicate::eq,
                                   w.blockId(gpu::Dimension::z), w.idx(0)))));

  // One query row [D] per workgroup.
  Value at = w.mul(w.add(w.mul(seq, w.idx(hq)), head), w.idx(d));
  Value q = vector::LoadOp::create(b, loc, w.vec({d}, cfg.queryType),
                                   arg(f, spec, w, "query"), ValueRange{at});
  ScalarEmitter es(b, loc, {d});
  Value x = es.toF32(q);
  if (cfg.kFormat.isRotated()) {
    // f64: the butterfly's sums of bf16/f16/f32 inputs are exact before the
    // one multiply by 1/sqrt(D) and the one rounding to f32.
    Value x64 = arith::ExtFOp::create(b, loc, w.vec({d}, b.getF64Type()), x);
    Value r = uq::RotateOp::create(b, loc, x64);
    x = arith::TruncFOp::create(b, loc, w.vec({d}, b.getF32Type()), r);
  }
  Value scaleBytes;
  Value codes = cfg.scaledQuery ? scaledQueryCodes(w, x, d, scaleBytes)
                                : es.fp8Encode(x);
  // The query's values (for bf16 keys and for the k_mean bias).
  auto decodedQuery = [&]() -> Value {
    return cfg.scaledQuery ? scaledQueryValues(w, codes, scaleBytes, d)
                           : es.fp8Decode(codes);
  };
  Value decoded;
  if (wt == "bf16" || cfg.kMean)
    decoded = decodedQuery();
  Value out;
  if (wt == "bf16")
    out = es.fromF32(decoded, b.getBF16Type());
  else
    out = arith::TruncIOp::create(b, loc, w.vec({d}, b.getI8Type()), codes);
  vector::StoreOp::create(b, loc, out, arg(f, spec, w, "query_prepared"),
                          ValueRange{at});
  if (cfg.scaledQuery)
    vector::StoreOp::create(
        b, loc,
        arith::TruncIOp::create(b, loc, w.vec({d / 32}, b.getI8Type()),
                                scaleBytes),
        arg(f, spec, w, "query_scales"),
        ValueRange{w.mul(w.add(w.mul(seq, w.idx(hq)), head), w.idx(d / 32))});
  if (cfg.kMean) {
    Value kvh = w.divu(head, w.idx(cfg.group()));
    Value mean = vector::LoadOp::create(b, loc, w.vec({d}, b.getF32Type()),
                                        arg(f, spec, w, "k_mean"),
                                        ValueRange{w.mul(kvh, w.idx(d))});
    vector::StoreOp::create(b, loc, meanBias(w, cfg, decoded, mean),
                            arg(f, spec, w, "query_bias"),
                            ValueRange{w.add(w.mul(seq, w.idx(hq)), head)});
  }
  return f;
}

//===----------------------------------------------------------------------===//
// partial
//===----------------------------------------------------------------------===//

namespace {
/// q . rot(k_mean) of the group's rows ([16] f32; 0 for padding rows).
Value loadQueryBias(WaveBuilder &w, const AttentionConfig &cfg, Value bias,
                    Value seq, Value kvh, Value rowMask) {
  Value head0 =
      w.add(w.mul(seq, w.idx(cfg.numQHeads)), w.mul(kvh, w.idx(cfg.group())));
  return gatherQueryBias(w, bias, w.add(w.splat(head0, {kRows}), w.step(kRows)),
                         rowMask);
}
} // namespace

gpu::GPUFuncOp uq::wave::buildPartialKernel(OpBuilder &b, Location loc,
                                            const AttentionConfig &cfg,
                                            KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads, hkv = cfg.numKVHeads;
  const int64_t bs = cfg.blockSize, sb = cfg.slotBytes, t = cfg.tileTokens;
  const int64_t g = cfg.group();
  spec.name = cfg.base + "_partial";
  spec.op = "decode_attention_partial";
  spec.args = {
      {"query_prepared", "global_buffer", cfg.queryWorkspaceDtype(),
       {"num_seqs", hq, d}, "read", "the query kernel's output"},
      {"cache", "global_buffer", "u8", {"num_blocks", bs, hkv, sb}, "read",
       "paged KV cache, vLLM slot layout [K codes][K scales][V codes][V "
       "scales]"},
      {"block_tables", "global_buffer", "i32", {"num_seqs", "max_blocks"},
       "read", "cache block of each block_size tokens of a sequence"},
      {"seq_lens", "global_buffer", "i32", {"num_seqs"}, "read",
       "tokens per sequence"},
      {"partial_out", "global_buffer", "f32",
       {"num_seqs", hq, "num_partitions", d}, "write",
       "normalised output of each partition"},
      {"partial_max", "global_buffer", "f32",
       {"num_seqs", hq, "num_partitions"}, "write",
       "max logit of each partition, natural-log units (-inf when empty)"},
      {"partial_sum", "global_buffer", "f32",
       {"num_seqs", hq, "num_partitions"}, "write",
       "sum of exp(logit - max) of each partition (0 when empty)"},
      {"num_seqs", "by_value", "i32", {}, "value", "number of sequences"},
      {"num_blocks", "by_value", "i32", {}, "value", "blocks in the cache"},
      {"max_blocks", "by_value", "i32", {}, "value",
       "block-table width (blocks per sequence)"},
      {"num_partitions", "by_value", "i32", {}, "value",
       "split-K partitions: partition p covers tokens [p * partition_size, "
       "(p + 1) * partition_size); the last one also covers the rest"}};
  addOptionArgs(cfg, "partial", spec);
  spec.grid = {Dim("num_partitions"), Dim(hkv), Dim("num_seqs")};
  spec.params = {{"head_dim", d},
                 {"num_q_heads", hq},
                 {"num_kv_heads", hkv},
                 {"block_size", bs},
                 {"slot_bytes", sb},
                 {"partition_size", cfg.partitionSize},
                 {"tile_tokens", t}};
  spec.gridRule = "(num_partitions, num_kv_heads, num_seqs); any "
                  "num_partitions >= 1 is correct, ceil(max_blocks * "
                  "block_size / partition_size) spreads the work evenly";

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value part = w.blockId(gpu::Dimension::x);
  Value kvh = w.blockId(gpu::Dimension::y);
  Value seq = w.blockId(gpu::Dimension::z);
  Value numSeqs = arg(f, spec, w, "num_seqs");
  Value numBlocks = arg(f, spec, w, "num_blocks");
  Value maxBlocks = arg(f, spec, w, "max_blocks");
  Value numParts = arg(f, spec, w, "num_partitions");
  guardBody(w, w.andi(w.cmp(CmpIPredicate::ult, seq, numSeqs),
                      w.andi(w.cmp(CmpIPredicate::ult, part, numParts),
                             w.cmp(CmpIPredicate::ult, kvh, w.idx(hkv)))));

  Value cache = arg(f, spec, w, "cache");
  Value tables = arg(f, spec, w, "block_tables");
  Type f32 = b.getF32Type();
  // Tokens [start, end) of this partition; lengths are clamped to the block
  // table's capacity, and to 0 when the cache has no block at all.
  Value c0 = w.idx(0);
  Value len = w.toIndex(memref::LoadOp::create(
      b, loc, arg(f, spec, w, "seq_lens"), ValueRange{seq}));
  Value noBlocks = w.cmp(CmpIPredicate::sle, numBlocks, c0);
  Value capacity =
      w.select(noBlocks, c0, w.mul(w.max(maxBlocks, c0), w.idx(bs)));
  len = w.min(w.max(len, c0), capacity);
  Value start = w.mul(part, w.idx(cfg.partitionSize));
  Value isLast = w.cmp(CmpIPredicate::eq, part, w.sub(numParts, w.idx(1)));
  Value end = w.select(isLast, len,
                       w.min(len, w.add(start, w.idx(cfg.partitionSize))));
  end = w.max(end, start);

  Value rowOffsets = queryRowOffsets(w, cfg, seq, kvh);
  Value rowMask = groupRows(w, g);
  FormatOps fmt{cfg, w, cache, arg(f, spec, w, "query_prepared"), t, d};
  Value q = fmt.loadQuery(rowOffsets, rowMask);
  if (cfg.scaledQuery && cfg.kFormat.getElement() != ElementCode::bf16)
    fmt.queryScales = loadQueryScales(w, cfg, arg(f, spec, w, "query_scales"),
                                      rowOffsets, rowMask);
  Value bias = cfg.kMean ? loadQueryBias(w, cfg, arg(f, spec, w, "query_bias"),
                                         seq, kvh, rowMask)
                         : Value();

  float ninf = -std::numeric_limits<float>::infinity();
  Value mInit = w.constSplat(b.getF32FloatAttr(ninf), {kRows});
  Value lInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows});
  Value accInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows, d});
  Value maxBlock32 = arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                                w.sub(numBlocks, w.idx(1)));
  Value tableRow = w.mul(seq, maxBlocks);
  const float scale2 = cfg.softmaxScale * kLog2e;
  // One tile of the online softmax. \p full: every token of the tile is
  // before `end` (no mask: the loads, the -inf padding and the table reads
  // of the tile fold to their unmasked forms).
  auto tileBody = [&](OpBuilder &lb, Value t0, ValueRange iter, bool full) {
        WaveBuilder lw(lb, loc);
        // Paging: the slot (byte offset) of each token of the tile.
        Value tok = lw.stepFrom(t0, t);
        Value valid =
            full ? lw.constSplat(lb.getBoolAttr(true), {t})
                 : lw.cmp(CmpIPredicate::ult, tok, lw.splat(end, {t}));
        // Out-of-range block ids are clamped into the cache, as on the CPU
        // path: the kernel never reads outside its buffers.
        Value slot = tileSlots(lw, tables, tableRow, t0, full ? Value() : end,
                               bs, t, tok, valid, maxBlock32, kvh, hkv, sb);

        // Logits in base 2, -inf past the end.
        Value s = fmt.keyLogits(q, slot, valid);
        if (bias)
          s = arith::AddFOp::create(lb, loc, s, lw.broadcastRows(bias, t));
        Value x = arith::MulFOp::create(
            lb, loc, s, lw.constSplat(lb.getF32FloatAttr(scale2), {kRows, t}));
        Value validTile = lw.broadcastCols(valid, kRows);
        x = lw.select(validTile, x,
                      lw.constSplat(lb.getF32FloatAttr(ninf), {kRows, t}));
        // Online softmax.
        Value m = iter[0], l = iter[1], acc = iter[2];
        Value mt = lw.reduceRows(vector::CombiningKind::MAXIMUMF, x, m);
        // A NaN logit makes p, the row sum and the output NaN whatever the
        // max is, so the max may skip it (cheaper cross-lane steps).
        stage_attrs::maxIgnoresNaN.set(mt.getDefiningOp());
        Value alpha = math::Exp2Op::create(
            lb, loc, arith::SubFOp::create(lb, loc, m, mt));
        Value p = math::Exp2Op::create(
            lb, loc, arith::SubFOp::create(lb, loc, x, lw.broadcastRows(mt, t)));
        Value lsum = lw.reduceRows(
            vector::CombiningKind::ADD, p,
            arith::MulFOp::create(lb, loc, l, alpha));
        // The row sum of P may be summed in any order (the bound of the
        // kernel's P rounding covers it); the distribution saves shuffles.
        stage_attrs::reassociate.set(lsum.getDefiningOp());
        float ps = fmt.pScale();
        if (ps != 1.0f)
          p = arith::MulFOp::create(
              lb, loc, p, lw.constSplat(lb.getF32FloatAttr(ps), {kRows, t}));
        Value accScaled =
            arith::MulFOp::create(lb, loc, acc, lw.broadcastRows(alpha, d));
        Value accNew = fmt.accumulatePV(p, slot, valid, accScaled);
        scf::YieldOp::create(lb, loc, ValueRange{mt, lsum, accNew});
  };
  // Full tiles first, then the partial last tile (at most one iteration):
  // the steady-state loop carries no per-token mask.
  Value fullEnd =
      w.add(start, w.mul(w.divu(w.sub(end, start), w.idx(t)), w.idx(t)));
  auto fullLoop = scf::ForOp::create(
      b, loc, start, fullEnd, w.idx(t), ValueRange{mInit, lInit, accInit},
      [&](OpBuilder &lb, Location, Value t0, ValueRange iter) {
        tileBody(lb, t0, iter, /*full=*/true);
      });
  auto loop = scf::ForOp::create(
      b, loc, fullEnd, end, w.idx(t), fullLoop.getResults(),
      [&](OpBuilder &lb, Location, Value t0, ValueRange iter) {
        tileBody(lb, t0, iter, /*full=*/false);
      });

  // Rows of the group write out / sum, max (natural log) and sum; an empty
  // partition writes 0, -inf, 0.
  Value m = loop.getResult(0), l = loop.getResult(1), acc = loop.getResult(2);
  Value nonEmpty = w.cmp(CmpIPredicate::ult, start, end);
  Value lScaled = l;
  if (fmt.pScale() != 1.0f)
    lScaled = arith::MulFOp::create(
        b, loc, l, w.constSplat(b.getF32FloatAttr(fmt.pScale()), {kRows}));
  Value out = arith::DivFOp::create(b, loc, acc, w.broadcastRows(lScaled, d));
  out = w.select(nonEmpty, out, accInit);
  Value mNat = arith::MulFOp::create(
      b, loc, m,
      w.constSplat(b.getF32FloatAttr(float(std::log(2.0))), {kRows}));
  mNat = w.select(nonEmpty, mNat, mInit);
  Value sum = w.select(nonEmpty, l, lInit);
  // Index (seq, head, part) of [S, Hq, P].
  Value heads = w.add(
      w.splat(w.add(w.mul(seq, w.idx(hq)), w.mul(kvh, w.idx(g))), {kRows}),
      w.step(kRows));
  Value rowIdx =
      w.add(w.mul(heads, w.splat(numParts, {kRows})), w.splat(part, {kRows}));
  uq::StoreRowsOp::create(b, loc, out, arg(f, spec, w, "partial_out"),
                          w.mul(rowIdx, w.splat(w.idx(d), {kRows})), rowMask);
  vector::ScatterOp::create(b, loc, Type(), arg(f, spec, w, "partial_max"),
                            ValueRange{c0}, rowIdx, rowMask, mNat);
  vector::ScatterOp::create(b, loc, Type(), arg(f, spec, w, "partial_sum"),
                            ValueRange{c0}, rowIdx, rowMask, sum);
  (void)f32;
  return f;
}

//===----------------------------------------------------------------------===//
// merge
//===----------------------------------------------------------------------===//

namespace {
/// out + v_mean[kv head] * keysDen / den: the decoded value rows carry the
/// mean (ref::decodeAttention adds it to every row), so the output gets it
/// times the keys' share of the softmax (1 without sinks; 0 for a row with
/// nothing to attend to). Added in the original domain, after the rotation
/// back.
Value addValueMean(WaveBuilder &w, const AttentionConfig &cfg, Value vMean,
                   Value head, Value keysDen, Value den, Value out) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  const int64_t d = cfg.headDim;
  Value kvh = w.divu(head, w.idx(cfg.group()));
  Value mean = vector::LoadOp::create(b, loc, w.vec({d}, b.getF32Type()),
                                      vMean, ValueRange{w.mul(kvh, w.idx(d))});
  Value share = arith::DivFOp::create(b, loc, keysDen, den);
  Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                     keysDen, w.f32(0.0f));
  share = w.select(none, w.f32(0.0f), share);
  return arith::AddFOp::create(
      b, loc, out,
      arith::MulFOp::create(b, loc, mean, w.splat(share, {d})));
}
} // namespace

gpu::GPUFuncOp uq::wave::buildMergeKernel(OpBuilder &b, Location loc,
                                          const AttentionConfig &cfg,
                                          KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads;
  const std::string &rows = cfg.rowsName;
  spec.name = cfg.base + "_merge";
  spec.op = "merge_partitions";
  spec.args = {
      {"partial_out", "global_buffer", "f32",
       {rows, hq, "num_partitions", d}, "read",
       "normalised output of each partition"},
      {"partial_max", "global_buffer", "f32",
       {rows, hq, "num_partitions"}, "read",
       "max logit of each partition"},
      {"partial_sum", "global_buffer", "f32",
       {rows, hq, "num_partitions"}, "read",
       "sum of exp(logit - max) of each partition"}};
  if (cfg.sinks)
    spec.args.push_back({"sinks", "global_buffer", "f32", {hq}, "read",
                         "attention sink logit of each query head"});
  spec.args.push_back({"out", "global_buffer", typeToDtype(cfg.resultType),
                       {rows, hq, d}, "write", "attention output"});
  spec.args.push_back({rows, "by_value", "i32", {}, "value", cfg.rowsMeaning});
  spec.args.push_back({"num_partitions", "by_value", "i32", {}, "value",
                       "split-K partitions of the partial results"});
  addOptionArgs(cfg, "merge", spec);
  spec.grid = {Dim(hq), Dim(rows), Dim(1)};
  spec.gridRule = "(num_q_heads, " + rows + ", 1)";
  spec.params = {{"head_dim", d}, {"num_q_heads", hq}};

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value head = w.blockId(gpu::Dimension::x);
  Value seq = w.blockId(gpu::Dimension::y);
  Value numSeqs = arg(f, spec, w, rows);
  Value numParts = arg(f, spec, w, "num_partitions");
  // Workgroups past the grid rule do nothing.
  guardBody(w, w.andi(w.cmp(CmpIPredicate::ult, seq, numSeqs),
                      w.andi(w.cmp(CmpIPredicate::ult, head, w.idx(hq)),
                             w.cmp(CmpIPredicate::eq,
                                   w.blockId(gpu::Dimension::z), w.idx(0)))));

  Type f32 = b.getF32Type();
  float ninf = -std::numeric_limits<float>::infinity();
  Value c0 = w.idx(0), c1 = w.idx(1);
  Value row = w.add(w.mul(seq, w.idx(hq)), head);
  Value base = w.mul(row, numParts);
  Value pmax = arg(f, spec, w, "partial_max");
  Value psum = arg(f, spec, w, "partial_sum");
  Value pout = arg(f, spec, w, "partial_out");
  Value sink = cfg.sinks ? memref::LoadOp::create(b, loc,
                                                  arg(f, spec, w, "sinks"),
                                                  ValueRange{head})
                               .getResult()
                         : w.f32(ninf);
  // An empty partition (sum exactly 0) takes no part; a NaN max or sum
  // does, and makes the row NaN.
  auto partition = [&](OpBuilder &lb, Value p) {
    Value i = arith::AddIOp::create(lb, loc, base, p);
    Value mx = memref::LoadOp::create(lb, loc, pmax, ValueRange{i});
    Value sm = memref::LoadOp::create(lb, loc, psum, ValueRange{i});
    Value empty = arith::CmpFOp::create(
        lb, loc, arith::CmpFPredicate::OEQ, sm,
        arith::ConstantOp::create(lb, loc, lb.getF32FloatAttr(0.0f)));
    return std::make_tuple(i, mx, sm, empty);
  };
  // The loop also counts the non-empty partitions: a row without any key
  // is 0 whatever its sink (a NaN or +Inf sink would make it NaN), as in
  // the reference and the linalg path (docs/kernel-input-policy.md).
  auto gmax = scf::ForOp::create(
      b, loc, c0, numParts, c1, ValueRange{sink, w.f32(0.0f)},
      [&](OpBuilder &lb, Location, Value p, ValueRange iter) {
        auto [i, mx, sm, empty] = partition(lb, p);
        (void)i;
        (void)sm;
        Value zero = arith::ConstantOp::create(lb, loc, lb.getF32FloatAttr(0));
        Value one = arith::ConstantOp::create(lb, loc, lb.getF32FloatAttr(1));
        Value v = arith::SelectOp::create(
            lb, loc, empty,
            arith::ConstantOp::create(lb, loc, lb.getF32FloatAttr(ninf)), mx);
        Value keys = arith::AddFOp::create(
            lb, loc, iter[1], arith::SelectOp::create(lb, loc, empty, zero, one));
        scf::YieldOp::create(
            lb, loc,
            ValueRange{arith::MaximumFOp::create(lb, loc, iter[0], v), keys});
      });
  Value gm = gmax.getResult(0);
  Value noKeys = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       gmax.getResult(1), w.f32(0.0f));
  // With no partition and no sink the row is 0 (M = -inf is replaced by 0
  // so that no -inf - -inf is formed).
  Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, gm,
                                     w.f32(ninf));
  Value mref = w.select(none, w.f32(0.0f), gm);
  Value zeroRow = w.constSplat(b.getF32FloatAttr(0.0f), {d});
  auto sums = scf::ForOp::create(
      b, loc, c0, numParts, c1, ValueRange{w.f32(0.0f), zeroRow},
      [&](OpBuilder &lb, Location, Value p, ValueRange iter) {
        WaveBuilder lw(lb, loc);
        auto [i, mx, sm, empty] = partition(lb, p);
        Value e = math::Exp2Op::create(
            lb, loc,
            arith::MulFOp::create(lb, loc,
                                  arith::SubFOp::create(lb, loc, mx, mref),
                                  lw.f32(kLog2e)));
        Value wgt = arith::SelectOp::create(
            lb, loc, empty, lw.f32(0.0f), arith::MulFOp::create(lb, loc, sm, e));
        Value o = vector::LoadOp::create(lb, loc, lw.vec({d}, f32), pout,
                                         ValueRange{lw.mul(i, lw.idx(d))});
        Value acc = arith::AddFOp::create(
            lb, loc, iter[1],
            arith::MulFOp::create(lb, loc, o, lw.splat(wgt, {d})));
        scf::YieldOp::create(
            lb, loc,
            ValueRange{arith::AddFOp::create(lb, loc, iter[0], wgt), acc});
      });
  Value den = sums.getResult(0), acc = sums.getResult(1);
  Value keysDen = den;
  if (cfg.sinks) {
    Value e = math::Exp2Op::create(
        b, loc,
        arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, sink, mref),
                              w.f32(kLog2e)));
    den = arith::AddFOp::create(b, loc, den, e);
  }
  // 0 / 0 only for a row with nothing to attend to; NaN stays NaN.
  Value denZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        den, w.f32(0.0f));
  Value out = arith::DivFOp::create(b, loc, acc, w.splat(den, {d}));
  out = w.select(arith::OrIOp::create(b, loc, denZero, noKeys), zeroRow, out);
  if (cfg.vFormat.isRotated()) {
    Value o64 = arith::ExtFOp::create(b, loc, w.vec({d}, b.getF64Type()), out);
    out = arith::TruncFOp::create(b, loc, w.vec({d}, f32),
                                  uq::RotateOp::create(b, loc, o64));
  }
  if (cfg.vMean)
    out = addValueMean(w, cfg, arg(f, spec, w, "v_mean"), head, keysDen, den,
                       out);
  if (!cfg.resultType.isF32()) {
    ScalarEmitter es(b, loc, {d});
    out = es.fromF32(out, cfg.resultType);
  }
  vector::StoreOp::create(b, loc, out, arg(f, spec, w, "out"),
                          ValueRange{w.mul(row, w.idx(d))});
  return f;
}
