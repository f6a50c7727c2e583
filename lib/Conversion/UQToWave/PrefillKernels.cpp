//===- PrefillKernels.cpp - Wave-level paged (prefill + decode) attention -===//
//
// uq.paged_attention as three wave-level kernels:
//  - query:   decode's query kernel over the rows of [num_tokens, Hq, D];
//  - prefill: one (query tile, KV head, split-K partition) per workgroup
//             of W waves (cfg.prefillWaves); each wave's 16 MFMA rows are
//             `16 / G` query tokens of one sequence times the G query heads
//             of the KV head (G = the GQA ratio; 16 % G rows stay idle), the
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
//             guard for rows that have seen no key yet. QK is the scaled
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
// Not done (docs/gpu-kernels.md, "Paged attention"): the FP4 V tile is
// converted to bf16 by every wave (not once per workgroup through LDS), and
// 16-row tiles only (no 32x32x64 MFMA).
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
  return cfg.prefillWaves * (kRows / cfg.group());
}

gpu::GPUFuncOp uq::wave::buildPrefillKernel(OpBuilder &b, Location loc,
                                            const AttentionConfig &cfg,
                                            KernelSpec &spec) {
  const int64_t d = cfg.headDim, hq = cfg.numQHeads, hkv = cfg.numKVHeads;
  const int64_t bs = cfg.blockSize, sb = cfg.slotBytes, t = cfg.tileTokens;
  const int64_t g = cfg.group();
  // W waves of 16 rows: tpw tokens per wave, tpt per workgroup.
  const int64_t waves = cfg.prefillWaves;
  const int64_t tpw = kRows / g;
  const int64_t tpt = prefillTokensPerTile(cfg);
  assert(waves >= 1 && t % waves == 0 && "the waves split the key tile");
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
                 {"tokens_per_wave", tpw},
                 {"window", cfg.window}};
  spec.gridRule =
      "(num_query_tiles, num_kv_heads, num_partitions); num_query_tiles >= "
      "num_tokens / tokens_per_tile + num_seqs + 2; any num_partitions >= 1 "
      "is correct";

  gpu::GPUFuncOp f = createKernel(b, loc, spec);
  WaveBuilder w(b, loc);
  Value tile = w.blockId(gpu::Dimension::x);
  Value kvh = w.blockId(gpu::Dimension::y);
  Value part = w.blockId(gpu::Dimension::z);
  Value numTokens = arg(f, spec, w, "num_tokens");
  Value numBlocks = arg(f, spec, w, "num_blocks");
  Value maxBlocks = arg(f, spec, w, "max_blocks");
  Value numParts = arg(f, spec, w, "num_partitions");
  Value numTiles = arg(f, spec, w, "num_query_tiles");
  Value c0 = w.idx(0), c1 = w.idx(1), ctpt = w.idx(tpt);
  // Sequences: the smallest of the operands' counts (the input policy).
  Value numSeqs = w.max(w.min(arg(f, spec, w, "num_seqs"),
                              w.sub(arg(f, spec, w, "num_query_starts"), c1)),
                        c0);
  guardBody(w, w.andi(w.cmp(CmpIPredicate::ult, tile, numTiles),
                      w.cmp(CmpIPredicate::ult, part, numParts)));

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
  Value eSel = c0, beginSel = c0, endSel = b0;
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
  Value tok0 = w.add(beginSel, w.mul(w.sub(tile, startSel), ctpt));
  Value tokEnd = w.min(endSel, w.add(tok0, ctpt));
  {
    // The rest runs only for a tile with tokens (inside the first guard:
    // no second return).
    auto ifOp = scf::IfOp::create(b, loc, w.cmp(CmpIPredicate::ult, tok0,
                                                tokEnd),
                                  /*withElse=*/false);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  }

  // A real sequence s = e - 1 (0 <= s < numSeqs) has keys; the two extra
  // ones have none.
  Value isReal = w.andi(w.cmp(CmpIPredicate::uge, eSel, c1),
                        w.cmp(CmpIPredicate::ule, eSel, numSeqs));
  Value seq = w.select(isReal, w.sub(eSel, c1), c0);
  Value noBlocks = w.cmp(CmpIPredicate::sle, numBlocks, c0);
  Value capacity =
      w.select(noBlocks, c0, w.mul(w.max(maxBlocks, c0), w.idx(bs)));
  Value len = c0;
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
  Value qLen = w.sub(endSel, beginSel);
  Value first = w.sub(tok0, beginSel);
  Value last = w.sub(w.sub(tokEnd, beginSel), c1);
  // Positions may be negative: signed index arithmetic.
  Value posFirst = w.sub(w.add(len, first), qLen);
  Value posLast = w.sub(w.add(len, last), qLen);
  // Keys any row sees: [lo, hi), intersected with the partition.
  Value lo = c0;
  if (cfg.window > 0)
    lo = w.max(c0, w.add(w.sub(posFirst, w.idx(cfg.window)), c1));
  Value hi = w.max(w.add(posLast, c1), c0);
  Value pStart = w.mul(part, w.idx(cfg.partitionSize));
  Value isLast = w.cmp(CmpIPredicate::eq, part, w.sub(numParts, c1));
  Value pEnd =
      w.select(isLast, hi, w.min(hi, w.add(pStart, w.idx(cfg.partitionSize))));
  Value start = w.max(lo, pStart);
  Value end = w.max(pEnd, start);
  // Tiles are aligned to t (blockIdsOfTile reads one table entry per block).
  Value loopStart = w.mul(w.divu(start, w.idx(t)), w.idx(t));

  // Wave `wave` of the workgroup owns the tokens [waveTok0, waveTok0 +
  // tpw) of [tok0, tokEnd); a wave past tokEnd has no rows (it still copies
  // its share of every key tile and meets every barrier). The key range
  // above is the workgroup's: the same loop in every wave.
  Value wave = waves > 1 ? gpu::SubgroupIdOp::create(b, loc, IntegerAttr())
                               .getResult()
                         : c0;
  Value waveTok0 = w.add(tok0, w.mul(wave, w.idx(tpw)));
  // Rows: row r is token waveTok0 + r / G, query head kvh * G + r % G.
  // r / G in f32 (trunc((r + 0.5) / G): exact for r < 16), r % G =
  // r - G (r / G): no integer vector division. LLVM 22's InstCombine /
  // VectorCombine turned the distributed `udiv <4 x i64> rows, 4` (G = 4;
  // exact in lane 0 only) into an exact shift of the lane id, i.e. assumed
  // lane % 16 == 0, and the P tile's LDS addresses went out of bounds
  // (found by PagedAttentionGPU.SlidingWindow, located with
  // `opt -O3 -opt-bisect-limit`).
  Type f32 = b.getF32Type();
  Type i32 = b.getI32Type();
  Value rows = w.step(kRows);
  Value rowsF = arith::SIToFPOp::create(
      b, loc, w.vec({kRows}, f32),
      arith::IndexCastOp::create(b, loc, w.vec({kRows}, i32), rows));
  // fptosi truncates: floor for these non-negative values.
  Value rowTokF = arith::MulFOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, rowsF,
                            w.constSplat(b.getF32FloatAttr(0.5f), {kRows})),
      w.constSplat(b.getF32FloatAttr(1.0f / float(g)), {kRows}));
  Value rowTok = arith::IndexCastOp::create(
      b, loc, w.vec({kRows}, b.getIndexType()),
      arith::FPToSIOp::create(b, loc, w.vec({kRows}, i32), rowTokF));
  Value rowHead = w.sub(rows, w.mul(rowTok, w.splat(w.idx(g), {kRows})));
  Value rowMask = w.andi(
      w.cmp(CmpIPredicate::ult, rowTok, w.splat(w.idx(tpw), {kRows})),
      w.cmp(CmpIPredicate::ult, w.add(w.splat(waveTok0, {kRows}), rowTok),
            w.splat(tokEnd, {kRows})));
  // Masked rows point at the workgroup's first row (they are not read).
  Value tokOfRow =
      w.select(rowMask, w.add(w.splat(waveTok0, {kRows}), rowTok),
               w.splat(tok0, {kRows}));
  Value headOfRow = w.add(w.splat(w.mul(kvh, w.idx(g)), {kRows}),
                          w.select(rowMask, rowHead, w.splat(c0, {kRows})));
  Value rowHeads = w.add(w.mul(tokOfRow, w.splat(w.idx(hq), {kRows})),
                         headOfRow);
  Value rowOffsets = w.mul(rowHeads, w.splat(w.idx(d), {kRows}));
  Value cache = arg(f, spec, w, "cache");
  Value tables = arg(f, spec, w, "block_tables");
  FormatOps fmt{cfg, w, cache, arg(f, spec, w, "query_prepared"), t, d};
  Value q = fmt.loadQuery(rowOffsets, rowMask);
  // Issue 13's options, as decode's partial kernel: per-32 query scales as
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
  Value rowPos = w.add(tokOfRow, w.splat(shift, {kRows}));
  Value rowPosF = w.select(rowMask, toF32(w, rowPos, kRows),
                           w.constSplat(b.getF32FloatAttr(-1.0f), {kRows}));
  Value rowPosTile = w.broadcastRows(rowPosF, t);

  float ninf = -std::numeric_limits<float>::infinity();
  Value mInit = w.constSplat(b.getF32FloatAttr(ninf), {kRows});
  Value lInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows});
  Value accInit = w.constSplat(b.getF32FloatAttr(0.0f), {kRows, d});
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
  auto slotsOf = [&](WaveBuilder &lw, Value t0, Value tok, Value valid) {
    return tileSlots(lw, tables, tableRow, t0, end, bs, t, tok, valid,
                     maxBlock32, kvh, hkv, sb, isHeadMajor(cfg.layout));
  };
  // This wave's share of the valid tokens of a tile.
  auto mineOf = [&](WaveBuilder &lw, Value valid) {
    Value at = lw.step(t);
    return lw.andi(
        valid, lw.andi(lw.cmp(CmpIPredicate::uge, at, lw.splat(shareLo, {t})),
                       lw.cmp(CmpIPredicate::ult, at, lw.splat(shareHi, {t}))));
  };
  if (fmt.lds) {
    // The first tile into copy 0 (when the loop runs at all: the block
    // table is read only for tiles of the loop).
    {
      auto ifOp = scf::IfOp::create(b, loc,
                                    w.cmp(CmpIPredicate::ult, loopStart, end),
                                    /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value tok = w.stepFrom(loopStart, t);
      Value valid = validOf(w, tok);
      Value mine = mineOf(w, valid);
      fmt.storeTile(fmt.loadTile(slotsOf(w, loopStart, tok, valid), mine), c0,
                    mine);
    }
    gpu::BarrierOp::create(b, loc);
  }
  auto loop = scf::ForOp::create(
      b, loc, loopStart, end, w.idx(t), ValueRange{mInit, lInit, accInit},
      [&](OpBuilder &lb, Location, Value t0, ValueRange iter) {
        WaveBuilder lw(lb, loc);
        Value tok = lw.stepFrom(t0, t);
        Value valid = validOf(lw, tok);
        Value slot, mineNext, nextBase;
        SmallVector<Value> next;
        if (fmt.lds) {
          // Tile i sits in copy i % 2; issue the loads of tile i + 1 now
          // (a tile past the end loads nothing; its table reads are the
          // current tile's).
          Value i = lw.divu(lw.sub(t0, loopStart), lw.idx(t));
          // (Both bases as products, not next = tileBytes - cur: LLVM folds
          // the constant of `x - cur + c` into the ds_write offset with a
          // wrapping negative address register, which the emulator reports
          // as out of bounds.)
          Value cur = lw.mul(lw.remu(i, lw.idx(2)), lw.idx(tileBytes));
          nextBase = lw.mul(lw.remu(lw.add(i, lw.idx(1)), lw.idx(2)),
                            lw.idx(tileBytes));
          Value t0n = lw.add(t0, lw.idx(t));
          Value tokN = lw.stepFrom(t0n, t);
          Value validN = validOf(lw, tokN);
          Value t0c = lw.select(lw.cmp(CmpIPredicate::ult, t0n, end), t0n, t0);
          mineNext = mineOf(lw, validN);
          next = fmt.loadTile(slotsOf(lw, t0c, tokN, validN), mineNext);
          fmt.ldsBase = cur;
        } else {
          slot = slotsOf(lw, t0, tok, valid);
        }
        Value s = fmt.keyLogits(q, slot, valid);
        if (bias)
          s = arith::AddFOp::create(lb, loc, s, lw.broadcastRows(bias, t));
        Value x = arith::MulFOp::create(
            lb, loc, s, lw.constSplat(lb.getF32FloatAttr(scale2), {kRows, t}));
        // Row r sees key k when 0 <= pos_r - k (< W with a window).
        Value rel = arith::SubFOp::create(
            lb, loc, rowPosTile, lw.broadcastCols(toF32(lw, tok, t), kRows));
        Value sees = arith::CmpFOp::create(
            lb, loc, arith::CmpFPredicate::OGE, rel,
            lw.constSplat(lb.getF32FloatAttr(0.0f), {kRows, t}));
        if (cfg.window > 0)
          sees = lw.andi(
              sees, arith::CmpFOp::create(
                        lb, loc, arith::CmpFPredicate::OLT, rel,
                        lw.constSplat(lb.getF32FloatAttr(float(cfg.window)),
                                      {kRows, t})));
        sees = lw.andi(sees, lw.broadcastCols(valid, kRows));
        x = lw.select(sees, x,
                      lw.constSplat(lb.getF32FloatAttr(ninf), {kRows, t}));
        // Online softmax; a row that has seen no key yet keeps m = -inf and
        // subtracts 0 instead (no -inf - -inf).
        Value m = iter[0], l = iter[1], acc = iter[2];
        Value mt = lw.reduceRows(vector::CombiningKind::MAXIMUMF, x, m);
        Value none = arith::CmpFOp::create(
            lb, loc, arith::CmpFPredicate::OEQ, mt,
            lw.constSplat(lb.getF32FloatAttr(ninf), {kRows}));
        Value mRef = lw.select(none, lInit, mt);
        Value alpha = math::Exp2Op::create(
            lb, loc, arith::SubFOp::create(lb, loc, m, mRef));
        Value p = math::Exp2Op::create(
            lb, loc,
            arith::SubFOp::create(lb, loc, x, lw.broadcastRows(mRef, t)));
        Value lsum = lw.reduceRows(vector::CombiningKind::ADD, p,
                                   arith::MulFOp::create(lb, loc, l, alpha));
        lsum.getDefiningOp()->setAttr("uq.reassociate", lb.getUnitAttr());
        float ps = fmt.pScale();
        if (ps != 1.0f)
          p = arith::MulFOp::create(
              lb, loc, p, lw.constSplat(lb.getF32FloatAttr(ps), {kRows, t}));
        Value accScaled =
            arith::MulFOp::create(lb, loc, acc, lw.broadcastRows(alpha, d));
        Value accNew = fmt.accumulatePV(p, slot, valid, accScaled);
        // Tile i + 1 into the other copy; the barrier makes it visible and
        // keeps any wave from overwriting copy i % 2 (in iteration i + 1)
        // before every wave has read it.
        if (fmt.lds) {
          fmt.storeTile(next, nextBase, mineNext);
          gpu::BarrierOp::create(lb, loc);
        }
        scf::YieldOp::create(lb, loc, ValueRange{mt, lsum, accNew});
      });

  // A row that saw no key (m = -inf) writes 0, -inf, 0; a NaN row stays
  // NaN.
  Value m = loop.getResult(0), l = loop.getResult(1), acc = loop.getResult(2);
  Value empty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                      mInit);
  Value lScaled = l;
  if (fmt.pScale() != 1.0f)
    lScaled = arith::MulFOp::create(
        b, loc, l, w.constSplat(b.getF32FloatAttr(fmt.pScale()), {kRows}));
  // Its accumulator is 0 (every P was 0): divide by 1 instead of 0.
  lScaled = w.select(empty, w.constSplat(b.getF32FloatAttr(1.0f), {kRows}),
                     lScaled);
  Value out = arith::DivFOp::create(b, loc, acc, w.broadcastRows(lScaled, d));
  Value mNat = arith::MulFOp::create(
      b, loc, m,
      w.constSplat(b.getF32FloatAttr(float(std::log(2.0))), {kRows}));
  mNat = w.select(empty, mInit, mNat);
  Value sum = w.select(empty, lInit, l);
  // Index (token, head, part) of [T, Hq, P].
  Value rowIdx = w.add(w.mul(rowHeads, w.splat(numParts, {kRows})),
                       w.splat(part, {kRows}));
  uq::StoreRowsOp::create(b, loc, out, arg(f, spec, w, "partial_out"),
                          w.mul(rowIdx, w.splat(w.idx(d), {kRows})), rowMask);
  vector::ScatterOp::create(b, loc, Type(), arg(f, spec, w, "partial_max"),
                            ValueRange{c0}, rowIdx, rowMask, mNat);
  vector::ScatterOp::create(b, loc, Type(), arg(f, spec, w, "partial_sum"),
                            ValueRange{c0}, rowIdx, rowMask, sum);
  return f;
}
