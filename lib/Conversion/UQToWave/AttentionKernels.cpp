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

#include "Kernels.h"

#include "../UQToLinalg/Numerics.h"

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
using uq::detail::ScalarEmitter;

std::string AttentionConfig::queryWorkspaceDtype() const {
  return kFormat.getElement() == ElementCode::bf16 ? "bf16" : "u8";
}

gpu::GPUFuncOp uq::wave::createKernel(OpBuilder &b, Location loc,
                                      const KernelSpec &spec) {
  MLIRContext *ctx = b.getContext();
  auto type = FunctionType::get(ctx, spec.argTypes(ctx), {});
  auto func = gpu::GPUFuncOp::create(b, loc, spec.name, type);
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
      {int32_t(spec.block[0]), int32_t(spec.block[1]),
       int32_t(spec.block[2])}));
  b.setInsertionPointToStart(&func.getBody().front());
  return func;
}

namespace {

constexpr float kLog2e = 1.4426950408889634f;

/// Index of the argument named \p name of \p spec.
unsigned argIndex(const KernelSpec &spec, StringRef name) {
  for (auto [i, a] : llvm::enumerate(spec.args))
    if (a.name == name)
      return i;
  llvm_unreachable("unknown kernel argument");
}

/// The kernel's argument named \p name; i32 scalars come back as index.
Value arg(gpu::GPUFuncOp f, const KernelSpec &spec, WaveBuilder &w,
          StringRef name) {
  Value v = f.getArgument(argIndex(spec, name));
  if (v.getType().isInteger(32))
    return w.toIndex(v);
  return v;
}

/// Wraps the rest of the kernel body in `scf.if cond` followed by the
/// return; the builder is left inside the `then` block, before its yield.
void guardBody(WaveBuilder &w, Value cond) {
  auto ifOp = scf::IfOp::create(w.b, w.loc, cond, /*withElse=*/false);
  w.b.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(w.b, w.loc);
  w.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
}

/// A vector<16xi1> of the rows that are real query heads of the group.
Value groupRows(WaveBuilder &w, int64_t group) {
  return w.cmp(CmpIPredicate::ult, w.step(kRows),
               w.splat(w.idx(group), {kRows}));
}

/// Rows of a [kRows] tile whose row i is query head `kvh * group + i` of
/// sequence `seq`: the element offset of (seq, head, 0) in a [S, Hq, D]
/// buffer (rows past the group point at head 0 of the group; they are
/// masked).
Value queryRowOffsets(WaveBuilder &w, const AttentionConfig &cfg, Value seq,
                      Value kvh) {
  int64_t g = cfg.group();
  Value rows = w.step(kRows);
  Value inGroup = groupRows(w, g);
  rows = w.select(inGroup, rows, w.splat(w.idx(0), {kRows}));
  Value head0 =
      w.add(w.mul(seq, w.idx(cfg.numQHeads)), w.mul(kvh, w.idx(g)));
  Value heads = w.add(w.splat(head0, {kRows}), rows);
  return w.mul(heads, w.splat(w.idx(cfg.headDim), {kRows}));
}

/// K padded to whole scaled MFMAs (D = 64 uses half of one).
int64_t paddedK(int64_t d) { return ((d + kMfmaK - 1) / kMfmaK) * kMfmaK; }

bool isMX(KVFormatAttr f) {
  return f.getElement() == ElementCode::fp4_e2m1 ||
         f.getElement() == ElementCode::fp8_e4m3;
}

Value constScales(WaveBuilder &w, int64_t rows, int64_t k) {
  Value bytes =
      w.constSplat(w.b.getIntegerAttr(w.b.getI8Type(), 127), {rows, k / 32});
  return w.bitcast(bytes, w.b.getType<Float8E8M0FNUType>());
}

/// vector.contract of [M x K] by [K x N] (\p rhsTransposed: [N x K]) into
/// an [M x N] f32 accumulator.
Value contract(WaveBuilder &w, Value lhs, Value rhs, Value acc,
               bool rhsTransposed) {
  MLIRContext *ctx = w.b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  SmallVector<AffineMap> maps = {
      AffineMap::get(3, 0, {m, k}, ctx),
      rhsTransposed ? AffineMap::get(3, 0, {n, k}, ctx)
                    : AffineMap::get(3, 0, {k, n}, ctx),
      AffineMap::get(3, 0, {m, n}, ctx)};
  SmallVector<Attribute> iters = {
      vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
      vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
      vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)};
  return vector::ContractionOp::create(w.b, w.loc, lhs, rhs, acc,
                                       w.b.getAffineMapArrayAttr(maps),
                                       w.b.getArrayAttr(iters));
}

