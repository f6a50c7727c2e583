//===- PrefillKernels.cpp - Wave-level paged (prefill + decode) attention -===//
//
// uq.paged_attention as three wave-level kernels:
//  - query:   decode's query kernel over the rows of [num_tokens, Hq, D];
//  - prefill: one (query tile, KV head, split-K partition) per workgroup
//             of W waves (cfg.prefillWaves); each wave's R MFMA rows
//             (cfg.prefillRows: 16 or 32, one or two 16-row MFMA tiles
//             that share every K and V operand of the wave) are
//             `R / G` query tokens of one sequence times the G query heads
//             of the KV head (G = the GQA ratio; R % G rows stay idle), the
//             tile is the W waves' consecutive tokens. The key loop pages
//             through the sequence's block table like decode's partial
//             kernel, from the first key any row of the workgroup sees to
//             the last (the same loop in every wave: every wave meets every
//             barrier). With W > 1 the waves copy each key tile's slot bytes
//             into LDS (each wave 32 / W of its tokens) and read their K and
//             V operands from the copy (FormatOps::lds), so a tile is read
//             from memory once per workgroup; two copies alternate (the
//             loads of tile i + 1 are issued before the products of tile i,
//             stored after them, one barrier per tile); each row masks
//             its own keys (causal: key <= position; with a window W also
//             key > position - W) and runs decode's online softmax with a
//             guard for rows that have seen no key yet; the tiles whose
//             keys every row of the workgroup sees run in a loop of their
//             own without the masks (three loops: masked, full, masked).
//             QK is the scaled
//             MFMA (FP8 query x FP4/FP8 keys) or bf16, PV as decode: the
//             format hooks of AttentionCommon.h are shared.
//  - merge:   decode's merge kernel over the rows of [num_tokens, Hq]
//             (sinks, rotation back, result type).
// Tiles of all sequences share one launch (a mixed batch of decodes and
// prefill chunks): sequence s owns the tiles starting at
// b[s] / tokens_per_tile + s (b = the sanitised query_start_loc), the rule
// of vLLM's unified attention (vllm/v1/attention/ops/
// triton_unified_attention.py, find_seq_idx), extended by two sequences
// without keys for the tokens before b[0] and after b[num_seqs], so that
// every row of the result is written. Each workgroup finds its sequence by
// a scan over query_start_loc.
//
// With cfg.prefillSharedV (on by default) the FP4 V tile is converted to
// bf16 once per workgroup, each wave its share of the tokens, into a bf16
// LDS tile that every wave's PV reads (FormatOps::sharedV); without it
// every wave converts the whole tile. 16x16 MFMAs only (no 32x32x64 MFMA).
//
//===----------------------------------------------------------------------===//

#include "AttentionCommon.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace uq;
using namespace uq::wave;
using namespace uq::wave::detail;

int64_t uq::wave::prefillTokensPerTile(const AttentionConfig &cfg) {
  return cfg.prefillWaves * (cfg.prefillRows / cfg.group());
}

