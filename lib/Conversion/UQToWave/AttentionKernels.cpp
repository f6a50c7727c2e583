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

namespace {
/// The arguments the partial and the single-pass kernels share, in order.
std::vector<uq::KernelArgDescription> keyLoopArgs(const AttentionConfig &cfg) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads, hkv = cfg.numKVHeads;
  const int64_t bs = cfg.blockSize, sb = cfg.slotBytes;
  return {{"query_prepared", "global_buffer", cfg.queryWorkspaceDtype(),
           {"num_seqs", hq, d}, "read", "the query kernel's output"},
          {"cache", "global_buffer", "u8", cacheShape(cfg.layout, bs, hkv, sb),
           "read",
           std::string("paged KV cache (") +
               (isHeadMajor(cfg.layout) ? "head-major" : "token-major") +
               "), vLLM slot layout [K codes][K scales][V codes][V scales]"},
          {"block_tables", "global_buffer", "i32", {"num_seqs", "max_blocks"},
           "read", "cache block of each block_size tokens of a sequence"},
          {"seq_lens", "global_buffer", "i32", {"num_seqs"}, "read",
           "tokens per sequence"}};
}

/// The partition's online softmax over its keys: the running row maxima
/// (base 2), row sums and the unnormalised output of the group's rows.
struct KeyLoop {
  Value m, l, acc;
  /// Whether the partition has any key.
  Value nonEmpty;
  FormatOps *fmt;
};