/// The slot reads and products that depend on the formats.
struct FormatOps {
  const AttentionConfig &cfg;
  WaveBuilder &w;
  Value cache, query;
  int64_t t, d;

  /// The query tile, once per partition: FP8 codes [16 x paddedK] for
  /// microscaled keys, bf16 [16 x D] for bf16 keys.
  Value loadQuery(Value rowOffsets, Value rowMask) {
    if (cfg.kFormat.getElement() == ElementCode::bf16) {
      // The workspace holds bf16 values.
      return uq::LoadRowsOp::create(w.b, w.loc,
                                    w.vec({kRows, d}, w.b.getBF16Type()),
                                    query, rowOffsets, rowMask, nullptr);
    }
    int64_t kp = paddedK(d);
    Value codes = uq::LoadRowsOp::create(
        w.b, w.loc, w.vec({kRows, kp}, w.b.getI8Type()), query, rowOffsets,
        rowMask, kp == d ? IntegerAttr() : w.b.getI64IntegerAttr(d));
    return w.bitcast(codes, w.b.getType<Float8E4M3FNType>());
  }

  /// Logits [16 x t] (f32, unscaled) of the query tile with the keys of the
  /// slots at byte offsets \p slots (rows masked by \p valid).
  Value keyLogits(Value q, Value slots, Value valid) {
    KVFormatAttr kf = cfg.kFormat;
    Value zero = w.constSplat(w.b.getF32FloatAttr(0.0f), {kRows, t});
    Type i8 = w.b.getI8Type();
    if (kf.getElement() == ElementCode::bf16) {
      Value bytes = uq::LoadRowsOp::create(w.b, w.loc, w.vec({t, 2 * d}, i8),
                                           cache, slots, valid, nullptr);
      Value k = w.bitcast(bytes, w.b.getBF16Type());
      return contract(w, q, k, zero, /*rhsTransposed=*/true);
    }
    int64_t kp = paddedK(d);
    Value qScales = constScales(w, kRows, kp);
    Value k, kScales;
    if (kf.getElement() == ElementCode::fp4_e2m1) {
      Value bytes = uq::LoadRowsOp::create(
          w.b, w.loc, w.vec({t, kp / 2}, i8), cache, slots, valid,
          kp == d ? IntegerAttr() : w.b.getI64IntegerAttr(d / 2));
      k = w.bitcast(bytes, w.b.getType<Float4E2M1FNType>());
      int64_t off = cfg.layout.getKeyScaleOffset(d, kf);
      Value sOff = w.add(slots, w.splat(w.idx(off), {t}));
      Value sBytes = uq::LoadRowsOp::create(
          w.b, w.loc, w.vec({t, kp / 32}, i8), cache, sOff, valid,
          kp == d ? IntegerAttr() : w.b.getI64IntegerAttr(d / 32));
      kScales = w.bitcast(sBytes, w.b.getType<Float8E8M0FNUType>());
    } else {
      Value bytes = uq::LoadRowsOp::create(
          w.b, w.loc, w.vec({t, kp}, i8), cache, slots, valid,
          kp == d ? IntegerAttr() : w.b.getI64IntegerAttr(d));
      k = w.bitcast(bytes, w.b.getType<Float8E4M3FNType>());
      kScales = constScales(w, t, kp);
    }
    return uq::ScaledMmaOp::create(w.b, w.loc, q, qScales, k, kScales, zero);
  }

  /// Scale applied to P before it is rounded for the PV product (undone by
  /// dividing the row sums): 256 keeps FP8 probabilities away from the
  /// subnormal range; 1 for bf16.
  float pScale() const {
    return cfg.vFormat.getElement() == ElementCode::fp8_e4m3 ? 256.0f : 1.0f;
  }