namespace {

/// The prefill kernel's launch description (arguments, grid and its rule,
/// block, parameters).
void describePrefillKernel(const AttentionConfig &cfg, KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads, hkv = cfg.numKVHeads;
  const int64_t bs = cfg.blockSize, sb = cfg.slotBytes, t = cfg.tileTokens;
  const int64_t waves = cfg.prefillWaves;
  const int64_t rpw = cfg.prefillRows;
  const int64_t tpw = rpw / cfg.group();
  const int64_t tpt = prefillTokensPerTile(cfg);
  spec.name = cfg.base + "_prefill";
  spec.block = {64 * waves, 1, 1};
  spec.op = "paged_attention_partial";
  spec.args = {
      {"query_prepared", "global_buffer", cfg.queryWorkspaceDtype(),
       {"num_tokens", hq, d}, "read", "the query kernel's output"},
      {"cache", "global_buffer", "u8", cacheShape(cfg.layout, bs, hkv, sb),
       "read",
       std::string("paged KV cache (") +
           (isHeadMajor(cfg.layout) ? "head-major" : "token-major") +
           "), vLLM slot layout [K codes][K scales][V codes][V scales]"},
      {"block_tables", "global_buffer", "i32", {"num_seqs", "max_blocks"},
       "read", "cache block of each block_size tokens of a sequence"},
      {"seq_lens", "global_buffer", "i32", {"num_seqs"}, "read",
       "context tokens per sequence, its new tokens included"},
      {"query_start_loc", "global_buffer", "i32", {"num_query_starts"},
       "read",
       "first query token of each sequence, and the end of the last one"},
      {"partial_out", "global_buffer", "f32",
       {"num_tokens", hq, "num_partitions", d}, "write",
       "normalised output of each partition"},
      {"partial_max", "global_buffer", "f32",
       {"num_tokens", hq, "num_partitions"}, "write",
       "max logit of each partition, natural-log units (-inf when empty)"},
      {"partial_sum", "global_buffer", "f32",
       {"num_tokens", hq, "num_partitions"}, "write",
       "sum of exp(logit - max) of each partition (0 when empty)"},
      {"num_tokens", "by_value", "i32", {}, "value", "query tokens"},
      {"num_seqs", "by_value", "i32", {}, "value",
       "rows of seq_lens and block_tables"},
      {"num_query_starts", "by_value", "i32", {}, "value",
       "entries of query_start_loc (num_seqs + 1; sequences past "
       "num_query_starts - 1 are not read)"},
      {"num_blocks", "by_value", "i32", {}, "value", "blocks in the cache"},
      {"max_blocks", "by_value", "i32", {}, "value",
       "block-table width (blocks per sequence)"},
      {"num_query_tiles", "by_value", "i32", {}, "value",
       "workgroups along x: at least num_tokens / tokens_per_tile + num_seqs "
       "+ 2 (integer division); more are idle"},
      {"num_partitions", "by_value", "i32", {}, "value",
       "split-K partitions: partition p covers keys [p * partition_size, "
       "(p + 1) * partition_size); the last one also covers the rest"}};
  addOptionArgs(cfg, "prefill", spec);
  spec.grid = {Dim("num_query_tiles"), Dim(hkv), Dim("num_partitions")};
  spec.params = {{"head_dim", d},
                 {"num_q_heads", hq},
                 {"num_kv_heads", hkv},
                 {"block_size", bs},
                 {"slot_bytes", sb},
                 {"partition_size", cfg.partitionSize},
                 {"tile_tokens", t},
                 {"tokens_per_tile", tpt},
                 {"waves_per_workgroup", waves},
                 {"rows_per_wave", rpw},
                 {"tokens_per_wave", tpw},
                 {"shared_values",
                  waves > 1 && cfg.prefillSharedV &&
                          cfg.vFormat.getElement() == ElementCode::fp4_e2m1
                      ? 1
                      : 0},
                 {"window", cfg.window}};
  spec.gridRule =
      "(num_query_tiles, num_kv_heads, num_partitions); num_query_tiles >= "
      "num_tokens / tokens_per_tile + num_seqs + 2; any num_partitions >= 1 "
      "is correct";
}

/// The steps of the prefill kernel's body, in the order they emit IR, and
/// what one step computes for the next.
struct PrefillSteps {
  PrefillSteps(OpBuilder &b, Location loc, const AttentionConfig &cfg,
               KernelSpec &spec, gpu::GPUFuncOp f, WaveBuilder &w)
      : b(b), loc(loc), cfg(cfg), spec(spec), f(f), w(w), d(cfg.headDim),
        hq(cfg.numQHeads), hkv(cfg.numKVHeads), bs(cfg.blockSize),
        sb(cfg.slotBytes), t(cfg.tileTokens), g(cfg.group()),
        waves(cfg.prefillWaves), rpw(cfg.prefillRows), tpw(rpw / g),
        tpt(prefillTokensPerTile(cfg)) {}

  /// The workgroup's coordinates and sizes; the body runs for a workgroup
  /// inside the grid only.
  void guardWorkgroup();
  /// The extended sequence and the tokens [tok0, tokEnd) of this query
  /// tile (a scan over query_start_loc); the rest runs for a tile with
  /// tokens only.
  void selectQueryTile();
  /// The sequence's length and the keys [start, end) any row of the tile
  /// sees in this partition (causal, windowed), from a tile-aligned start.
  void keyRange();
  /// This wave's rpw MFMA rows: token and query head of each row, the mask
  /// of real rows, their offsets in [T, Hq, D].
  void waveRows();
  /// The query, the key/value tiles (through LDS for W > 1 waves) and the
  /// online softmax over the key loop; then writePartials. One step: the
  /// loop body shares the tile's values with the double buffering around
  /// it.
  void keyLoop();
  /// The partition's normalised output, max and sum of each real row.
  void writePartials(ArrayRef<Value> carried, float pScale, float scale2,
                     Value mInit, Value lInit);