/// The key loop of partition \p part of (\p seq, \p kvh) over \p numParts
/// partitions (the kernel's scalars by name in \p spec).
KeyLoop emitKeyLoop(WaveBuilder &w, const AttentionConfig &cfg,
                    gpu::GPUFuncOp f, const KernelSpec &spec, Value part,
                    Value kvh, Value seq, Value numParts,
                    std::unique_ptr<FormatOps> &fmtOwner) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  const int64_t d = cfg.headDim, hkv = cfg.numKVHeads;
  const int64_t bs = cfg.blockSize, sb = cfg.slotBytes, t = cfg.tileTokens;
  const int64_t g = cfg.group();
  Value numBlocks = arg(f, spec, w, "num_blocks");
  Value maxBlocks = arg(f, spec, w, "max_blocks");
  Value cache = arg(f, spec, w, "cache");
  Value tables = arg(f, spec, w, "block_tables");
  // Tokens [start, end) of this partition; lengths are clamped to the block
  // table's capacity, and to 0 when the cache has no block at all.
  Value c0 = w.idx(0);
  Value len = w.toIndex(memref::LoadOp::create(
      b, loc, arg(f, spec, w, "seq_lens"), ValueRange{seq}));
  Value noBlocks = w.cmp(CmpIPredicate::sle, numBlocks, c0);
  Value capacity =
      w.select(noBlocks, c0, w.mul(w.max(maxBlocks, c0), w.idx(bs)));
  len = w.min(w.max(len, c0), capacity);
  Value start, end;
  if (cfg.spreadPartitions) {
    // span = t * ceil(len / (t * P)): the partitions of a sequence take
    // whole tiles, the same number each (the last ones may be shorter or
    // empty), whatever P the host chose.
    // In i32 (lengths are below 2^31): one 32-bit division, where a 64-bit
    // one makes LLVM add a branch to a 32-bit fast path. P is capped at
    // 2^25 so that P * t cannot wrap; any span with P * span >= len covers
    // the sequence.
    Type i32 = b.getI32Type();
    auto to32 = [&](Value x) {
      return arith::IndexCastUIOp::create(b, loc, i32, x).getResult();
    };
    Value per32 = arith::MulIOp::create(
        b, loc, to32(w.min(numParts, w.idx(int64_t(1) << 25))), w.i32(t));
    Value tiles = arith::CeilDivUIOp::create(b, loc, to32(len), per32);
    Value span = w.mul(
        arith::IndexCastUIOp::create(b, loc, b.getIndexType(), tiles),
        w.idx(t));
    start = w.mul(part, span);
    end = w.min(len, w.add(start, span));
  } else {
    start = w.mul(part, w.idx(cfg.partitionSize));
    Value isLast = w.cmp(CmpIPredicate::eq, part, w.sub(numParts, w.idx(1)));
    end = w.select(isLast, len,
                   w.min(len, w.add(start, w.idx(cfg.partitionSize))));
  }
  end = w.max(end, start);

  Value rowOffsets = queryRowOffsets(w, cfg, seq, kvh);
  Value rowMask = groupRows(w, g);
  fmtOwner = std::make_unique<FormatOps>(
      FormatOps{cfg, w, cache, arg(f, spec, w, "query_prepared"), t, d});
  FormatOps &fmt = *fmtOwner;
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
                               bs, t, tok, valid, maxBlock32, kvh, hkv, sb,
                               isHeadMajor(cfg.layout));

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
  return {loop.getResult(0), loop.getResult(1), loop.getResult(2),
          w.cmp(CmpIPredicate::ult, start, end), &fmt};
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
  spec.args = keyLoopArgs(cfg);
  spec.args.insert(
      spec.args.end(),
      {{"partial_out", "global_buffer", "f32",
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
        cfg.spreadPartitions
            ? "split-K partitions: partition p of a sequence of len tokens "
              "covers [p * span, (p + 1) * span), span = tile_tokens * "
              "ceil(len / (tile_tokens * num_partitions))"
            : "split-K partitions: partition p covers tokens [p * "
              "partition_size, (p + 1) * partition_size); the last one also "
              "covers the rest"}});
  addOptionArgs(cfg, "partial", spec);
  spec.grid = {Dim("num_partitions"), Dim(hkv), Dim("num_seqs")};
  spec.params = {{"head_dim", d},
                 {"num_q_heads", hq},
                 {"num_kv_heads", hkv},
                 {"block_size", bs},
                 {"slot_bytes", sb},
                 {"partition_size", cfg.partitionSize},
                 {"tile_tokens", t}};
  if (cfg.spreadPartitions) {
    spec.params.push_back({"max_partition_tokens", cfg.maxPartitionTokens});
    spec.params.push_back({"min_partition_tokens", cfg.minPartitionTokens});
    spec.params.push_back({"target_workgroups", cfg.targetWorkgroups});
    spec.gridRule =
        "(num_partitions, num_kv_heads, num_seqs); any num_partitions >= 1 "
        "is correct; the compiler's host code picks P = max(1, ceil(C / "
        "max_partition_tokens), min(ceil(target_workgroups / (num_seqs * "
        "num_kv_heads)), ceil(C / min_partition_tokens))), C = max_blocks * "
        "block_size, and launches the single-pass kernel instead of this one "
        "and the merge when P = 1";
  } else {
    spec.gridRule = "(num_partitions, num_kv_heads, num_seqs); any "
                    "num_partitions >= 1 is correct, ceil(max_blocks * "
                    "block_size / partition_size) spreads the work evenly";
  }

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value part = w.blockId(gpu::Dimension::x);
  Value kvh = w.blockId(gpu::Dimension::y);
  Value seq = w.blockId(gpu::Dimension::z);
  Value numSeqs = arg(f, spec, w, "num_seqs");
  Value numParts = arg(f, spec, w, "num_partitions");
  guardBody(w, w.andi(w.cmp(CmpIPredicate::ult, seq, numSeqs),
                      w.andi(w.cmp(CmpIPredicate::ult, part, numParts),
                             w.cmp(CmpIPredicate::ult, kvh, w.idx(hkv)))));
  std::unique_ptr<FormatOps> fmt;
  KeyLoop kl = emitKeyLoop(w, cfg, f, spec, part, kvh, seq, numParts, fmt);

  // Rows of the group write out / sum, max (natural log) and sum; an empty
  // partition writes 0, -inf, 0.
  float ninf = -std::numeric_limits<float>::infinity();
  Value c0 = w.idx(0);
  Value mInit = w.constSplat(b.getF32FloatAttr(ninf), {kRows});
  Value lInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows});
  Value accInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows, d});
  Value rowMask = groupRows(w, g);
  Value m = kl.m, l = kl.l, acc = kl.acc;
  Value nonEmpty = kl.nonEmpty;
  Value lScaled = l;
  if (fmt->pScale() != 1.0f)
    lScaled = arith::MulFOp::create(
        b, loc, l, w.constSplat(b.getF32FloatAttr(fmt->pScale()), {kRows}));
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
  return f;
}