  /// acc + P [16 x t] (f32, in [0, pScale]) times the values of the slots.
  Value accumulatePV(Value p, Value slots, Value valid, Value acc) {
    KVFormatAttr vf = cfg.vFormat;
    Type i8 = w.b.getI8Type();
    int64_t codeOff = cfg.layout.getValueCodeOffset(d, cfg.kFormat);
    Value cOff = w.add(slots, w.splat(w.idx(codeOff), {t}));
    switch (vf.getElement()) {
    case ElementCode::fp4_e2m1: {
      Value bytes = uq::LoadRowsOp::create(w.b, w.loc, w.vec({t, d / 2}, i8),
                                           cache, cOff, valid, nullptr);
      Value codes = w.bitcast(bytes, w.b.getType<Float4E2M1FNType>());
      int64_t scaleOff =
          cfg.layout.getValueScaleOffset(d, cfg.kFormat, cfg.vFormat);
      Value sOff = w.add(slots, w.splat(w.idx(scaleOff), {t}));
      Value sBytes = uq::LoadRowsOp::create(
          w.b, w.loc, w.vec({t, d / 32}, i8), cache, sOff, valid, nullptr);
      Value scales = w.bitcast(sBytes, w.b.getType<Float8E8M0FNUType>());
      Value v = uq::ScaledExtOp::create(
          w.b, w.loc, w.vec({t, d}, w.b.getBF16Type()), codes, scales);
      Value pb = arith::TruncFOp::create(
          w.b, w.loc, w.vec({kRows, t}, w.b.getBF16Type()), p);
      return contract(w, pb, v, acc, /*rhsTransposed=*/false);
    }
    case ElementCode::fp8_e4m3: {
      Value bytes = uq::LoadRowsOp::create(w.b, w.loc, w.vec({t, d}, i8),
                                           cache, cOff, valid, nullptr);
      Value v = w.bitcast(bytes, w.b.getType<Float8E4M3FNType>());
      // P in [0, 256]: RNE to E4M3 by the format's own encoder.
      ScalarEmitter es(w.b, w.loc, {kRows, t});
      Value codes = arith::TruncIOp::create(
          w.b, w.loc, w.vec({kRows, t}, i8), es.fp8Encode(p));
      Value p8 = w.bitcast(codes, w.b.getType<Float8E4M3FNType>());
      return contract(w, p8, v, acc, /*rhsTransposed=*/false);
    }
    case ElementCode::bf16: {
      Value bytes = uq::LoadRowsOp::create(w.b, w.loc, w.vec({t, 2 * d}, i8),
                                           cache, cOff, valid, nullptr);
      Value v = w.bitcast(bytes, w.b.getBF16Type());
      Value pb = arith::TruncFOp::create(
          w.b, w.loc, w.vec({kRows, t}, w.b.getBF16Type()), p);
      return contract(w, pb, v, acc, /*rhsTransposed=*/false);
    }
    }
    llvm_unreachable("unknown element code");
  }
};

/// The block-table entry of each of the \p t tokens of the tile starting at
/// \p t0 (token i at position t0 + i). The table is read once per block of
/// the tile, not once per token: a tile spans t / bs blocks when bs divides
/// the tile (an entry per block, expanded to its tokens) and one block when
/// the tile divides bs (one uniform entry); other block sizes read an entry
/// per token. Entries of tokens past \p end are 0.
Value blockIdsOfTile(WaveBuilder &w, Value tables, Value tableRow, Value t0,
                     Value end, int64_t bs, int64_t t, Value tok,
                     Value valid) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  Type i32 = b.getI32Type();
  Value c0 = w.idx(0);
  Value first = w.add(tableRow, w.divu(t0, w.idx(bs)));
  Value ids;
  if (bs % t == 0) {
    // One block for the whole tile (tiles are aligned to t).
    Value id = memref::LoadOp::create(b, loc, tables, ValueRange{first});
    ids = w.splat(id, {t});
  } else if (t % bs == 0) {
    int64_t nb = t / bs;
    Value entries = w.add(w.splat(first, {nb}), w.step(nb));
    Value starts = w.add(w.splat(t0, {nb}),
                         w.mul(w.step(nb), w.splat(w.idx(bs), {nb})));
    Value used = w.cmp(CmpIPredicate::ult, starts, w.splat(end, {nb}));
    Value perBlock = vector::GatherOp::create(
        b, loc, w.vec({nb}, i32), tables, ValueRange{c0}, entries, used,
        w.constSplat(b.getI32IntegerAttr(0), {nb}));
    Value col = vector::ShapeCastOp::create(b, loc, w.vec({nb, 1}, i32),
                                            perBlock);
    Value wide = vector::BroadcastOp::create(b, loc, w.vec({nb, bs}, i32), col);
    ids = vector::ShapeCastOp::create(b, loc, w.vec({t}, i32), wide);
  } else {
    Value entry = w.add(w.splat(tableRow, {t}),
                        w.divu(tok, w.splat(w.idx(bs), {t})));
    ids = vector::GatherOp::create(b, loc, w.vec({t}, i32), tables,
                                   ValueRange{c0}, entry, valid,
                                   w.constSplat(b.getI32IntegerAttr(0), {t}));
  }
  return arith::IndexCastOp::create(b, loc, w.vec({t}, b.getIndexType()), ids);
}

} // namespace

