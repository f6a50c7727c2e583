//===- AttentionCommon.h - Pieces shared by the attention kernels -*- C++ -*-===//
//
// Helpers of the wave-level attention kernels shared by the decode kernels
// (AttentionKernels.cpp) and the paged prefill kernel (PrefillKernels.cpp):
// kernel arguments by name, the guard of a kernel body, the GQA row mapping,
// the format-dependent slot reads and products (FormatOps) and the
// block-table reads of a key tile.
//
//===----------------------------------------------------------------------===//

#ifndef UQ_LIB_CONVERSION_UQTOWAVE_ATTENTIONCOMMON_H
#define UQ_LIB_CONVERSION_UQTOWAVE_ATTENTIONCOMMON_H

#include "Kernels.h"

#include "uq/Codegen/Numerics.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

namespace uq::wave::detail {

using namespace mlir;
using arith::CmpIPredicate;
using uq::ScalarEmitter;

constexpr float kLog2e = 1.4426950408889634f;

/// Index of the argument named \p name of \p spec.
inline unsigned argIndex(const KernelSpec &spec, StringRef name) {
  for (auto [i, a] : llvm::enumerate(spec.args))
    if (a.name == name)
      return i;
  llvm_unreachable("unknown kernel argument");
}

/// The kernel's argument named \p name; i32 scalars come back as index.
inline Value arg(gpu::GPUFuncOp f, const KernelSpec &spec, WaveBuilder &w,
          StringRef name) {
  Value v = f.getArgument(argIndex(spec, name));
  if (v.getType().isInteger(32))
    return w.toIndex(v);
  return v;
}

/// Wraps the rest of the kernel body in `scf.if cond` followed by the
/// return; the builder is left inside the `then` block, before its yield.
inline void guardBody(WaveBuilder &w, Value cond) {
  auto ifOp = scf::IfOp::create(w.b, w.loc, cond, /*withElse=*/false);
  w.b.setInsertionPointAfter(ifOp);
  gpu::ReturnOp::create(w.b, w.loc);
  w.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
}

/// A vector<16xi1> of the rows that are real query heads of the group.
inline Value groupRows(WaveBuilder &w, int64_t group) {
  return w.cmp(CmpIPredicate::ult, w.step(kRows),
               w.splat(w.idx(group), {kRows}));
}

/// Rows of a [kRows] tile whose row i is query head `kvh * group + i` of
/// sequence `seq`: the element offset of (seq, head, 0) in a [S, Hq, D]
/// buffer (rows past the group point at head 0 of the group; they are
/// masked).
inline Value queryRowOffsets(WaveBuilder &w, const AttentionConfig &cfg, Value seq,
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
inline int64_t paddedK(int64_t d) { return ((d + kMfmaK - 1) / kMfmaK) * kMfmaK; }

inline bool isMX(KVFormatAttr f) {
  return f.getElement() == ElementCode::fp4_e2m1 ||
         f.getElement() == ElementCode::fp8_e4m3;
}

inline Value constScales(WaveBuilder &w, int64_t rows, int64_t k) {
  Value bytes =
      w.constSplat(w.b.getIntegerAttr(w.b.getI8Type(), 127), {rows, k / 32});
  return w.bitcast(bytes, w.b.getType<Float8E8M0FNUType>());
}

/// vector.contract of [M x K] by [K x N] (\p rhsTransposed: [N x K]) into
/// an [M x N] f32 accumulator.
inline Value contract(WaveBuilder &w, Value lhs, Value rhs, Value acc,
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
  /// The query's A scales [16 x paddedK / 32] (E8M0) with
  /// query_precision = fp8_e4m3_scaled; null: scale 1.
  Value queryScales = {};
  /// A workgroup (LDS) buffer holding the key tile's slot bytes
  /// (storeTile's copy, laid out as tileRegions says, from byte ldsBase);
  /// null: keyLogits and accumulatePV read the cache directly.
  Value lds = {};
  Value ldsBase = {};
  /// Query rows of the tiles (MFMA rows: a multiple of 16; the prefill
  /// kernel's rows per wave, decode's 16).
  int64_t rows = kRows;
  /// The prefill kernel's shared value tile (option prefill-shared-v,
  /// FP4 values): a workgroup buffer of bf16 in which the waves store the
  /// converted values of each key tile ([t x sharedVPitch()] elements per
  /// copy, from element sharedVBase), which accumulatePV reads; the LDS
  /// copy of the slot bytes then holds the keys only. Null: the values come
  /// from the slot bytes and every wave converts them.
  Value sharedV = {};
  Value sharedVBase = {};

  /// Elements between rows of the shared value tile: D plus 16 bytes, the
  /// transposing reads' row padding (at most 2-way bank conflicts; Distribute
  /// option transpose-row-pad).
  int64_t sharedVPitch() const { return d + 8; }

  /// One run of bytes of a slot that the products read: at \p slotOffset
  /// in the slot, \p width bytes of data loaded as \p cols bytes per token
  /// (cols > width: the MFMA's K padding, zeros). In LDS token i of the
  /// tile holds its \p cols bytes at \p ldsOffset + i * \p pitch.
  struct Region {
    int64_t slotOffset, cols, width, ldsOffset = 0, pitch = 0;
  };
  /// The regions of a slot, keys first (codes, scales), then values (not
  /// with a shared value tile: the LDS copy holds the keys only).
  SmallVector<Region> tileRegions() const {
    SmallVector<Region> rs = slotRegions(/*values=*/!sharedV);
    int64_t at = 0;
    for (Region &r : rs) {
      // Rows of a multiple of 64 bytes are padded by 16: the 16 rows a
      // 16-byte-per-lane read touches fall into different banks (64 banks
      // of 4 bytes; gfx950-notes.md), not into the same 4 banks every
      // 256 / cols rows.
      r.pitch = r.cols % 64 == 0 ? r.cols + 16 : r.cols;
      r.ldsOffset = at;
      at += t * r.pitch;
    }
    return rs;
  }
  /// The slot's regions (offsets in the slot only), the values' with
  /// \p values.
  SmallVector<Region> slotRegions(bool values) const {
    SmallVector<Region> rs;
    int64_t kp = paddedK(d);
    switch (cfg.kFormat.getElement()) {
    case ElementCode::bf16:
      rs.push_back({0, 2 * d, 2 * d});
      break;
    case ElementCode::fp4_e2m1:
      rs.push_back({0, kp / 2, d / 2});
      rs.push_back(
          {cfg.layout.getKeyScaleOffset(d, cfg.kFormat), kp / 32, d / 32});
      break;
    case ElementCode::fp8_e4m3:
      rs.push_back({0, kp, d});
      break;
    }
    if (!values)
      return rs;
    int64_t codeOff = cfg.layout.getValueCodeOffset(d, cfg.kFormat);
    switch (cfg.vFormat.getElement()) {
    case ElementCode::fp4_e2m1:
      rs.push_back({codeOff, d / 2, d / 2});
      rs.push_back(
          {cfg.layout.getValueScaleOffset(d, cfg.kFormat, cfg.vFormat),
           d / 32, d / 32});
      break;
    case ElementCode::fp8_e4m3:
      rs.push_back({codeOff, d, d});
      break;
    case ElementCode::bf16:
      rs.push_back({codeOff, 2 * d, 2 * d});
      break;
    }
    return rs;
  }
  /// Rows of the shared value tile: [n] element offsets from \p first, one
  /// pitch apart.
  Value sharedVRows(Value first, int64_t n) {
    return w.add(w.splat(first, {n}),
                 w.mul(w.step(n), w.splat(w.idx(sharedVPitch()), {n})));
  }
  /// The FP4 value codes [n x D/2] and scale bytes [n x D/32] of the \p n
  /// tokens at the slots' byte offsets \p slots (rows off \p valid read
  /// zeros: code 0 is 0.0 whatever its scale), from the cache: a wave's
  /// share of a key tile for the shared value tile, each row over
  /// 64 / n lanes (at most 16 bytes each, inside one scale group).
  SmallVector<Value> loadValueShare(Value slots, Value valid, int64_t n) {
    SmallVector<Region> all = slotRegions(/*values=*/true);
    SmallVector<Value> out;
    for (size_t i = all.size() - 2; i < all.size(); ++i) {
      const Region &r = all[i];
      Value at = w.add(slots, w.splat(w.idx(r.slotOffset), {n}));
      Value bytes = uq::LoadRowsOp::create(
          w.b, w.loc, w.vec({n, r.cols}, w.b.getI8Type()), cache, at, valid,
          nullptr);
      int64_t lanes = std::max<int64_t>(gfx950::kWaveLanes / n, r.cols / 16);
      stage_attrs::lanesPerRow.set(
          bytes.getDefiningOp(),
          w.b.getI64IntegerAttr(std::min<int64_t>(lanes, r.cols)));
      out.push_back(bytes);
    }
    return out;
  }
  /// Converts loadValueShare's rows to bf16 (exact: an FP4 value times a
  /// power of two, or an E4M3 scale) and stores them into the shared value
  /// tile at the element offsets \p rowsAt ([n]). A gpu.barrier must
  /// follow before any wave reads them.
  void storeValueShare(ArrayRef<Value> share, Value rowsAt, int64_t n) {
    Value codes = w.bitcast(share[0], w.b.getType<Float4E2M1FNType>());
    Value scales =
        cfg.vFormat.getScale() == ScaleEncoding::e4m3
            ? w.bitcast(share[1], w.b.getType<Float8E4M3FNType>())
            : w.bitcast(share[1], w.b.getType<Float8E8M0FNUType>());
    Value v = uq::ScaledExtOp::create(
        w.b, w.loc, w.vec({n, d}, w.b.getBF16Type()), codes, scales);
    uq::StoreRowsOp::create(w.b, w.loc, v, sharedV, rowsAt,
                            w.constSplat(w.b.getBoolAttr(true), {n}));
  }
  /// Bytes of the LDS copy of one key tile.
  int64_t ldsTileBytes() const {
    Region last = tileRegions().back();
    return last.ldsOffset + t * last.pitch;
  }
  /// Region \p i of the tile's tokens as [t x cols] bytes: from the cache
  /// at the slots' byte offsets \p slots, or from the LDS copy.
  Value readRegion(unsigned i, Value slots, Value valid) {
    Region r = tileRegions()[i];
    VectorType type = w.vec({t, r.cols}, w.b.getI8Type());
    if (lds)
      return uq::LoadRowsOp::create(w.b, w.loc, type, lds,
                                    ldsRows(r, ldsBase), valid, nullptr);
    Value at =
        r.slotOffset ? w.add(slots, w.splat(w.idx(r.slotOffset), {t})) : slots;
    return uq::LoadRowsOp::create(
        w.b, w.loc, type, cache, at, valid,
        r.width == r.cols ? IntegerAttr() : w.b.getI64IntegerAttr(r.width));
  }
  /// Byte offsets of the tile's tokens in region \p r of the LDS copy
  /// that starts at byte \p base.
  Value ldsRows(const Region &r, Value base) {
    return w.add(w.splat(w.add(base, w.idx(r.ldsOffset)), {t}),
                 w.mul(w.step(t), w.splat(w.idx(r.pitch), {t})));
  }
  /// Loads the tokens of \p mine (this wave's share of the valid tokens)
  /// of every region from the cache, padded to its cols with zeros: the
  /// first half of a copy into LDS (storeTile, after other work).
  SmallVector<Value> loadTile(Value slots, Value mine) {
    Value buf = lds;
    lds = Value();
    SmallVector<Value> out;
    for (auto [i, r] : llvm::enumerate(tileRegions())) {
      Value bytes = readRegion(i, slots, mine);
      // Rows over 16 lanes (4 lanes per row; 2 for 2-byte rows), as the
      // MFMA operands hold them: the block ids' [t / bs x bs] expansion
      // (blockIdsOfTile) merges into that row layout.
      stage_attrs::lanesPerRow.set(
          bytes.getDefiningOp(),
          w.b.getI64IntegerAttr(
              std::min<int64_t>(4, std::max<int64_t>(1, r.cols))));
      out.push_back(bytes);
    }
    lds = buf;
    return out;
  }
  /// Stores loadTile's rows into the LDS copy at byte \p base. A
  /// gpu.barrier must follow before any wave reads it.
  void storeTile(ArrayRef<Value> bytes, Value base, Value mine) {
    assert(lds && "no LDS buffer to store into");
    for (auto [i, r] : llvm::enumerate(tileRegions()))
      uq::StoreRowsOp::create(w.b, w.loc, bytes[i], lds, ldsRows(r, base),
                              mine);
  }

  /// The query tile, once per partition: FP8 codes [16 x paddedK] for
  /// microscaled keys, bf16 [16 x D] for bf16 keys.
  Value loadQuery(Value rowOffsets, Value rowMask) {
    if (cfg.kFormat.getElement() == ElementCode::bf16) {
      // The workspace holds bf16 values.
      return uq::LoadRowsOp::create(w.b, w.loc,
                                    w.vec({rows, d}, w.b.getBF16Type()),
                                    query, rowOffsets, rowMask, nullptr);
    }
    int64_t kp = paddedK(d);
    Value codes = uq::LoadRowsOp::create(
        w.b, w.loc, w.vec({rows, kp}, w.b.getI8Type()), query, rowOffsets,
        rowMask, kp == d ? IntegerAttr() : w.b.getI64IntegerAttr(d));
    return w.bitcast(codes, w.b.getType<Float8E4M3FNType>());
  }

  /// Logits [16 x t] (f32, unscaled) of the query tile with the keys of the
  /// slots at byte offsets \p slots (rows masked by \p valid).
  Value keyLogits(Value q, Value slots, Value valid) {
    KVFormatAttr kf = cfg.kFormat;
    Value zero = w.constSplat(w.b.getF32FloatAttr(0.0f), {rows, t});
    if (kf.getElement() == ElementCode::bf16) {
      Value bytes = readRegion(0, slots, valid);
      Value k = w.bitcast(bytes, w.b.getBF16Type());
      return contract(w, q, k, zero, /*rhsTransposed=*/true);
    }
    int64_t kp = paddedK(d);
    Value qScales = queryScales ? queryScales : constScales(w, rows, kp);
    Value k, kScales;
    if (kf.getElement() == ElementCode::fp4_e2m1) {
      Value bytes = readRegion(0, slots, valid);
      k = w.bitcast(bytes, w.b.getType<Float4E2M1FNType>());
      Value sBytes = readRegion(1, slots, valid);
      kScales = w.bitcast(sBytes, w.b.getType<Float8E8M0FNUType>());
    } else {
      Value bytes = readRegion(0, slots, valid);
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
    // The value regions follow the key regions (tileRegions).
    unsigned v0 = cfg.kFormat.getElement() == ElementCode::fp4_e2m1 ? 2 : 1;
    switch (vf.getElement()) {
    case ElementCode::fp4_e2m1: {
      Value pb = arith::TruncFOp::create(
          w.b, w.loc, w.vec({rows, t}, w.b.getBF16Type()), p);
      if (sharedV) {
        // The workgroup's converted tile, every row (the rows of invalid
        // tokens hold zeros): read in the B-operand layout by transposing
        // reads (uq-assign-lane-layouts, "transposing reads from a shared
        // tile").
        Value v = uq::LoadRowsOp::create(
            w.b, w.loc, w.vec({t, d}, w.b.getBF16Type()), sharedV,
            sharedVRows(sharedVBase, t),
            w.constSplat(w.b.getBoolAttr(true), {t}), nullptr);
        return contract(w, pb, v, acc, /*rhsTransposed=*/false);
      }
      Value bytes = readRegion(v0, slots, valid);
      Value codes = w.bitcast(bytes, w.b.getType<Float4E2M1FNType>());
      Value sBytes = readRegion(v0 + 1, slots, valid);
      // UE8M0 scales, or E4M3 ones (scale = e4m3: code * S is exact in
      // bf16, see uq.scaled_ext).
      Value scales =
          vf.getScale() == ScaleEncoding::e4m3
              ? w.bitcast(sBytes, w.b.getType<Float8E4M3FNType>())
              : w.bitcast(sBytes, w.b.getType<Float8E8M0FNUType>());
      Value v = uq::ScaledExtOp::create(
          w.b, w.loc, w.vec({t, d}, w.b.getBF16Type()), codes, scales);
      return contract(w, pb, v, acc, /*rhsTransposed=*/false);
    }
    case ElementCode::fp8_e4m3: {
      Value bytes = readRegion(v0, slots, valid);
      Value v = w.bitcast(bytes, w.b.getType<Float8E4M3FNType>());
      // P in [0, 256]: RNE to E4M3 by the format's own encoder.
      ScalarEmitter es(w.b, w.loc, {rows, t});
      Value codes = arith::TruncIOp::create(
          w.b, w.loc, w.vec({rows, t}, i8), es.fp8Encode(p));
      Value p8 = w.bitcast(codes, w.b.getType<Float8E4M3FNType>());
      return contract(w, p8, v, acc, /*rhsTransposed=*/false);
    }
    case ElementCode::bf16: {
      Value bytes = readRegion(v0, slots, valid);
      Value v = w.bitcast(bytes, w.b.getBF16Type());
      Value pb = arith::TruncFOp::create(
          w.b, w.loc, w.vec({rows, t}, w.b.getBF16Type()), p);
      return contract(w, pb, v, acc, /*rhsTransposed=*/false);
    }
    }
    llvm_unreachable("unknown element code");
  }
};

/// Entry \p i of the block-table run starting at index \p first, for the
/// tile starting at \p t0: one uniform (scalar) load. A block that starts at
/// or past \p end (null: none does; block 0 never does) gives 0, read at
/// \p first (always inside the table). With \p guard (an i1, uniform) the
/// table is read only where it holds, else the entry is 0: a tile that may
/// lie past the sequence's row (a copy issued without a branch around it).
inline Value blockTableEntry(WaveBuilder &w, Value tables, Value first,
                             Value t0, Value end, int64_t bs, int64_t i,
                             Value guard = Value()) {
  OpBuilder &b = w.b;
  Value used = end && i > 0
                   ? w.cmp(CmpIPredicate::ult, w.add(t0, w.idx(i * bs)), end)
                   : Value();
  Value at = w.add(first, w.idx(i));
  if (used)
    at = w.select(used, at, first);
  Value id;
  if (guard) {
    // A scalar branch around the scalar load only (s_load_dword stays
    // scalar; the loads of the tile that follow are not under it).
    Type i32 = b.getI32Type();
    auto ifOp = scf::IfOp::create(b, w.loc, TypeRange{i32}, guard,
                                  /*withElse=*/true);
    {
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value read = memref::LoadOp::create(b, w.loc, tables, ValueRange{at});
      scf::YieldOp::create(b, w.loc, ValueRange{read});
      b.setInsertionPointToStart(ifOp.elseBlock());
      Value zero =
          arith::ConstantOp::create(b, w.loc, b.getI32IntegerAttr(0));
      scf::YieldOp::create(b, w.loc, ValueRange{zero});
    }
    id = ifOp.getResult(0);
  } else {
    id = memref::LoadOp::create(b, w.loc, tables, ValueRange{at});
  }
  if (used)
    id = w.select(used, id,
                  arith::ConstantOp::create(b, w.loc, b.getI32IntegerAttr(0)));
  return id;
}

/// The block-table entry of each of the \p t tokens of the tile starting at
/// \p t0 (token i at position t0 + i). The table is read once per block of
/// the tile, not once per token: a tile spans t / bs blocks when bs divides
/// the tile (an entry per block, expanded to its tokens; bs >= 4) and one
/// block when the tile divides bs (one uniform entry); other block sizes
/// read an entry per token. Entries of tokens past \p end are 0 (a null \p end: the tile is
/// full, no entry is masked).
/// With \p maxBlock (an i32, num_blocks - 1), entries are clamped into
/// [0, maxBlock] in i32, before the widening to index: a v_med3_i32 per
/// entry, where a clamp of 64-bit indices costs compares and select pairs.
inline Value blockIdsOfTile(WaveBuilder &w, Value tables, Value tableRow, Value t0,
                     Value end, int64_t bs, int64_t t, Value tok,
                     Value valid, Value maxBlock = Value()) {
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
  } else if (t % bs == 0 && t / bs <= 4) {
    // A few blocks per tile (bs >= t / 4): one uniform (scalar) load per
    // block, the tile's entries selected per token from them; a per-lane
    // gather would make every lane load an entry (t / bs distinct values)
    // and count 4 bytes per lane against the kernel's memory traffic.
    // Entries of blocks past \p end are 0, read at the first entry's index
    // (always inside the table).
    int64_t nb = t / bs;
    Value blockOf = w.divu(w.step(t), w.splat(w.idx(bs), {t}));
    for (int64_t i = 0; i < nb; ++i) {
      Value id = blockTableEntry(w, tables, first, t0, end, bs, i);
      Value splat = w.splat(id, {t});
      ids = i == 0 ? splat
                   : w.select(w.cmp(CmpIPredicate::eq, blockOf,
                                    w.splat(w.idx(i), {t})),
                              splat, ids);
    }
  } else if (t % bs == 0 && bs >= 4) {
    // (Block sizes 2 and 3 take the per-token path below: the [t/bs x bs]
    // expansion of bs = 2 has no lane layout the distribution can reshape.)
    int64_t nb = t / bs;
    Value entries = w.add(w.splat(first, {nb}), w.step(nb));
    Value starts = w.add(w.splat(t0, {nb}),
                         w.mul(w.step(nb), w.splat(w.idx(bs), {nb})));
    Value used = end ? w.cmp(CmpIPredicate::ult, starts, w.splat(end, {nb}))
                     : w.constSplat(b.getBoolAttr(true), {nb});
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
  if (maxBlock) {
    ids = w.max(w.min(ids, w.splat(maxBlock, {t})),
                w.constSplat(b.getI32IntegerAttr(0), {t}));
    // Non-negative after the clamp (num_blocks <= 0 gives length 0: no
    // tile is read).
    return arith::IndexCastUIOp::create(b, loc, w.vec({t}, b.getIndexType()),
                                        ids);
  }
  return arith::IndexCastOp::create(b, loc, w.vec({t}, b.getIndexType()), ids);
}

/// The byte offsets in the cache of the slots of the \p t tokens of the
/// tile starting at \p t0 (aligned to t) for KV head \p kvh: entry i is
/// ((block(t0 + i) * bs + (t0 + i) % bs) * hkv + kvh) * sb (token-major),
/// ((block(t0 + i) * hkv + kvh) * bs + (t0 + i) % bs) * sb (\p headMajor:
/// #uq.cache_layout<head_major>, the bs slots of a head contiguous), the block id
/// clamped into [0, maxBlock] (an i32). When the tile spans at most 4
/// blocks (t % bs == 0, bs >= t / 4) or lies in one (bs % t == 0), the
/// table is read with one uniform (scalar) load per block and each block's
/// offset computed once per tile in scalar arithmetic: a lane then selects
/// its block's offset and adds a per-token constant (folded into the load's
/// offset field by the distribution stage). Other block sizes go through
/// blockIdsOfTile per token (gathers masked by \p valid). \p guard: as
/// blockTableEntry's, for the uniform loads.
///
/// \p entries: the block-table entries already read (tileEntries) for
/// the tile of \p entriesT0 (a uniform index, null: \p t0 itself), which
/// holds this tile's tokens: no table is read here, this tile's blocks are
/// picked from them (a kernel that reads the entries of a later tile ahead
/// of its use, so that no scalar load's latency sits before the tile's
/// loads). Only with the uniform-load block sizes (hasUniformEntries).
inline bool hasUniformEntries(int64_t bs, int64_t t) {
  return bs % t == 0 || (t % bs == 0 && t / bs <= 4);
}

/// The tile at \p t0's block-table entries as tileSlots reads them
/// (hasUniformEntries block sizes): one uniform load per block, 0 for a
/// block at or past \p end, under \p guard as blockTableEntry's.
inline SmallVector<Value> tileEntries(WaveBuilder &w, Value tables,
                                      Value tableRow, Value t0, Value end,
                                      int64_t bs, int64_t t,
                                      Value guard = Value()) {
  Value first = w.add(tableRow, w.divu(t0, w.idx(bs)));
  int64_t nb = bs % t == 0 ? 1 : t / bs;
  SmallVector<Value> ids;
  for (int64_t i = 0; i < nb; ++i)
    ids.push_back(blockTableEntry(w, tables, first, t0, end, bs, i, guard));
  return ids;
}

inline Value tileSlots(WaveBuilder &w, Value tables, Value tableRow, Value t0,
                       Value end, int64_t bs, int64_t t, Value tok,
                       Value valid, Value maxBlock, Value kvh, int64_t hkv,
                       int64_t sb, bool headMajor = false,
                       Value guard = Value(), ArrayRef<Value> entries = {},
                       Value entriesT0 = Value()) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  bool oneBlock = bs % t == 0;
  if (!hasUniformEntries(bs, t)) {
    // (Per-lane gathers masked by \p valid: nothing to guard.)
    Value bsv = w.splat(w.idx(bs), {t});
    Value hv = w.splat(w.idx(hkv), {t});
    Value blk = blockIdsOfTile(w, tables, tableRow, t0, end, bs, t, tok, valid,
                               maxBlock);
    Value slot;
    if (headMajor) {
      slot = w.add(w.mul(blk, hv), w.splat(kvh, {t}));
      slot = w.add(w.mul(slot, bsv), w.remu(tok, bsv));
    } else {
      slot = w.add(w.mul(blk, bsv), w.remu(tok, bsv));
      slot = w.add(w.mul(slot, hv), w.splat(kvh, {t}));
    }
    return w.mul(slot, w.splat(w.idx(sb), {t}));
  }
  Value zero32 = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  Value first = w.add(tableRow, w.divu(t0, w.idx(bs)));
  int64_t nb = oneBlock ? 1 : t / bs;
  // Per token: its place in its block (the same in every tile).
  Value pos = oneBlock ? w.step(t) : w.remu(w.step(t), w.splat(w.idx(bs), {t}));
  // Bytes between consecutive tokens of a block: hkv slots (token-major),
  // one slot (head-major).
  Value within = w.mul(pos, w.splat(w.idx(headMajor ? sb : hkv * sb), {t}));
  Value blockOf = nb > 1 ? w.divu(w.step(t), w.splat(w.idx(bs), {t})) : Value();
  // This tile's first block among \p entries (0: the same tile).
  Value skip = entriesT0 ? w.sub(w.divu(t0, w.idx(bs)),
                                 w.divu(entriesT0, w.idx(bs)))
                         : Value();
  Value slots;
  for (int64_t i = 0; i < nb; ++i) {
    Value id;
    if (entries.empty()) {
      id = blockTableEntry(w, tables, first, t0, end, bs, i, guard);
    } else if (!skip) {
      id = entries[i];
    } else {
      // Entry skip + i of the read tile's (a uniform select chain).
      Value k = w.add(skip, w.idx(i));
      id = entries[0];
      for (size_t e = 1; e < entries.size(); ++e)
        id = w.select(w.cmp(CmpIPredicate::eq, k, w.idx(int64_t(e))),
                      entries[e], id);
    }
    if (maxBlock)
      id = arith::MaxSIOp::create(
          b, loc, arith::MinSIOp::create(b, loc, id, maxBlock), zero32);
    Value idx = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), id);
    // The tile's first token in this block (one block: t0 % bs).
    Value start = oneBlock ? w.remu(t0, w.idx(bs)) : w.idx(0);
    Value base =
        headMajor
            ? w.mul(w.add(w.mul(w.add(w.mul(idx, w.idx(hkv)), kvh), w.idx(bs)),
                          start),
                    w.idx(sb))
            : w.mul(w.add(w.mul(w.add(w.mul(idx, w.idx(bs)), start),
                                w.idx(hkv)),
                          kvh),
                    w.idx(sb));
    Value splat = w.splat(base, {t});
    slots = i == 0 ? splat
                   : w.select(w.cmp(CmpIPredicate::eq, blockOf,
                                    w.splat(w.idx(i), {t})),
                              splat, slots);
  }
  return w.add(slots, within);
}