//===----------------------------------------------------------------------===//
// merge
//===----------------------------------------------------------------------===//

namespace {
/// Reduces dimension 0 of a 2-D tile with \p kind: [n x m] -> [m].
Value reduceCols(WaveBuilder &w, vector::CombiningKind kind, Value tile,
                 Value init) {
  return vector::MultiDimReductionOp::create(
      w.b, w.loc, tile, init, ArrayRef<bool>{true, false}, kind);
}
/// The reduction of a [n] vector to [1] (through [n x 1]).
Value reduceAll(WaveBuilder &w, vector::CombiningKind kind, Value v,
                Value init) {
  auto t = cast<VectorType>(v.getType());
  Value col = vector::ShapeCastOp::create(
      w.b, w.loc, w.vec({t.getDimSize(0), 1}, t.getElementType()), v);
  return reduceCols(w, kind, col, init);
}
/// exp(x) of f32 in base 2: exp2(x * log2 e).
Value expNat(WaveBuilder &w, Value x) {
  Type t = x.getType();
  Value c = isa<VectorType>(t)
                ? w.constSplat(w.b.getF32FloatAttr(kLog2e),
                               cast<VectorType>(t).getShape())
                : w.f32(kLog2e);
  return math::Exp2Op::create(w.b, w.loc,
                              arith::MulFOp::create(w.b, w.loc, x, c));
}

/// The merge's epilogue on an output tile (rows x D, f32, normalised by its
/// denominator): the rotation back of rotated values, v_mean times the
/// keys' share \p share (rows, broadcast over D), the result type.
Value finishRows(WaveBuilder &w, const AttentionConfig &cfg, Value out,
                 Value vMeanRows, Value share) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  auto t = cast<VectorType>(out.getType());
  SmallVector<int64_t> shape(t.getShape());
  Type f32 = b.getF32Type();
  if (cfg.vFormat.isRotated()) {
    Value o64 = arith::ExtFOp::create(b, loc, w.vec(shape, b.getF64Type()), out);
    out = arith::TruncFOp::create(b, loc, w.vec(shape, f32),
                                  uq::RotateOp::create(b, loc, o64));
  }
  if (vMeanRows)
    out = arith::AddFOp::create(
        b, loc, out, arith::MulFOp::create(b, loc, vMeanRows, share));
  if (!cfg.resultType.isF32()) {
    ScalarEmitter es(b, loc, shape);
    out = es.fromF32(out, cfg.resultType);
  }
  return out;
}
} // namespace