//===----------------------------------------------------------------------===//
// query
//===----------------------------------------------------------------------===//

gpu::GPUFuncOp uq::wave::buildQueryKernel(OpBuilder &b, Location loc,
                                          const AttentionConfig &cfg,
                                          KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads;
  std::string qt = typeToDtype(cfg.queryType);
  std::string wt = cfg.queryWorkspaceDtype();
  spec.name = cfg.base + "_query";
  spec.op = "decode_attention";
  spec.args = {
      {"query", "global_buffer", qt, {"num_seqs", hq, d}, "read",
       "query of the new token, [num_seqs, num_q_heads, head_dim]"},
      {"query_prepared", "global_buffer", wt, {"num_seqs", hq, d}, "write",
       "workspace: the query rotated like the keys and rounded to FP8 E4M3 "
       "(codes; bf16 values for bf16 keys)"},
      {"num_seqs", "by_value", "i32", {}, "value", "number of sequences"}};
  spec.grid = {Dim("num_seqs"), Dim(hq), Dim(1)};
  spec.gridRule = "(num_seqs, num_q_heads, 1)";
  spec.params = {{"head_dim", d}, {"num_q_heads", hq}};

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value seq = w.blockId(gpu::Dimension::x);
  Value head = w.blockId(gpu::Dimension::y);
  Value numSeqs = arg(f, spec, w, "num_seqs");
  guardBody(w, w.cmp(CmpIPredicate::ult, seq, numSeqs));

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
  Value codes = es.fp8Encode(x);
  Value out;
  if (wt == "bf16")
    out = es.fromF32(es.fp8Decode(codes), b.getBF16Type());
  else
    out = arith::TruncIOp::create(b, loc, w.vec({d}, b.getI8Type()), codes);
  vector::StoreOp::create(b, loc, out, arg(f, spec, w, "query_prepared"),
                          ValueRange{at});
  return f;
}