//===----------------------------------------------------------------------===//
// The accuracy options: per-32 query scales, channel means (docs/accuracy.md)
//===----------------------------------------------------------------------===//

/// The query kernel's scale bytes of the query rows (16 or more) as the
/// MFMA's A scales [rows x paddedK / 32]: \p rowOffsets are element
/// offsets of rows of D into the prepared query; padded K blocks (D = 64) read 0 (2^-127 times
/// zero codes).
inline Value loadQueryScales(WaveBuilder &w, const AttentionConfig &cfg,
                             Value scales, Value rowOffsets, Value rowMask) {
  const int64_t d = cfg.headDim, kp = paddedK(d);
  const int64_t rows = cast<VectorType>(rowOffsets.getType()).getDimSize(0);
  Value offsets = w.divu(rowOffsets, w.splat(w.idx(32), {rows}));
  Value bytes = uq::LoadRowsOp::create(
      w.b, w.loc, w.vec({rows, kp / 32}, w.b.getI8Type()), scales, offsets,
      rowMask, kp == d ? IntegerAttr() : w.b.getI64IntegerAttr(d / 32));
  return w.bitcast(bytes, w.b.getType<Float8E8M0FNUType>());
}

/// The query kernel's q . rot(k_mean) of the query rows ([rows] f32): \p rows
/// are (row of the query) * num_q_heads + head; masked rows read 0.
inline Value gatherQueryBias(WaveBuilder &w, Value bias, Value rows,
                             Value rowMask) {
  const int64_t n = cast<VectorType>(rows.getType()).getDimSize(0);
  return vector::GatherOp::create(
      w.b, w.loc, w.vec({n}, w.b.getF32Type()), bias, ValueRange{w.idx(0)},
      rows, rowMask, w.constSplat(w.b.getF32FloatAttr(0.0f), {n}));
}