// Long (about 225 lines) on purpose: after the launch description, the two
// steps of the software-pipelined loop (`weigh`: a chunk's maxima and sums
// to weights; `chunk`: one iteration) are closures over the row's buffers
// and geometry (base, num_partitions, the three partial buffers, the sink),
// called from the prologue and from both loops (whole chunks, then the last
// partial one); as free functions each would take those values again. The
// output rows' epilogue (rotation back, v_mean, result type) is finishRows.
gpu::GPUFuncOp uq::wave::buildMergeKernel(OpBuilder &b, Location loc,
                                          const AttentionConfig &cfg,
                                          KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads;
  const int64_t pc = cfg.mergeChunk;
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
  spec.params = {{"head_dim", d}, {"num_q_heads", hq}, {"merge_chunk", pc}};

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  // LLVM's AMDGPU machine scheduler in its ILP mode issues an iteration's
  // loads (the next chunk's maxima and sums, this chunk's rows) before the
  // first wait; its default occupancy mode interleaves them with the
  // arithmetic to save registers, which leaves one load latency per few
  // rows ("amdgpu-sched-strategy"="max-ilp", GCNSchedStrategy.cpp in
  // LLVM 22; the ISA is checked by test/Target/decode-isa.mlir).
  f->setAttr("passthrough",
             b.getArrayAttr({b.getArrayAttr(
                 {b.getStringAttr("amdgpu-sched-strategy"),
                  b.getStringAttr("max-ilp")})}));
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
  using CK = vector::CombiningKind;
  Value c0 = w.idx(0);
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
  auto one = [&](float x) { return w.constSplat(b.getF32FloatAttr(x), {1}); };
  // The partitions in chunks of `pc`: an online merge across chunks (the
  // running maximum M, starting at the sink; the weights' sum; the weighted
  // rows, rescaled by e^(M_old - M_new) when M grows). Software-pipelined:
  // iteration k combines chunk k's output rows with weights computed in
  // iteration k - 1 (or before the loop), and meanwhile loads and weighs
  // chunk k + 1's maxima and sums, so every load of an iteration is
  // independent of the others (one memory latency per chunk, not one per
  // partition). The maxima and sums are read one partition per lane (one
  // load each, clamped indices so every lane reads inside the buffer,
  // partitions past num_partitions masked after the load) and reduced
  // across lanes once per chunk. An empty partition (sum exactly 0) takes
  // no part; a NaN max or sum does, and makes the row NaN. The non-empty
  // partitions are counted: a row without any key is 0 whatever its sink
  // (a NaN or +Inf sink would make it NaN), as in the reference and the
  // linalg path (docs/kernel-input-policy.md).
  struct Weights {
    Value m, alpha, wgt, wsum, keys;
  };
  auto weigh = [&](OpBuilder &lb, Value c, Value m) -> Weights {
    WaveBuilder lw(lb, loc);
    Value p = lw.stepFrom(c, pc);
    Value valid = lw.cmp(CmpIPredicate::ult, p, lw.splat(numParts, {pc}));
    Value last = lw.sub(lw.max(numParts, lw.idx(1)), lw.idx(1));
    Value at = lw.add(lw.splat(base, {pc}), lw.min(p, lw.splat(last, {pc})));
    Value all = lw.constSplat(lb.getBoolAttr(true), {pc});
    Value zeros = lw.constSplat(lb.getF32FloatAttr(0.0f), {pc});
    Value mx = vector::GatherOp::create(lb, loc, lw.vec({pc}, f32), pmax,
                                        ValueRange{c0}, at, all, zeros);
    Value sm = vector::GatherOp::create(lb, loc, lw.vec({pc}, f32), psum,
                                        ValueRange{c0}, at, all, zeros);
    Value empty = arith::OrIOp::create(
        lb, loc,
        arith::CmpFOp::create(lb, loc, arith::CmpFPredicate::OEQ, sm, zeros),
        arith::XOrIOp::create(lb, loc, valid, all));
    Value v =
        lw.select(empty, lw.constSplat(lb.getF32FloatAttr(ninf), {pc}), mx);
    Value mNew = arith::MaximumFOp::create(
        lb, loc, m, reduceAll(lw, CK::MAXIMUMF, v, one(ninf)));
    // With no partition and no sink so far M = -inf: 0 instead, so that
    // no -inf - -inf is formed.
    Value mRef = lw.select(arith::CmpFOp::create(lb, loc,
                                                 arith::CmpFPredicate::OEQ,
                                                 mNew, one(ninf)),
                           one(0.0f), mNew);
    Value same = arith::CmpFOp::create(lb, loc, arith::CmpFPredicate::OEQ, m,
                                       mNew);
    Value alpha = lw.select(
        same, one(1.0f), expNat(lw, arith::SubFOp::create(lb, loc, m, mRef)));
    Value e = expNat(lw, arith::SubFOp::create(
                             lb, loc, mx,
                             vector::BroadcastOp::create(
                                 lb, loc, lw.vec({pc}, f32), mRef)));
    Value wgt =
        lw.select(empty, zeros, arith::MulFOp::create(lb, loc, sm, e));
    Value wsum = reduceAll(lw, CK::ADD, wgt, one(0.0f));
    stage_attrs::reassociate.set(wsum.getDefiningOp());
    Value keys = reduceAll(
        lw, CK::ADD,
        lw.select(empty, zeros, lw.constSplat(lb.getF32FloatAttr(1.0f), {pc})),
        one(0.0f));
    // [pc x 1]: the loop carries the weights to the next iteration.
    Value wcol = vector::ShapeCastOp::create(lb, loc, lw.vec({pc, 1}, f32),
                                             wgt);
    return {mNew, alpha, wcol, wsum, keys};
  };
  Weights first = weigh(b, c0, w.splat(sink, {1}));
  // One chunk: \p full when all its partitions exist (its rows are read at
  // consecutive, unclamped offsets that share one address).
  auto chunk = [&](OpBuilder &lb, Value c, ValueRange iter, bool full) {
    WaveBuilder lw(lb, loc);
    Value m = iter[0], den = iter[1], keys = iter[2], acc = iter[3];
    Value wcol = iter[4], alpha = iter[5];
    // Chunk k's output rows (in the last chunk clamped like its maxima).
    Value p = lw.stepFrom(c, pc);
    if (!full) {
      Value last = lw.sub(lw.max(numParts, lw.idx(1)), lw.idx(1));
      p = lw.min(p, lw.splat(last, {pc}));
    }
    Value at = lw.add(lw.splat(base, {pc}), p);
    Value all = lw.constSplat(lb.getBoolAttr(true), {pc});
    Value o = uq::LoadRowsOp::create(lb, loc, lw.vec({pc, d}, f32), pout,
                                     lw.mul(at, lw.splat(lw.idx(d), {pc})),
                                     all, nullptr);
    // Chunk k + 1's weights (all empty past the last chunk).
    Weights next = weigh(lb, lw.add(c, lw.idx(pc)), m);
    Value scaled = arith::MulFOp::create(
        lb, loc, acc,
        vector::BroadcastOp::create(lb, loc, lw.vec({d}, f32), alpha));
    Value wide =
        vector::BroadcastOp::create(lb, loc, lw.vec({pc, d}, f32), wcol);
    Value accNew = reduceCols(
        lw, CK::ADD, arith::MulFOp::create(lb, loc, o, wide), scaled);
    stage_attrs::reassociate.set(accNew.getDefiningOp());
    Value denNew = arith::AddFOp::create(
        lb, loc, arith::MulFOp::create(lb, loc, den, next.alpha), next.wsum);
    Value keysNew = arith::AddFOp::create(lb, loc, keys, next.keys);
    scf::YieldOp::create(lb, loc,
                         ValueRange{next.m, denNew, keysNew, accNew, next.wgt,
                                    next.alpha});
  };
  // Whole chunks first, then at most one partial chunk.
  Value fullEnd = w.mul(w.divu(numParts, w.idx(pc)), w.idx(pc));
  auto fullLoop = scf::ForOp::create(
      b, loc, c0, fullEnd, w.idx(pc),
      ValueRange{first.m, first.wsum, first.keys,
                 w.constSplat(b.getF32FloatAttr(0.0f), {d}), first.wgt,
                 one(1.0f)},
      [&](OpBuilder &lb, Location, Value c, ValueRange iter) {
        chunk(lb, c, iter, /*full=*/true);
      });
  auto loop = scf::ForOp::create(
      b, loc, fullEnd, numParts, w.idx(pc), fullLoop.getResults(),
      [&](OpBuilder &lb, Location, Value c, ValueRange iter) {
        chunk(lb, c, iter, /*full=*/false);
      });
  // The loop leaves M, the denominator and the count with one more
  // (empty) chunk weighed: unchanged. Without any iteration (no partition)
  // the first chunk's.
  Value gm = loop.getResult(0), den = loop.getResult(1);
  Value acc = loop.getResult(3);
  Value noKeys = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       loop.getResult(2), one(0.0f));
  Value mref = w.select(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                              gm, one(ninf)),
                        one(0.0f), gm);
  Value keysDen = den;
  if (cfg.sinks)
    den = arith::AddFOp::create(
        b, loc, den,
        expNat(w, arith::SubFOp::create(b, loc, w.splat(sink, {1}), mref)));
  // 0 / 0 only for a row with nothing to attend to; NaN stays NaN.
  Value denZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                        den, one(0.0f));
  Value zeroRow = w.constSplat(b.getF32FloatAttr(0.0f), {d});
  auto toRow = [&](Value x) {
    return vector::BroadcastOp::create(
        b, loc, w.vec({d}, getElementTypeOrSelf(x.getType())), x);
  };
  Value out = arith::DivFOp::create(b, loc, acc, toRow(den));
  out = w.select(toRow(arith::OrIOp::create(b, loc, denZero, noKeys)), zeroRow,
                 out);
  Value meanRow, share;
  if (cfg.vMean) {
    Value kvh = w.divu(head, w.idx(cfg.group()));
    meanRow = vector::LoadOp::create(b, loc, w.vec({d}, f32),
                                     arg(f, spec, w, "v_mean"),
                                     ValueRange{w.mul(kvh, w.idx(d))});
    // The keys' share of the softmax: 1 without sinks, 0 for a row with
    // nothing to attend to.
    Value sh = arith::DivFOp::create(b, loc, keysDen, den);
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       keysDen, one(0.0f));
    share = toRow(w.select(none, one(0.0f), sh));
  }
  out = finishRows(w, cfg, out, meanRow, share);
  vector::StoreOp::create(b, loc, out, arg(f, spec, w, "out"),
                          ValueRange{w.mul(row, w.idx(d))});
  return f;
}