  OpBuilder &b;
  Location loc;
  const AttentionConfig &cfg;
  KernelSpec &spec;
  gpu::GPUFuncOp f;
  WaveBuilder &w;
  // W waves of rpw rows (16 or 32: one or two 16-row MFMA tiles sharing
  // every K and V operand): tpw tokens per wave, tpt per workgroup.
  const int64_t d, hq, hkv, bs, sb, t, g, waves, rpw, tpw, tpt;
  // guardWorkgroup
  Value tile, kvh, part, numTokens, numBlocks, maxBlocks, numParts, numTiles;
  Value c0, c1, ctpt, numSeqs;
  // selectQueryTile
  Value eSel, beginSel, endSel, tok0, tokEnd;
  // keyRange
  Value seq, len, qLen, start, end, loopStart, posFirst, posLast;
  // waveRows
  Value wave, rowMask, tokOfRow, rowHeads, rowOffsets;
};

void PrefillSteps::guardWorkgroup() {
  tile = w.blockId(gpu::Dimension::x);
  kvh = w.blockId(gpu::Dimension::y);
  part = w.blockId(gpu::Dimension::z);
  numTokens = arg(f, spec, w, "num_tokens");
  numBlocks = arg(f, spec, w, "num_blocks");
  maxBlocks = arg(f, spec, w, "max_blocks");
  numParts = arg(f, spec, w, "num_partitions");
  numTiles = arg(f, spec, w, "num_query_tiles");
  c0 = w.idx(0);
  c1 = w.idx(1);
  ctpt = w.idx(tpt);
  // Sequences: the smallest of the operands' counts (the input policy).
  numSeqs = w.max(w.min(arg(f, spec, w, "num_seqs"),
                              w.sub(arg(f, spec, w, "num_query_starts"), c1)),
                        c0);
  guardBody(w, w.andi(w.cmp(CmpIPredicate::ult, tile, numTiles),
                      w.cmp(CmpIPredicate::ult, part, numParts)));
}

void PrefillSteps::selectQueryTile() {
  Value qsl = arg(f, spec, w, "query_start_loc");
  // b[s] = min(T, max(0, qsl[0..s])) as a running maximum.
  auto clampT = [&](WaveBuilder &lw, Value v) {
    return lw.min(lw.max(lw.toIndex(v), lw.idx(0)), numTokens);
  };
  // Extended sequences e = 0 .. numSeqs + 1: e = 0 owns [0, b[0]), e = s + 1
  // owns [b[s], b[s + 1]), e = numSeqs + 1 owns [b[numSeqs], T). Tile i
  // belongs to the last e with start(e) = begin(e) / tpt + e <= i.
  Value hasSeqs = w.cmp(CmpIPredicate::sgt, numSeqs, c0);
  Value b0 = w.select(
      hasSeqs,
      clampT(w, memref::LoadOp::create(b, loc, qsl, ValueRange{c0})),
      numTokens);
  // e = 0: begins at token 0, start 0 <= every tile.
  eSel = c0;
  beginSel = c0;
  endSel = b0;
  {
    auto scan = scf::ForOp::create(
        b, loc, c0, numSeqs, c1, ValueRange{b0, eSel, beginSel, endSel},
        [&](OpBuilder &lb, Location, Value s, ValueRange it) {
          WaveBuilder lw(lb, loc);
          Value begin = it[0];
          Value next = lw.max(
              begin, clampT(lw, memref::LoadOp::create(
                                    lb, loc, qsl, ValueRange{lw.add(s, c1)})));
          Value e = lw.add(s, c1);
          Value start = lw.add(lw.divu(begin, ctpt), e);
          Value mine = lw.cmp(CmpIPredicate::ule, start, tile);
          scf::YieldOp::create(
              lb, loc,
              ValueRange{next, lw.select(mine, e, it[1]),
                         lw.select(mine, begin, it[2]),
                         lw.select(mine, next, it[3])});
        });
    Value last = scan.getResult(0);
    eSel = scan.getResult(1);
    beginSel = scan.getResult(2);
    endSel = scan.getResult(3);
    // e = numSeqs + 1: the tokens after the last sequence.
    Value e = w.add(numSeqs, c1);
    Value start = w.add(w.divu(last, ctpt), e);
    Value mine = w.cmp(CmpIPredicate::ule, start, tile);
    eSel = w.select(mine, e, eSel);
    beginSel = w.select(mine, last, beginSel);
    endSel = w.select(mine, numTokens, endSel);
  }
  // The tile's tokens [tok0, tokEnd) of its extended sequence.
  Value startSel = w.add(w.divu(beginSel, ctpt), eSel);
  tok0 = w.add(beginSel, w.mul(w.sub(tile, startSel), ctpt));
  tokEnd = w.min(endSel, w.add(tok0, ctpt));
  {
    // The rest runs only for a tile with tokens (inside the first guard:
    // no second return).
    auto ifOp = scf::IfOp::create(b, loc, w.cmp(CmpIPredicate::ult, tok0,
                                                tokEnd),
                                  /*withElse=*/false);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  }
}

void PrefillSteps::keyRange() {
  // A real sequence s = e - 1 (0 <= s < numSeqs) has keys; the two extra
  // ones have none.
  Value isReal = w.andi(w.cmp(CmpIPredicate::uge, eSel, c1),
                        w.cmp(CmpIPredicate::ule, eSel, numSeqs));
  seq = w.select(isReal, w.sub(eSel, c1), c0);
  Value noBlocks = w.cmp(CmpIPredicate::sle, numBlocks, c0);
  Value capacity =
      w.select(noBlocks, c0, w.mul(w.max(maxBlocks, c0), w.idx(bs)));
  len = c0;
  {
    auto ifOp = scf::IfOp::create(b, loc, b.getIndexType(), isReal,
                                  /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value l = w.toIndex(memref::LoadOp::create(
        b, loc, arg(f, spec, w, "seq_lens"), ValueRange{seq}));
    scf::YieldOp::create(b, loc, ValueRange{l});
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{c0});
    len = ifOp.getResult(0);
  }
  len = w.min(w.max(len, c0), capacity);
  // Query token i of the sequence sits at len - q + i; as an offset from the
  // token index: position = token + (len - q - begin) = token + shift.
  qLen = w.sub(endSel, beginSel);
  Value first = w.sub(tok0, beginSel);
  Value last = w.sub(w.sub(tokEnd, beginSel), c1);
  // Positions may be negative: signed index arithmetic.
  posFirst = w.sub(w.add(len, first), qLen);
  posLast = w.sub(w.add(len, last), qLen);
  // Keys any row sees: [lo, hi), intersected with the partition.
  Value lo = c0;
  if (cfg.window > 0)
    lo = w.max(c0, w.add(w.sub(posFirst, w.idx(cfg.window)), c1));
  Value hi = w.max(w.add(posLast, c1), c0);
  Value pStart = w.mul(part, w.idx(cfg.partitionSize));
  Value isLast = w.cmp(CmpIPredicate::eq, part, w.sub(numParts, c1));
  Value pEnd =
      w.select(isLast, hi, w.min(hi, w.add(pStart, w.idx(cfg.partitionSize))));
  start = w.max(lo, pStart);
  end = w.max(pEnd, start);
  // Tiles are aligned to t (blockIdsOfTile reads one table entry per block).
  loopStart = w.mul(w.divu(start, w.idx(t)), w.idx(t));
}

void PrefillSteps::waveRows() {
  // Wave `wave` of the workgroup owns the tokens [waveTok0, waveTok0 +
  // tpw) of [tok0, tokEnd); a wave past tokEnd has no rows (it still copies
  // its share of every key tile and meets every barrier). The key range
  // above is the workgroup's: the same loop in every wave.
  wave = waves > 1 ? gpu::SubgroupIdOp::create(b, loc, IntegerAttr())
                               .getResult()
                         : c0;
  Value waveTok0 = w.add(tok0, w.mul(wave, w.idx(tpw)));
  // Rows: row r is token waveTok0 + r / G, query head kvh * G + r % G.
  // r / G in f32 (trunc((r + 0.5) / G): exact for r < 32), r % G =
  // r - G (r / G): no integer vector division. LLVM 22's InstCombine /
  // VectorCombine turned the distributed `udiv <4 x i64> rows, 4` (G = 4;
  // exact in lane 0 only) into an exact shift of the lane id, i.e. assumed
  // lane % 16 == 0, and the P tile's LDS addresses went out of bounds
  // (found by PagedAttentionGPU.SlidingWindow, located with
  // `opt -O3 -opt-bisect-limit`).
  Type f32 = b.getF32Type();
  Type i32 = b.getI32Type();
  Value rows = w.step(rpw);
  Value rowsF = arith::SIToFPOp::create(
      b, loc, w.vec({rpw}, f32),
      arith::IndexCastOp::create(b, loc, w.vec({rpw}, i32), rows));
  // fptosi truncates: floor for these non-negative values.
  Value rowTokF = arith::MulFOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, rowsF,
                            w.constSplat(b.getF32FloatAttr(0.5f), {rpw})),
      w.constSplat(b.getF32FloatAttr(1.0f / float(g)), {rpw}));
  Value rowTok = arith::IndexCastOp::create(
      b, loc, w.vec({rpw}, b.getIndexType()),
      arith::FPToSIOp::create(b, loc, w.vec({rpw}, i32), rowTokF));
  Value rowHead = w.sub(rows, w.mul(rowTok, w.splat(w.idx(g), {rpw})));
  rowMask = w.andi(
      w.cmp(CmpIPredicate::ult, rowTok, w.splat(w.idx(tpw), {rpw})),
      w.cmp(CmpIPredicate::ult, w.add(w.splat(waveTok0, {rpw}), rowTok),
            w.splat(tokEnd, {rpw})));
  // Masked rows point at the workgroup's first row (they are not read).
  tokOfRow =
      w.select(rowMask, w.add(w.splat(waveTok0, {rpw}), rowTok),
               w.splat(tok0, {rpw}));
  Value headOfRow = w.add(w.splat(w.mul(kvh, w.idx(g)), {rpw}),
                          w.select(rowMask, rowHead, w.splat(c0, {rpw})));
  rowHeads = w.add(w.mul(tokOfRow, w.splat(w.idx(hq), {rpw})),
                         headOfRow);
  rowOffsets = w.mul(rowHeads, w.splat(w.idx(d), {rpw}));
}