/// The extra arguments of the three attention kernels, after their other
/// arguments (which keep their positions).
inline void addOptionArgs(const AttentionConfig &cfg, StringRef kernel,
                   KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads, hkv = cfg.numKVHeads;
  const std::string &rows = cfg.rowsName;
  // The partial kernel of decode and the prefill kernel of paged attention
  // read what the query kernel wrote.
  bool query = kernel == "query",
       partial = kernel == "partial" || kernel == "prefill";
  if (cfg.scaledQuery && (query || partial))
    spec.args.push_back(
        {"query_scales", "global_buffer", "u8", {rows, hq, d / 32},
         query ? "write" : "read",
         "workspace: the UE8M0 scale of each 32 channels of the prepared "
         "query (query_precision = fp8_e4m3_scaled; the MFMA's A scales)"});
  if (cfg.kMean && query)
    spec.args.push_back({"k_mean", "global_buffer", "f32", {hkv, d}, "read",
                         "per-channel key mean of each KV head (the cache "
                         "write subtracted it)"});
  if (cfg.kMean && (query || partial))
    spec.args.push_back(
        {"query_bias", "global_buffer", "f32", {rows, hq},
         query ? "write" : "read",
         "workspace: prepared query . rotated k_mean, added to every logit"});
  if (cfg.vMean && kernel == "merge")
    spec.args.push_back({"v_mean", "global_buffer", "f32", {hkv, d}, "read",
                         "per-channel value mean of each KV head, added back "
                         "with the keys' share of the softmax"});
}