//===----------------------------------------------------------------------===//
// single pass
//===----------------------------------------------------------------------===//

gpu::GPUFuncOp uq::wave::buildSinglePassKernel(OpBuilder &b, Location loc,
                                               const AttentionConfig &cfg,
                                               KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads, hkv = cfg.numKVHeads;
  const int64_t g = cfg.group();
  spec.name = cfg.base + "_single";
  spec.op = "decode_attention";
  spec.args = keyLoopArgs(cfg);
  if (cfg.sinks)
    spec.args.push_back({"sinks", "global_buffer", "f32", {hq}, "read",
                         "attention sink logit of each query head"});
  spec.args.insert(
      spec.args.end(),
      {{"out", "global_buffer", typeToDtype(cfg.resultType),
        {"num_seqs", hq, d}, "write", "attention output"},
       {"num_seqs", "by_value", "i32", {}, "value", "number of sequences"},
       {"num_blocks", "by_value", "i32", {}, "value", "blocks in the cache"},
       {"max_blocks", "by_value", "i32", {}, "value",
        "block-table width (blocks per sequence)"}});
  // The partial kernel's option arguments (query scales, query bias), then
  // the merge's (v_mean).
  addOptionArgs(cfg, "partial", spec);
  addOptionArgs(cfg, "merge", spec);
  spec.grid = {Dim(1), Dim(hkv), Dim("num_seqs")};
  spec.gridRule = "(1, num_kv_heads, num_seqs): the whole sequence in one "
                  "workgroup per KV head, no merge; the host launches it "
                  "instead of the partial and merge kernels when its "
                  "partition rule gives one partition";
  spec.params = {{"head_dim", d},
                 {"num_q_heads", hq},
                 {"num_kv_heads", hkv},
                 {"block_size", cfg.blockSize},
                 {"slot_bytes", cfg.slotBytes},
                 {"tile_tokens", cfg.tileTokens}};

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value part = w.blockId(gpu::Dimension::x);
  Value kvh = w.blockId(gpu::Dimension::y);
  Value seq = w.blockId(gpu::Dimension::z);
  Value numSeqs = arg(f, spec, w, "num_seqs");
  guardBody(w, w.andi(w.cmp(CmpIPredicate::ult, seq, numSeqs),
                      w.andi(w.cmp(CmpIPredicate::eq, part, w.idx(0)),
                             w.cmp(CmpIPredicate::ult, kvh, w.idx(hkv)))));
  AttentionConfig one = cfg;
  one.spreadPartitions = true;
  std::unique_ptr<FormatOps> fmt;
  KeyLoop kl = emitKeyLoop(w, one, f, spec, w.idx(0), kvh, seq, w.idx(1), fmt);

  Type f32 = b.getF32Type();
  float ninf = -std::numeric_limits<float>::infinity();
  Value rowMask = groupRows(w, g);
  auto rowsOf = [&](float x) {
    return w.constSplat(b.getF32FloatAttr(x), {kRows});
  };
  // The partial kernel's normalised rows and the merge's weights for one
  // partition: M = max(sink, m), w = l e^(m - M), den = w + e^(sink - M)
  // (base 2 here: m is).
  Value lScaled = kl.l;
  if (fmt->pScale() != 1.0f)
    lScaled = arith::MulFOp::create(b, loc, kl.l, rowsOf(fmt->pScale()));
  Value out = arith::DivFOp::create(b, loc, kl.acc,
                                    w.broadcastRows(lScaled, d));
  Value heads = w.add(w.splat(w.mul(kvh, w.idx(g)), {kRows}), w.step(kRows));
  Value share;
  if (cfg.sinks) {
    Value sink = vector::GatherOp::create(
        b, loc, w.vec({kRows}, f32), arg(f, spec, w, "sinks"),
        ValueRange{w.idx(0)}, heads, rowMask, rowsOf(ninf));
    Value sink2 = arith::MulFOp::create(b, loc, sink, rowsOf(kLog2e));
    Value mAll = arith::MaximumFOp::create(b, loc, sink2, kl.m);
    Value mRef = w.select(arith::CmpFOp::create(b, loc,
                                                arith::CmpFPredicate::OEQ,
                                                mAll, rowsOf(ninf)),
                          rowsOf(0.0f), mAll);
    Value wgt = arith::MulFOp::create(
        b, loc, kl.l,
        math::Exp2Op::create(b, loc,
                             arith::SubFOp::create(b, loc, kl.m, mRef)));
    Value den = arith::AddFOp::create(
        b, loc, wgt,
        math::Exp2Op::create(b, loc,
                             arith::SubFOp::create(b, loc, sink2, mRef)));
    share = arith::DivFOp::create(b, loc, wgt, den);
    out = arith::MulFOp::create(b, loc, out, w.broadcastRows(share, d));
  } else {
    share = rowsOf(1.0f);
  }
  // A sequence without keys is 0, whatever its sink.
  Value zero = w.constSplat(b.getF32FloatAttr(0.0f), {kRows, d});
  out = w.select(kl.nonEmpty, out, zero);
  share = w.select(kl.nonEmpty, share, rowsOf(0.0f));
  Value meanRows;
  if (cfg.vMean) {
    Value mean = vector::LoadOp::create(b, loc, w.vec({d}, f32),
                                        arg(f, spec, w, "v_mean"),
                                        ValueRange{w.mul(kvh, w.idx(d))});
    meanRows = w.broadcastCols(mean, kRows);
  }
  out = finishRows(w, cfg, out, meanRows,
                   cfg.vMean ? w.broadcastRows(share, d) : Value());
  Value rowsAt = w.mul(
      w.add(w.splat(w.mul(seq, w.idx(hq)), {kRows}), heads),
      w.splat(w.idx(d), {kRows}));
  uq::StoreRowsOp::create(b, loc, out, arg(f, spec, w, "out"), rowsAt,
                          rowMask);
  return f;
}