// Long (about 220 lines) on purpose: the loop body (LDS double buffering,
// masks, MFMA logits, online softmax, PV) is one closure over the operands
// loaded here and the tile geometry, run three times (masked head, unmasked
// middle, masked tail); the steps before and after it (rows, partials) are
// PrefillSteps' other methods.
void PrefillSteps::keyLoop() {
  Type f32 = b.getF32Type();
  Type i32 = b.getI32Type();
  Value cache = arg(f, spec, w, "cache");
  Value tables = arg(f, spec, w, "block_tables");
  FormatOps fmt{cfg, w, cache, arg(f, spec, w, "query_prepared"), t, d};
  fmt.rows = rpw;
  Value q = fmt.loadQuery(rowOffsets, rowMask);
  // The accuracy options, as decode's partial kernel: per-32 query scales as
  // the MFMA's A scales, q . rot(k_mean) added to every logit of its row.
  if (cfg.scaledQuery && cfg.kFormat.getElement() != ElementCode::bf16)
    fmt.queryScales = loadQueryScales(w, cfg, arg(f, spec, w, "query_scales"),
                                      rowOffsets, rowMask);
  Value bias = cfg.kMean ? gatherQueryBias(w, arg(f, spec, w, "query_bias"),
                                           rowHeads, rowMask)
                         : Value();
  // W > 1: the key tile's slot bytes go through one LDS copy per
  // workgroup; wave w copies the tile's tokens [w * t / W, (w + 1) * t / W).
  // Two copies (double buffering): while the waves compute on tile i from
  // one, their loads of tile i + 1 are in flight and land in the other.
  const int64_t share = t / waves;
  // The shared value tile (prefill-shared-v): FP4 values converted to bf16
  // once per workgroup, each wave its share of the tile's tokens, into two
  // copies of [t x pitch] bf16 next to the key copies.
  const bool sharedV = waves > 1 && cfg.prefillSharedV &&
                       cfg.vFormat.getElement() == ElementCode::fp4_e2m1;
  const int64_t vTileElems = t * fmt.sharedVPitch();
  if (sharedV)
    fmt.sharedV = f.addWorkgroupAttribution(
        MemRefType::get({2 * vTileElems}, b.getBF16Type(), AffineMap(),
                        gpu::AddressSpaceAttr::get(
                            b.getContext(), gpu::AddressSpace::Workgroup)),
        loc);
  const int64_t tileBytes = fmt.ldsTileBytes();
  Value shareLo, shareHi;
  if (waves > 1) {
    fmt.lds = f.addWorkgroupAttribution(
        MemRefType::get({2 * tileBytes}, b.getI8Type(), AffineMap(),
                        gpu::AddressSpaceAttr::get(
                            b.getContext(), gpu::AddressSpace::Workgroup)),
        loc);
    shareLo = w.mul(wave, w.idx(share));
    shareHi = w.add(shareLo, w.idx(share));
  }

  // Each row's position as f32 (exact below 2^24 tokens; rows past the
  // tile get -1: they see nothing).
  auto toF32 = [&](WaveBuilder &lw, Value v, int64_t n) {
    Value i = arith::IndexCastOp::create(lw.b, loc, lw.vec({n}, i32), v);
    return arith::SIToFPOp::create(lw.b, loc, lw.vec({n}, f32), i);
  };
  Value shift = w.sub(w.sub(len, qLen), beginSel);
  Value rowPos = w.add(tokOfRow, w.splat(shift, {rpw}));
  Value rowPosF = w.select(rowMask, toF32(w, rowPos, rpw),
                           w.constSplat(b.getF32FloatAttr(-1.0f), {rpw}));
  Value rowPosTile = w.broadcastRows(rowPosF, t);

  float ninf = -std::numeric_limits<float>::infinity();
  Value mInit = w.constSplat(b.getF32FloatAttr(ninf), {rpw});
  Value lInit = w.constSplat(b.getF32FloatAttr(0.0f), {rpw});
  Value accInit = w.constSplat(b.getF32FloatAttr(0.0f), {rpw, d});
  Value maxBlock = w.sub(numBlocks, c1);
  Value tableRow = w.mul(seq, maxBlocks);
  const float scale2 = cfg.softmaxScale * kLog2e;
  // The tile's tokens from t0 that are keys of the partition.
  auto validOf = [&](WaveBuilder &lw, Value tok) {
    return lw.andi(lw.cmp(CmpIPredicate::ult, tok, lw.splat(end, {t})),
                   lw.cmp(CmpIPredicate::uge, tok, lw.splat(start, {t})));
  };
  // Byte offsets of the slots of the tile at t0 (tokens tok).
  // (decode's tileSlots: uniform block-table loads, block ids clamped into
  // the cache).
  Value maxBlock32 =
      arith::IndexCastOp::create(b, loc, b.getI32Type(), maxBlock);
  auto slotsOf = [&](WaveBuilder &lw, Value t0, Value tok, Value valid,
                     Value guard = Value(), ArrayRef<Value> entries = {}) {
    return tileSlots(lw, tables, tableRow, t0, end, bs, t, tok, valid,
                     maxBlock32, kvh, hkv, sb, isHeadMajor(cfg.layout), guard,
                     entries);
  };
  // This wave's share of the valid tokens of a tile.
  auto mineOf = [&](WaveBuilder &lw, Value valid) {
    Value at = lw.step(t);
    return lw.andi(
        valid, lw.andi(lw.cmp(CmpIPredicate::uge, at, lw.splat(shareLo, {t})),
                       lw.cmp(CmpIPredicate::ult, at, lw.splat(shareHi, {t}))));
  };
  // The value codes and scales of this wave's share of the tile at t0
  // ([share] rows, tokens t0 + shareLo ..; tokens that are not keys of the
  // partition read zeros). The block table is read for the share of the
  // tile \p t0Slots (t0, or the current tile for a next tile past the
  // end; it starts before the end), or for that tile's first tokens when
  // the share starts at or past the end (its rows are then all masked):
  // the table reads stay inside the sequence's row.
  auto loadShareV = [&](WaveBuilder &lw, Value t0, Value t0Slots,
                        Value guard = Value(), ArrayRef<Value> entries = {}) {
    Value tokS = lw.stepFrom(lw.add(t0, shareLo), share);
    Value validS =
        lw.andi(lw.cmp(CmpIPredicate::ult, tokS, lw.splat(end, {share})),
                lw.cmp(CmpIPredicate::uge, tokS, lw.splat(start, {share})));
    Value s0 = lw.add(t0Slots, shareLo);
    s0 = lw.select(lw.cmp(CmpIPredicate::ult, s0, end), s0, t0Slots);
    Value slotsS = tileSlots(lw, tables, tableRow, s0, end, bs, share, tokS,
                             validS, maxBlock32, kvh, hkv, sb,
                             isHeadMajor(cfg.layout), guard, entries,
                             entries.empty() ? Value() : t0Slots);
    return fmt.loadValueShare(slotsS, validS, share);
  };
  // ... converted and stored into the copy of the shared value tile at
  // element \p vBase.
  auto storeShareV = [&](ArrayRef<Value> shareV, Value vBase) {
    fmt.storeValueShare(
        shareV,
        fmt.sharedVRows(fmt.w.add(vBase, fmt.w.mul(shareLo,
                                                   fmt.w.idx(fmt.sharedVPitch()))),
                        share),
        share);
  };
  // The key tiles and the last one's start (the loop runs only when there
  // is one).
  Value ct = w.idx(t);
  Value nTiles = w.divu(w.add(w.sub(end, loopStart), w.idx(t - 1)), ct);
  Value lastStart =
      w.add(loopStart, w.mul(w.sub(w.max(nTiles, c1), c1), ct));
  // The block table one tile ahead of the loads (the LDS copies with the
  // uniform-load block sizes): iteration i, which issues tile i + 1's
  // loads, takes tile i + 1's entries from the loop's carried values and
  // reads tile i + 2's, so that no scalar load's latency sits between a
  // tile's start and its loads (before: a wait on each of the tile's table
  // reads, the value share's included). Reads past the last tile read the
  // last tile's entries (inside the sequence's row).
  const bool tableAhead = fmt.lds && hasUniformEntries(bs, t);
  SmallVector<Value> entriesNext;
  auto entriesAt = [&](WaveBuilder &lw, Value t0, Value guard = Value()) {
    return tileEntries(lw, tables, tableRow, lw.min(t0, lastStart), end, bs,
                       t, guard);
  };
  if (fmt.lds) {
    // The first tile into copy 0; the block table is read only when the
    // loop runs at all. With the shared value tile the copy is not under a
    // branch, only each scalar table read is (with no tile every token is
    // masked: nothing is loaded): under one, the query's loads would
    // still be in flight at the loop's entry on the path around it, and
    // LLVM's waitcnt insertion, which cannot count the next tile's
    // per-lane loads issued before the query's first use, would wait for
    // every load (vmcnt(0)) before each tile's first QK MFMA. (Without the
    // shared tile the whole copy stays under one branch: the loop waits
    // for its own loads early anyway, and the unbranched copy measured
    // 1.7 % slower there, docs/performance.md.)
    Value any = w.cmp(CmpIPredicate::ult, loopStart, end);
    auto copyFirst = [&](Value guard) {
      Value tok = w.stepFrom(loopStart, t);
      Value valid = validOf(w, tok);
      Value mine = mineOf(w, valid);
      fmt.storeTile(
          fmt.loadTile(slotsOf(w, loopStart, tok, valid, guard), mine), c0,
          mine);
      if (sharedV)
        storeShareV(loadShareV(w, loopStart, loopStart, guard), c0);
    };
    if (sharedV) {
      copyFirst(any);
    } else {
      auto ifOp = scf::IfOp::create(b, loc, any, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      copyFirst(Value());
    }
    if (tableAhead)
      entriesNext = entriesAt(w, w.add(loopStart, ct), any);
    gpu::BarrierOp::create(b, loc);
  }
  // One iteration of the key loop over the tile at t0; \p masked: the
  // keys are masked per row (causal, window, validity), else the tile is
  // one whose keys are all valid and seen by every row of the workgroup.
  auto body = [&](OpBuilder &lb, Value t0, ValueRange iter, bool masked) {
    WaveBuilder lw(lb, loc);
    Value tok = lw.stepFrom(t0, t);
    // (A full tile's keys are all valid.)
    Value valid =
        masked ? validOf(lw, tok) : lw.constSplat(lb.getBoolAttr(true), {t});
    Value slot, mineNext, nextBase, nextVBase;
    SmallVector<Value> next, nextV;
    SmallVector<Value> entriesAhead;
    if (fmt.lds) {
      // Tile i sits in copy i % 2; issue the loads of tile i + 1 now
      // (a tile past the end loads nothing; its table reads are the
      // current tile's).
      SmallVector<Value> entries;
      if (tableAhead) {
        entries.assign(iter.begin() + 3, iter.end());
        entriesAhead = entriesAt(lw, lw.add(t0, lw.idx(2 * t)));
      }
      Value i = lw.divu(lw.sub(t0, loopStart), lw.idx(t));
      // (Both bases as products, not next = tileBytes - cur: LLVM folds
      // the constant of `x - cur + c` into the ds_write offset with a
      // wrapping negative address register, which the emulator reports
      // as out of bounds.)
      Value cur = lw.mul(lw.remu(i, lw.idx(2)), lw.idx(tileBytes));
      nextBase =
          lw.mul(lw.remu(lw.add(i, lw.idx(1)), lw.idx(2)), lw.idx(tileBytes));
      Value t0n = lw.add(t0, lw.idx(t));
      Value tokN = lw.stepFrom(t0n, t);
      Value validN = validOf(lw, tokN);
      Value t0c = lw.select(lw.cmp(CmpIPredicate::ult, t0n, end), t0n, t0);
      mineNext = mineOf(lw, validN);
      next = fmt.loadTile(slotsOf(lw, t0c, tokN, validN, Value(), entries),
                          mineNext);
      fmt.ldsBase = cur;
      if (sharedV) {
        // (Its table reads at t0c, its tokens and masks at t0n.)
        nextV = loadShareV(lw, t0n, t0c, Value(), entries);
        fmt.sharedVBase = lw.mul(lw.remu(i, lw.idx(2)), lw.idx(vTileElems));
        nextVBase = lw.mul(lw.remu(lw.add(i, lw.idx(1)), lw.idx(2)),
                           lw.idx(vTileElems));
      }
    } else {
      slot = slotsOf(lw, t0, tok, valid);
    }
    Value s = fmt.keyLogits(q, slot, valid);
    if (bias)
      s = arith::AddFOp::create(lb, loc, s, lw.broadcastRows(bias, t));
    if (masked) {
      // Row r sees key k when 0 <= pos_r - k (< W with a window).
      Value rel = arith::SubFOp::create(
          lb, loc, rowPosTile, lw.broadcastCols(toF32(lw, tok, t), rpw));
      Value sees = arith::CmpFOp::create(
          lb, loc, arith::CmpFPredicate::OGE, rel,
          lw.constSplat(lb.getF32FloatAttr(0.0f), {rpw, t}));
      if (cfg.window > 0)
        sees = lw.andi(sees,
                       arith::CmpFOp::create(
                           lb, loc, arith::CmpFPredicate::OLT, rel,
                           lw.constSplat(lb.getF32FloatAttr(float(cfg.window)),
                                         {rpw, t})));
      sees = lw.andi(sees, lw.broadcastCols(valid, rpw));
      s = lw.select(sees, s, lw.constSplat(lb.getF32FloatAttr(ninf), {rpw, t}));
    }
    // Online softmax in base 2: m is the running maximum of the unscaled
    // logits (scale2 > 0: the same order, and the masks select on the
    // logits before they are scaled) and M = m * scale2:
    // p = exp2(s * scale2 - M). A row that has seen no key yet keeps
    // m = -inf and subtracts 0 instead (no -inf - -inf).
    Value m = iter[0], l = iter[1], acc = iter[2];
    Value mt = lw.reduceRows(vector::CombiningKind::MAXIMUMF, s, m);
    // As decode's: a NaN logit makes p, the row sum and the output NaN
    // whatever the max is (and the row is not "none": NaN != -inf), so the
    // cross-lane steps may skip it (maxnum, which folds with DPP).
    stage_attrs::maxIgnoresNaN.set(mt.getDefiningOp());
    Value none =
        arith::CmpFOp::create(lb, loc, arith::CmpFPredicate::OEQ, mt,
                              lw.constSplat(lb.getF32FloatAttr(ninf), {rpw}));
    Value mRef = lw.select(none, lInit, mt);
    Value scaleRows = lw.constSplat(lb.getF32FloatAttr(scale2), {rpw});
    Value mScaled = arith::MulFOp::create(lb, loc, m, scaleRows);
    Value mRefScaled = arith::MulFOp::create(lb, loc, mRef, scaleRows);
    Value alpha = math::Exp2Op::create(
        lb, loc, arith::SubFOp::create(lb, loc, mScaled, mRefScaled));
    // (p = exp2(fma(s, scale2, -M)) put 172 outputs of the paged
    // scaled_query_large_means case outside the bound in the emulator;
    // the product is rounded before the subtraction, as decode does.)
    Value x = arith::MulFOp::create(
        lb, loc, s, lw.constSplat(lb.getF32FloatAttr(scale2), {rpw, t}));
    Value p = math::Exp2Op::create(
        lb, loc,
        arith::SubFOp::create(lb, loc, x, lw.broadcastRows(mRefScaled, t)));
    Value lsum = lw.reduceRows(vector::CombiningKind::ADD, p,
                               arith::MulFOp::create(lb, loc, l, alpha));
    stage_attrs::reassociate.set(lsum.getDefiningOp());
    float ps = fmt.pScale();
    if (ps != 1.0f)
      p = arith::MulFOp::create(
          lb, loc, p, lw.constSplat(lb.getF32FloatAttr(ps), {rpw, t}));
    Value accScaled =
        arith::MulFOp::create(lb, loc, acc, lw.broadcastRows(alpha, d));
    Value accNew = fmt.accumulatePV(p, slot, valid, accScaled);
    // Tile i + 1 into the other copy; the barrier makes it visible and
    // keeps any wave from overwriting copy i % 2 (in iteration i + 1)
    // before every wave has read it.
    if (fmt.lds) {
      fmt.storeTile(next, nextBase, mineNext);
      if (sharedV)
        storeShareV(nextV, nextVBase);
      gpu::BarrierOp::create(lb, loc);
    }
    SmallVector<Value> out = {mt, lsum, accNew};
    out.append(entriesAhead.begin(), entriesAhead.end());
    return out;
  };
  // The tiles loopStart + k t with kLo <= k < kHi are full (every key
  // valid and seen by every row of the workgroup: at or after the
  // partition's first key and the last row's window, before its end and at
  // or before the first row's position); the others, at the ends, are
  // masked. Three loops (masked, full, masked) over consecutive ranges: the
  // LDS copies alternate by the tile's index from loopStart in all three.
  Value fullFrom = start;
  if (cfg.window > 0)
    fullFrom = w.max(fullFrom, w.add(w.sub(posLast, w.idx(cfg.window)), c1));
  Value kLo = w.min(
      w.divu(w.add(w.max(w.sub(fullFrom, loopStart), c0), w.idx(t - 1)), ct),
      nTiles);
  Value fullTo = w.min(end, w.add(posFirst, c1));
  Value kHi = w.max(
      w.min(w.divu(w.max(w.sub(fullTo, loopStart), c0), ct), nTiles), kLo);
  Value fullStart = w.add(loopStart, w.mul(kLo, ct));
  Value fullEnd = w.add(loopStart, w.mul(kHi, ct));
  SmallVector<Value> carried = {mInit, lInit, accInit};
  carried.append(entriesNext.begin(), entriesNext.end());
  auto runLoop = [&](Value from, Value to, bool masked) {
    auto loop = scf::ForOp::create(
        b, loc, from, to, ct, carried,
        [&](OpBuilder &lb, Location, Value t0, ValueRange iter) {
          scf::YieldOp::create(lb, loc, body(lb, t0, iter, masked));
        });
    carried.assign(loop.getResults().begin(), loop.getResults().end());
  };
  runLoop(loopStart, fullStart, /*masked=*/true);
  runLoop(fullStart, fullEnd, /*masked=*/false);
  runLoop(fullEnd, end, /*masked=*/true);

  writePartials(carried, fmt.pScale(), scale2, mInit, lInit);
}

void PrefillSteps::writePartials(ArrayRef<Value> carried, float pScale,
                                 float scale2, Value mInit, Value lInit) {
  // A row that saw no key (m = -inf) writes 0, -inf, 0; a NaN row stays
  // NaN.
  Value m = carried[0], l = carried[1], acc = carried[2];
  Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                      mInit);
  Value lScaled = l;
  if (pScale != 1.0f)
    lScaled = arith::MulFOp::create(
        b, loc, l, w.constSplat(b.getF32FloatAttr(pScale), {rpw}));
  // Its accumulator is 0 (every P was 0): divide by 1 instead of 0.
  lScaled = w.select(empty, w.constSplat(b.getF32FloatAttr(1.0f), {rpw}),
                     lScaled);
  Value out = arith::DivFOp::create(b, loc, acc, w.broadcastRows(lScaled, d));
  // m is in unscaled logits: M = m * scale2 (rounded as in the loop) in
  // base-2 units, M ln 2 in natural-log units.
  Value mNat = arith::MulFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, m,
                            w.constSplat(b.getF32FloatAttr(scale2), {rpw})),
      w.constSplat(b.getF32FloatAttr(float(std::log(2.0))), {rpw}));
  mNat = w.select(empty, mInit, mNat);
  Value sum = w.select(empty, lInit, l);
  // Index (token, head, part) of [T, Hq, P].
  Value rowIdx = w.add(w.mul(rowHeads, w.splat(numParts, {rpw})),
                       w.splat(part, {rpw}));
  uq::StoreRowsOp::create(b, loc, out, arg(f, spec, w, "partial_out"),
                          w.mul(rowIdx, w.splat(w.idx(d), {rpw})), rowMask);
  vector::ScatterOp::create(b, loc, Type(), arg(f, spec, w, "partial_max"),
                            ValueRange{c0}, rowIdx, rowMask, mNat);
  vector::ScatterOp::create(b, loc, Type(), arg(f, spec, w, "partial_sum"),
                            ValueRange{c0}, rowIdx, rowMask, sum);
}

} // namespace

gpu::GPUFuncOp uq::wave::buildPrefillKernel(OpBuilder &b, Location loc,
                                            const AttentionConfig &cfg,
                                            KernelSpec &spec) {
  assert(cfg.prefillWaves >= 1 && cfg.tileTokens % cfg.prefillWaves == 0 &&
         "the waves split the key tile");
  describePrefillKernel(cfg, spec);
  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  PrefillSteps steps(b, loc, cfg, spec, f, w);
  steps.guardWorkgroup();
  steps.selectQueryTile();
  steps.keyRange();
  steps.waveRows();
  steps.keyLoop();
  return f;
}