/// The FP8 codes (i32, [D]) of the f32 query row \p x with one UE8M0 scale
/// per 32 channels (ref::QueryPrecision::FP8_E4M3_Scaled): \p bytes gets the
/// scale bytes ([D / 32] i32).
inline Value scaledQueryCodes(WaveBuilder &w, Value x, int64_t d, Value &bytes) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  const int64_t groups = d / 32;
  Type f32 = b.getF32Type();
  Value xg = vector::ShapeCastOp::create(b, loc, w.vec({groups, 32}, f32), x);
  // NaN propagates (maximumf), and a non-finite maximum gives scale 1.
  Value amax = w.reduceRows(vector::CombiningKind::MAXIMUMF,
                            math::AbsFOp::create(b, loc, xg),
                            w.constSplat(b.getF32FloatAttr(0.0f), {groups}));
  ScalarEmitter gs(b, loc, {groups});
  ScalarEmitter es(b, loc, {groups, 32});
  bytes = gs.fp8BlockScaleByte(gs.bits(amax));
  Value inv = w.broadcastRows(gs.e8m0Reciprocal(bytes), 32);
  Value codes = es.fp8Encode(arith::MulFOp::create(b, loc, xg, inv));
  return vector::ShapeCastOp::create(b, loc, w.vec({d}, b.getI32Type()),
                                     codes);
}