//===----------------------------------------------------------------------===//
// partial
//===----------------------------------------------------------------------===//

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
                      w.cmp(CmpIPredicate::ult, part, numParts)));

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

  float ninf = -std::numeric_limits<float>::infinity();
  Value mInit = w.constSplat(b.getF32FloatAttr(ninf), {kRows});
  Value lInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows});
  Value accInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows, d});
  Value maxBlock = w.sub(numBlocks, w.idx(1));
  Value tableRow = w.mul(seq, maxBlocks);
  const float scale2 = cfg.softmaxScale * kLog2e;
  auto loop = scf::ForOp::create(
      b, loc, start, end, w.idx(t), ValueRange{mInit, lInit, accInit},
      [&](OpBuilder &lb, Location, Value t0, ValueRange iter) {
        WaveBuilder lw(lb, loc);
        // Paging: the slot (byte offset) of each token of the tile.
        Value tok = lw.stepFrom(t0, t);
        Value valid = lw.cmp(CmpIPredicate::ult, tok, lw.splat(end, {t}));
        Value bsv = lw.splat(lw.idx(bs), {t});
        Value blk = blockIdsOfTile(lw, tables, tableRow, t0, end, bs, t, tok,
                                   valid);
        // Out-of-range block ids are clamped into the cache, as on the CPU
        // path: the kernel never reads outside its buffers.
        blk = lw.max(lw.min(blk, lw.splat(maxBlock, {t})),
                     lw.splat(c0, {t}));
        Value slot = lw.add(lw.mul(blk, bsv), lw.remu(tok, bsv));
        slot = lw.add(lw.mul(slot, lw.splat(lw.idx(hkv), {t})),
                      lw.splat(kvh, {t}));
        slot = lw.mul(slot, lw.splat(lw.idx(sb), {t}));

        // Logits in base 2, -inf past the end.
        Value s = fmt.keyLogits(q, slot, valid);
        Value x = arith::MulFOp::create(
            lb, loc, s, lw.constSplat(lb.getF32FloatAttr(scale2), {kRows, t}));
        Value validTile = lw.broadcastCols(valid, kRows);
        x = lw.select(validTile, x,
                      lw.constSplat(lb.getF32FloatAttr(ninf), {kRows, t}));
        // Online softmax.
        Value m = iter[0], l = iter[1], acc = iter[2];
        Value mt = lw.reduceRows(vector::CombiningKind::MAXIMUMF, x, m);
        Value alpha = math::Exp2Op::create(
            lb, loc, arith::SubFOp::create(lb, loc, m, mt));
        Value p = math::Exp2Op::create(
            lb, loc, arith::SubFOp::create(lb, loc, x, lw.broadcastRows(mt, t)));
        Value lsum = lw.reduceRows(
            vector::CombiningKind::ADD, p,
            arith::MulFOp::create(lb, loc, l, alpha));
        // The row sum of P may be summed in any order (the bound of the
        // kernel's P rounding covers it); the distribution saves shuffles.
        lsum.getDefiningOp()->setAttr("uq.reassociate", lb.getUnitAttr());
        float ps = fmt.pScale();
        if (ps != 1.0f)
          p = arith::MulFOp::create(
              lb, loc, p, lw.constSplat(lb.getF32FloatAttr(ps), {kRows, t}));
        Value accScaled =
            arith::MulFOp::create(lb, loc, acc, lw.broadcastRows(alpha, d));
        Value accNew = fmt.accumulatePV(p, slot, valid, accScaled);
        scf::YieldOp::create(lb, loc, ValueRange{mt, lsum, accNew});
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

gpu::GPUFuncOp uq::wave::buildMergeKernel(OpBuilder &b, Location loc,
                                          const AttentionConfig &cfg,
                                          KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads;
  spec.name = cfg.base + "_merge";
  spec.op = "merge_partitions";
  spec.args = {
      {"partial_out", "global_buffer", "f32",
       {"num_seqs", hq, "num_partitions", d}, "read",
       "normalised output of each partition"},
      {"partial_max", "global_buffer", "f32",
       {"num_seqs", hq, "num_partitions"}, "read",
       "max logit of each partition"},
      {"partial_sum", "global_buffer", "f32",
       {"num_seqs", hq, "num_partitions"}, "read",
       "sum of exp(logit - max) of each partition"}};
  if (cfg.sinks)
    spec.args.push_back({"sinks", "global_buffer", "f32", {hq}, "read",
                         "attention sink logit of each query head"});
  spec.args.push_back({"out", "global_buffer", typeToDtype(cfg.resultType),
                       {"num_seqs", hq, d}, "write", "attention output"});
  spec.args.push_back(
      {"num_seqs", "by_value", "i32", {}, "value", "number of sequences"});
  spec.args.push_back({"num_partitions", "by_value", "i32", {}, "value",
                       "split-K partitions of the partial results"});
  spec.grid = {Dim(hq), Dim("num_seqs"), Dim(1)};
  spec.gridRule = "(num_q_heads, num_seqs, 1)";
  spec.params = {{"head_dim", d}, {"num_q_heads", hq}};

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value head = w.blockId(gpu::Dimension::x);
  Value seq = w.blockId(gpu::Dimension::y);
  Value numSeqs = arg(f, spec, w, "num_seqs");
  Value numParts = arg(f, spec, w, "num_partitions");
  guardBody(w, w.cmp(CmpIPredicate::ult, seq, numSeqs));

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
  auto gmax = scf::ForOp::create(
      b, loc, c0, numParts, c1, ValueRange{sink},
      [&](OpBuilder &lb, Location, Value p, ValueRange iter) {
        auto [i, mx, sm, empty] = partition(lb, p);
        (void)i;
        (void)sm;
        Value v = arith::SelectOp::create(
            lb, loc, empty,
            arith::ConstantOp::create(lb, loc, lb.getF32FloatAttr(ninf)), mx);
        scf::YieldOp::create(
            lb, loc, ValueRange{arith::MaximumFOp::create(lb, loc, iter[0], v)});
      });
  Value gm = gmax.getResult(0);
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
  out = w.select(denZero, zeroRow, out);
  if (cfg.vFormat.isRotated()) {
    Value o64 = arith::ExtFOp::create(b, loc, w.vec({d}, b.getF64Type()), out);
    out = arith::TruncFOp::create(b, loc, w.vec({d}, f32),
                                  uq::RotateOp::create(b, loc, o64));
  }
  if (!cfg.resultType.isF32()) {
    ScalarEmitter es(b, loc, {d});
    out = es.fromF32(out, cfg.resultType);
  }
  vector::StoreOp::create(b, loc, out, arg(f, spec, w, "out"),
                          ValueRange{w.mul(row, w.idx(d))});
  return f;
}