/// The values of scaled query codes: fp8(codes) * 2^e per 32 channels.
inline Value scaledQueryValues(WaveBuilder &w, Value codes, Value bytes, int64_t d) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  const int64_t groups = d / 32;
  Value cg = vector::ShapeCastOp::create(
      b, loc, w.vec({groups, 32}, b.getI32Type()), codes);
  ScalarEmitter gs(b, loc, {groups});
  ScalarEmitter es(b, loc, {groups, 32});
  Value dec = arith::MulFOp::create(b, loc, es.fp8Decode(cg),
                                    w.broadcastRows(gs.e8m0Decode(bytes), 32));
  return vector::ShapeCastOp::create(b, loc, w.vec({d}, b.getF32Type()), dec);
}

/// q . rot(mean) for the prepared query values \p q ([D] f32) and the row
/// \p mean ([D] f32, original domain) rotated like the keys (f64
/// butterfly, one rounding: the reference's rotation of the mean).
inline Value meanBias(WaveBuilder &w, const AttentionConfig &cfg, Value q,
               Value mean) {
  OpBuilder &b = w.b;
  Location loc = w.loc;
  const int64_t d = cfg.headDim;
  Type f32 = b.getF32Type();
  if (cfg.kFormat.isRotated()) {
    Value m64 = arith::ExtFOp::create(b, loc, w.vec({d}, b.getF64Type()), mean);
    mean = arith::TruncFOp::create(b, loc, w.vec({d}, f32),
                                   uq::RotateOp::create(b, loc, m64));
  }
  Value prod = arith::MulFOp::create(b, loc, q, mean);
  Value row = vector::ShapeCastOp::create(b, loc, w.vec({1, d}, f32), prod);
  return w.reduceRows(vector::CombiningKind::ADD, row,
                      w.constSplat(b.getF32FloatAttr(0.0f), {1}));
}

} // namespace uq::wave::detail

#endif // UQ_LIB_CONVERSION_UQTOWAVE_ATTENTIONCOMMON_H
